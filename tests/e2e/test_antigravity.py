"""AntigravityInstrumentor end to end: real google-antigravity agents, real Go harness.

Each test runs real ``Agent`` sessions against a scripted OpenAI-compatible server (the
"model" makes exactly the tool calls the script says) and compares the whole span tree and
the metric points with what hookscope promises (DESIGN §5, §6).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from google.antigravity import Agent, LocalOpenAIAgentConfig, types
from google.antigravity.hooks import hooks, policy
from opentelemetry import trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from hookscope.integrations.antigravity import AntigravityInstrumentor
from hookscope.integrations.antigravity import hooks as hookscope_hooks
from tests.otel_helpers import attrs, metric_points, span_tree
from tests.support.openai_server import Call, Reply, ScriptedOpenAIServer

AGENT = "weather-bot"
#: Upper bound for one whole agent session (harness start, chats, shutdown).
SESSION_DEADLINE_S = 60.0

SCRIPTS = {
    "weather in Oslo": [
        Reply(tool_calls=[Call("get_weather", {"city": "Oslo"}, id="call_1")]),
        Reply(text="It is sunny in Oslo."),
        Reply(text="Checked again: sunny."),
    ],
    "weather in Atlantis": [
        Reply(tool_calls=[Call("get_weather", {"city": "Atlantis"}, id="call_1")]),
        Reply(text="Atlantis has no weather report."),
    ],
    "Oslo and Rome": [
        Reply(
            tool_calls=[
                Call("get_weather", {"city": "Oslo"}, id="call_1"),
                Call("get_weather", {"city": "Rome"}, id="call_2"),
            ]
        ),
        Reply(text="Sunny in both."),
    ],
    "clean up": [
        Reply(tool_calls=[Call("run_command", {"CommandLine": "rm -rf /tmp/x", "Cwd": "/tmp"})]),
        Reply(text="I may not run commands."),
    ],
    "forbidden": [Reply(text="never sent")],
}


# --- fixtures ------------------------------------------------------------------------------


@pytest.fixture
def instrumented(tracer_provider: TracerProvider, meter_provider: MeterProvider) -> Iterator[None]:
    instrumentor = AntigravityInstrumentor()
    instrumentor.instrument(
        tracer_provider=tracer_provider, meter_provider=meter_provider, agent_name=AGENT
    )
    yield
    instrumentor.uninstrument()


@pytest.fixture
def model() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(SCRIPTS) as server:
        yield server
    assert server.errors == []


class Weather:
    """A Python tool that records the span current while it runs, and makes one of its own."""

    def __init__(self, tracer_provider: TracerProvider) -> None:
        self.tracer = tracer_provider.get_tracer("weather-service")
        self.current_spans: list[trace.SpanContext] = []

    def tool(self) -> Callable[..., str]:
        def get_weather(city: str) -> str:
            """Today's weather in a city."""
            self.current_spans.append(trace.get_current_span().get_span_context())
            if city == "Atlantis":
                raise LookupError(f"no weather station in {city}")
            with self.tracer.start_as_current_span("weather-api GET"):
                return f"sunny in {city}"

        return get_weather


@pytest.fixture
def weather(tracer_provider: TracerProvider) -> Weather:
    return Weather(tracer_provider)


def agent_config(
    model: ScriptedOpenAIServer,
    tmp_path: Path,
    tools: Sequence[Callable[..., Any]],
    policies: Sequence[Any] = (policy.allow_all(),),
    sdk_hooks: Sequence[Any] = (),
    enabled_tools: Sequence[types.BuiltinTools] = (),
) -> LocalOpenAIAgentConfig:
    """An agent on the scripted model, with its harness's files kept under ``tmp_path``."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return LocalOpenAIAgentConfig(
        base_url=model.base_url,
        model="scripted",
        tools=list(tools),
        policies=list(policies),
        hooks=list(sdk_hooks),
        capabilities=types.CapabilitiesConfig(enabled_tools=list(enabled_tools)),
        workspaces=[str(tmp_path)],
        save_dir=str(tmp_path / "save"),
        app_data_dir=str(tmp_path / "app"),
        env={"HOME": str(home)},
    )


async def chat(config: LocalOpenAIAgentConfig, *prompts: str) -> list[str | BaseException]:
    """One session: each prompt's full answer, or the exception reading it raised."""

    async def session() -> list[str | BaseException]:
        answers: list[str | BaseException] = []
        agent = Agent(config)
        try:
            async with agent:
                for prompt in prompts:
                    try:
                        response = await agent.chat(prompt)
                        answers.append(await response.text())
                    except types.AntigravityExecutionError as error:
                        answers.append(error)
        finally:
            _close_harness_pipes(agent)
        return answers

    return await asyncio.wait_for(session(), SESSION_DEADLINE_S)


def _close_harness_pipes(agent: Agent) -> None:
    # google-antigravity 0.1.22 closes the harness's stdin on disconnect but leaves its stdout
    # and stderr pipes open; with warnings as errors their ResourceWarning would fail the run.
    if not agent.is_started:
        return
    process = getattr(agent.conversation.connection, "_process", None)
    for pipe in (getattr(process, "stdout", None), getattr(process, "stderr", None)):
        if pipe is not None:
            pipe.close()


# --- expected spans --------------------------------------------------------------------------


def session_span(
    children: list[dict[str, Any]],
    *,
    turns: int = 1,
    tool_calls: int = 0,
    denied: int = 0,
    errors: int = 0,
) -> dict[str, Any]:
    return {
        "name": f"session {AGENT}",
        "attributes": {
            "gen_ai.agent.name": AGENT,
            "hookscope.session.denied_calls": denied,
            "hookscope.session.outcome": "completed",
            "hookscope.session.tool_calls": tool_calls,
            "hookscope.session.tool_errors": errors,
            "hookscope.session.turns": turns,
            "openinference.span.kind": "CHAIN",
        },
        "events": [("hookscope.session_start", {}), ("hookscope.session_end", {})],
        "status": "UNSET",
        "children": children,
    }


def turn_span(
    children: list[dict[str, Any]], *, index: int = 0, tokens: tuple[int, int] = (20, 10)
) -> dict[str, Any]:
    span: dict[str, Any] = {
        "name": f"invoke_agent {AGENT}",
        "attributes": {
            "gen_ai.agent.name": AGENT,
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.usage.input_tokens": tokens[0],
            "gen_ai.usage.output_tokens": tokens[1],
            "hookscope.turn.index": index,
            "hookscope.turn.outcome": "completed",
            "openinference.span.kind": "AGENT",
        },
        "events": [
            ("hookscope.pre_turn", {"hookscope.turn.allowed": True}),
            ("hookscope.post_turn", {}),
        ],
        "status": "UNSET",
    }
    if children:
        span["children"] = children
    return span


ALLOWED = {"hookscope.policy.decision": "allow", "hookscope.policy.outcome": "allowed"}
WEATHER_API = {
    "name": "weather-api GET",
    "attributes": {},
    "events": [],
    "status": "UNSET",
}


def tool_span(
    call_id: str,
    *,
    outcome: str = "succeeded",
    policy_attributes: dict[str, Any] | None = None,
    extra: dict[str, Any] | None = None,
    events: list[tuple[str, dict[str, Any]]] | None = None,
    children: list[dict[str, Any]] | None = None,
    status: str = "UNSET",
    tool: str = "get_weather",
) -> dict[str, Any]:
    decision = policy_attributes if policy_attributes is not None else ALLOWED
    attributes = {
        "gen_ai.agent.name": AGENT,
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": tool,
        "gen_ai.tool.type": "function",
        "tool.name": tool,
        "hookscope.tool.outcome": outcome,
        "openinference.span.kind": "TOOL",
        **decision,
        **(extra or {}),
    }
    if call_id:
        attributes["gen_ai.tool.call.id"] = call_id
    span: dict[str, Any] = {
        "name": f"execute_tool {tool}",
        "attributes": attributes,
        "events": events
        if events is not None
        else [("hookscope.pre_tool_call", decision), ("hookscope.post_tool_call", {})],
        "status": status,
    }
    if children is None and outcome != "denied":
        children = [WEATHER_API]
    if children:
        span["children"] = children
    return span


def counters(reader: InMemoryMetricReader) -> dict[str, Any]:
    """The counters whose points the tests compare (histograms are checked by count)."""
    return metric_points(
        reader.get_metrics_data(),
        [
            "hookscope.tool.calls",
            "hookscope.policy.decisions",
            "hookscope.tool.errors",
            "hookscope.turns",
            "hookscope.sessions",
            "hookscope.sessions.active",
            "gen_ai.execute_tool.duration",
            "gen_ai.invoke_agent.duration",
        ],
    )


def tool_calls(outcome: str, count: int = 1, tool: str = "get_weather") -> dict[Any, int]:
    key = attrs(
        gen_ai__agent__name=AGENT, gen_ai__tool__name=tool, hookscope__tool__outcome=outcome
    )
    return {key: count}


SESSION_METRICS = {
    "hookscope.sessions": {attrs(gen_ai__agent__name=AGENT): 1},
    "hookscope.sessions.active": {attrs(gen_ai__agent__name=AGENT): 0},
}


def turns(outcome: str = "completed", count: int = 1) -> dict[str, Any]:
    key = attrs(gen_ai__agent__name=AGENT, hookscope__turn__outcome=outcome)
    return {"hookscope.turns": {key: count}, "gen_ai.invoke_agent.duration": {key: count}}


def allowed_decisions(count: int = 1) -> dict[Any, int]:
    return {
        attrs(
            gen_ai__agent__name=AGENT,
            gen_ai__tool__name="get_weather",
            hookscope__policy__decision="allow",
            hookscope__policy__outcome="allowed",
        ): count
    }


def durations(outcome: str, count: int = 1, error_type: str | None = None) -> dict[Any, int]:
    values = {
        "gen_ai__agent__name": AGENT,
        "gen_ai__tool__name": "get_weather",
        "hookscope__tool__outcome": outcome,
    }
    if error_type is not None:
        values["error__type"] = error_type
    return {attrs(**values): count}


# --- the scenarios ---------------------------------------------------------------------------


@pytest.mark.usefixtures("instrumented")
async def test_allowed_call_is_one_tool_span_under_its_turn(
    model: ScriptedOpenAIServer,
    tmp_path: Path,
    weather: Weather,
    span_exporter: InMemorySpanExporter,
    metric_reader: InMemoryMetricReader,
) -> None:
    answers = await chat(agent_config(model, tmp_path, [weather.tool()]), "weather in Oslo")

    assert answers == ["It is sunny in Oslo."]
    assert span_tree(span_exporter.get_finished_spans()) == [
        session_span([turn_span([tool_span("call_1")])], tool_calls=1)
    ]
    assert counters(metric_reader) == {
        **SESSION_METRICS,
        **turns(),
        "hookscope.tool.calls": tool_calls("succeeded"),
        "hookscope.policy.decisions": allowed_decisions(),
        "gen_ai.execute_tool.duration": durations("succeeded"),
    }


@pytest.mark.usefixtures("instrumented")
async def test_tool_runs_with_its_span_current(
    model: ScriptedOpenAIServer,
    tmp_path: Path,
    weather: Weather,
    span_exporter: InMemorySpanExporter,
) -> None:
    # The tool runs in a worker thread of a task the connection's reader spawned: the span
    # current there must be the tool's, not whatever the reader task inherited.
    await chat(agent_config(model, tmp_path, [weather.tool()]), "weather in Oslo")

    (tool,) = [s for s in span_exporter.get_finished_spans() if s.name.startswith("execute_tool")]
    assert weather.current_spans == [tool.context]


@pytest.mark.usefixtures("instrumented")
async def test_conversation_id_is_the_harness_trajectory_id(
    model: ScriptedOpenAIServer,
    tmp_path: Path,
    weather: Weather,
    span_exporter: InMemorySpanExporter,
) -> None:
    await chat(agent_config(model, tmp_path, [weather.tool()]), "weather in Oslo")

    spans = {s.name: s.attributes or {} for s in span_exporter.get_finished_spans()}
    session, turn = spans[f"session {AGENT}"], spans[f"invoke_agent {AGENT}"]
    conversation = session["gen_ai.conversation.id"]
    assert conversation != session["session.id"]
    assert len(str(conversation)) > 0
    assert turn["gen_ai.conversation.id"] == conversation


@pytest.mark.usefixtures("instrumented")
async def test_call_denied_by_a_when_policy_names_the_rule(
    model: ScriptedOpenAIServer,
    tmp_path: Path,
    weather: Weather,
    span_exporter: InMemorySpanExporter,
    metric_reader: InMemoryMetricReader,
) -> None:
    policies = [
        policy.deny("get_weather", when=lambda args: args["city"] == "Oslo", name="no_oslo"),
        policy.allow_all(),
    ]
    config = agent_config(model, tmp_path, [weather.tool()], policies=policies)

    answers = await chat(config, "weather in Oslo")

    denied = {
        "hookscope.policy.bucket": 0,
        "hookscope.policy.decided_by": "antigravity.policy",
        "hookscope.policy.decision": "deny",
        "hookscope.policy.outcome": "denied",
        "hookscope.policy.reason": "Denied by policy 'no_oslo'.",
        "hookscope.policy.rule": "no_oslo",
    }
    assert answers == ["It is sunny in Oslo."]
    assert weather.current_spans == []
    assert span_tree(span_exporter.get_finished_spans()) == [
        session_span(
            [
                turn_span(
                    [
                        tool_span(
                            "call_1",
                            outcome="denied",
                            policy_attributes=denied,
                            events=[("hookscope.pre_tool_call", denied)],
                        )
                    ]
                )
            ],
            tool_calls=1,
            denied=1,
        )
    ]
    assert counters(metric_reader) == {
        **SESSION_METRICS,
        **turns(),
        "hookscope.tool.calls": tool_calls("denied"),
        "hookscope.policy.decisions": {
            attrs(
                gen_ai__agent__name=AGENT,
                gen_ai__tool__name="get_weather",
                hookscope__policy__decision="deny",
                hookscope__policy__outcome="denied",
                hookscope__policy__rule="no_oslo",
                hookscope__policy__bucket=0,
            ): 1
        },
    }


@pytest.mark.usefixtures("instrumented")
async def test_call_denied_inside_the_harness_by_the_default_policy(
    model: ScriptedOpenAIServer,
    tmp_path: Path,
    span_exporter: InMemorySpanExporter,
    metric_reader: InMemoryMetricReader,
) -> None:
    # confirm_run_command() is a static rule: the harness enforces it without asking Python,
    # and the only trace is an error step naming it. It still counts as a denial.
    config = agent_config(
        model,
        tmp_path,
        [],
        policies=policy.confirm_run_command(),
        enabled_tools=[types.BuiltinTools.RUN_COMMAND],
    )

    answers = await chat(config, "clean up")

    denied = {
        "hookscope.policy.bucket": 0,
        "hookscope.policy.decided_by": "antigravity.harness",
        "hookscope.policy.decision": "deny",
        "hookscope.policy.outcome": "denied",
        "hookscope.policy.reason": 'Denied by policy "confirm_run_command".',
        "hookscope.policy.rule": "confirm_run_command",
    }
    assert answers == ["I may not run commands."]
    assert span_tree(span_exporter.get_finished_spans()) == [
        session_span(
            [
                turn_span(
                    [
                        tool_span(
                            "",
                            tool="run_command",
                            outcome="denied",
                            policy_attributes=denied,
                            events=[("hookscope.pre_tool_call", denied)],
                        )
                    ]
                )
            ],
            tool_calls=1,
            denied=1,
        )
    ]
    assert counters(metric_reader)["hookscope.policy.decisions"] == {
        attrs(
            gen_ai__agent__name=AGENT,
            gen_ai__tool__name="run_command",
            hookscope__policy__decision="deny",
            hookscope__policy__outcome="denied",
            hookscope__policy__rule="confirm_run_command",
            hookscope__policy__bucket=0,
        ): 1
    }


@pytest.mark.usefixtures("instrumented")
async def test_tool_error_recovered_by_an_on_tool_error_hook(
    model: ScriptedOpenAIServer,
    tmp_path: Path,
    weather: Weather,
    span_exporter: InMemorySpanExporter,
    metric_reader: InMemoryMetricReader,
) -> None:
    hook_spans: list[trace.SpanContext] = []

    @hooks.on_tool_error
    def suggest_another_city(error: Exception) -> str:
        # Runs in a task the connection's reader spawned: the failed call's span is current.
        hook_spans.append(trace.get_current_span().get_span_context())
        return "No station there; try a nearby city."

    config = agent_config(model, tmp_path, [weather.tool()], sdk_hooks=[suggest_another_city])

    answers = await chat(config, "weather in Atlantis")

    recovery = {
        "error.type": "LookupError",
        "hookscope.recovery.hook": "suggest_another_city",
        "hookscope.recovery.recovered": True,
    }
    assert answers == ["Atlantis has no weather report."]
    assert model.requests[-1]["messages"][-1]["content"].endswith(
        "No station there; try a nearby city."
    )
    assert span_tree(span_exporter.get_finished_spans()) == [
        session_span(
            [
                turn_span(
                    [
                        tool_span(
                            "call_1",
                            outcome="recovered",
                            extra=recovery,
                            events=[
                                ("hookscope.pre_tool_call", ALLOWED),
                                ("hookscope.tool_error", recovery),
                            ],
                            children=[],
                        )
                    ]
                )
            ],
            tool_calls=1,
            errors=1,
        )
    ]
    (tool,) = [s for s in span_exporter.get_finished_spans() if s.name.startswith("execute_tool")]
    assert hook_spans == [tool.context]
    points = counters(metric_reader)
    assert points["hookscope.tool.calls"] == tool_calls("recovered")
    assert points["hookscope.tool.errors"] == {
        attrs(
            gen_ai__agent__name=AGENT,
            gen_ai__tool__name="get_weather",
            error__type="LookupError",
            hookscope__recovery__recovered=True,
        ): 1
    }
    assert points["gen_ai.execute_tool.duration"] == durations(
        "recovered", error_type="LookupError"
    )


@hooks.pre_turn
def no_forbidden_topics(prompt: Any) -> hooks.HookResult:
    if "forbidden" in str(prompt):
        return hooks.HookResult(allow=False, message="that topic is off limits")
    return hooks.HookResult(allow=True)


@pytest.mark.usefixtures("instrumented")
async def test_turn_denied_by_pre_turn_is_blocked(
    model: ScriptedOpenAIServer,
    tmp_path: Path,
    weather: Weather,
    span_exporter: InMemorySpanExporter,
    metric_reader: InMemoryMetricReader,
) -> None:
    config = agent_config(model, tmp_path, [weather.tool()], sdk_hooks=[no_forbidden_topics])

    (answer,) = await chat(config, "forbidden")

    blocked = {
        "hookscope.turn.allowed": False,
        "hookscope.turn.decided_by": "no_forbidden_topics",
        "hookscope.turn.message": "that topic is off limits",
    }
    assert isinstance(answer, types.AntigravityExecutionError)
    assert model.requests == []
    assert span_tree(span_exporter.get_finished_spans()) == [
        session_span(
            [
                {
                    "name": f"invoke_agent {AGENT}",
                    "attributes": {
                        "gen_ai.agent.name": AGENT,
                        "gen_ai.operation.name": "invoke_agent",
                        "hookscope.turn.index": 0,
                        "hookscope.turn.outcome": "blocked",
                        "openinference.span.kind": "AGENT",
                        **blocked,
                    },
                    "events": [("hookscope.pre_turn", blocked)],
                    "status": "ERROR",
                }
            ]
        )
    ]
    assert counters(metric_reader) == {**SESSION_METRICS, **turns("blocked")}
    hook_points = metric_points(metric_reader.get_metrics_data(), ["hookscope.hook.duration"])
    assert hook_points["hookscope.hook.duration"] == {
        attrs(
            gen_ai__agent__name=AGENT,
            hookscope__hook__name="no_forbidden_topics",
            hookscope__hook__event="pre_turn",
        ): 1
    }


@hooks.stop
def double_check_once(stop: types.StopArgs) -> types.StopHookResult:
    if stop.continuation_count == 0:
        return types.StopHookResult(
            decision=types.StopDecision.CONTINUE, reason="Double-check the answer."
        )
    return types.StopHookResult(decision=types.StopDecision.ALLOW_STOP)


@hooks.post_turn
def audit(response: str) -> None:
    """A post-turn hook: with a StopHook registered, the SDK gives it a fresh TurnContext."""


@pytest.mark.usefixtures("instrumented")
async def test_turn_with_a_stop_hook_keeps_one_turn_span(
    model: ScriptedOpenAIServer,
    tmp_path: Path,
    weather: Weather,
    span_exporter: InMemorySpanExporter,
    metric_reader: InMemoryMetricReader,
) -> None:
    # The stop hook sends the agent round once more; post_turn then runs on a TurnContext the
    # SDK made afresh. The turn stays one span, ended when the trajectory goes idle.
    config = agent_config(model, tmp_path, [weather.tool()], sdk_hooks=[double_check_once, audit])

    answers = await chat(config, "weather in Oslo")

    assert answers == ["It is sunny in Oslo.Checked again: sunny."]
    assert span_tree(span_exporter.get_finished_spans()) == [
        session_span([turn_span([tool_span("call_1")], tokens=(30, 15))], tool_calls=1)
    ]
    assert counters(metric_reader) == {
        **SESSION_METRICS,
        **turns(),
        "hookscope.tool.calls": tool_calls("succeeded"),
        "hookscope.policy.decisions": allowed_decisions(),
        "gen_ai.execute_tool.duration": durations("succeeded"),
    }
    hook_points = metric_points(metric_reader.get_metrics_data(), ["hookscope.hook.duration"])
    assert hook_points["hookscope.hook.duration"] == {
        attrs(
            gen_ai__agent__name=AGENT,
            hookscope__hook__name="audit",
            hookscope__hook__event="post_turn",
        ): 1
    }


@pytest.mark.usefixtures("instrumented")
async def test_two_tool_calls_in_one_turn_are_siblings(
    model: ScriptedOpenAIServer,
    tmp_path: Path,
    weather: Weather,
    span_exporter: InMemorySpanExporter,
    metric_reader: InMemoryMetricReader,
) -> None:
    answers = await chat(agent_config(model, tmp_path, [weather.tool()]), "Oslo and Rome")

    assert answers == ["Sunny in both."]
    (session,) = span_tree(span_exporter.get_finished_spans())
    (turn,) = session["children"]
    # Siblings in start order; the harness starts them one after the other.
    assert turn == turn_span([tool_span("call_1"), tool_span("call_2")])
    assert session == session_span([turn], tool_calls=2)
    assert counters(metric_reader) == {
        **SESSION_METRICS,
        **turns(),
        "hookscope.tool.calls": tool_calls("succeeded", 2),
        "hookscope.policy.decisions": allowed_decisions(2),
        "gen_ai.execute_tool.duration": durations("succeeded", 2),
    }


@hooks.pre_tool_call_decide
def no_trips_to_rome(call: types.ToolCall) -> hooks.HookResult:
    if call.args.get("city") == "Rome":
        return hooks.HookResult(allow=False, message="no trips to Rome")
    return hooks.HookResult(allow=True)


@pytest.mark.usefixtures("instrumented")
async def test_call_denied_by_a_decide_hook_names_the_hook(
    model: ScriptedOpenAIServer,
    tmp_path: Path,
    weather: Weather,
    span_exporter: InMemorySpanExporter,
    metric_reader: InMemoryMetricReader,
) -> None:
    config = agent_config(model, tmp_path, [weather.tool()], sdk_hooks=[no_trips_to_rome])

    await chat(config, "Oslo and Rome")

    denied = {
        "hookscope.policy.decided_by": "no_trips_to_rome",
        "hookscope.policy.decision": "deny",
        "hookscope.policy.outcome": "denied",
        "hookscope.policy.reason": "no trips to Rome",
    }
    assert span_tree(span_exporter.get_finished_spans()) == [
        session_span(
            [
                turn_span(
                    [
                        tool_span("call_1"),
                        tool_span(
                            "call_2",
                            outcome="denied",
                            policy_attributes=denied,
                            events=[("hookscope.pre_tool_call", denied)],
                        ),
                    ]
                )
            ],
            tool_calls=2,
            denied=1,
        )
    ]
    hook_points = metric_points(metric_reader.get_metrics_data(), ["hookscope.hook.duration"])
    assert hook_points["hookscope.hook.duration"] == {
        attrs(
            gen_ai__agent__name=AGENT,
            hookscope__hook__name="no_trips_to_rome",
            hookscope__hook__event="pre_tool_call",
        ): 2
    }


@pytest.mark.usefixtures("instrumented")
async def test_harness_tool_is_traced_like_a_python_tool(
    model: ScriptedOpenAIServer,
    tmp_path: Path,
    span_exporter: InMemorySpanExporter,
    metric_reader: InMemoryMetricReader,
) -> None:
    # view_file runs inside the Go harness: only its step updates tell that it ran.
    notes = tmp_path / "notes.txt"
    notes.write_text("buy milk\n")
    model.scripts["read the notes"] = [
        Reply(tool_calls=[Call("view_file", {"AbsolutePath": str(notes)}, id="call_7")]),
        Reply(text="Buy milk."),
    ]
    config = agent_config(model, tmp_path, [], enabled_tools=[types.BuiltinTools.VIEW_FILE])

    answers = await chat(config, "read the notes")

    assert answers == ["Buy milk."]
    assert span_tree(span_exporter.get_finished_spans()) == [
        session_span([turn_span([tool_span("", tool="view_file", children=[])])], tool_calls=1)
    ]
    assert counters(metric_reader)["hookscope.tool.calls"] == tool_calls(
        "succeeded", tool="view_file"
    )


@pytest.mark.usefixtures("instrumented")
async def test_concurrent_sessions_reusing_call_ids_keep_separate_trees(
    model: ScriptedOpenAIServer,
    tmp_path: Path,
    weather: Weather,
    span_exporter: InMemorySpanExporter,
) -> None:
    # OpenAI-style call ids carry no trajectory prefix: both sessions' calls are "call_1".
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    tool = weather.tool()

    await asyncio.gather(
        chat(agent_config(model, first, [tool]), "weather in Oslo"),
        chat(agent_config(model, second, [tool]), "weather in Oslo"),
    )

    expected = session_span([turn_span([tool_span("call_1")])], tool_calls=1)
    assert span_tree(span_exporter.get_finished_spans()) == [expected, expected]
    sessions = [s for s in span_exporter.get_finished_spans() if s.parent is None]
    assert len({s.context.trace_id for s in sessions}) == 2


async def test_plain_hooks_record_sessions_turns_and_tools(
    model: ScriptedOpenAIServer,
    tmp_path: Path,
    weather: Weather,
    tracer_provider: TracerProvider,
    meter_provider: MeterProvider,
    span_exporter: InMemorySpanExporter,
) -> None:
    # No patching: hookscope's hooks in the config, next to a StopHook.
    sdk_hooks = [
        double_check_once,
        *hookscope_hooks(AGENT, tracer_provider=tracer_provider, meter_provider=meter_provider),
    ]
    config = agent_config(model, tmp_path, [weather.tool()], sdk_hooks=sdk_hooks)

    await chat(config, "weather in Oslo")

    # What hooks cannot see: token usage, and the task the tool runs in (its own spans start
    # a trace of their own). The turn span survives the StopHook's fresh TurnContext.
    turn = turn_span([tool_span("call_1", children=[])])
    del turn["attributes"]["gen_ai.usage.input_tokens"]
    del turn["attributes"]["gen_ai.usage.output_tokens"]
    assert span_tree(span_exporter.get_finished_spans()) == [
        session_span([turn], tool_calls=1),
        WEATHER_API,
    ]
