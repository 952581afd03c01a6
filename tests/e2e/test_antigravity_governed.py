"""hookscope governing real google-antigravity agents: the runner's hooks and policy decide.

Real ``Agent`` sessions and the real Go harness against the scripted model, governed by a
:class:`~hookscope.HookRunner` through ``AntigravityInstrumentor().instrument(runner=...)`` or
``govern(config, runner)``: policy denials, hook denials, modified arguments, asks approved and
rejected, failing and recovered calls, the SDK's own static rules beside them, three sessions
at once. Span trees and metric totals are compared whole with what hookscope promises.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from google.antigravity import LocalOpenAIAgentConfig, types
from google.antigravity.hooks import policy as ag_policy
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from hookscope import HookResult, HookRunner, ToolCall, hooks
from hookscope.builtins import RecoverErrors
from hookscope.integrations.antigravity import AntigravityInstrumentor, govern
from hookscope.policy import allow_all, ask_user, deny, enforce
from hookscope.telemetry import OTelHook
from hookscope.testing import metric_points, span_tree
from tests.e2e.test_antigravity import (
    AGENT,
    SESSION_DEADLINE_S,
    agent_config,
    chat,
    counters,
    mcp_config,
    model,
    session_span,
    summary,
    tool_span,
    turn_span,
)
from tests.otel_helpers import attrs
from tests.support.openai_server import Call, Reply, ScriptedOpenAIServer
from tests.support.zero_code import console_spans, run_instrumented

pytestmark = pytest.mark.e2e
__all__ = ["model"]  # the scripted model fixture, shared with the observed-only tests

RUNS = 3

# --- the governing runner: a policy, a hook that denies, one that modifies, a recovery ------


@hooks.pre_tool_call_decide
def title_case(call: ToolCall) -> HookResult | None:
    """Modifies: city names reach the tool in title case (registered before the policy)."""
    city = call.args.get("city")
    if isinstance(city, str) and city != city.strip().title():
        return HookResult(modified_args={"city": city.strip().title()})
    return None


@hooks.pre_tool_call_decide
def no_moon(call: ToolCall) -> HookResult | None:
    """Denies: no trips to the Moon."""
    if call.args.get("city") == "Moon":
        return HookResult.deny("no trips to the Moon")
    return None


async def approve_only_a(call: ToolCall) -> bool:
    """The ask rule's handler: the user approves reading a.txt, nothing else."""
    return str(call.args.get("AbsolutePath", "")).endswith("a.txt")


def governing_runner() -> HookRunner:
    return HookRunner(
        [
            title_case,
            enforce(
                [
                    deny(
                        "get_weather",
                        when=lambda args: args.get("city") == "Rome",
                        name="no-rome",
                        reason="Rome is off limits",
                    ),
                    ask_user("view_file", approve_only_a, name="ask-to-read"),
                    allow_all(),
                ]
            ),
            no_moon,
            RecoverErrors(errors=(TimeoutError,), value="no data for Narnia"),
        ]
    )


class Tools:
    """The agent's Python tools; ``seen`` is every city ``get_weather`` received."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def all(self) -> list[Callable[..., str]]:
        seen = self.seen

        def get_weather(city: str) -> str:
            """Today's weather in a city."""
            seen.append(city)
            if city == "Atlantis":
                raise LookupError("no station")
            if city == "Narnia":
                raise TimeoutError("the station is slow")
            return f"sunny in {city}"

        def delete_file(path: str) -> str:
            """Delete a file."""
            raise AssertionError("the SDK's static rule denies it; it never runs")

        return [get_weather, delete_file]


def governed_config(
    model: ScriptedOpenAIServer, workdir: Path, tools: Tools
) -> LocalOpenAIAgentConfig:
    """Three turns of calls each decided by someone else; the SDK's own policies stay."""
    workdir.mkdir(exist_ok=True)
    (workdir / "a.txt").write_text("alpha\n")
    (workdir / "b.txt").write_text("beta\n")
    model.scripts[f"governed {workdir.name}"] = [
        Reply(
            tool_calls=[
                Call("get_weather", {"city": "Oslo"}, id="call_1"),
                Call("get_weather", {"city": "Rome"}, id="call_2"),
                Call("get_weather", {"city": "Moon"}, id="call_3"),
            ]
        ),
        Reply(text="Oslo only."),
        Reply(
            tool_calls=[
                Call("get_weather", {"city": " paris"}, id="call_1"),
                Call("get_weather", {"city": "Atlantis"}, id="call_2"),
                Call("get_weather", {"city": "Narnia"}, id="call_3"),
            ]
        ),
        Reply(text="Paris is sunny."),
        Reply(
            tool_calls=[
                Call("view_file", {"AbsolutePath": str(workdir / "a.txt")}, id="call_1"),
                Call("view_file", {"AbsolutePath": str(workdir / "b.txt")}, id="call_2"),
                Call("delete_file", {"path": "a.txt"}, id="call_3"),
            ]
        ),
        Reply(text="Read a.txt."),
    ]
    return agent_config(
        model,
        workdir,
        tools.all(),
        policies=[ag_policy.deny("delete_file", name="no-deletes"), ag_policy.allow_all()],
        enabled_tools=[types.BuiltinTools.VIEW_FILE],
    )


@pytest.fixture
def runner() -> HookRunner:
    return governing_runner()


@pytest.fixture
def governing(
    runner: HookRunner, tracer_provider: TracerProvider, meter_provider: MeterProvider
) -> Iterator[AntigravityInstrumentor]:
    instrumentor = AntigravityInstrumentor()
    instrumentor.instrument(
        runner=runner,
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
        agent_name=AGENT,
    )
    yield instrumentor
    if instrumentor.is_instrumented_by_opentelemetry:
        instrumentor.uninstrument()


PROMPTS = ("again", "once more")
BY_POLICY = "PolicyEnforcer"
ALLOWED = ("allow", "allowed", "allow_all", BY_POLICY)

#: One governed session's turns: every real call once, with the decision that governed it.
GOVERNED_TURNS = [
    (
        "completed",
        [
            ("get_weather", "call_1", "succeeded", *ALLOWED, "UNSET"),
            ("get_weather", "call_2", "denied", "deny", "denied", "no-rome", BY_POLICY, "ERROR"),
            ("get_weather", "call_3", "denied", "deny", "denied", "", "no_moon", "ERROR"),
        ],
    ),
    (
        "completed",
        [
            ("get_weather", "call_1", "succeeded", *ALLOWED, "UNSET"),
            ("get_weather", "call_2", "failed", *ALLOWED, "ERROR"),
            ("get_weather", "call_3", "recovered", *ALLOWED, "UNSET"),
        ],
    ),
    (
        "completed",
        [
            (
                "delete_file",
                "call_3",
                "denied",
                "deny",
                "denied",
                "no-deletes",
                "antigravity.harness",
                "ERROR",
            ),
            (
                "view_file",
                "call_1",
                "succeeded",
                "ask_user",
                "allowed",
                "ask-to-read",
                BY_POLICY,
                "UNSET",
            ),
            (
                "view_file",
                "call_2",
                "denied",
                "ask_user",
                "denied",
                "ask-to-read",
                BY_POLICY,
                "ERROR",
            ),
        ],
    ),
]


def tool_messages(model: ScriptedOpenAIServer) -> dict[str, set[str]]:
    """What the model read back for each tool call id, per content's last line."""
    found: dict[str, set[str]] = {}
    for request in model.requests:
        for message in request["messages"]:
            if message.get("role") == "tool":
                last = str(message["content"]).strip().splitlines()[-1]
                found.setdefault(message["tool_call_id"], set()).add(last)
    return found


@pytest.mark.usefixtures("governing")
async def test_governed_sessions_are_decided_by_the_runner_beside_the_sdk_policies(
    model: ScriptedOpenAIServer,
    tmp_path: Path,
    span_exporter: InMemorySpanExporter,
    metric_reader: InMemoryMetricReader,
) -> None:
    # Three sessions at once, reusing call ids in every turn: the runner's policy denies,
    # its hook denies, another modifies, its ask rule approves and rejects, its recovery
    # recovers; the SDK's own static rule still denies delete_file, and is named.
    tools = [Tools() for _ in range(RUNS)]
    configs = [governed_config(model, tmp_path / f"run{i}", tools[i]) for i in range(RUNS)]

    answers = await asyncio.gather(
        *(chat(c, f"governed run{i}", *PROMPTS) for i, c in enumerate(configs))
    )

    assert answers == [["Oslo only.", "Paris is sunny.", "Read a.txt."]] * RUNS
    # Denied calls never ran; the modified one ran with the hook's arguments.
    assert [sorted(t.seen) for t in tools] == [["Atlantis", "Narnia", "Oslo", "Paris"]] * RUNS
    spans = span_exporter.get_finished_spans()
    assert summary(spans) == [GOVERNED_TURNS] * RUNS
    points = counters(metric_reader)
    calls = {
        ("get_weather", "succeeded"): 2,
        ("get_weather", "denied"): 2,
        ("get_weather", "failed"): 1,
        ("get_weather", "recovered"): 1,
        ("view_file", "succeeded"): 1,
        ("view_file", "denied"): 1,
        ("delete_file", "denied"): 1,
    }
    assert points["hookscope.tool.calls"] == {
        attrs(
            gen_ai__agent__name=AGENT, gen_ai__tool__name=tool, hookscope__tool__outcome=outcome
        ): count * RUNS
        for (tool, outcome), count in calls.items()
    }
    decisions = {
        ("get_weather", "allow", "allowed", "allow_all"): 4,
        ("get_weather", "deny", "denied", "no-rome"): 1,
        ("get_weather", "deny", "denied", None): 1,
        ("view_file", "ask_user", "allowed", "ask-to-read"): 1,
        ("view_file", "ask_user", "denied", "ask-to-read"): 1,
        ("delete_file", "deny", "denied", "no-deletes"): 1,
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
    assert points["hookscope.tool.errors"] == {
        attrs(
            gen_ai__agent__name=AGENT,
            gen_ai__tool__name="get_weather",
            error__type=error,
            hookscope__recovery__recovered=recovered,
        ): RUNS
        for error, recovered in [("LookupError", False), ("TimeoutError", True)]
    }
    assert points["hookscope.turns"] == {
        attrs(gen_ai__agent__name=AGENT, hookscope__turn__outcome="completed"): 3 * RUNS
    }
    sessions = [s for s in spans if s.parent is None]
    assert {
        (
            s.attributes["hookscope.session.tool_calls"],
            s.attributes["hookscope.session.denied_calls"],
            s.attributes["hookscope.session.tool_errors"],
        )
        for s in sessions
    } == {(9, 4, 2)}
    # The model read each verdict the SDK's native way (denials, the recovery's value).
    read = tool_messages(model)
    assert any("Rome is off limits" in m for m in read["call_2"])
    assert any("no trips to the Moon" in m for m in read["call_3"])
    assert any("no data for Narnia" in m for m in read["call_3"])
    assert any('Denied by policy "no-deletes"' in m for m in read["call_3"])


@pytest.mark.usefixtures("governing")
async def test_a_governed_turn_is_one_span_tree_with_the_runner_s_decisions(
    model: ScriptedOpenAIServer,
    tmp_path: Path,
    span_exporter: InMemorySpanExporter,
    metric_reader: InMemoryMetricReader,
) -> None:
    tools = Tools()
    config = governed_config(model, tmp_path / "one", tools)

    answers = await chat(config, "governed one")

    assert answers == ["Oslo only."]
    allowed = {
        "hookscope.policy.bucket": 8,
        "hookscope.policy.decided_by": BY_POLICY,
        "hookscope.policy.decision": "allow",
        "hookscope.policy.outcome": "allowed",
        "hookscope.policy.reason": "every tool is allowed",
        "hookscope.policy.rule": "allow_all",
    }
    by_policy = {
        "hookscope.policy.bucket": 0,
        "hookscope.policy.decided_by": BY_POLICY,
        "hookscope.policy.decision": "deny",
        "hookscope.policy.outcome": "denied",
        "hookscope.policy.reason": "Rome is off limits",
        "hookscope.policy.rule": "no-rome",
    }
    by_hook = {
        "hookscope.policy.decided_by": "no_moon",
        "hookscope.policy.decision": "deny",
        "hookscope.policy.outcome": "denied",
        "hookscope.policy.reason": "no trips to the Moon",
    }
    denied = {"outcome": "denied", "children": []}
    assert span_tree(span_exporter.get_finished_spans()) == [
        session_span(
            [
                turn_span(
                    [
                        tool_span(
                            "call_1",
                            policy_attributes=allowed,
                            events=[
                                ("hookscope.pre_tool_call", allowed),
                                ("hookscope.post_tool_call", {}),
                            ],
                            children=[],
                        ),
                        tool_span(
                            "call_2",
                            policy_attributes=by_policy,
                            events=[("hookscope.pre_tool_call", by_policy)],
                            **denied,
                        ),
                        tool_span(
                            "call_3",
                            policy_attributes=by_hook,
                            events=[("hookscope.pre_tool_call", by_hook)],
                            **denied,
                        ),
                    ]
                )
            ],
            tool_calls=3,
            denied=2,
        )
    ]
    # The runner's hooks are timed as hooks of the one pre_tool_call dispatch per call.
    hook_points = metric_points(metric_reader.get_metrics_data(), ["hookscope.hook.duration"])
    assert hook_points["hookscope.hook.duration"] == {
        attrs(
            gen_ai__agent__name=AGENT,
            hookscope__hook__name=name,
            hookscope__hook__event="pre_tool_call",
            hookscope__hook__type="python",
        ): count
        for name, count in [("title_case", 3), (BY_POLICY, 3), ("no_moon", 2)]
    }


# --- the SDK's static rules, named when hookscope governs ----------------------------------


async def test_static_wildcard_and_server_wide_denials_are_named_by_tool_and_call_id(
    model: ScriptedOpenAIServer,
    tmp_path: Path,
    tracer_provider: TracerProvider,
    meter_provider: MeterProvider,
    span_exporter: InMemorySpanExporter,
    metric_reader: InMemoryMetricReader,
) -> None:
    # With no governing hook these are `execute_tool _unknown` without a call id (the
    # observed-only tests); governed, the harness asks hookscope first, and names them.
    model.scripts["deny everything"] = [
        Reply(tool_calls=[Call("get_weather", {"city": "Oslo"}, id="call_1")]),
        Reply(text="Denied."),
        Reply(tool_calls=[Call("get_weather", {"city": "Rome"}, id="call_2")]),
        Reply(text="Denied again."),
    ]
    model.scripts["no dictionaries"] = [
        Reply(tool_calls=[Call("mcp_dict_lookup", {"word": "hi"}, id="call_1")]),
        Reply(text="Denied."),
        Reply(tool_calls=[Call("mcp_dict_explode", {}, id="call_2")]),
        Reply(text="Denied again."),
    ]
    tools = Tools()
    for i in range(RUNS):
        (tmp_path / f"w{i}").mkdir()
    wildcard = [
        agent_config(
            model,
            tmp_path / f"w{i}",
            tools.all()[:1],
            policies=[ag_policy.deny("*", name="nothing")],
        )
        for i in range(RUNS)
    ]
    from tests.e2e.test_antigravity import mcp_server

    server_wide = [
        mcp_config(
            model,
            tmp_path / f"m{i}",
            [*ag_policy.deny(mcp_server(), name="no-dict"), ag_policy.allow_all()],
        )
        for i in range(RUNS)
    ]
    instrumentor = AntigravityInstrumentor()
    instrumentor.instrument(
        runner=HookRunner(),  # governs nothing itself: the SDK's rules decide
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
        agent_name=AGENT,
    )
    try:
        await asyncio.gather(
            *(chat(c, "deny everything", "again") for c in wildcard),
            *(chat(c, "no dictionaries", "again") for c in server_wide),
        )
    finally:
        instrumentor.uninstrument()

    assert tools.seen == []
    harness = ("deny", "denied")
    trees = summary(span_exporter.get_finished_spans())
    expected_wildcard = [
        (
            "completed",
            [
                (
                    "get_weather",
                    call_id,
                    "denied",
                    *harness,
                    "nothing",
                    "antigravity.harness",
                    "ERROR",
                )
            ],
        )
        for call_id in ("call_1", "call_2")
    ]
    expected_server = [
        (
            "completed",
            [(tool, call_id, "denied", *harness, "no-dict", "antigravity.harness", "ERROR")],
        )
        for tool, call_id in (("dict/lookup", "call_1"), ("dict/explode", "call_2"))
    ]
    assert sorted(trees) == sorted([expected_wildcard] * RUNS + [expected_server] * RUNS)
    servers = {
        (s.attributes["gen_ai.tool.name"], s.attributes.get("hookscope.tool.server"))
        for s in span_exporter.get_finished_spans()
        if s.name.startswith("execute_tool")
    }
    assert servers == {("get_weather", None), ("dict/lookup", "dict"), ("dict/explode", "dict")}
    assert "_unknown" not in str(counters(metric_reader)["hookscope.tool.calls"])


# --- uninstrument, govern() without instrumenting, zero code ---------------------------------


async def test_uninstrument_stops_governing_and_tracing_new_agents(
    model: ScriptedOpenAIServer,
    tmp_path: Path,
    runner: HookRunner,
    governing: AntigravityInstrumentor,
    span_exporter: InMemorySpanExporter,
) -> None:
    await chat(governed_config(model, tmp_path / "before", Tools()), "governed before")
    governing.uninstrument()
    span_exporter.clear()
    tools = Tools()

    answers = await chat(governed_config(model, tmp_path / "after", tools), "governed after")

    # Rome and the Moon are no longer denied, nothing is traced, the OTelHook the
    # instrumentor added to the runner is gone again.
    assert answers == ["Oslo only."]
    assert sorted(tools.seen) == ["Moon", "Oslo", "Rome"]
    assert span_exporter.get_finished_spans() == ()
    assert runner.notifier.observers == ()


async def test_govern_without_instrumenting_governs_and_records_what_hooks_see(
    model: ScriptedOpenAIServer,
    tmp_path: Path,
    runner: HookRunner,
    tracer_provider: TracerProvider,
    meter_provider: MeterProvider,
    span_exporter: InMemorySpanExporter,
) -> None:
    # No patching: the config's hooks govern, and the runner's own OTelHook records what the
    # SDK's hooks see. A call the SDK's static rule denies after hookscope allowed it is not
    # reported to any hook: it ends with its turn, interrupted. An error reaches hooks as the
    # SDK's ToolExecutionError, so RecoverErrors(TimeoutError) does not recover it here.
    runner.observe(OTelHook(tracer_provider, meter_provider, agent_name=AGENT))
    tools = Tools()
    config = govern(governed_config(model, tmp_path / "plain", tools), runner, agent_name=AGENT)

    answers = await chat(config, "governed plain", *PROMPTS)

    assert answers == ["Oslo only.", "Paris is sunny.", "Read a.txt."]
    assert sorted(tools.seen) == ["Atlantis", "Narnia", "Oslo", "Paris"]
    turns = [list(turn) for turn in GOVERNED_TURNS]
    interrupted = ("delete_file", "call_3", "failed", *ALLOWED, "ERROR")
    unrecovered = ("get_weather", "call_3", "failed", *ALLOWED, "ERROR")
    turns[1] = ["completed", [*turns[1][1][:2], unrecovered]]
    turns[2] = ["completed", [interrupted, *turns[2][1][1:]]]
    assert summary(span_exporter.get_finished_spans()) == [[tuple(t) for t in turns]]
    assert govern(config, runner).hooks == config.hooks  # governing twice adds nothing


HOOK_FILE = """
[[hooks.pre_tool_call]]
name = "no-oslo"
matcher = "get_weather"
type = "command"
command = "grep -q Oslo && {{ echo 'Oslo is closed' >&2; exit 2; }} || exit 0"
"""


async def test_zero_code_governs_with_the_hooks_of_hookscope_config(
    model: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    from tests.support import antigravity_app

    model.scripts[antigravity_app.PROMPT] = [
        Reply(tool_calls=[Call("get_weather", {"city": "Oslo"}, id="call_1")]),
        Reply(text="Closed."),
        Reply(tool_calls=[Call("get_weather", {"city": "Rome"}, id="call_1")]),
        Reply(text="Sunny."),
        Reply(tool_calls=[Call("delete_file", {"path": "x"}, id="call_1")]),
        Reply(text="Not deleting."),
    ]
    config = tmp_path / "hookscope.toml"
    config.write_text(HOOK_FILE.format())
    env = {
        "HOOKSCOPE_CONFIG": str(config),
        "SCRIPTED_MODEL_URL": model.base_url,
        "APP_WORKDIR": str(tmp_path),
        "OTEL_SERVICE_NAME": "zero-code-app",
    }
    finished = await run_instrumented(
        "tests.support.antigravity_app", env=env, timeout=SESSION_DEADLINE_S
    )
    stdout, stderr = finished.stdout, finished.stderr

    assert finished.returncode == 0, stderr[-3000:]
    assert stdout.count("answer:") == 3
    tools = sorted(
        (
            s["attributes"]["gen_ai.tool.name"],
            s["attributes"].get("gen_ai.tool.call.id", ""),
            s["attributes"]["hookscope.tool.outcome"],
            s["attributes"].get("hookscope.policy.decided_by", ""),
        )
        for s in console_spans(stdout)
        if s["name"].startswith("execute_tool")
    )
    assert tools == [
        ("delete_file", "call_1", "denied", "antigravity.harness"),
        ("get_weather", "call_1", "denied", "no-oslo"),
        ("get_weather", "call_1", "succeeded", ""),
    ]
    # The command hook's reason (its stderr, exit 2) is what the model read.
    assert tool_messages(model)["call_1"] >= {
        "Encountered error in step execution: denied by pre-tool hook: Oslo is closed"
    }
