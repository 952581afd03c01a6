"""OTelHook: the whole span tree and every metric point of a scripted agent run."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from hookscope import hooks
from hookscope.hooks import Hook
from hookscope.policy import allow, ask_user, deny, enforce
from hookscope.runner import HookRunner
from hookscope.telemetry import ContentCapture, OTelHook
from hookscope.types import (
    Answer,
    ChatResponse,
    HookResult,
    LlmRequest,
    LlmResponse,
    Question,
    Recovery,
    ToolCall,
    Usage,
)

from .otel_helpers import attrs, metric_points, span_tree


@pytest.fixture
def otel_hook(tracer_provider: TracerProvider, meter_provider: MeterProvider) -> OTelHook:
    return OTelHook(tracer_provider, meter_provider, capture_content=ContentCapture.NO_CONTENT)


# --- the scripted agent ---


class ReadOnlyPaths(Hook):
    """A plain decide hook (not a policy): denies writes under /etc."""

    def pre_tool_call(self, context: Any, call: ToolCall) -> HookResult | None:
        if call.name == "write_file" and str(call.args.get("path", "")).startswith("/etc"):
            return HookResult.deny("/etc is read-only")
        return None


class Recover(Hook):
    def on_tool_error(self, context: Any, error: Exception) -> Recovery | None:
        return Recovery("stale cache") if isinstance(error, TimeoutError) else None


class Answerer(Hook):
    def on_interaction(self, context: Any, questions: Any) -> list[Answer]:
        return [Answer("yes", q.id) for q in questions]


@hooks.pre_turn
def rate_limit(prompt: str) -> HookResult | None:
    return HookResult.deny("rate limit: 2 turns per session") if prompt == "more" else None


@hooks.post_turn(name="flaky_audit")
def flaky_audit(response: ChatResponse) -> None:
    raise RuntimeError("audit sink down")


def _approve(call: ToolCall) -> bool:
    return True


POLICIES = [
    allow("view_file", name="read"),
    deny("run_command", when=lambda args: "rm " in args["cmd"], name="no-rm", reason="destructive"),
    ask_user("deploy", _approve, name="confirm-deploy"),
]


def _flaky() -> None:
    raise TimeoutError("upstream slow")


def _broken() -> None:
    raise ValueError("bad fixture")


async def _hang() -> None:
    await asyncio.Event().wait()


async def run_agent(otel_hook: OTelHook, layout_hook: OTelHook | None = None) -> list[Any]:
    """Two turns exercising every lifecycle point, then a blocked third turn."""
    runner = HookRunner(
        [
            layout_hook or otel_hook,
            enforce(POLICIES),
            ReadOnlyPaths(),
            Recover(),
            Answerer(),
            rate_limit,
            flaky_audit,
        ]
    )
    values: list[Any] = []
    async with runner.session(agent_name="coder", session_id="s1") as session:
        async with session.turn("fix the bug") as turn:
            await turn.llm_request(LlmRequest("gpt-test"))
            await turn.llm_response(LlmResponse("gpt-test", usage=Usage(120, 30)))
            for call, fn in [
                (ToolCall("view_file", {"path": "/w/a.py"}, id="c1"), lambda path: "code"),
                (ToolCall("run_command", {"cmd": "rm -rf /"}, id="c2"), lambda cmd: ""),
                (ToolCall("write_file", {"path": "/etc/passwd"}, id="c3"), lambda path: None),
                (ToolCall("deploy", {}, id="c4"), lambda: "deployed"),
                (ToolCall("fetch", {}, id="c5"), _flaky),
            ]:
                values.append((await turn.call_tool(call, fn)).value)
            outcomes = await asyncio.gather(
                turn.call_tool(ToolCall("grep", {"q": "a"}, id="c6"), lambda q: 1),
                turn.call_tool(ToolCall("grep", {"q": "b"}, id="c7"), lambda q: 2),
            )
            values.extend(o.value for o in outcomes)
            values.append(await turn.ask([Question("Run the tests?", id="q1")]))
            await turn.compact("summary of 40 messages")
            turn.respond(ChatResponse("fixed", model="gpt-test", usage=Usage(120, 30)))
        async with session.turn("and test it") as turn:
            with pytest.raises(ValueError, match="bad fixture"):
                await turn.call_tool(ToolCall("run_tests", {}, id="c8"), _broken)
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(turn.call_tool(ToolCall("watch", {}, id="c9"), _hang), 0.01)
            turn.respond(ChatResponse("tests fail", model="gpt-test", usage=Usage(200, 10)))
        async with session.turn("more") as turn:
            values.append(turn.allowed)
    return values


def _tool_span(
    name: str, call_id: str, outcome: str, policy: dict[str, Any], events: list[Any], **extra: Any
) -> dict[str, Any]:
    return {
        "name": f"execute_tool {name}",
        "attributes": {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.agent.name": "coder",
            "openinference.span.kind": "TOOL",
            "gen_ai.tool.call.id": call_id,
            **policy,
            **extra,
            "hookscope.tool.outcome": outcome,
        },
        "events": [("hookscope.pre_tool_call", policy), *events],
        "status": "ERROR" if outcome == "failed" else "UNSET",
    }


def _policy(
    decision: str,
    outcome: str,
    reason: str,
    rule: str | None = None,
    bucket: int | None = None,
    by: str = "PolicyEnforcer",
) -> dict[str, Any]:
    policy: dict[str, Any] = {
        "hookscope.policy.decision": decision,
        "hookscope.policy.outcome": outcome,
        "hookscope.policy.reason": reason,
    }
    if rule is not None:
        policy["hookscope.policy.rule"] = rule
        policy["hookscope.policy.bucket"] = bucket
    policy["hookscope.policy.decided_by"] = by
    return policy


NO_RULE = _policy("allow", "allowed", "no policy rule matches; allowed")
POST = ("hookscope.post_tool_call", {})
AUDIT_FAILED = (
    "hookscope.hook_failure",
    {
        "hookscope.hook.name": "flaky_audit",
        "hookscope.hook.event": "post_turn",
        "error.type": "RuntimeError",
    },
)


def _turn(
    index: int, outcome: str, events: list[Any], children: list[Any], **extra: Any
) -> dict[str, Any]:
    node: dict[str, Any] = {
        "name": "invoke_agent coder",
        "attributes": {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "coder",
            "hookscope.turn.index": index,
            "openinference.span.kind": "AGENT",
            **extra,
        },
        "events": events,
        "status": "ERROR" if outcome == "blocked" else "UNSET",
    }
    if children:
        node["children"] = children
    return node


EXPECTED_TREE = [
    {
        "name": "session coder",
        "attributes": {
            "gen_ai.agent.name": "coder",
            "openinference.span.kind": "CHAIN",
            "hookscope.session.outcome": "completed",
            "hookscope.session.turns": 3,
            "hookscope.session.tool_calls": 9,
            "hookscope.session.denied_calls": 2,
            "hookscope.session.tool_errors": 2,
        },
        "events": [("hookscope.session_start", {}), ("hookscope.session_end", {})],
        "status": "UNSET",
        "children": [
            _turn(
                0,
                "completed",
                [
                    ("hookscope.pre_turn", {"hookscope.turn.allowed": True}),
                    ("hookscope.compaction", {"hookscope.compaction.summary_length": 22}),
                    AUDIT_FAILED,
                    ("hookscope.post_turn", {}),
                ],
                [
                    {
                        "name": "chat gpt-test",
                        "attributes": {
                            "gen_ai.operation.name": "chat",
                            "gen_ai.request.model": "gpt-test",
                            "gen_ai.agent.name": "coder",
                            "openinference.span.kind": "LLM",
                            "hookscope.guardrail.request": "proceed",
                            "hookscope.guardrail.response": "accept",
                            "gen_ai.usage.input_tokens": 120,
                            "gen_ai.usage.output_tokens": 30,
                        },
                        "events": [
                            (
                                "hookscope.pre_llm_request",
                                {
                                    "hookscope.guardrail.stage": "request",
                                    "hookscope.guardrail.verdict": "proceed",
                                },
                            ),
                            (
                                "hookscope.llm_response",
                                {
                                    "hookscope.guardrail.stage": "response",
                                    "hookscope.guardrail.verdict": "accept",
                                },
                            ),
                        ],
                        "status": "UNSET",
                    },
                    _tool_span(
                        "view_file",
                        "c1",
                        "succeeded",
                        _policy("allow", "allowed", "view_file is allowed", "read", 2),
                        [POST],
                    ),
                    _tool_span(
                        "run_command",
                        "c2",
                        "denied",
                        _policy("deny", "denied", "destructive", "no-rm", 0),
                        [],
                    ),
                    _tool_span(
                        "write_file",
                        "c3",
                        "denied",
                        _policy("deny", "denied", "/etc is read-only", by="ReadOnlyPaths"),
                        [],
                    ),
                    _tool_span(
                        "deploy",
                        "c4",
                        "succeeded",
                        _policy(
                            "ask_user", "allowed", "the user approved the call", "confirm-deploy", 1
                        ),
                        [POST],
                    ),
                    _tool_span(
                        "fetch",
                        "c5",
                        "recovered",
                        NO_RULE,
                        [
                            (
                                "hookscope.tool_error",
                                {
                                    "error.type": "TimeoutError",
                                    "hookscope.recovery.recovered": True,
                                    "hookscope.recovery.hook": "Recover",
                                },
                            )
                        ],
                        **{
                            "error.type": "TimeoutError",
                            "hookscope.recovery.recovered": True,
                            "hookscope.recovery.hook": "Recover",
                        },
                    ),
                    _tool_span("grep", "c6", "succeeded", NO_RULE, [POST]),
                    _tool_span("grep", "c7", "succeeded", NO_RULE, [POST]),
                    {
                        "name": "interaction coder",
                        "attributes": {
                            "gen_ai.agent.name": "coder",
                            "openinference.span.kind": "CHAIN",
                            "hookscope.interaction.outcome": "answered",
                            "hookscope.interaction.answered_by": "Answerer",
                        },
                        "events": [
                            (
                                "hookscope.interaction",
                                {
                                    "hookscope.interaction.outcome": "answered",
                                    "hookscope.interaction.answered_by": "Answerer",
                                },
                            )
                        ],
                        "status": "UNSET",
                    },
                ],
                **{
                    "hookscope.turn.outcome": "completed",
                    "gen_ai.usage.input_tokens": 120,
                    "gen_ai.usage.output_tokens": 30,
                },
            ),
            _turn(
                1,
                "completed",
                [
                    ("hookscope.pre_turn", {"hookscope.turn.allowed": True}),
                    AUDIT_FAILED,
                    ("hookscope.post_turn", {}),
                ],
                [
                    _tool_span(
                        "run_tests",
                        "c8",
                        "failed",
                        NO_RULE,
                        [
                            (
                                "hookscope.tool_error",
                                {"error.type": "ValueError", "hookscope.recovery.recovered": False},
                            )
                        ],
                        **{"hookscope.recovery.recovered": False, "error.type": "ValueError"},
                    ),
                    _tool_span(
                        "watch", "c9", "failed", NO_RULE, [], **{"error.type": "CancelledError"}
                    ),
                ],
                **{
                    "hookscope.turn.outcome": "completed",
                    "gen_ai.usage.input_tokens": 200,
                    "gen_ai.usage.output_tokens": 10,
                },
            ),
            _turn(
                2,
                "blocked",
                [
                    (
                        "hookscope.pre_turn",
                        {
                            "hookscope.turn.allowed": False,
                            "hookscope.turn.decided_by": "rate_limit",
                            "hookscope.turn.message": "rate limit: 2 turns per session",
                        },
                    )
                ],
                [],
                **{
                    "hookscope.turn.allowed": False,
                    "hookscope.turn.decided_by": "rate_limit",
                    "hookscope.turn.message": "rate limit: 2 turns per session",
                    "hookscope.turn.outcome": "blocked",
                },
            ),
        ],
    }
]


async def test_agent_run_produces_the_expected_span_tree(
    otel_hook: OTelHook, span_exporter: InMemorySpanExporter
) -> None:
    values = await run_agent(otel_hook)
    assert values == [
        "code",
        None,
        None,
        "deployed",
        "stale cache",
        1,
        2,
        [Answer("yes", "q1")],
        False,
    ]
    assert span_tree(span_exporter.get_finished_spans()) == EXPECTED_TREE


async def test_agent_run_records_the_expected_metric_points(
    otel_hook: OTelHook, metric_reader: InMemoryMetricReader
) -> None:
    await run_agent(otel_hook)
    points = metric_points(metric_reader.get_metrics_data())
    agent = {"gen_ai__agent__name": "coder"}

    def tool(name: str, outcome: str) -> frozenset[tuple[str, Any]]:
        return attrs(gen_ai__tool__name=name, hookscope__tool__outcome=outcome, **agent)

    assert points["hookscope.tool.calls"] == {
        tool("view_file", "succeeded"): 1,
        tool("run_command", "denied"): 1,
        tool("write_file", "denied"): 1,
        tool("deploy", "succeeded"): 1,
        tool("fetch", "recovered"): 1,
        tool("grep", "succeeded"): 2,
        tool("run_tests", "failed"): 1,
        tool("watch", "failed"): 1,
    }

    def decision(
        name: str, decision: str, outcome: str, rule: str | None = None, bucket: int | None = None
    ) -> Any:
        extra = (
            {}
            if rule is None
            else {"hookscope__policy__rule": rule, "hookscope__policy__bucket": bucket}
        )
        return attrs(
            gen_ai__tool__name=name,
            hookscope__policy__decision=decision,
            hookscope__policy__outcome=outcome,
            **extra,
            **agent,
        )

    assert points["hookscope.policy.decisions"] == {
        decision("view_file", "allow", "allowed", "read", 2): 1,
        decision("run_command", "deny", "denied", "no-rm", 0): 1,
        decision("write_file", "deny", "denied"): 1,
        decision("deploy", "ask_user", "allowed", "confirm-deploy", 1): 1,
        decision("fetch", "allow", "allowed"): 1,
        decision("grep", "allow", "allowed"): 2,
        decision("run_tests", "allow", "allowed"): 1,
        decision("watch", "allow", "allowed"): 1,
    }
    assert points["hookscope.tool.errors"] == {
        attrs(
            gen_ai__tool__name="fetch",
            error__type="TimeoutError",
            hookscope__recovery__recovered=True,
            **agent,
        ): 1,
        attrs(
            gen_ai__tool__name="run_tests",
            error__type="ValueError",
            hookscope__recovery__recovered=False,
            **agent,
        ): 1,
    }
    assert points["hookscope.turns"] == {
        attrs(hookscope__turn__outcome="completed", **agent): 2,
        attrs(hookscope__turn__outcome="blocked", **agent): 1,
    }
    assert points["hookscope.sessions"] == {attrs(**agent): 1}
    assert points["hookscope.sessions.active"] == {attrs(**agent): 0}
    assert points["hookscope.interactions"] == {
        attrs(hookscope__interaction__outcome="answered", **agent): 1
    }
    assert points["hookscope.compactions"] == {attrs(**agent): 1}
    assert points["hookscope.guardrail.verdicts"] == {
        attrs(
            hookscope__guardrail__stage="request", hookscope__guardrail__verdict="proceed", **agent
        ): 1,
        attrs(
            hookscope__guardrail__stage="response", hookscope__guardrail__verdict="accept", **agent
        ): 1,
    }
    assert points["hookscope.hook.failures"] == {
        attrs(
            hookscope__hook__name="flaky_audit",
            hookscope__hook__event="post_turn",
            error__type="RuntimeError",
            **agent,
        ): 2
    }
    # Histograms: observation counts per attribute set.
    assert points["gen_ai.execute_tool.duration"] == {
        tool("view_file", "succeeded"): 1,
        tool("deploy", "succeeded"): 1,
        attrs(
            gen_ai__tool__name="fetch",
            hookscope__tool__outcome="recovered",
            error__type="TimeoutError",
            **agent,
        ): 1,
        tool("grep", "succeeded"): 2,
        attrs(
            gen_ai__tool__name="run_tests",
            hookscope__tool__outcome="failed",
            error__type="ValueError",
            **agent,
        ): 1,
        attrs(
            gen_ai__tool__name="watch",
            hookscope__tool__outcome="failed",
            error__type="CancelledError",
            **agent,
        ): 1,
    }
    assert points["gen_ai.invoke_agent.duration"] == {
        attrs(hookscope__turn__outcome="completed", **agent): 2,
        attrs(hookscope__turn__outcome="blocked", **agent): 1,
    }
    assert points["gen_ai.client.token.usage"] == {
        # turn 0 reported its model call (one pair); turn 1 only its final response.
        attrs(gen_ai__token__type="input", gen_ai__request__model="gpt-test", **agent): 2,
        attrs(gen_ai__token__type="output", gen_ai__request__model="gpt-test", **agent): 2,
    }
    hook_calls = points["hookscope.hook.duration"]
    assert (
        hook_calls[
            attrs(
                hookscope__hook__name="PolicyEnforcer",
                hookscope__hook__event="pre_tool_call",
                **agent,
            )
        ]
        == 9
    )
    assert (
        hook_calls[
            attrs(hookscope__hook__name="rate_limit", hookscope__hook__event="pre_turn", **agent)
        ]
        == 3
    )
    assert (
        hook_calls[
            attrs(hookscope__hook__name="Recover", hookscope__hook__event="on_tool_error", **agent)
        ]
        == 2
    )


async def test_every_span_carries_the_session_id(
    otel_hook: OTelHook, span_exporter: InMemorySpanExporter
) -> None:
    await run_agent(otel_hook)
    spans = span_exporter.get_finished_spans()
    assert len(spans) == 15
    assert {span.attributes["session.id"] for span in spans} == {"s1"}  # type: ignore[index]
    assert len({span.context.trace_id for span in spans}) == 1


async def test_turn_layout_gives_each_turn_its_own_trace_linked_to_the_session(
    tracer_provider: TracerProvider,
    meter_provider: MeterProvider,
    span_exporter: InMemorySpanExporter,
) -> None:
    hook = OTelHook(tracer_provider, meter_provider, trace_layout="turn")
    await run_agent(hook, layout_hook=hook)
    spans = span_exporter.get_finished_spans()
    session = next(s for s in spans if s.name == "session coder")
    turns = [s for s in spans if s.name == "invoke_agent coder"]
    assert [t.parent for t in turns] == [None, None, None]
    assert len({t.context.trace_id for t in turns} | {session.context.trace_id}) == 4
    assert all([link.context for link in t.links] == [session.context] for t in turns)
    tools = [s for s in spans if s.name.startswith("execute_tool")]
    turn_ids = {t.context.span_id for t in turns}
    assert all(s.parent is not None and s.parent.span_id in turn_ids for s in tools)


def test_trace_layout_must_be_session_or_turn(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="trace_layout='trees' is not a trace layout"):
        OTelHook(trace_layout="trees")  # type: ignore[arg-type]
    monkeypatch.setenv("HOOKSCOPE_TRACE_LAYOUT", "flat")
    with pytest.raises(ValueError, match="HOOKSCOPE_TRACE_LAYOUT='flat' is not a trace layout"):
        OTelHook()


def test_trace_layout_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOOKSCOPE_TRACE_LAYOUT", "turn")
    assert OTelHook().trace_layout == "turn"


async def test_tool_span_is_current_while_the_tool_runs(
    otel_hook: OTelHook, span_exporter: InMemorySpanExporter
) -> None:
    from opentelemetry import trace

    seen: list[int] = []

    async def tool() -> None:
        await asyncio.sleep(0)
        seen.append(trace.get_current_span().get_span_context().span_id)

    async with HookRunner([otel_hook]).session() as session, session.turn() as turn:
        await turn.call_tool(ToolCall("probe"), tool)
        in_turn = trace.get_current_span().get_span_context().span_id
    spans = {s.name: s.context.span_id for s in span_exporter.get_finished_spans()}
    assert seen == [spans["execute_tool probe"]]
    assert in_turn == spans["invoke_agent agent"]
    assert not trace.get_current_span().get_span_context().is_valid


@pytest.mark.parametrize("ending", ["error", "cancel"])
async def test_active_sessions_return_to_zero_however_the_session_ends(
    otel_hook: OTelHook,
    metric_reader: InMemoryMetricReader,
    span_exporter: InMemorySpanExporter,
    ending: str,
) -> None:
    started = asyncio.Event()

    async def agent() -> None:
        async with HookRunner([otel_hook]).session(agent_name="a") as session, session.turn():
            started.set()
            if ending == "error":
                raise KeyError("boom")
            await asyncio.Event().wait()

    task = asyncio.create_task(agent())
    await started.wait()
    if ending == "cancel":
        task.cancel()
    with pytest.raises((KeyError, asyncio.CancelledError)):
        await task
    points = metric_points(metric_reader.get_metrics_data())
    assert points["hookscope.sessions.active"] == {attrs(gen_ai__agent__name="a"): 0}
    session = next(s for s in span_exporter.get_finished_spans() if s.name == "session a")
    expected = ("failed", "KeyError") if ending == "error" else ("cancelled", "CancelledError")
    assert (
        session.attributes["hookscope.session.outcome"],
        session.attributes["error.type"],
    ) == expected  # type: ignore[index]
    assert session.status.status_code.name == "ERROR"


async def test_no_content_is_recorded_by_default(
    otel_hook: OTelHook, span_exporter: InMemorySpanExporter
) -> None:
    await run_agent(otel_hook)
    recorded = json.dumps(span_tree(span_exporter.get_finished_spans()))
    for content in (
        "fix the bug",
        "/w/a.py",
        "rm -rf",
        "fixed",
        "Run the tests?",
        "deployed",
        "stale",
    ):
        assert content not in recorded


@pytest.mark.parametrize(
    ("mode", "on_span", "on_event"),
    [("SPAN_ONLY", True, False), ("EVENT_ONLY", False, True), ("SPAN_AND_EVENT", True, True)],
)
async def test_captured_content_goes_where_the_mode_says_with_secrets_redacted(
    tracer_provider: TracerProvider,
    meter_provider: MeterProvider,
    span_exporter: InMemorySpanExporter,
    monkeypatch: pytest.MonkeyPatch,
    mode: str,
    on_span: bool,
    on_event: bool,
) -> None:
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", mode)
    hook = OTelHook(tracer_provider, meter_provider)
    args = {
        "url": "https://x",
        "headers": {"Authorization": "Bearer s3cr3t", "n": [{"api_key": "k"}]},
    }
    async with HookRunner([hook]).session() as session, session.turn("hello") as turn:
        await turn.call_tool(
            ToolCall("fetch", args), lambda url, headers: {"body": "ok", "token": "t0k"}
        )
        turn.respond(ChatResponse("bye"))
    spans = {s.name: s for s in span_exporter.get_finished_spans()}
    tool = spans["execute_tool fetch"]
    expected_args = '{"url": "https://x", "headers": {"Authorization": "[REDACTED]", "n": [{"api_key": "[REDACTED]"}]}}'
    expected_result = '{"body": "ok", "token": "[REDACTED]"}'
    span_attrs = dict(tool.attributes or {})
    event_attrs = {k: v for e in tool.events for k, v in (e.attributes or {}).items()}
    assert span_attrs.get("gen_ai.tool.call.arguments") == (expected_args if on_span else None)
    assert span_attrs.get("gen_ai.tool.call.result") == (expected_result if on_span else None)
    assert event_attrs.get("gen_ai.tool.call.arguments") == (expected_args if on_event else None)
    assert event_attrs.get("gen_ai.tool.call.result") == (expected_result if on_event else None)
    turn_span = spans["invoke_agent agent"]
    assert (turn_span.attributes or {}).get("gen_ai.input.messages") == (
        "hello" if on_span else None
    )
    assert (turn_span.attributes or {}).get("gen_ai.output.messages") == (
        "bye" if on_span else None
    )
    assert "s3cr3t" not in json.dumps(span_tree(list(spans.values())))


def test_invalid_content_capture_mode_is_an_error_at_start_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    with pytest.raises(
        ValueError, match="'true' is not a capture mode; use one of NO_CONTENT, SPAN_ONLY"
    ):
        OTelHook()


async def test_long_content_is_truncated(
    tracer_provider: TracerProvider,
    meter_provider: MeterProvider,
    span_exporter: InMemorySpanExporter,
) -> None:
    hook = OTelHook(tracer_provider, meter_provider, capture_content=ContentCapture.SPAN_ONLY)
    async with HookRunner([hook]).session() as session, session.turn() as turn:
        await turn.call_tool(ToolCall("big"), lambda: "x" * 5000)
    result = span_exporter.get_finished_spans()[0].attributes["gen_ai.tool.call.result"]  # type: ignore[index]
    assert result == "x" * 2048 + "…[truncated 2952 chars]"


async def test_tool_names_beyond_the_cardinality_limit_are_reported_as_other(
    tracer_provider: TracerProvider,
    meter_provider: MeterProvider,
    metric_reader: InMemoryMetricReader,
) -> None:
    hook = OTelHook(tracer_provider, meter_provider, agent_name="a", cardinality_limit=2)
    async with HookRunner([hook]).session() as session, session.turn() as turn:
        for name in ("t1", "t2", "t3", "t4", "t1"):
            await turn.call_tool(ToolCall(name), lambda: None)
    calls = metric_points(metric_reader.get_metrics_data())["hookscope.tool.calls"]
    outcome = {"hookscope__tool__outcome": "succeeded", "gen_ai__agent__name": "a"}
    assert calls == {
        attrs(gen_ai__tool__name="t1", **outcome): 2,
        attrs(gen_ai__tool__name="t2", **outcome): 1,
        attrs(gen_ai__tool__name="_other", **outcome): 2,
    }


async def test_histograms_use_explicit_second_scale_buckets(
    otel_hook: OTelHook, metric_reader: InMemoryMetricReader
) -> None:
    async with (
        HookRunner([otel_hook, ReadOnlyPaths()]).session() as session,
        session.turn() as turn,
    ):
        await turn.call_tool(ToolCall("t"), lambda: None)
    data = metric_reader.get_metrics_data()
    assert data is not None
    bounds = {
        m.name: tuple(m.data.data_points[0].explicit_bounds)
        for rm in data.resource_metrics
        for sm in rm.scope_metrics
        for m in sm.metrics
        if m.name.endswith("duration")
    }
    from hookscope.telemetry import semconv as sc

    assert bounds == {
        "gen_ai.execute_tool.duration": sc.DURATION_BUCKETS_S,
        "gen_ai.invoke_agent.duration": sc.TURN_DURATION_BUCKETS_S,
        "hookscope.hook.duration": sc.HOOK_DURATION_BUCKETS_S,
    }


async def test_a_failing_tracer_never_breaks_the_agent(
    otel_hook: OTelHook, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("exporter pipeline bug")

    monkeypatch.setattr(otel_hook._tracer, "start_span", broken)
    async with (
        HookRunner([otel_hook, ReadOnlyPaths()]).session() as session,
        session.turn() as turn,
    ):
        outcomes = [
            await turn.call_tool(ToolCall("t", {"n": n}), lambda n: n * 2) for n in range(3)
        ]
    assert [o.value for o in outcomes] == [0, 2, 4]
    failures = [r for r in caplog.records if "dispatch observer" in r.getMessage()]
    assert len(failures) == 1


async def test_queued_histogram_values_carry_no_misleading_exemplars(
    otel_hook: OTelHook, metric_reader: InMemoryMetricReader
) -> None:
    async with (
        HookRunner([otel_hook, ReadOnlyPaths()]).session() as session,
        session.turn() as turn,
    ):
        for _ in range(3):
            await turn.call_tool(ToolCall("t"), lambda: None)
        otel_hook.instruments.flush()  # recorded while a turn span is current
    data = metric_reader.get_metrics_data()
    assert data is not None
    exemplars = [
        exemplar
        for rm in data.resource_metrics
        for sm in rm.scope_metrics
        for m in sm.metrics
        if m.name == "hookscope.hook.duration"
        for point in m.data.data_points
        for exemplar in point.exemplars
    ]
    assert exemplars == []


async def test_a_conversation_id_learned_mid_session_labels_the_session_and_its_turns(
    otel_hook: OTelHook, span_exporter: InMemorySpanExporter
) -> None:
    async with HookRunner([otel_hook]).session(session_id="s9") as session:
        async with session.turn():
            session.context.conversation_id = "traj-1"  # as an adapter learns it
        async with session.turn():
            pass
    conversations = [
        (s.name, (s.attributes or {})["gen_ai.conversation.id"])
        for s in span_exporter.get_finished_spans()
    ]
    assert conversations == [
        ("invoke_agent agent", "traj-1"),
        ("invoke_agent agent", "traj-1"),
        ("session agent", "traj-1"),
    ]


async def test_the_conversation_id_defaults_to_the_session_id(
    otel_hook: OTelHook, span_exporter: InMemorySpanExporter
) -> None:
    async with HookRunner([otel_hook]).session(session_id="s9") as session, session.turn():
        pass
    assert {
        (s.attributes or {})["gen_ai.conversation.id"] for s in span_exporter.get_finished_spans()
    } == {"s9"}


async def test_two_otel_hooks_on_one_meter_provider_both_report(
    tracer_provider: TracerProvider,
    meter_provider: MeterProvider,
    metric_reader: InMemoryMetricReader,
) -> None:
    for agent in ("a1", "a2"):  # e.g. one runner per agent, each with its own OTelHook
        runner = HookRunner([OTelHook(tracer_provider, meter_provider), ReadOnlyPaths()])
        async with runner.session(agent_name=agent) as session, session.turn() as turn:
            await turn.call_tool(ToolCall("t"), lambda: None)
    points = metric_points(metric_reader.get_metrics_data())
    assert points["hookscope.sessions"] == {
        attrs(gen_ai__agent__name="a1"): 1,
        attrs(gen_ai__agent__name="a2"): 1,
    }
    assert points["gen_ai.execute_tool.duration"] == {
        attrs(
            gen_ai__agent__name=a, gen_ai__tool__name="t", hookscope__tool__outcome="succeeded"
        ): 1
        for a in ("a1", "a2")
    }
    assert sum(points["hookscope.hook.duration"].values()) == 2


async def test_agent_names_beyond_the_cardinality_limit_are_reported_as_other(
    tracer_provider: TracerProvider,
    meter_provider: MeterProvider,
    metric_reader: InMemoryMetricReader,
    span_exporter: InMemorySpanExporter,
) -> None:
    hook = OTelHook(tracer_provider, meter_provider, cardinality_limit=1)
    runner = HookRunner([hook])
    for agent in ("first", "per-user-1", "per-user-2"):
        async with runner.session(agent_name=agent):
            pass
    sessions = metric_points(metric_reader.get_metrics_data())["hookscope.sessions"]
    assert sessions == {
        attrs(gen_ai__agent__name="first"): 1,
        attrs(gen_ai__agent__name="_other"): 2,
    }
    assert sorted(s.name for s in span_exporter.get_finished_spans()) == [
        "session first",
        "session per-user-1",
        "session per-user-2",
    ]


async def test_odd_arguments_under_content_capture_keep_a_denial_recorded_as_denied(
    tracer_provider: TracerProvider,
    meter_provider: MeterProvider,
    span_exporter: InMemorySpanExporter,
) -> None:
    hook = OTelHook(tracer_provider, meter_provider, capture_content=ContentCapture.SPAN_AND_EVENT)
    odd = {b"raw": object(), ("k", 1): {1, 2}}
    async with HookRunner([hook, ReadOnlyPaths()]).session() as session, session.turn() as turn:
        outcome = await turn.call_tool(
            ToolCall("write_file", {"path": "/etc/x", "odd": odd}), lambda **_: None
        )
    assert outcome.allowed is False
    (tool,) = [s for s in span_exporter.get_finished_spans() if s.name == "execute_tool write_file"]
    attributes = tool.attributes or {}
    assert attributes["hookscope.tool.outcome"] == "denied"
    assert attributes["gen_ai.tool.call.arguments"] == (
        """{"path": "/etc/x", "odd": {"b'raw'": "<object>", "('k', 1)": [1, 2]}}"""
    )


class _Run:
    """Shaped like hookscope.runner.HookRun: what the runner hands observers around a run."""

    def __init__(self, hook_name: str, hook_type: str, event: str = "pre_tool_call") -> None:
        self.event = event
        self.hook_name = hook_name
        self.hook_type = hook_type
        self.attributes: dict[str, Any] = {}
        self.verdict = "none"
        self.error: BaseException | None = None
        self.duration_s = 0.0
        self.state: Any = None


async def test_a_command_hook_run_is_an_execute_hook_span_current_while_it_runs(
    otel_hook: OTelHook, span_exporter: InMemorySpanExporter
) -> None:
    from opentelemetry import trace

    run = _Run("guard-shell", "command")
    runner = HookRunner([otel_hook])
    async with runner.session(session_id="s1") as session, session.turn() as turn:
        otel_hook.hook_run_started(run, turn.context)
        inside = trace.get_current_span()
        run.attributes.update({"process.exit.code": 2, "process.executable.name": "guard.sh"})
        run.verdict = "deny"
        otel_hook.hook_run_finished(run, turn.context)
        after = trace.get_current_span()
    spans = {s.name: s for s in span_exporter.get_finished_spans()}
    hook_span = spans["execute_hook guard-shell"]
    assert inside.get_span_context() == hook_span.context
    assert after.get_span_context() == spans["invoke_agent agent"].context
    assert hook_span.parent == spans["invoke_agent agent"].context
    assert hook_span.kind.name == "INTERNAL"
    assert dict(hook_span.attributes or {}) == {
        "hookscope.hook.name": "guard-shell",
        "hookscope.hook.event": "pre_tool_call",
        "hookscope.hook.type": "command",
        "openinference.span.kind": "CHAIN",
        "session.id": "s1",
        "process.exit.code": 2,
        "process.executable.name": "guard.sh",
        "hookscope.hook.verdict": "deny",
    }
    assert hook_span.status.status_code.name == "UNSET"


async def test_a_failed_prompt_hook_run_ends_its_span_as_an_error(
    otel_hook: OTelHook, span_exporter: InMemorySpanExporter
) -> None:
    run = _Run("judge", "prompt", event="pre_turn")
    async with HookRunner([otel_hook]).session() as session, session.turn() as turn:
        otel_hook.hook_run_started(run, turn.context)
        run.attributes["gen_ai.request.model"] = "judge-1"
        run.error = TimeoutError("model slow")
        otel_hook.hook_run_finished(run, turn.context)
    (hook_span,) = [s for s in span_exporter.get_finished_spans() if s.name == "execute_hook judge"]
    attributes = dict(hook_span.attributes or {})
    assert (attributes["error.type"], attributes["hookscope.hook.verdict"]) == (
        "TimeoutError",
        "none",
    )
    assert attributes["gen_ai.request.model"] == "judge-1"
    assert hook_span.status.status_code.name == "ERROR"
    assert hook_span.status.description == "TimeoutError"


async def test_two_otel_hooks_each_record_a_hook_run(
    tracer_provider: TracerProvider,
    meter_provider: MeterProvider,
    span_exporter: InMemorySpanExporter,
) -> None:
    first, second = (
        OTelHook(tracer_provider, meter_provider),
        OTelHook(tracer_provider, meter_provider),
    )
    run = _Run("h", "command")
    async with HookRunner([first, second]).session() as session, session.turn() as turn:
        first.hook_run_started(run, turn.context)
        second.hook_run_started(run, turn.context)
        second.hook_run_finished(run, turn.context)
        first.hook_run_finished(run, turn.context)
    names = [s.name for s in span_exporter.get_finished_spans()]
    assert names.count("execute_hook h") == 2
