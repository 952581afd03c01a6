"""OTelHook: the whole span tree and every metric point of a scripted agent run."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from opentelemetry import trace

from hookscope import hooks
from hookscope.hooks import Hook, PreToolCallDecideHook
from hookscope.policy import allow, ask_user, deny, enforce
from hookscope.runner import HookRunner, current_hook_run
from hookscope.telemetry import ContentCapture, OTelHook
from hookscope.testing import Recording, format_tree, recording, span_tree
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


def attrs(**values: Any) -> frozenset[tuple[str, Any]]:
    """Metric attributes written as keywords, with '__' standing for '.'."""
    return frozenset((k.replace("__", "."), v) for k, v in values.items())


@pytest.fixture
def rec(hookscope_recording: Recording) -> Recording:
    return hookscope_recording


@pytest.fixture
def otel_hook(rec: Recording) -> OTelHook:
    return rec.hook


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
    """Answers questions "yes"; confirms a publish to staging, refuses one to prod."""

    def on_interaction(self, context: Any, questions: Any) -> list[Answer]:
        if questions[0].kind == "confirm":
            target = context.call.args["to"]
            return [Answer("allow" if target == "staging" else "deny", "confirm")]
        return [Answer("yes", q.id) for q in questions]


class ConfirmPublish(Hook):
    """Asks the user before anything is published."""

    def pre_tool_call(self, context: Any, call: ToolCall) -> HookResult | None:
        return HookResult.ask(f"publish to {call.args['to']}?") if call.name == "publish" else None


class Summarizer(Hook):
    def pre_compaction(self, context: Any, messages: Any) -> str | None:
        return f"{len(messages)} messages about a bug"


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
            ConfirmPublish(),
            Recover(),
            Answerer(),
            Summarizer(),
            rate_limit,
            flaky_audit,
        ]
    )
    values: list[Any] = []
    usage = Usage(120, 30, cache_read_tokens=100, reasoning_tokens=5)
    async with runner.session(agent_name="coder", session_id="s1", provider="openai") as session:
        async with session.turn("fix the bug") as turn:
            await turn.llm_request(LlmRequest("gpt-test"))
            await turn.llm_response(
                LlmResponse("gpt-test-0613", usage=usage, finish_reasons=("tool_calls",))
            )
            for call, fn in [
                (ToolCall("view_file", {"path": "/w/a.py"}, id="c1"), lambda path: "code"),
                (ToolCall("run_command", {"cmd": "rm -rf /"}, id="c2"), lambda cmd: ""),
                (ToolCall("write_file", {"path": "/etc/passwd"}, id="c3"), lambda path: None),
                (ToolCall("deploy", {}, id="c4"), lambda: "deployed"),
                (ToolCall("fetch", {}, id="c5"), _flaky),
                (ToolCall("publish", {"to": "staging"}, id="c10"), lambda to: "published"),
                (ToolCall("publish", {"to": "prod"}, id="c11"), lambda to: "published"),
            ]:
                values.append((await turn.call_tool(call, fn)).value)
            outcomes = await asyncio.gather(
                turn.call_tool(ToolCall("grep", {"q": "a"}, id="c6"), lambda q: 1),
                turn.call_tool(ToolCall("grep", {"q": "b"}, id="c7"), lambda q: 2),
            )
            values.extend(o.value for o in outcomes)
            values.append(await turn.ask([Question("Run the tests?", id="q1")]))
            summary = await turn.summarize(["m1", "m2", "m3"])
            await turn.compact(summary or "")
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
            "tool.name": name,
            "gen_ai.tool.type": "function",
            "gen_ai.agent.name": "coder",
            "openinference.span.kind": "TOOL",
            "gen_ai.tool.call.id": call_id,
            **policy,
            **extra,
            "hookscope.tool.outcome": outcome,
        },
        "events": [("hookscope.pre_tool_call", policy), *events],
        "status": "ERROR" if outcome in ("failed", "denied") else "UNSET",
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
CONFIRMED = {
    "hookscope.interaction.outcome": "answered",
    "hookscope.interaction.answered_by": "Answerer",
}


def _publish(call_id: str, target: str, outcome: str, events: list[Any]) -> dict[str, Any]:
    """A publish the user was asked to confirm: the final decision says what they answered."""
    policy = _policy("ask_user", outcome, f"publish to {target}?", by="ConfirmPublish")
    span = _tool_span(
        "publish",
        call_id,
        "succeeded" if outcome == "allowed" else "denied",
        policy,
        events,
        **CONFIRMED,
    )
    span["events"].insert(0, ("hookscope.interaction", CONFIRMED))
    return span


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
            "gen_ai.provider.name": "openai",
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
            "hookscope.session.tool_calls": 11,
            "hookscope.session.denied_calls": 3,
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
                    (
                        "hookscope.pre_compaction",
                        {
                            "hookscope.compaction.messages": 3,
                            "hookscope.compaction.summary_length": 22,
                            "hookscope.compaction.summarized_by": "Summarizer",
                        },
                    ),
                    ("hookscope.compaction", {"hookscope.compaction.summary_length": 22}),
                    AUDIT_FAILED,
                    ("hookscope.post_turn", {}),
                ],
                [
                    {
                        "name": "chat gpt-test",
                        "attributes": {
                            "gen_ai.operation.name": "chat",
                            "gen_ai.provider.name": "openai",
                            "gen_ai.request.model": "gpt-test",
                            "gen_ai.response.model": "gpt-test-0613",
                            "gen_ai.response.finish_reasons": ("tool_calls",),
                            "gen_ai.agent.name": "coder",
                            "openinference.span.kind": "LLM",
                            "llm.model_name": "gpt-test",
                            "llm.provider": "openai",
                            "hookscope.guardrail.request": "proceed",
                            "hookscope.guardrail.response": "accept",
                            "gen_ai.usage.input_tokens": 120,
                            "gen_ai.usage.output_tokens": 30,
                            "gen_ai.usage.cache_read.input_tokens": 100,
                            "gen_ai.usage.reasoning.output_tokens": 5,
                            "llm.token_count.prompt": 120,
                            "llm.token_count.completion": 30,
                            "llm.token_count.total": 150,
                            "llm.token_count.prompt_details.cache_read": 100,
                            "llm.token_count.completion_details.reasoning": 5,
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
                    _publish("c10", "staging", "allowed", [POST]),
                    _publish("c11", "prod", "denied", []),
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
    otel_hook: OTelHook, rec: Recording
) -> None:
    values = await run_agent(otel_hook)
    assert values == [
        "code",
        None,
        None,
        "deployed",
        "stale cache",
        "published",
        None,
        1,
        2,
        [Answer("yes", "q1")],
        False,
    ]
    assert span_tree(rec.spans) == EXPECTED_TREE


async def test_agent_run_records_the_expected_metric_points(
    otel_hook: OTelHook, rec: Recording
) -> None:
    await run_agent(otel_hook)
    points = rec.metric_points()
    agent = {"gen_ai__agent__name": "coder"}

    def tool(name: str, outcome: str) -> frozenset[tuple[str, Any]]:
        return attrs(gen_ai__tool__name=name, hookscope__tool__outcome=outcome, **agent)

    assert points["hookscope.tool.calls"] == {
        tool("view_file", "succeeded"): 1,
        tool("run_command", "denied"): 1,
        tool("write_file", "denied"): 1,
        tool("deploy", "succeeded"): 1,
        tool("fetch", "recovered"): 1,
        tool("publish", "succeeded"): 1,
        tool("publish", "denied"): 1,
        tool("grep", "succeeded"): 2,
        tool("run_tests", "failed"): 1,
        tool("watch", "failed"): 1,
    }

    def decision(
        name: str,
        decision: str,
        outcome: str,
        rule: str | None = None,
        bucket: int | None = None,
        by: str = "PolicyEnforcer",
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
            hookscope__policy__decided_by=by,
            **extra,
            **agent,
        )

    # decided_by names the hook that decided: a denial without a rule is still attributed.
    assert points["hookscope.policy.decisions"] == {
        decision("view_file", "allow", "allowed", "read", 2): 1,
        decision("run_command", "deny", "denied", "no-rm", 0): 1,
        decision("write_file", "deny", "denied", by="ReadOnlyPaths"): 1,
        decision("deploy", "ask_user", "allowed", "confirm-deploy", 1): 1,
        decision("fetch", "allow", "allowed"): 1,
        decision("publish", "ask_user", "allowed", by="ConfirmPublish"): 1,
        decision("publish", "ask_user", "denied", by="ConfirmPublish"): 1,
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
        attrs(hookscope__interaction__outcome="answered", **agent): 3  # a question, 2 confirms
    }
    assert points["hookscope.compactions"] == {
        attrs(hookscope__compaction__stage="pre", **agent): 1,
        attrs(hookscope__compaction__stage="post", **agent): 1,
    }
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
        tool("publish", "succeeded"): 1,
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
    model_call = {
        "gen_ai__operation__name": "chat",
        "gen_ai__provider__name": "openai",
        "gen_ai__request__model": "gpt-test",
        **agent,
    }
    # Per model call: turn 0 reported one; the turns' own totals stay on their spans.
    assert points["gen_ai.client.token.usage"] == {
        attrs(gen_ai__token__type="input", **model_call): 1,
        attrs(gen_ai__token__type="output", **model_call): 1,
    }
    assert points["gen_ai.client.operation.duration"] == {attrs(**model_call): 1}
    hook_calls = points["hookscope.hook.duration"]
    assert (
        hook_calls[
            attrs(
                hookscope__hook__name="PolicyEnforcer",
                hookscope__hook__event="pre_tool_call",
                hookscope__hook__type="python",
                **agent,
            )
        ]
        == 11
    )
    assert (
        hook_calls[
            attrs(
                hookscope__hook__name="rate_limit",
                hookscope__hook__event="pre_turn",
                hookscope__hook__type="python",
                **agent,
            )
        ]
        == 3
    )
    assert (
        hook_calls[
            attrs(
                hookscope__hook__name="Recover",
                hookscope__hook__event="on_tool_error",
                hookscope__hook__type="python",
                **agent,
            )
        ]
        == 2
    )


async def test_every_span_carries_the_session_id(otel_hook: OTelHook, rec: Recording) -> None:
    await run_agent(otel_hook)
    spans = rec.spans
    assert len(spans) == 17
    assert {span.attributes["session.id"] for span in spans} == {"s1"}  # type: ignore[index]
    assert len({span.context.trace_id for span in spans}) == 1


async def test_turn_layout_gives_each_turn_its_own_trace_linked_to_the_session() -> None:
    with recording(trace_layout="turn") as rec:
        await run_agent(rec.hook)
    spans = rec.spans
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
    otel_hook: OTelHook, rec: Recording
) -> None:
    seen: list[int] = []

    async def tool() -> None:
        await asyncio.sleep(0)
        seen.append(trace.get_current_span().get_span_context().span_id)

    async with HookRunner([otel_hook]).session() as session, session.turn() as turn:
        await turn.call_tool(ToolCall("probe"), tool)
        in_turn = trace.get_current_span().get_span_context().span_id
    spans = {s.name: s.context.span_id for s in rec.spans}
    assert seen == [spans["execute_tool probe"]]
    assert in_turn == spans["invoke_agent agent"]
    assert not trace.get_current_span().get_span_context().is_valid


@pytest.mark.parametrize("ending", ["error", "cancel"])
async def test_active_sessions_return_to_zero_however_the_session_ends(
    otel_hook: OTelHook, rec: Recording, ending: str
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
    points = rec.metric_points()
    assert points["hookscope.sessions.active"] == {attrs(gen_ai__agent__name="a"): 0}
    session = next(s for s in rec.spans if s.name == "session a")
    expected = ("failed", "KeyError") if ending == "error" else ("cancelled", "CancelledError")
    assert (
        session.attributes["hookscope.session.outcome"],
        session.attributes["error.type"],
    ) == expected  # type: ignore[index]
    assert session.status.status_code.name == "ERROR"


async def test_no_content_is_recorded_by_default(otel_hook: OTelHook, rec: Recording) -> None:
    await run_agent(otel_hook)
    recorded = json.dumps(span_tree(rec.spans))
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
    assert rec.logs == ()


async def test_tool_names_beyond_the_cardinality_limit_are_reported_as_other() -> None:
    with recording(agent_name="a", cardinality_limit=2) as rec:
        async with HookRunner([rec.hook]).session() as session, session.turn() as turn:
            for name in ("t1", "t2", "t3", "t4", "t1"):
                await turn.call_tool(ToolCall(name), lambda: None)
        calls = rec.metric_points()["hookscope.tool.calls"]
    outcome = {"hookscope__tool__outcome": "succeeded", "gen_ai__agent__name": "a"}
    assert calls == {
        attrs(gen_ai__tool__name="t1", **outcome): 2,
        attrs(gen_ai__tool__name="t2", **outcome): 1,
        attrs(gen_ai__tool__name="_other", **outcome): 2,
    }


async def test_overflowing_tool_and_rule_names_keep_the_agent_and_the_outcome() -> None:
    policies = [deny(f"t{i}", name=f"rule-{i}") for i in range(4)]
    with recording(cardinality_limit=2) as rec:
        runner = HookRunner([rec.hook, enforce(policies)])
        for agent in ("a1", "a2"):
            async with runner.session(agent_name=agent) as session, session.turn() as turn:
                for i in range(4):
                    await turn.call_tool(ToolCall(f"t{i}"), lambda: None)
        points = rec.metric_points()
    calls = points["hookscope.tool.calls"]
    decisions = points["hookscope.policy.decisions"]
    for agent in ("a1", "a2"):
        denied = {"gen_ai__agent__name": agent, "hookscope__tool__outcome": "denied"}
        assert calls[attrs(gen_ai__tool__name="_other", **denied)] == 2
        assert calls[attrs(gen_ai__tool__name="t0", **denied)] == 1
        assert (
            decisions[
                attrs(
                    gen_ai__agent__name=agent,
                    gen_ai__tool__name="_other",
                    hookscope__policy__decision="deny",
                    hookscope__policy__outcome="denied",
                    hookscope__policy__rule="_other",
                    hookscope__policy__bucket=0,
                    hookscope__policy__decided_by="PolicyEnforcer",
                )
            ]
            == 2
        )


async def test_histograms_use_explicit_second_scale_buckets(
    otel_hook: OTelHook, rec: Recording
) -> None:
    runner = HookRunner([otel_hook, ReadOnlyPaths()])
    async with runner.session(provider="openai") as session, session.turn() as turn:
        await turn.call_tool(ToolCall("t"), lambda: None)
        await turn.llm_request(LlmRequest("m"))
        await turn.llm_response(LlmResponse("m", usage=Usage(1, 1)))
    data = rec.metrics()
    assert data is not None
    bounds = {
        m.name: tuple(m.data.data_points[0].explicit_bounds)
        for rm in data.resource_metrics
        for sm in rm.scope_metrics
        for m in sm.metrics
        if hasattr(m.data.data_points[0], "explicit_bounds")
    }
    from hookscope.telemetry import semconv as sc

    assert bounds == {
        "gen_ai.execute_tool.duration": sc.DURATION_BUCKETS_S,
        "gen_ai.invoke_agent.duration": sc.TURN_DURATION_BUCKETS_S,
        "hookscope.hook.duration": sc.HOOK_DURATION_BUCKETS_S,
        "gen_ai.client.operation.duration": (
            0.01,
            0.02,
            0.04,
            0.08,
            0.16,
            0.32,
            0.64,
            1.28,
            2.56,
            5.12,
            10.24,
            20.48,
            40.96,
            81.92,
        ),
        "gen_ai.client.token.usage": tuple(float(4**i) for i in range(14)),
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


async def test_histogram_values_carry_exemplars_of_the_span_they_measured(
    otel_hook: OTelHook, rec: Recording
) -> None:
    runner = HookRunner([otel_hook, ReadOnlyPaths()])
    async with runner.session() as session, session.turn() as turn:
        for _ in range(2):
            await turn.call_tool(ToolCall("t"), lambda: None)
        otel_hook.instruments.flush()  # recorded while the turn span is current: still theirs
    data = rec.metrics()
    assert data is not None
    exemplars = {
        m.name: sorted(e.span_id for p in m.data.data_points for e in p.exemplars)
        for rm in data.resource_metrics
        for sm in rm.scope_metrics
        for m in sm.metrics
        if m.name in ("gen_ai.execute_tool.duration", "gen_ai.invoke_agent.duration")
    }
    spans = rec.spans
    tools = sorted(s.context.span_id for s in spans if s.name == "execute_tool t")
    (turn_span,) = [s for s in spans if s.name == "invoke_agent agent"]
    assert exemplars["gen_ai.invoke_agent.duration"] == [turn_span.context.span_id]
    # One exemplar per bucket: both calls fall in the same one, which keeps one of them (on a
    # loaded machine one call may take longer and land in the next bucket, with its own).
    tool_exemplars = exemplars["gen_ai.execute_tool.duration"]
    assert 1 <= len(tool_exemplars) <= 2
    assert set(tool_exemplars) <= set(tools)


async def test_a_tool_duration_is_its_span_duration(otel_hook: OTelHook, rec: Recording) -> None:
    async with HookRunner([otel_hook]).session() as session, session.turn() as turn:
        await turn.call_tool(ToolCall("t"), lambda: None)
    (span,) = [s for s in rec.spans if s.name == "execute_tool t"]
    data = rec.metrics()
    assert data is not None
    (point,) = [
        p
        for rm in data.resource_metrics
        for sm in rm.scope_metrics
        for m in sm.metrics
        if m.name == "gen_ai.execute_tool.duration"
        for p in m.data.data_points
    ]
    assert span.end_time is not None
    assert span.start_time is not None
    assert point.sum == (span.end_time - span.start_time) / 1e9


async def test_a_conversation_id_learned_mid_session_labels_the_session_and_its_turns(
    otel_hook: OTelHook, rec: Recording
) -> None:
    async with HookRunner([otel_hook]).session(session_id="s9") as session:
        async with session.turn():
            session.context.conversation_id = "traj-1"  # as an adapter learns it
        async with session.turn():
            pass
    conversations = [(s.name, (s.attributes or {})["gen_ai.conversation.id"]) for s in rec.spans]
    assert conversations == [
        ("invoke_agent agent", "traj-1"),
        ("invoke_agent agent", "traj-1"),
        ("session agent", "traj-1"),
    ]


async def test_the_conversation_id_defaults_to_the_session_id(
    otel_hook: OTelHook, rec: Recording
) -> None:
    async with HookRunner([otel_hook]).session(session_id="s9") as session, session.turn():
        pass
    assert {(s.attributes or {})["gen_ai.conversation.id"] for s in rec.spans} == {"s9"}


async def test_two_otel_hooks_on_one_meter_provider_both_report(rec: Recording) -> None:
    for agent in ("a1", "a2"):  # e.g. one runner per agent, each with its own OTelHook
        hook = OTelHook(rec.tracer_provider, rec.meter_provider)
        runner = HookRunner([hook, ReadOnlyPaths()])
        async with runner.session(agent_name=agent) as session, session.turn() as turn:
            await turn.call_tool(ToolCall("t"), lambda: None)
    points = rec.metric_points()
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


async def test_agent_names_beyond_the_cardinality_limit_are_reported_as_other() -> None:
    with recording(cardinality_limit=1) as rec:
        runner = HookRunner([rec.hook])
        for agent in ("first", "per-user-1", "per-user-2"):
            async with runner.session(agent_name=agent):
                pass
        sessions = rec.metric_points()["hookscope.sessions"]
    assert sessions == {
        attrs(gen_ai__agent__name="first"): 1,
        attrs(gen_ai__agent__name="_other"): 2,
    }
    assert sorted(s.name for s in rec.spans) == [
        "session first",
        "session per-user-1",
        "session per-user-2",
    ]


# --- command and prompt hook runs ---


class GuardShell(PreToolCallDecideHook):
    """Stands in for a command hook: reports what a real one reports, and denies."""

    name = "guard-shell"
    hook_type = "command"

    def __init__(self) -> None:
        self.current_span: Any = None

    def run(self, context: Any, call: ToolCall) -> HookResult:
        self.current_span = trace.get_current_span().get_span_context()
        run = current_hook_run()
        assert run is not None
        run.attributes.update({"process.exit.code": 2, "process.executable.name": "guard.sh"})
        return HookResult.deny("no shell")


class SlowJudge(PreToolCallDecideHook):
    """Stands in for a prompt hook whose model call times out."""

    name = "judge"
    hook_type = "prompt"

    def run(self, context: Any, call: ToolCall) -> HookResult:
        run = current_hook_run()
        assert run is not None
        run.attributes["gen_ai.request.model"] = "judge-1"
        raise TimeoutError("model slow")


async def test_a_command_hook_run_is_an_execute_hook_span_current_while_it_runs(
    otel_hook: OTelHook, rec: Recording
) -> None:
    guard = GuardShell()
    runner = HookRunner([otel_hook, guard])
    async with runner.session(session_id="s1") as session, session.turn() as turn:
        outcome = await turn.call_tool(ToolCall("shell", id="c1"), lambda: None)
        after = trace.get_current_span().get_span_context()
    assert outcome.allowed is False
    spans = {s.name: s for s in rec.spans}
    hook_span, tool_span = spans["execute_hook guard-shell"], spans["execute_tool shell"]
    assert guard.current_span == hook_span.context
    assert after == spans["invoke_agent agent"].context
    assert hook_span.parent == tool_span.context
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
    otel_hook: OTelHook, rec: Recording
) -> None:
    runner = HookRunner([otel_hook, SlowJudge()])
    async with runner.session() as session, session.turn() as turn:
        outcome = await turn.call_tool(ToolCall("t"), lambda: None)
    assert outcome.allowed is False  # a failing decide hook fails closed
    (hook_span,) = [s for s in rec.spans if s.name == "execute_hook judge"]
    attributes = dict(hook_span.attributes or {})
    assert (attributes["error.type"], attributes["hookscope.hook.verdict"]) == (
        "TimeoutError",
        "none",
    )
    assert hook_span.status.status_code.name == "ERROR"
    assert hook_span.status.description == "TimeoutError"
    (chat,) = [s for s in rec.spans if s.name == "chat judge-1"]  # the model call it made
    assert chat.parent is not None
    assert chat.parent.span_id == hook_span.context.span_id
    assert (chat.status.status_code.name, dict(chat.attributes or {})["error.type"]) == (
        "ERROR",
        "TimeoutError",
    )
    series = rec.metric_points(["gen_ai.client.operation.duration"])[
        "gen_ai.client.operation.duration"
    ]
    judged = {
        dict(key).get("error.type"): count
        for key, count in series.items()
        if dict(key).get("gen_ai.request.model") == "judge-1"
    }
    assert judged == {"TimeoutError": 1}


async def test_two_otel_hooks_each_record_a_hook_run(rec: Recording) -> None:
    first = OTelHook(rec.tracer_provider, rec.meter_provider)
    second = OTelHook(rec.tracer_provider, rec.meter_provider)
    runner = HookRunner([first, second, GuardShell()])
    async with runner.session() as session, session.turn() as turn:
        await turn.call_tool(ToolCall("t"), lambda: None)
    tools = {s.context.span_id for s in rec.spans if s.name == "execute_tool t"}
    hook_runs = [s for s in rec.spans if s.name == "execute_hook guard-shell"]
    assert len(tools) == 2
    assert {s.parent.span_id for s in hook_runs if s.parent is not None} == tools


# --- robustness: other tasks, interruptions, sampling ---


async def test_a_session_closed_in_another_task_ends_its_span_without_a_detach_error(
    otel_hook: OTelHook, rec: Recording, caplog: pytest.LogCaptureFixture
) -> None:
    runner = HookRunner([otel_hook])
    scope = runner.session(agent_name="a")
    await scope.__aenter__()
    opened = trace.get_current_span().get_span_context()
    closer = asyncio.create_task(scope.__aexit__(None, None, None))
    await closer
    assert [s.name for s in rec.spans] == ["session a"]
    assert rec.spans[0].context == opened
    assert [r for r in caplog.records if r.levelname == "ERROR"] == []
    # The opening task no longer has the ended span current once it opens the next scope
    # (Python 3.12+: at once, from the closing task).
    async with runner.session(agent_name="b"):
        assert trace.get_current_span().get_span_context() != opened
    assert not trace.get_current_span().get_span_context().is_valid


class _Interrupting:
    """An observer whose scope_started is interrupted (as by KeyboardInterrupt)."""

    def scope_started(self, context: Any) -> None:
        raise KeyboardInterrupt

    def dispatch_started(self, *args: Any) -> None:
        pass

    def hook_finished(self, *args: Any) -> None:
        pass

    def dispatch_finished(self, *args: Any) -> None:
        pass


async def test_another_observers_interruption_leaves_no_span_open_nor_a_session_active(
    otel_hook: OTelHook, rec: Recording
) -> None:
    runner = HookRunner([otel_hook])
    runner.observe(_Interrupting())
    with pytest.raises(KeyboardInterrupt):
        async with runner.session(agent_name="a"):
            pass
    assert [s.name for s in rec.spans] == ["session a"]
    assert rec.metric_points()["hookscope.sessions.active"] == {attrs(gen_ai__agent__name="a"): 0}
    assert not trace.get_current_span().get_span_context().is_valid


async def test_an_interruption_inside_otel_hook_leaves_no_span_open(
    otel_hook: OTelHook, rec: Recording, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hookscope.telemetry import _scopes

    def interrupted(self: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(_scopes.SpanRecord, "activate", interrupted)
    with pytest.raises(KeyboardInterrupt):
        async with HookRunner([otel_hook]).session(agent_name="a"):
            pass
    assert [(s.name, s.end_time is not None) for s in rec.spans] == [("session a", True)]
    assert not trace.get_current_span().get_span_context().is_valid


async def test_a_sampled_out_session_records_no_span_and_every_metric() -> None:
    from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ParentBased

    with recording(
        sampler=ParentBased(ALWAYS_OFF), capture_content=ContentCapture.SPAN_ONLY
    ) as rec:
        seen: list[bool] = []
        runner = HookRunner([rec.hook, enforce(POLICIES)])
        async with runner.session(agent_name="a") as session, session.turn("hi") as turn:
            await turn.llm_request(LlmRequest("m"))
            await turn.llm_response(LlmResponse("m", usage=Usage(3, 4)))
            await turn.call_tool(
                ToolCall("view_file", {"path": "p"}),
                lambda path: seen.append(trace.get_current_span().is_recording()),
            )
        points = rec.metric_points()
    assert rec.spans == ()
    assert seen == [False]
    assert points["hookscope.tool.calls"] == {
        attrs(
            gen_ai__agent__name="a",
            gen_ai__tool__name="view_file",
            hookscope__tool__outcome="succeeded",
        ): 1
    }
    assert sum(points["gen_ai.execute_tool.duration"].values()) == 1
    assert sum(points["gen_ai.client.token.usage"].values()) == 2
    assert sum(points["gen_ai.client.operation.duration"].values()) == 1
    assert points["hookscope.turns"] == {
        attrs(gen_ai__agent__name="a", hookscope__turn__outcome="completed"): 1
    }


async def test_the_chat_span_is_current_while_its_response_is_reported(
    otel_hook: OTelHook, rec: Recording
) -> None:
    seen: dict[str, Any] = {}

    class Watch(Hook):
        def pre_llm_request(self, context: Any, request: LlmRequest) -> None:
            seen["request"] = trace.get_current_span().get_span_context()

        def on_llm_response(self, context: Any, response: LlmResponse) -> None:
            seen["response"] = trace.get_current_span().get_span_context()

    async with HookRunner([otel_hook, Watch()]).session() as session, session.turn() as turn:
        await turn.llm_request(LlmRequest("m"))
        seen["between"] = trace.get_current_span().get_span_context()
        await turn.llm_response(LlmResponse("m"))
    spans = {s.name: s for s in rec.spans}
    chat = spans["chat m"]
    assert chat.kind.name == "CLIENT"
    assert seen == {
        "request": chat.context,
        "between": spans["invoke_agent agent"].context,
        "response": chat.context,
    }


async def test_span_tree_keeps_the_keys_asked_for_and_prints_as_an_indented_tree(
    otel_hook: OTelHook, rec: Recording
) -> None:
    async with HookRunner([otel_hook]).session(agent_name="a") as session, session.turn() as turn:
        await turn.call_tool(ToolCall("t"), lambda: None)
    tree = rec.span_tree(keys=["hookscope.tool.outcome"])
    assert [(node["name"], node["attributes"]) for node in tree] == [("session a", {})]
    assert tree[0]["children"][0]["children"][0]["attributes"] == {
        "hookscope.tool.outcome": "succeeded"
    }
    assert format_tree(tree) == (
        "session a [UNSET] {}\n"
        "  invoke_agent a [UNSET] {}\n"
        '    execute_tool t [UNSET] {"hookscope.tool.outcome": "succeeded"}'
    )


async def test_a_model_request_report_interrupted_leaves_no_span_current_or_open(
    otel_hook: OTelHook, rec: Recording
) -> None:
    class Interrupt(Hook):
        async def pre_llm_request(self, context: Any, request: LlmRequest) -> None:
            raise asyncio.CancelledError

    async def agent() -> None:
        runner = HookRunner([otel_hook, Interrupt()])
        async with runner.session() as session, session.turn() as turn:
            await turn.llm_request(LlmRequest("m"))

    with pytest.raises(asyncio.CancelledError):
        await asyncio.create_task(agent())
    assert sorted((s.name, s.end_time is not None) for s in rec.spans) == [
        ("chat m", True),
        ("invoke_agent agent", True),
        ("session agent", True),
    ]
    (chat,) = [s for s in rec.spans if s.name == "chat m"]
    assert (chat.attributes or {})["error.type"] == "CancelledError"
    assert not trace.get_current_span().get_span_context().is_valid


async def test_each_tool_call_in_a_turn_gets_its_own_tool_s_span_and_call_id() -> None:
    # A turn remembers what every call of one tool shares (span name, attributes, metric
    # name), by tool name and MCP server, for up to 64 tools; past that, calls build their
    # own. Every span must read as if built afresh.
    calls = [
        ToolCall("view_file", {}, "c1"),
        ToolCall("view_file", {}, "c2", server="docs"),
        ToolCall("view_file", {}, ""),
        *(ToolCall(f"tool{i}", {}, f"t{i}") for i in range(70)),
        ToolCall("tool69", {}, "again"),
    ]
    with recording() as rec:
        runner = HookRunner([rec.hook])
        async with runner.session(agent_name="coder") as session, session.turn("go") as turn:
            for call in calls:
                await turn.call_tool(call, lambda: None)
        points = rec.metric_points(["hookscope.tool.calls"])["hookscope.tool.calls"]
    tools = [s for s in rec.spans if s.name.startswith("execute_tool")]
    assert [s.name for s in tools] == [f"execute_tool {c.qualified_name}" for c in calls]
    for span, call in zip(tools, calls, strict=True):
        attributes = dict(span.attributes or {})
        assert attributes["gen_ai.tool.name"] == call.qualified_name
        assert attributes["gen_ai.agent.name"] == "coder"
        assert attributes.get("gen_ai.tool.call.id") == (call.id or None)
        assert attributes.get("hookscope.tool.server") == call.server
        assert attributes["hookscope.tool.outcome"] == "succeeded"
    by_tool = {dict(key)["gen_ai.tool.name"]: count for key, count in points.items()}
    assert by_tool == {"view_file": 2, "docs/view_file": 1, "tool69": 2} | {
        f"tool{i}": 1 for i in range(69)
    }
