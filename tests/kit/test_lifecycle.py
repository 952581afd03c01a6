"""The adapter kit's split seam: sessions, turns and calls opened and ended from SDK callbacks."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from hookscope import HookResult, HookRunner, ToolCall, hooks
from hookscope.builtins import AuditLog
from hookscope.integrations._kit import (
    CallInterrupted,
    Governor,
    Guard,
    ToolVerdict,
    TurnInterrupted,
)
from hookscope.policy import deny, enforce
from hookscope.testing import Recording, recording
from hookscope.types import ChatResponse, LlmRequest, LlmResponse, Recovery, Usage

KEYS = (
    "hookscope.tool.outcome",
    "hookscope.policy.decision",
    "hookscope.policy.outcome",
    "hookscope.turn.outcome",
    "hookscope.session.outcome",
    "gen_ai.tool.call.id",
    "hookscope.recovery.recovered",
    "error.type",
    "gen_ai.usage.input_tokens",
    "gen_ai.response.model",
)


def tree(rec: Recording) -> list[Any]:
    def strip(node: dict[str, Any]) -> Any:
        out: list[Any] = [node["name"], node["attributes"]]
        if "children" in node:
            out.append([strip(c) for c in node["children"]])
        return out

    return [strip(n) for n in rec.span_tree(keys=KEYS)]


def governor(rec: Recording, *more: object) -> Governor:
    return Governor(HookRunner([rec.hook, *more]), "test-sdk", agent_name="bot")


async def test_an_allowed_call_reported_from_two_tasks_is_one_span_under_its_turn() -> None:
    with recording() as rec:
        gov = governor(rec)
        session = await gov.open_session(sdk_id="sdk-1")
        turn = await session.start_turn("hi")
        op = turn.open_tool(ToolCall("read", {"path": "a"}, id="c1"))
        verdict = await op.decide()
        # the SDK reports the result from another task
        await asyncio.get_running_loop().create_task(op.returned("text"))
        await asyncio.get_running_loop().create_task(turn.end())
        await session.end()
    assert verdict == ToolVerdict(True, ToolCall("read", {"path": "a"}, id="c1"))
    assert tree(rec) == [
        [
            "session bot",
            {"hookscope.session.outcome": "completed"},
            [
                [
                    "invoke_agent bot",
                    {"hookscope.turn.outcome": "completed"},
                    [
                        [
                            "execute_tool read",
                            {
                                "gen_ai.tool.call.id": "c1",
                                "hookscope.policy.decision": "allow",
                                "hookscope.policy.outcome": "allowed",
                                "hookscope.tool.outcome": "succeeded",
                            },
                        ],
                    ],
                ],
            ],
        ],
    ]


async def test_a_policy_denial_closes_the_call_with_the_message() -> None:
    with recording() as rec:
        gov = governor(rec, enforce([deny("rm", reason="no deleting")]))
        session = await gov.open_session()
        turn = await session.start_turn("x")
        op = turn.open_tool(ToolCall("rm", {"path": "/"}, id="c2"))
        verdict = await op.decide()
        assert op.phase == "denied"
        assert op.scope.ended
        await turn.end()
        await session.end()
    assert verdict.denied
    assert "no deleting" in verdict.message
    assert verdict.decision is not None
    assert verdict.decision.rule is not None
    tool = tree(rec)[0][2][0][2][0]
    assert tool[1]["hookscope.tool.outcome"] == "denied"
    assert tool[1]["hookscope.policy.decision"] == "deny"


async def test_modified_arguments_come_back_only_when_changed() -> None:
    @hooks.pre_tool_call_decide
    def pin(call: ToolCall) -> HookResult | None:
        return HookResult(modified_args={"n": 2}) if call.name == "inc" else None

    gov = Governor(HookRunner([pin]), "t")
    session = await gov.open_session()
    turn = await session.start_turn("x")
    changed = await turn.open_tool(ToolCall("inc", {"n": 1}, id="a")).decide()
    same = await turn.open_tool(ToolCall("other", {"n": 1}, id="b")).decide()
    await session.end()
    assert dict(changed.args or {}) == {"n": 2}
    assert dict(changed.call.args) == {"n": 2}
    assert same.args is None


@hooks.pre_tool_call_decide
def asks(call: ToolCall) -> HookResult:
    return HookResult.ask("may I?")


@pytest.mark.parametrize(("approved", "allowed"), [(True, True), (False, False), (None, False)])
async def test_a_native_ask_is_pending_until_the_sdk_answers(
    approved: bool | None, allowed: bool
) -> None:
    with recording() as rec:
        gov = governor(rec, asks)
        session = await gov.open_session()
        turn = await session.start_turn("x")
        op = turn.open_tool(ToolCall("w", {}, id="c"))
        pending = await op.decide(native_ask=True)
        assert pending.pending
        assert pending.asked
        assert not pending.denied
        final = await op.answer(approved)
        if final.allowed:
            await op.returned(None)
        await session.end()
    assert final.allowed is allowed
    assert final.asked
    assert final.decision is not None
    assert final.decision.user_approved is approved
    tool = tree(rec)[0][2][0][2][0][1]
    assert tool["hookscope.policy.decision"] == "ask_user"
    assert tool["hookscope.policy.outcome"] == ("allowed" if allowed else "denied")


async def test_a_native_ask_nobody_answers_is_denied_when_the_call_closes() -> None:
    gov = Governor(HookRunner([asks]), "t")
    session = await gov.open_session()
    turn = await session.start_turn("x")
    op = turn.open_tool(ToolCall("w", {}, id="c"))
    assert (await op.decide(native_ask=True)).pending
    op.close()
    final = await op.answer(True)  # too late: the close denied it
    await session.end()
    assert not final.allowed


async def test_an_ask_without_native_goes_to_the_confirm_path() -> None:
    @hooks.on_interaction
    def approve(questions: Any) -> list[Any]:
        from hookscope.types import Answer

        return [Answer(question_id=questions[0].id, text="allow")]

    gov = Governor(HookRunner([asks, approve]), "t")
    session = await gov.open_session()
    turn = await session.start_turn("x")
    verdict = await turn.open_tool(ToolCall("w", {}, id="c")).decide()
    await session.end()
    assert verdict.allowed
    assert verdict.asked
    assert not verdict.pending


async def test_a_recovery_the_sdk_cannot_apply_is_recorded_as_not_recovered(
    tmp_path: Path,
) -> None:
    @hooks.on_tool_error
    def recover(error: Exception) -> Recovery:
        return Recovery("fallback")

    audit = AuditLog(tmp_path / "audit.jsonl")
    with recording() as rec:
        gov = governor(rec, recover, audit)
        session = await gov.open_session()
        turn = await session.start_turn("x")
        op = turn.open_tool(ToolCall("t", {}, id="c"))
        await op.decide()
        applied = await op.failed(ValueError("boom"), recoverable=False)
        op2 = turn.open_tool(ToolCall("t", {}, id="d"))
        await op2.decide()
        recovered = await op2.failed(ValueError("boom"))
        await session.end()
    assert applied is None
    assert recovered == Recovery("fallback")
    calls = tree(rec)[0][2][0][2]
    assert calls[0][1]["hookscope.recovery.recovered"] is False
    assert calls[0][1]["hookscope.tool.outcome"] == "failed"
    assert calls[1][1]["hookscope.recovery.recovered"] is True
    assert calls[1][1]["hookscope.tool.outcome"] == "recovered"
    # Every observer hears the outcome the span records, not the hook's unusable Recovery.
    audit.close()
    lines = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert [(e["call_id"], e["outcome"], e.get("recovered_by")) for e in lines] == [
        ("c", "failed", None),
        ("d", "recovered", "recover"),
    ]


async def test_a_blocked_turn_ends_blocked_at_once() -> None:
    @hooks.pre_turn
    def block(prompt: Any) -> HookResult:
        return HookResult.deny("not today")

    with recording() as rec:
        gov = governor(rec, block)
        session = await gov.open_session()
        turn = await session.start_turn("x")
        assert turn.ended
        await session.end()
    assert not turn.allowed
    assert turn.verdict.message == "not today"
    assert turn.verdict.decided_by == "block"
    assert tree(rec)[0][2][0][1] == {"hookscope.turn.outcome": "blocked"}


async def test_a_post_turn_hook_can_ask_the_agent_to_go_on() -> None:
    seen: list[str] = []

    @hooks.post_turn
    def more(response: ChatResponse) -> HookResult | None:
        seen.append(response.text)
        return HookResult.deny("also run the tests") if len(seen) == 1 else None

    gov = Governor(HookRunner([more]), "t")
    session = await gov.open_session()
    turn = await session.start_turn("x")
    first = await turn.stop(ChatResponse(text="done"))
    assert not turn.ended
    second = await turn.stop(ChatResponse(text="tests pass"))
    await session.end()
    assert first.allowed is False
    assert first.message == "also run the tests"
    assert second.allowed
    assert turn.ended
    assert seen == ["done", "tests pass"]
    assert turn.context.outcome == "completed"


async def test_ending_a_session_ends_its_open_turn_and_calls_interrupted() -> None:
    with recording() as rec:
        gov = governor(rec)
        session = await gov.open_session()
        turn = await session.start_turn("x")
        op = turn.open_tool(ToolCall("slow", {}, id="c"))
        await op.decide()
        await session.end()
    assert tree(rec) == [
        [
            "session bot",
            {"hookscope.session.outcome": "completed"},
            [
                [
                    "invoke_agent bot",
                    {
                        "hookscope.turn.outcome": "failed",
                        "error.type": TurnInterrupted.__qualname__,
                    },
                    [
                        [
                            "execute_tool slow",
                            {
                                "gen_ai.tool.call.id": "c",
                                "hookscope.policy.decision": "allow",
                                "hookscope.policy.outcome": "allowed",
                                "hookscope.tool.outcome": "failed",
                                "error.type": TurnInterrupted.__qualname__,
                            },
                        ],
                    ],
                ],
            ],
        ],
    ]


async def test_cancellation_ends_the_turn_cancelled() -> None:
    with recording() as rec:
        gov = governor(rec)
        session = await gov.open_session()
        turn = await session.start_turn("x")
        await turn.end(asyncio.CancelledError())
        await session.end(asyncio.CancelledError())
    root = tree(rec)[0]
    assert root[1]["hookscope.session.outcome"] == "cancelled"
    assert root[2][0][1]["hookscope.turn.outcome"] == "cancelled"


async def test_a_subagent_run_nests_under_the_delegating_call_with_its_own_calls() -> None:
    with recording() as rec:
        gov = governor(rec)
        session = await gov.open_session()
        turn = await session.start_turn("x")
        delegating = turn.open_tool(ToolCall("Agent", {"prompt": "p"}, id="d"))
        await delegating.decide()
        run = turn.start_subagent("agent-7", "helper", delegating)
        assert turn.start_subagent("agent-7", "helper", delegating) is run
        inner = turn.open_tool(ToolCall("read", {}, id="i"), run)
        await inner.decide()
        await inner.returned("x")
        turn.end_subagent("agent-7")
        await delegating.returned("done")
        await turn.end()
        await session.end()
    agent = tree(rec)[0][2][0][2][0]
    assert agent[0] == "execute_tool Agent"
    subagent = agent[2][0]
    assert subagent[0] == "invoke_agent helper"
    assert subagent[1] == {"hookscope.turn.outcome": "completed"}
    assert [c[0] for c in subagent[2]] == ["execute_tool read"]


async def test_a_reported_model_call_is_a_chat_span_with_usage() -> None:
    with recording() as rec:
        gov = governor(rec)
        session = await gov.open_session()
        turn = await session.start_turn("x")
        turn.model_call_started(LlmRequest("claude-x", provider="anthropic"))
        turn.model_call_finished(
            LlmResponse("claude-x-1", "hello", usage=Usage(5, 7), provider="anthropic")
        )
        await session.end()
    chat = tree(rec)[0][2][0][2][0]
    assert chat == [
        "chat claude-x",
        {"gen_ai.response.model": "claude-x-1", "gen_ai.usage.input_tokens": 5},
    ]


async def test_guard_turns_an_adapter_failure_into_a_denial_and_lets_cancellation_through() -> None:
    guard = Guard("test-sdk")

    async def broken() -> str:
        raise KeyError("secret-value")

    message = await guard.decide(broken(), lambda m: m, "pre")
    assert message == "hookscope denied this call: its test-sdk adapter failed (KeyError)"

    async def cancelled() -> str:
        raise asyncio.CancelledError

    with pytest.raises(asyncio.CancelledError):
        await guard.decide(cancelled(), lambda m: m)

    @guard.observe
    def noisy() -> int:
        raise RuntimeError("x")

    assert noisy() is None


async def test_calls_interrupted_by_a_subagent_end_name_the_cause() -> None:
    gov = Governor(HookRunner(), "t")
    session = await gov.open_session()
    turn = await session.start_turn("x")
    run = turn.start_subagent("r", "helper")
    op = turn.open_tool(ToolCall("t", {}, id="c"), run)
    await op.decide()
    turn.end_subagent("r")
    assert op.scope.ended
    assert op.phase == "done"
    assert isinstance(CallInterrupted("x"), Exception)
    await session.end()


def test_a_governor_needs_a_runner() -> None:
    with pytest.raises(TypeError, match="HookRunner"):
        Governor(object(), "t")  # type: ignore[arg-type]


async def test_a_deadline_ends_a_session_cancelled_and_a_tools_own_timeout_failed() -> None:
    """The one rule (``ended_by``), for the kit and hookscope's own scopes alike."""

    async def never() -> None:
        await asyncio.Event().wait()

    with recording() as rec:
        gov = governor(rec)
        for name, raise_it in (
            ("deadline", lambda: asyncio.wait_for(never(), 0.01)),
            ("own", lambda: _raise(TimeoutError("the socket timed out"))),
        ):
            session = await gov.open_session(session_id=name)
            try:
                await raise_it()
            except TimeoutError as error:
                await session.end(error)
        runner = HookRunner([rec.hook])
        with pytest.raises(TimeoutError):
            async with runner.session(session_id="core", agent_name="bot"):
                await asyncio.wait_for(never(), 0.01)
    assert [(s[0], s[1]["hookscope.session.outcome"]) for s in tree(rec)] == [
        ("session bot", "cancelled"),
        ("session bot", "failed"),
        ("session bot", "cancelled"),
    ]


async def _raise(error: BaseException) -> None:
    raise error


async def test_a_decision_cancelled_midway_allows_nothing_and_ends_with_its_turn() -> None:
    started = asyncio.Event()

    @hooks.pre_tool_call_decide
    async def slow(call: ToolCall) -> HookResult:
        started.set()
        await asyncio.Event().wait()  # a person who never answers
        return HookResult()

    with recording() as rec:
        gov = governor(rec, slow)
        session = await gov.open_session()
        turn = await session.start_turn("x")
        op = turn.open_tool(ToolCall("rm", {}, id="c"))
        deciding = asyncio.get_running_loop().create_task(op.decide())
        await started.wait()
        deciding.cancel()
        with pytest.raises(asyncio.CancelledError):
            await deciding
        assert op.verdict is None
        assert op.phase == "deciding"
        await session.end()
    [[_, _, [[_, _, [call]]]]] = tree(rec)
    # Never allowed: it ends with the turn around it, undecided.
    assert call == [
        "execute_tool rm",
        {
            "gen_ai.tool.call.id": "c",
            "hookscope.tool.outcome": "failed",
            "error.type": "TurnInterrupted",
        },
    ]
