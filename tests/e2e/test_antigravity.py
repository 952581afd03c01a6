"""AntigravityInstrumentor end to end: real google-antigravity agents, real Go harness.

Each test runs real ``Agent`` sessions against a scripted OpenAI-compatible server (the
"model" makes exactly the tool calls the script says) and compares the whole span tree and
the metric points with what hookscope promises (DESIGN §5, §6).
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections import Counter
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
from hookscope.testing import metric_points, span_tree
from tests.otel_helpers import attrs
from tests.support.openai_server import Call, Reply, ScriptedOpenAIServer
from tests.support.zero_code import console_spans, run_instrumented

pytestmark = pytest.mark.e2e

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
    status: str | None = None,
    tool: str = "get_weather",
) -> dict[str, Any]:
    if status is None:  # a denied call is ERROR, like a blocked turn (README: span status)
        status = "ERROR" if outcome == "denied" else "UNSET"
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
                hookscope__policy__decided_by="antigravity.policy",
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
            hookscope__policy__decided_by="antigravity.harness",
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
            hookscope__hook__type="python",
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
            hookscope__hook__type="python",
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
            hookscope__hook__type="python",
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


# --- multi-turn sessions: every kind of decision in every turn, three sessions at once ----------

#: A tool span as the multi-turn tests compare it: tool, call id, tool outcome, decision,
#: policy outcome, rule, decided by, status.
ToolSummary = tuple[str, str, str, str, str, str, str, str]


def summary(spans: Sequence[Any]) -> list[list[tuple[str, list[ToolSummary]]]]:
    """Per session, per turn: the turn's outcome and its tool spans (sorted by call id)."""
    children: dict[int, list[Any]] = {}
    for span in spans:
        if span.parent is not None:
            children.setdefault(span.parent.span_id, []).append(span)

    def tool(span: Any) -> ToolSummary:
        a = span.attributes
        return (
            a["gen_ai.tool.name"],
            a.get("gen_ai.tool.call.id", ""),
            a["hookscope.tool.outcome"],
            a.get("hookscope.policy.decision", ""),
            a.get("hookscope.policy.outcome", ""),
            a.get("hookscope.policy.rule", ""),
            a.get("hookscope.policy.decided_by", ""),
            span.status.status_code.name,
        )

    sessions = sorted((s for s in spans if s.parent is None), key=lambda s: s.start_time)
    result = []
    for session in sessions:
        turns = sorted(children.get(session.context.span_id, []), key=lambda s: s.start_time)
        result.append(
            [
                (
                    turn.attributes["hookscope.turn.outcome"],
                    sorted(tool(c) for c in children.get(turn.context.span_id, [])),
                )
                for turn in turns
            ]
        )
    return result


class SdkHooks:
    """An SDK pre-tool decide hook and a post-tool hook that count their calls."""

    def __init__(self) -> None:
        self.pre = 0
        self.post = 0

    def hooks(self) -> list[Any]:
        owner = self

        class AllowAll(hooks.PreToolCallDecideHook):
            name = "allow_all_hook"

            async def run(self, context: Any, data: Any) -> types.HookResult:
                owner.pre += 1
                return types.HookResult(allow=True)

        class CountAfter(hooks.PostToolCallHook):
            name = "count_after"

            async def run(self, context: Any, data: Any) -> None:
                await asyncio.sleep(0.02)  # report late: after the call's step is done
                owner.post += 1

        return [AllowAll(), CountAfter()]


def multi_turn_config(
    model: ScriptedOpenAIServer, workdir: Path, sdk_hooks: Sequence[Any]
) -> LocalOpenAIAgentConfig:
    """Three turns; each makes calls a `when` rule, a static rule, ask-user or nothing decides."""
    workdir.mkdir(exist_ok=True)
    (workdir / "a.txt").write_text("alpha\n")
    (workdir / "b.txt").write_text("beta\n")
    key = f"three turns in {workdir.name}"
    model.scripts[key] = [
        Reply(
            tool_calls=[
                Call("get_weather", {"city": "Oslo"}, id="call_1"),
                Call("get_weather", {"city": "Paris"}, id="call_2"),
            ]
        ),
        Reply(text="Oslo is sunny; Paris is off limits."),
        Reply(
            tool_calls=[
                Call("view_file", {"AbsolutePath": str(workdir / "a.txt")}, id="call_1"),
                Call("delete_file", {"path": "a.txt"}, id="call_2"),
            ]
        ),
        Reply(text="Read a.txt; deleting is not allowed."),
        Reply(
            tool_calls=[
                Call("view_file", {"AbsolutePath": str(workdir / "b.txt")}, id="call_1"),
                Call("get_weather", {"city": "Paris"}, id="call_2"),
                Call("get_weather", {"city": "Rome"}, id="call_3"),
            ]
        ),
        Reply(text="Rome is sunny."),
    ]

    def get_weather(city: str) -> str:
        """Today's weather in a city."""
        return f"sunny in {city}"

    def delete_file(path: str) -> str:
        """Delete a file."""
        raise AssertionError("a statically denied tool must never run")

    async def approve_only_a(call: types.ToolCall) -> bool:
        return str(call.args.get("AbsolutePath", "")).endswith("a.txt")

    policies = [
        policy.deny("get_weather", when=lambda args: args.get("city") == "Paris", name="no-paris"),
        policy.deny("delete_file", name="no-deletes"),
        policy.ask_user("view_file", handler=approve_only_a, name="ask-to-read"),
        policy.allow_all(),
    ]
    return agent_config(
        model,
        workdir,
        [get_weather, delete_file],
        policies=policies,
        sdk_hooks=sdk_hooks,
        enabled_tools=[types.BuiltinTools.VIEW_FILE],
    )


ALLOWED_BY_HOOKS = ("allow", "allowed", "", "")
WHEN_DENIED = ("deny", "denied", "no-paris", "antigravity.policy")
STATIC_DENIED = ("deny", "denied", "no-deletes", "antigravity.harness")
ASKED = ("ask_user", "allowed", "ask-to-read", "antigravity.policy")
ASKED_REJECTED = ("ask_user", "denied", "ask-to-read", "antigravity.policy")

#: One session's turns: every real call once, with the decision that governed it.
THREE_TURNS = [
    (
        "completed",
        [
            ("get_weather", "call_1", "succeeded", *ALLOWED_BY_HOOKS, "UNSET"),
            ("get_weather", "call_2", "denied", *WHEN_DENIED, "ERROR"),
        ],
    ),
    (
        "completed",
        [
            ("delete_file", "call_2", "denied", *STATIC_DENIED, "ERROR"),
            ("view_file", "call_1", "succeeded", *ASKED, "UNSET"),
        ],
    ),
    (
        "completed",
        [
            ("get_weather", "call_2", "denied", *WHEN_DENIED, "ERROR"),
            ("get_weather", "call_3", "succeeded", *ALLOWED_BY_HOOKS, "UNSET"),
            ("view_file", "call_1", "denied", *ASKED_REJECTED, "ERROR"),
        ],
    ),
]
RUNS = 3


def without_call_id_of_static_denials(turns: list[Any]) -> list[Any]:
    """The harness denies statically before any callback names the call: no call id then."""
    return [
        (outcome, sorted((t[0], "", *t[2:]) if t[6] == "antigravity.harness" else t for t in tools))
        for outcome, tools in turns
    ]


@pytest.mark.parametrize("with_sdk_hooks", [True, False], ids=["sdk-hooks", "no-sdk-hooks"])
@pytest.mark.usefixtures("instrumented")
async def test_three_turn_sessions_record_every_call_once_with_its_decision(
    model: ScriptedOpenAIServer,
    tmp_path: Path,
    span_exporter: InMemorySpanExporter,
    metric_reader: InMemoryMetricReader,
    with_sdk_hooks: bool,
) -> None:
    # Three sessions at once (the SDK's callbacks race), reusing the same call ids in every
    # turn and every session; with SDK pre- and post-tool hooks for every call, or none.
    counted = [SdkHooks() for _ in range(RUNS)]
    configs = [
        multi_turn_config(model, tmp_path / f"run{i}", counted[i].hooks() if with_sdk_hooks else [])
        for i in range(RUNS)
    ]
    prompts = [[f"three turns in run{i}", "and again", "once more"] for i in range(RUNS)]

    answers = await asyncio.gather(*(chat(c, *p) for c, p in zip(configs, prompts, strict=True)))

    assert (
        answers
        == [
            [
                "Oslo is sunny; Paris is off limits.",
                "Read a.txt; deleting is not allowed.",
                "Rome is sunny.",
            ]
        ]
        * RUNS
    )
    spans = span_exporter.get_finished_spans()
    expected = THREE_TURNS if with_sdk_hooks else without_call_id_of_static_denials(THREE_TURNS)
    assert summary(spans) == [expected] * RUNS
    # The SDK's own hooks ran for every call that reached them (their spans count the same).
    hook_runs = (7, 3) if with_sdk_hooks else (0, 0)
    assert [(c.pre, c.post) for c in counted] == [hook_runs] * RUNS
    points = counters(metric_reader)
    calls = {
        ("get_weather", "succeeded"): 2,
        ("get_weather", "denied"): 2,
        ("delete_file", "denied"): 1,
        ("view_file", "succeeded"): 1,
        ("view_file", "denied"): 1,
    }
    assert points["hookscope.tool.calls"] == {
        attrs(
            gen_ai__agent__name=AGENT, gen_ai__tool__name=tool, hookscope__tool__outcome=outcome
        ): count * RUNS
        for (tool, outcome), count in calls.items()
    }
    decisions = {
        ("get_weather", "allow", "allowed", None): 2,
        ("get_weather", "deny", "denied", "no-paris"): 2,
        ("delete_file", "deny", "denied", "no-deletes"): 1,
        ("view_file", "ask_user", "allowed", "ask-to-read"): 1,
        ("view_file", "ask_user", "denied", "ask-to-read"): 1,
    }
    assert {
        tuple(
            dict(key).get(k)
            for k in (
                "gen_ai.tool.name",
                "hookscope.policy.decision",
                "hookscope.policy.outcome",
                "hookscope.policy.rule",
            )
        ): value
        for key, value in points["hookscope.policy.decisions"].items()
    } == {key: count * RUNS for key, count in decisions.items()}
    assert points["hookscope.turns"] == {
        attrs(gen_ai__agent__name=AGENT, hookscope__turn__outcome="completed"): 3 * RUNS
    }
    sessions = [s for s in spans if s.parent is None]
    assert {
        (
            s.attributes["hookscope.session.tool_calls"],
            s.attributes["hookscope.session.denied_calls"],
        )
        for s in sessions
    } == {(7, 4)}


# --- cancelled turns: by the SDK, by task cancellation, by a timeout ----------------------------


class SlowWeather:
    """A tool that blocks until released, and says when it started."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.release = asyncio.Event()

    def tool(self) -> Callable[..., Any]:
        async def get_weather(city: str) -> str:
            """Today's weather in a city, slowly."""
            self.started.set()
            await self.release.wait()
            return "sunny"

        return get_weather


def cancelled_tree(error_type: str, session_outcome: str) -> list[dict[str, Any]]:
    """Session → cancelled turn → the interrupted call, as each way of cancelling leaves it."""
    session = session_span([], tool_calls=1)
    session["attributes"]["hookscope.session.outcome"] = session_outcome
    if session_outcome != "completed":
        session["attributes"]["error.type"] = error_type
        session["status"] = "ERROR"
    turn = turn_span([])
    del turn["attributes"]["gen_ai.usage.input_tokens"]
    del turn["attributes"]["gen_ai.usage.output_tokens"]
    turn["attributes"]["hookscope.turn.outcome"] = "cancelled"
    turn["attributes"]["error.type"] = error_type
    turn["events"] = [("hookscope.pre_turn", {"hookscope.turn.allowed": True})]
    turn["status"] = "ERROR"
    call = tool_span(
        "call_1",
        outcome="failed",
        extra={"error.type": error_type},
        events=[("hookscope.pre_tool_call", ALLOWED)],
        children=[],
        status="ERROR",
    )
    turn["children"] = [call]
    session["children"] = [turn]
    return [session]


def without_usage(tree: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tree without token counts (a cancelled turn may or may not have reported them)."""
    for node in tree:
        for key in ("gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"):
            node["attributes"].pop(key, None)
        without_usage(node.get("children", []))
    return tree


@pytest.mark.usefixtures("instrumented")
async def test_a_turn_cancelled_by_the_sdk_is_cancelled(
    model: ScriptedOpenAIServer, tmp_path: Path, span_exporter: InMemorySpanExporter
) -> None:
    slow = SlowWeather()
    agent = Agent(agent_config(model, tmp_path, [slow.tool()]))
    try:
        async with agent:
            response = await agent.chat("weather in Oslo")
            await asyncio.wait_for(slow.started.wait(), SESSION_DEADLINE_S)
            await agent.conversation.cancel()
            with pytest.raises(types.AntigravityCancelledError):
                await asyncio.wait_for(response.text(), SESSION_DEADLINE_S)
            slow.release.set()
    finally:
        _close_harness_pipes(agent)

    tree = without_usage(span_tree(span_exporter.get_finished_spans()))
    assert tree == cancelled_tree("AntigravityCancelledError", "completed")


@pytest.mark.usefixtures("instrumented")
async def test_a_turn_whose_task_is_cancelled_is_cancelled(
    model: ScriptedOpenAIServer, tmp_path: Path, span_exporter: InMemorySpanExporter
) -> None:
    slow = SlowWeather()
    task = asyncio.create_task(
        chat(agent_config(model, tmp_path, [slow.tool()]), "weather in Oslo")
    )
    await asyncio.wait_for(slow.started.wait(), SESSION_DEADLINE_S)

    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    tree = without_usage(span_tree(span_exporter.get_finished_spans()))
    assert tree == cancelled_tree("CancelledError", "cancelled")


@pytest.mark.usefixtures("instrumented")
async def test_a_turn_that_times_out_is_cancelled(
    model: ScriptedOpenAIServer, tmp_path: Path, span_exporter: InMemorySpanExporter
) -> None:
    slow = SlowWeather()
    agent = Agent(agent_config(model, tmp_path, [slow.tool()]))

    async def read_with_a_timeout() -> None:
        async with agent:
            response = await agent.chat("weather in Oslo")
            await asyncio.wait_for(slow.started.wait(), SESSION_DEADLINE_S)
            await asyncio.wait_for(response.text(), 0.2)

    try:
        with pytest.raises(TimeoutError):
            await read_with_a_timeout()
    finally:
        _close_harness_pipes(agent)

    tree = without_usage(span_tree(span_exporter.get_finished_spans()))
    assert tree == cancelled_tree("TimeoutError", "cancelled")


# --- tool failures: recovered, unrecovered (Python and harness tools) ----------------------------


@pytest.mark.usefixtures("instrumented")
async def test_unrecovered_failures_end_their_spans_in_error_on_every_turn(
    model: ScriptedOpenAIServer,
    tmp_path: Path,
    span_exporter: InMemorySpanExporter,
    metric_reader: InMemoryMetricReader,
) -> None:
    # A Python tool's failure an on_tool_error hook recovers, one it does not, and a harness
    # tool's failure: only the recovered one leaves its span's status unset.
    @hooks.on_tool_error
    def recover_lookups(error: Exception) -> str | None:
        return "No such station." if "no station" in str(error) else None

    def get_weather(city: str) -> str:
        """Today's weather in a city."""
        if city == "Atlantis":
            raise LookupError(f"no station in {city}")
        raise RuntimeError("the weather service is down")

    model.scripts["failing tools"] = [
        Reply(tool_calls=[Call("get_weather", {"city": "Atlantis"}, id="call_1")]),
        Reply(text="No station."),
        Reply(tool_calls=[Call("get_weather", {"city": "Rome"}, id="call_1")]),
        Reply(text="The service is down."),
        Reply(tool_calls=[Call("view_file", {"AbsolutePath": str(tmp_path / "missing.txt")})]),
        Reply(text="No such file."),
    ]
    config = agent_config(
        model,
        tmp_path,
        [get_weather],
        sdk_hooks=[recover_lookups],
        enabled_tools=[types.BuiltinTools.VIEW_FILE],
    )

    for _ in range(RUNS):
        await chat(config, "failing tools", "again", "and a file")

    spans = span_exporter.get_finished_spans()
    assert (
        summary(spans)
        == [
            [
                (
                    "completed",
                    [("get_weather", "call_1", "recovered", "allow", "allowed", "", "", "UNSET")],
                ),
                (
                    "completed",
                    [("get_weather", "call_1", "failed", "allow", "allowed", "", "", "ERROR")],
                ),
                ("completed", [("view_file", "", "failed", "allow", "allowed", "", "", "ERROR")]),
            ]
        ]
        * RUNS
    )
    error_types = sorted(
        s.attributes.get("error.type", "") for s in spans if s.name.startswith("execute_tool")
    )
    assert error_types == sorted(["LookupError", "RuntimeError", "ToolExecutionError"] * RUNS)
    assert counters(metric_reader)["hookscope.tool.errors"] == {
        attrs(
            gen_ai__agent__name=AGENT,
            gen_ai__tool__name=tool,
            error__type=error,
            hookscope__recovery__recovered=recovered,
        ): RUNS
        for tool, error, recovered in [
            ("get_weather", "LookupError", True),
            ("get_weather", "RuntimeError", False),
            ("view_file", "ToolExecutionError", False),
        ]
    }


# --- zero code: opentelemetry-instrument -------------------------------------------------------


async def test_zero_code_path_records_one_span_per_call_in_every_turn(
    model: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    from tests.support import antigravity_app

    model.scripts[antigravity_app.PROMPT] = [
        Reply(tool_calls=[Call("get_weather", {"city": "Oslo"}, id="call_1")]),
        Reply(text="Sunny."),
        Reply(tool_calls=[Call("get_weather", {"city": "Paris"}, id="call_1")]),
        Reply(text="Not Paris."),
        Reply(tool_calls=[Call("delete_file", {"path": "x"}, id="call_1")]),
        Reply(text="Not deleting."),
    ]
    env = {
        "SCRIPTED_MODEL_URL": model.base_url,
        "APP_WORKDIR": str(tmp_path),
        "OTEL_SERVICE_NAME": "zero-code-app",
    }
    finished = await run_instrumented(
        "tests.support.antigravity_app", env=env, timeout=SESSION_DEADLINE_S
    )
    stdout, stderr = finished.stdout, finished.stderr

    assert finished.returncode == 0, stderr[-3000:]
    assert "Failed to auto initialize" not in stderr
    assert stdout.count("answer:") == 3
    spans = console_spans(stdout)
    tools = [
        (
            s["attributes"]["gen_ai.tool.name"],
            s["attributes"].get("gen_ai.tool.call.id", ""),
            s["attributes"]["hookscope.tool.outcome"],
            s["attributes"].get("hookscope.policy.rule", ""),
        )
        for s in spans
        if s["name"].startswith("execute_tool")
    ]
    assert sorted(tools) == [
        ("delete_file", "", "denied", "no-deletes"),
        ("get_weather", "call_1", "denied", "no-paris"),
        ("get_weather", "call_1", "succeeded", ""),
    ]
    assert sorted(s["name"] for s in spans if not s["name"].startswith("execute_tool")) == [
        "invoke_agent antigravity",
        "invoke_agent antigravity",
        "invoke_agent antigravity",
        "session antigravity",
    ]


# --- MCP: a stdio server of our own ---------------------------------------------------------


def mcp_server(**options: Any) -> types.McpStdioServer:
    """The test MCP server (tests/support/mcp_server.py), its tools given to the model up front."""
    return types.McpStdioServer(
        name="dict",
        command=sys.executable,
        args=["-m", "tests.support.mcp_server"],
        env={"PYTHONPATH": str(Path(__file__).parents[2])},
        force_all_tools_eager=True,
        **options,
    )


def mcp_config(
    model: ScriptedOpenAIServer, workdir: Path, policies: Sequence[Any]
) -> LocalOpenAIAgentConfig:
    workdir.mkdir(exist_ok=True)
    config = agent_config(model, workdir, [], policies=policies)
    return config.model_copy(update={"mcp_servers": [mcp_server()]})


def servers(spans: Sequence[Any]) -> set[Any]:
    return {
        s.attributes.get("hookscope.tool.server")
        for s in spans
        if s.name.startswith("execute_tool")
    }


@pytest.mark.usefixtures("instrumented")
async def test_mcp_calls_and_is_error_results_over_three_turns(
    model: ScriptedOpenAIServer, tmp_path: Path, span_exporter: InMemorySpanExporter
) -> None:
    # isError in a tools/call result is a failed call: ERROR status, like a raising tool.
    model.scripts["look words up"] = [
        Reply(tool_calls=[Call("mcp_dict_lookup", {"word": "hi"}, id="call_1")]),
        Reply(text="Looked up."),
        Reply(tool_calls=[Call("mcp_dict_explode", {}, id="call_1")]),
        Reply(text="It failed."),
        Reply(tool_calls=[Call("mcp_dict_lookup", {"word": "bye"}, id="call_1")]),
        Reply(text="Looked up again."),
    ]
    configs = [mcp_config(model, tmp_path / f"run{i}", [policy.allow_all()]) for i in range(RUNS)]

    answers = await asyncio.gather(*(chat(c, "look words up", "explode", "again") for c in configs))

    assert answers == [["Looked up.", "It failed.", "Looked up again."]] * RUNS
    spans = span_exporter.get_finished_spans()
    allowed = ("allow", "allowed", "", "")
    assert (
        summary(spans)
        == [
            [
                # An MCP tool is server/tool, as policies name it.
                ("completed", [("dict/lookup", "", "succeeded", *allowed, "UNSET")]),
                ("completed", [("dict/explode", "", "failed", *allowed, "ERROR")]),
                ("completed", [("dict/lookup", "", "succeeded", *allowed, "UNSET")]),
            ]
        ]
        * RUNS
    )
    assert servers(spans) == {"dict"}


@pytest.mark.usefixtures("instrumented")
async def test_a_server_wide_mcp_denial_names_the_server(
    model: ScriptedOpenAIServer, tmp_path: Path, span_exporter: InMemorySpanExporter
) -> None:
    model.scripts["no dictionaries"] = [
        Reply(tool_calls=[Call("mcp_dict_lookup", {"word": "hi"}, id="call_1")]),
        Reply(text="Denied."),
        Reply(tool_calls=[Call("mcp_dict_explode", {}, id="call_1")]),
        Reply(text="Denied again."),
    ]
    policies = [*policy.deny(mcp_server(), name="no-dict"), policy.allow_all()]
    configs = [mcp_config(model, tmp_path / f"run{i}", policies) for i in range(RUNS)]

    answers = await asyncio.gather(*(chat(c, "no dictionaries", "again") for c in configs))

    assert answers == [["Denied.", "Denied again."]] * RUNS
    spans = span_exporter.get_finished_spans()
    denied = ("deny", "denied", "no-dict", "antigravity.harness")
    assert (
        summary(spans)
        == [
            [
                ("completed", [("dict/_unknown", "", "denied", *denied, "ERROR")]),
                ("completed", [("dict/_unknown", "", "denied", *denied, "ERROR")]),
            ]
        ]
        * RUNS
    )
    assert servers(spans) == {"dict"}


# --- wildcard static denials ------------------------------------------------------------------


@pytest.mark.parametrize("with_sdk_hooks", [True, False], ids=["sdk-hooks", "no-sdk-hooks"])
@pytest.mark.usefixtures("instrumented")
async def test_wildcard_denials_are_named_when_anything_names_the_call(
    model: ScriptedOpenAIServer,
    tmp_path: Path,
    span_exporter: InMemorySpanExporter,
    metric_reader: InMemoryMetricReader,
    with_sdk_hooks: bool,
) -> None:
    # A `*` rule names no tool. An SDK pre-tool hook's callback (the harness asks it before
    # its static rules) names the call and its id; with no callback nothing does.
    model.scripts["deny everything"] = [
        Reply(tool_calls=[Call("get_weather", {"city": "Oslo"}, id="call_1")]),
        Reply(text="Denied."),
        Reply(tool_calls=[Call("get_weather", {"city": "Rome"}, id="call_2")]),
        Reply(text="Denied again."),
        Reply(tool_calls=[Call("get_weather", {"city": "Oslo"}, id="call_1")]),
        Reply(text="Still denied."),
    ]

    def get_weather(city: str) -> str:
        """Today's weather in a city."""
        raise AssertionError("denied by a wildcard rule; never runs")

    for i in range(RUNS):
        (tmp_path / f"run{i}").mkdir()
    counted = [SdkHooks() for _ in range(RUNS)]
    configs = [
        agent_config(
            model,
            tmp_path / f"run{i}",
            [get_weather],
            policies=[policy.deny("*", name="nothing")],
            sdk_hooks=counted[i].hooks() if with_sdk_hooks else [],
        )
        for i in range(RUNS)
    ]

    await asyncio.gather(*(chat(c, "deny everything", "again", "once more") for c in configs))

    denied = ("deny", "denied", "nothing", "antigravity.harness", "ERROR")
    if with_sdk_hooks:
        named = [
            ("get_weather", call_id, "denied", *denied)
            for call_id in ("call_1", "call_2", "call_1")
        ]
    else:
        named = [("_unknown", "", "denied", *denied)] * 3
    assert (
        summary(span_exporter.get_finished_spans())
        == [[("completed", [tool]) for tool in named]] * RUNS
    )
    tool = "get_weather" if with_sdk_hooks else "_unknown"
    assert counters(metric_reader)["hookscope.tool.calls"] == tool_calls("denied", 3 * RUNS, tool)


@pytest.mark.usefixtures("instrumented")
async def test_parallel_calls_of_one_harness_tool_keep_their_own_decisions(
    model: ScriptedOpenAIServer, tmp_path: Path, span_exporter: InMemorySpanExporter
) -> None:
    # Two view_file calls in one model reply: their steps carry no call id, so each is matched
    # to its ask-user request by tool and arguments (a.txt approved, b.txt rejected).
    counted = [SdkHooks() for _ in range(RUNS)]
    configs = []
    for i in range(RUNS):
        workdir = tmp_path / f"run{i}"
        config = multi_turn_config(model, workdir, counted[i].hooks())
        model.scripts[f"two files in run{i}"] = [
            Reply(
                tool_calls=[
                    Call("view_file", {"AbsolutePath": str(workdir / "b.txt")}, id="call_1"),
                    Call("view_file", {"AbsolutePath": str(workdir / "a.txt")}, id="call_2"),
                ]
            ),
            Reply(text="Read one of two."),
            Reply(
                tool_calls=[
                    Call("view_file", {"AbsolutePath": str(workdir / "a.txt")}, id="call_1"),
                    Call("view_file", {"AbsolutePath": str(workdir / "b.txt")}, id="call_2"),
                ]
            ),
            Reply(text="Read one of two again."),
        ]
        configs.append(config)

    await asyncio.gather(*(chat(c, f"two files in run{i}", "again") for i, c in enumerate(configs)))

    approved = ("view_file", "succeeded", *ASKED, "UNSET")
    rejected = ("view_file", "denied", *ASKED_REJECTED, "ERROR")
    assert (
        summary(span_exporter.get_finished_spans())
        == [
            [
                (
                    "completed",
                    [
                        (rejected[0], "call_1", *rejected[1:]),
                        (approved[0], "call_2", *approved[1:]),
                    ],
                ),
                (
                    "completed",
                    [
                        (approved[0], "call_1", *approved[1:]),
                        (rejected[0], "call_2", *rejected[1:]),
                    ],
                ),
            ]
        ]
        * RUNS
    )


# --- an agent run inside another agent's tool --------------------------------------------------


def names_tree(spans: Sequence[Any]) -> list[Any]:
    """Traces as nested (name, children) tuples, siblings in start order."""
    children: dict[int, list[Any]] = {}
    ids = {s.context.span_id for s in spans}
    for span in spans:
        if span.parent is not None and span.parent.span_id in ids:
            children.setdefault(span.parent.span_id, []).append(span)

    def node(span: Any) -> Any:
        kids = sorted(children.get(span.context.span_id, []), key=lambda s: s.start_time)
        return (span.name, [node(k) for k in kids]) if kids else span.name

    roots = [s for s in spans if s.parent is None or s.parent.span_id not in ids]
    return [node(r) for r in sorted(roots, key=lambda s: s.start_time)]


@pytest.mark.parametrize("nest", [True, False], ids=["nested", "own-trace"])
async def test_an_agent_run_in_a_tool_nests_under_the_tool_when_asked(
    model: ScriptedOpenAIServer,
    tmp_path: Path,
    tracer_provider: TracerProvider,
    meter_provider: MeterProvider,
    span_exporter: InMemorySpanExporter,
    nest: bool,
) -> None:
    instrumentor = AntigravityInstrumentor()
    instrumentor.instrument(
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
        agent_name=AGENT,
        nest_sessions=nest,
    )
    inner_dir, outer_dir = tmp_path / "inner", tmp_path / "outer"
    inner_dir.mkdir()
    outer_dir.mkdir()
    model.scripts["ask the expert"] = [
        Reply(tool_calls=[Call("ask_expert", {"question": "meaning"}, id="call_1")]),
        Reply(text="The expert says 42."),
    ]
    model.scripts["expert question"] = [Reply(text="42")]

    async def ask_expert(question: str) -> str:
        """Ask an expert agent."""
        (answer,) = await chat(agent_config(model, inner_dir, []), f"expert question: {question}")
        return str(answer)

    try:
        for _ in range(RUNS):
            answers = await chat(agent_config(model, outer_dir, [ask_expert]), "ask the expert")
            assert answers == ["The expert says 42."]
    finally:
        instrumentor.uninstrument()

    spans = span_exporter.get_finished_spans()
    inner_tree = ("session weather-bot", ["invoke_agent weather-bot"])
    if nest:
        tool = ("execute_tool ask_expert", [inner_tree])
        expected = [("session weather-bot", [("invoke_agent weather-bot", [tool])])] * RUNS
    else:
        outer = ("session weather-bot", [("invoke_agent weather-bot", ["execute_tool ask_expert"])])
        expected = [outer, inner_tree] * RUNS
        # Each inner session links to the tool call that ran it.
        linked = [
            link.context.span_id
            for s in spans
            if s.name == "session weather-bot"
            for link in s.links
        ]
        tools = [s.context.span_id for s in spans if s.name == "execute_tool ask_expert"]
        assert sorted(linked) == sorted(tools)
    assert sorted(map(repr, names_tree(spans))) == sorted(map(repr, expected))


# --- subagents ------------------------------------------------------------------------------


def subagent_config(model: ScriptedOpenAIServer, workdir: Path) -> LocalOpenAIAgentConfig:
    """An agent that may delegate to the `weatherman` subagent, which has get_weather."""
    workdir.mkdir(exist_ok=True)

    def get_weather(city: str) -> str:
        """Today's weather in a city."""
        return f"sunny in {city}"

    weatherman = types.SubagentConfig(
        name="weatherman", description="Looks the weather up.", tools=[get_weather]
    )
    config = agent_config(
        model, workdir, [get_weather], enabled_tools=[types.BuiltinTools.INVOKE_SUBAGENT]
    )
    return config.model_copy(update={"subagents": [weatherman]})


def delegation(*cities: str) -> Call:
    entries = [
        {"TypeName": "weatherman", "Role": "Weather Researcher", "Prompt": f"forecast for {city}"}
        for city in cities
    ]
    return Call("invoke_subagent", {"Subagents": entries}, id="call_1")


def subagent_scripts(model: ScriptedOpenAIServer, key: str, *cities: str) -> None:
    # The main agent is asked again each time a subagent reports back: enough replies for it.
    model.scripts[key] = [Reply(tool_calls=[delegation(*cities)])] + [Reply(text="Delegated.")] * 4
    for city in cities:
        # A subagent may be asked again when the main agent messages it: spare replies.
        model.scripts[f"forecast for {city}"] = [
            Reply(tool_calls=[Call("get_weather", {"city": city}, id="call_9")]),
            *[Reply(text=f"Sunny in {city}.")] * 4,
        ]


def without_late_reports(trees: list[Any]) -> list[Any]:
    """Session trees without the main agent's empty turns after its first.

    A subagent's report can reach the main agent after its turn went idle; the harness then
    runs it again (one model call, no tool calls), which is a turn of its own. Whether that
    happens before the session ends is a race; such turns must hold nothing, though.
    """
    result = []
    for name, turns in trees:
        first, *later = turns
        assert set(later) <= {"invoke_agent weather-bot"}, later
        result.append((name, [first]))
    return result


#: How long to wait for the main agent to go idle after parallel subagents reported back.
PARALLEL_IDLE_DEADLINE_S = 15.0


async def delegate_in_parallel(config: LocalOpenAIAgentConfig) -> None:
    """One session whose turn starts parallel subagents.

    With parallel subagents the 0.1.22 harness now and then never reports the main trajectory
    idle after they reported back (seen without hookscope too); the session then ends after a
    deadline instead of hanging the suite. The subagents' runs are over by then either way.
    """
    agent = Agent(config)
    try:
        async with agent:
            response = await agent.chat("delegate the forecast")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(response.text(), PARALLEL_IDLE_DEADLINE_S)
    finally:
        _close_harness_pipes(agent)


@pytest.mark.parametrize("cities", [("Oslo",), ("Oslo", "Rome")], ids=["single", "parallel"])
@pytest.mark.usefixtures("instrumented")
async def test_each_subagent_run_is_an_agent_span_under_the_delegating_call(
    model: ScriptedOpenAIServer,
    tmp_path: Path,
    span_exporter: InMemorySpanExporter,
    cities: tuple[str, ...],
) -> None:
    # Parallel subagents reuse one call id (call_9) at the same time: each keeps its own.
    subagent_scripts(model, "delegate the forecast", *cities)
    configs = [subagent_config(model, tmp_path / f"run{i}") for i in range(RUNS)]

    if len(cities) == 1:
        await asyncio.gather(*(chat(c, "delegate the forecast") for c in configs))
    else:
        for config in configs:
            await delegate_in_parallel(config)

    spans = span_exporter.get_finished_spans()
    run = ("invoke_agent weatherman", ["execute_tool get_weather"])
    delegating = ("execute_tool invoke_subagent", [run] * len(cities))
    sessions = without_late_reports(names_tree(spans))
    assert (
        sessions == [("session weather-bot", [("invoke_agent weather-bot", [delegating])])] * RUNS
    )
    main_trajectories = {
        s.attributes["gen_ai.conversation.id"] for s in spans if s.name == "session weather-bot"
    }
    runs = [s for s in spans if s.name == "invoke_agent weatherman"]
    assert {s.attributes["gen_ai.agent.name"] for s in runs} == {"weatherman"}
    subagent_trajectories = {s.attributes["gen_ai.conversation.id"] for s in runs}
    assert len(subagent_trajectories) == len(cities) * RUNS
    assert not subagent_trajectories & main_trajectories
    calls = [s for s in spans if s.name == "execute_tool get_weather"]
    assert sorted(s.attributes["gen_ai.agent.name"] for s in calls) == ["weatherman"] * len(calls)
    # Subagents' calls count among the session's calls; their runs are no session turns.
    assert {
        s.attributes["hookscope.session.tool_calls"]
        for s in spans
        if s.name == "session weather-bot"
    } == {1 + len(cities)}
    # Each session counts its own turns; concurrent sessions end in any order, so pair them
    # by span, not by position.
    turns_of = Counter(
        s.parent.span_id for s in spans if s.name == "invoke_agent weather-bot" and s.parent
    )
    main_sessions = [s for s in spans if s.name == "session weather-bot"]
    assert [s.attributes["hookscope.session.turns"] for s in main_sessions] == [
        turns_of[s.context.span_id] for s in main_sessions
    ]


@pytest.mark.parametrize("with_sdk_hooks", [True, False], ids=["sdk-hooks", "no-sdk-hooks"])
@pytest.mark.usefixtures("instrumented")
async def test_a_subagent_is_named_by_the_call_that_started_it_when_python_saw_it(
    model: ScriptedOpenAIServer,
    tmp_path: Path,
    span_exporter: InMemorySpanExporter,
    with_sdk_hooks: bool,
) -> None:
    # Two subagent types: only the call's arguments (shown to an SDK pre-tool hook) say which.
    subagent_scripts(model, "ask the forecaster", "Oslo")
    call = Call(
        "invoke_subagent",
        {
            "Subagents": [
                {"TypeName": "forecaster", "Role": "Forecaster", "Prompt": "forecast for Oslo"}
            ]
        },
        id="call_1",
    )
    model.scripts["ask the forecaster"][0] = Reply(tool_calls=[call])
    for i in range(RUNS):
        config = subagent_config(model, tmp_path / f"run{i}")
        forecaster = types.SubagentConfig(name="forecaster", description="Forecasts.")
        hooks_ = SdkHooks().hooks() if with_sdk_hooks else []
        config = config.model_copy(
            update={"subagents": [*config.subagents, forecaster], "hooks": hooks_}
        )
        await chat(config, "ask the forecaster")

    spans = span_exporter.get_finished_spans()
    runs = [s.name for s in spans if s.name.startswith("invoke_agent ")]
    expected = "forecaster" if with_sdk_hooks else "subagent"
    # Main turns aside (a late report may add one), one run per session, named.
    assert [name for name in runs if name != "invoke_agent weather-bot"] == [
        f"invoke_agent {expected}"
    ] * RUNS
