"""The scoped API: sessions, turns and tool calls, how they end, and who is told."""

from __future__ import annotations

import asyncio
import contextvars
import logging
from typing import Any

import pytest

from hookscope import hooks
from hookscope.context import HookContext, OperationContext
from hookscope.hooks import Hook
from hookscope.runner import DispatchObserver, HookRunner, ScopeError, ToolOutcome
from hookscope.types import (
    Answer,
    ChatResponse,
    HookResult,
    LlmRequest,
    LlmResponse,
    Question,
    Recovery,
    RequestDecision,
    ResponseDecision,
    ToolCall,
    ToolResult,
)

from .conftest import Recorder


class Log(Hook):
    """Records the inspect events it sees, with their data."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, Any]] = []

    def on_session_start(self, context: Any) -> None:
        self.seen.append(("on_session_start", context.session_id))

    def on_session_end(self, context: Any) -> None:
        self.seen.append(("on_session_end", context.outcome))

    def post_turn(self, context: Any, response: ChatResponse) -> None:
        self.seen.append(("post_turn", response))

    def post_tool_call(self, context: Any, result: ToolResult) -> None:
        self.seen.append(("post_tool_call", (result.call, result.value)))

    def on_compaction(self, context: Any, summary: str) -> None:
        self.seen.append(("on_compaction", summary))


class Gate(Hook):
    """Denies tools named 'rm', rewrites 'echo' args, recovers TimeoutError."""

    def pre_tool_call(self, context: Any, call: ToolCall) -> HookResult | None:
        if call.name == "rm":
            return HookResult.deny("rm is not allowed")
        if call.name == "echo":
            return HookResult(modified_args={"text": call.args["text"].upper()})
        return None

    def on_tool_error(self, context: Any, error: Exception) -> Recovery | None:
        return Recovery("cached", "served from cache") if isinstance(error, TimeoutError) else None


def echo(text: str) -> str:
    return text


async def test_session_dispatches_start_and_end_and_completes(recorder: Recorder) -> None:
    log = Log()
    runner = HookRunner([log, recorder])
    async with runner.session(agent_name="coder", session_id="s1") as session:
        assert (session.session_id, session.context.agent_name) == ("s1", "coder")
    assert log.seen == [("on_session_start", "s1"), ("on_session_end", "completed")]
    assert session.context.outcome == "completed"


async def test_session_id_is_generated_when_not_given() -> None:
    async with HookRunner().session() as first, HookRunner().session() as second:
        assert len(first.session_id) == 32
        assert first.session_id != second.session_id


async def test_whole_session_scope_and_dispatch_sequence(recorder: Recorder) -> None:
    runner = HookRunner([Gate(), recorder])
    async with runner.session() as session, session.turn("hi") as turn:
        await turn.call_tool(ToolCall("echo", {"text": "a"}), echo)
        turn.respond(ChatResponse("done"))
    assert [c for c in recorder.calls if c[0] != "hook_finished"] == [
        ("scope_started", "SessionContext"),
        ("dispatch_started", "on_session_start"),
        ("dispatch_finished", "on_session_start", None, None),
        ("scope_started", "TurnContext"),
        ("dispatch_started", "pre_turn"),
        ("dispatch_finished", "pre_turn", HookResult(), None),
        ("scope_started", "OperationContext"),
        ("dispatch_started", "pre_tool_call"),
        ("dispatch_finished", "pre_tool_call", HookResult(modified_args={"text": "A"}), None),
        ("dispatch_started", "post_tool_call"),
        ("dispatch_finished", "post_tool_call", None, None),
        ("scope_ended", "OperationContext", None, None),
        ("dispatch_started", "post_turn"),
        ("dispatch_finished", "post_turn", None, None),
        ("scope_ended", "TurnContext", "completed", None),
        ("dispatch_started", "on_session_end"),
        ("dispatch_finished", "on_session_end", None, None),
        ("scope_ended", "SessionContext", "completed", None),
    ]


async def test_allowed_call_runs_the_tool_with_effective_args() -> None:
    log = Log()
    async with HookRunner([Gate(), log]).session() as session, session.turn("hi") as turn:
        outcome = await turn.call_tool(ToolCall("echo", {"text": "hi"}, id="c1"), echo)
    effective = ToolCall("echo", {"text": "HI"}, id="c1")
    assert outcome == ToolOutcome(allowed=True, call=effective, value="HI")
    assert ("post_tool_call", (effective, "HI")) in log.seen


async def test_async_tool_is_awaited() -> None:
    async def fetch(url: str) -> str:
        await asyncio.sleep(0)
        return f"<{url}>"

    async with HookRunner().session() as session, session.turn() as turn:
        outcome = await turn.call_tool(ToolCall("fetch", {"url": "u"}), fetch)
    assert outcome.value == "<u>"


async def test_denied_call_does_not_run_the_tool() -> None:
    ran: list[str] = []
    async with HookRunner([Gate()]).session() as session, session.turn() as turn:
        outcome = await turn.call_tool(ToolCall("rm", {"path": "/"}), lambda path: ran.append(path))
    assert outcome == ToolOutcome(
        allowed=False,
        call=ToolCall("rm", {"path": "/"}),
        message="rm is not allowed",
        decided_by="Gate",
    )
    assert ran == []


async def test_recovered_error_returns_the_recovery_and_skips_post_tool_call() -> None:
    log = Log()
    error = TimeoutError("slow")

    def flaky() -> None:
        raise error

    async with HookRunner([Gate(), log]).session() as session, session.turn() as turn:
        outcome = await turn.call_tool(ToolCall("net"), flaky)
    assert outcome == ToolOutcome(
        allowed=True,
        call=ToolCall("net"),
        value="cached",
        error=error,
        recovered=True,
        message="served from cache",
        decided_by="Gate",
    )
    assert [event for event, _ in log.seen if event == "post_tool_call"] == []


async def test_unrecovered_error_is_reraised_unchanged_and_closes_every_scope(
    recorder: Recorder,
) -> None:
    log = Log()
    error = ValueError("bad input")

    def broken() -> None:
        raise error

    runner = HookRunner([Gate(), log, recorder])
    with pytest.raises(ValueError, match="bad input") as raised:
        async with runner.session() as session, session.turn() as turn:
            await turn.call_tool(ToolCall("parse"), broken)
    assert raised.value is error
    assert raised.value.__context__ is None
    assert recorder.named("scope_ended") == [
        ("scope_ended", "OperationContext", None, "ValueError"),
        ("scope_ended", "TurnContext", "failed", "ValueError"),
        ("scope_ended", "SessionContext", "failed", "ValueError"),
    ]
    assert log.seen[-1] == ("on_session_end", "failed")
    assert "post_turn" not in [event for event, _ in log.seen]


async def test_cancellation_mid_tool_closes_every_scope_and_propagates(recorder: Recorder) -> None:
    log = Log()
    started = asyncio.Event()

    async def hang() -> None:
        started.set()
        await asyncio.Event().wait()

    async def agent() -> None:
        async with HookRunner([log, recorder]).session() as session, session.turn() as turn:
            await turn.call_tool(ToolCall("hang"), hang)

    task = asyncio.create_task(agent())
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert recorder.named("scope_ended") == [
        ("scope_ended", "OperationContext", None, "CancelledError"),
        ("scope_ended", "TurnContext", "cancelled", "CancelledError"),
        ("scope_ended", "SessionContext", "cancelled", "CancelledError"),
    ]
    assert log.seen[-1] == ("on_session_end", "cancelled")


async def test_cancellation_during_session_start_still_ends_the_session(recorder: Recorder) -> None:
    started = asyncio.Event()
    ended: list[str | None] = []

    @hooks.on_session_start
    async def slow() -> None:
        started.set()
        await asyncio.Event().wait()

    @hooks.on_session_end
    def end(context: Any) -> None:
        ended.append(context.outcome)

    async def agent() -> None:
        async with HookRunner([slow, end, recorder]).session():
            pass  # pragma: no cover - never reached

    task = asyncio.create_task(agent())
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert ended == ["cancelled"]
    assert recorder.named("scope_ended") == [
        ("scope_ended", "SessionContext", "cancelled", "CancelledError")
    ]


async def test_blocked_turn_skips_post_turn_and_refuses_tool_calls(recorder: Recorder) -> None:
    log = Log()

    @hooks.pre_turn
    def rate_limit(prompt: str) -> HookResult:
        return HookResult.deny("rate limited")

    async with (
        HookRunner([rate_limit, log, recorder]).session() as session,
        session.turn("hi") as turn,
    ):
        assert (turn.allowed, turn.result.message) == (False, "rate limited")
        with pytest.raises(ScopeError, match=r"was blocked by pre_turn .*check turn.allowed first"):
            await turn.call_tool(ToolCall("x"), echo)
    assert turn.context.outcome == "blocked"
    assert [event for event, _ in log.seen] == ["on_session_start", "on_session_end"]
    assert ("scope_ended", "TurnContext", "blocked", None) in recorder.calls


async def test_post_turn_receives_the_response_given_to_respond() -> None:
    log = Log()
    response = ChatResponse("answer", model="m")
    async with HookRunner([log]).session() as session:
        async with session.turn("q") as turn:
            turn.respond(response)
        async with session.turn("q2"):
            pass
    assert [data for event, data in log.seen if event == "post_turn"] == [response, ChatResponse()]


async def test_turns_are_indexed_in_order() -> None:
    async with HookRunner().session() as session:
        indexes = []
        for _ in range(3):
            async with session.turn() as turn:
                indexes.append(turn.context.turn_index)
    assert indexes == [0, 1, 2]
    assert session.context.turn_count == 3


async def test_failing_turn_body_ends_the_turn_failed_without_post_turn(recorder: Recorder) -> None:
    log = Log()
    async with HookRunner([log, recorder]).session() as session:
        with pytest.raises(KeyError):
            async with session.turn():
                raise KeyError("k")
    assert ("scope_ended", "TurnContext", "failed", "KeyError") in recorder.calls
    assert session.context.outcome == "completed"
    assert "post_turn" not in [event for event, _ in log.seen]


async def test_ask_returns_the_hook_answer_in_an_interaction_context() -> None:
    kinds: list[str] = []

    @hooks.on_interaction
    def answer(context: OperationContext, questions: list[Question]) -> list[Answer]:
        kinds.append(context.kind)
        return [Answer("yes", q.id) for q in questions]

    async with HookRunner([answer]).session() as session, session.turn() as turn:
        answers = await turn.ask([Question("Proceed?", ("yes", "no"), id="q1")])
    assert answers == [Answer("yes", "q1")]
    assert kinds == ["interaction"]


async def test_compact_llm_request_and_llm_response_go_through_the_turn() -> None:
    log = Log()

    class Guard(Hook):
        def pre_llm_request(self, context: Any, request: LlmRequest) -> RequestDecision:
            return (
                RequestDecision.block("too long")
                if len(request.messages) > 1
                else RequestDecision.proceed()
            )

        def on_llm_response(self, context: Any, response: LlmResponse) -> ResponseDecision:
            return (
                ResponseDecision.retry_with_feedback("be brief")
                if len(response.text) > 3
                else ResponseDecision.accept()
            )

    async with HookRunner([Guard(), log]).session() as session, session.turn() as turn:
        await turn.compact("summary")
        blocked = await turn.llm_request(LlmRequest("m", messages=({}, {})))
        proceed = await turn.llm_request(LlmRequest("m", messages=({},)))
        retry = await turn.llm_response(LlmResponse("m", text="long answer"))
    assert ("on_compaction", "summary") in log.seen
    assert (blocked, proceed, retry) == (
        RequestDecision.block("too long"),
        RequestDecision.proceed(),
        ResponseDecision.retry_with_feedback("be brief"),
    )


async def test_scopes_cannot_be_reused_or_used_after_closing() -> None:
    runner = HookRunner()
    scope = runner.session()
    async with scope as session:
        async with session.turn() as turn:
            pass
        with pytest.raises(ScopeError, match="cannot call a tool: turn 0 is closed"):
            await turn.call_tool(ToolCall("x"), echo)
    with pytest.raises(ScopeError, match="already entered"):
        async with scope:
            pass  # pragma: no cover
    with pytest.raises(ScopeError, match="turns need an active one"):
        session.turn()


async def test_parallel_tool_calls_get_separate_operation_contexts() -> None:
    seen: list[tuple[str, str | None]] = []
    barrier = asyncio.Event()

    class Tag(Hook):
        def pre_tool_call(self, context: OperationContext, call: ToolCall) -> None:
            context.set("tag", call.id)

        def post_tool_call(self, context: OperationContext, result: ToolResult) -> None:
            seen.append((result.call.id, context.get("tag")))

    async def wait(n: int) -> int:
        if n == 2:
            barrier.set()
        await barrier.wait()
        return n

    async with HookRunner([Tag()]).session() as session, session.turn() as turn:
        outcomes = await asyncio.gather(
            *(turn.call_tool(ToolCall("wait", {"n": n}, id=f"c{n}"), wait) for n in range(3))
        )
        assert turn.context.get("tag") is None
    assert [o.value for o in outcomes] == [0, 1, 2]
    assert sorted(seen) == [("c0", "c0"), ("c1", "c1"), ("c2", "c2")]


async def test_a_thousand_concurrent_sessions_do_not_cross_talk() -> None:
    mismatches: list[str] = []
    ended: list[str] = []

    class PerSession(Hook):
        def on_session_start(self, context: Any) -> None:
            context.set("owner", context.session_id)

        async def pre_tool_call(self, context: OperationContext, call: ToolCall) -> HookResult:
            await asyncio.sleep(0)  # interleave with every other session
            if context.get("owner") != context.session_id or call.args["sid"] != context.session_id:
                mismatches.append(context.session_id)
            return HookResult(modified_args={"sid": context.get("owner")})

        def on_session_end(self, context: Any) -> None:
            ended.append(context.get("owner"))

    runner = HookRunner([PerSession()])

    async def agent(i: int) -> list[str]:
        async with runner.session(session_id=f"s{i}") as session:
            values = []
            for turn_index in range(2):
                async with session.turn(f"t{turn_index}") as turn:
                    outcome = await turn.call_tool(
                        ToolCall("who", {"sid": f"s{i}"}), lambda sid: sid
                    )
                    values.append(outcome.value)
            return values

    results = await asyncio.gather(*(agent(i) for i in range(1000)))
    assert results == [[f"s{i}", f"s{i}"] for i in range(1000)]
    assert mismatches == []
    assert sorted(ended) == sorted(f"s{i}" for i in range(1000))


# --- observers ---


async def test_observer_undo_stops_observation(recorder: Recorder) -> None:
    runner = HookRunner()
    undo = runner.observe(recorder)
    async with runner.session():
        pass
    count = len(recorder.calls)
    undo()
    undo()  # idempotent
    async with runner.session():
        pass
    assert count == 6
    assert len(recorder.calls) == count


async def test_a_raising_observer_is_logged_once_and_never_breaks_dispatch(
    caplog: pytest.LogCaptureFixture, recorder: Recorder
) -> None:
    class Broken(DispatchObserver):
        def dispatch_started(self, event: Any, context: Any, data: Any) -> None:
            raise RuntimeError("observer bug")

    runner = HookRunner([Broken(), Gate(), recorder])
    with caplog.at_level(logging.WARNING, logger="hookscope"):
        async with runner.session() as session, session.turn() as turn:
            outcome = await turn.call_tool(ToolCall("echo", {"text": "x"}), echo)
    assert outcome.value == "X"
    assert len(recorder.named("dispatch_finished")) == 6
    assert [r.getMessage().split(";")[1] for r in caplog.records] == [
        " its further failures are not logged"
    ]


def test_observing_an_object_without_dispatch_methods_is_a_type_error() -> None:
    with pytest.raises(
        TypeError, match="has no dispatch_started, hook_finished, dispatch_finished"
    ):
        HookRunner().observe(object())


async def test_a_scope_contextvar_set_by_an_observer_is_visible_inside_the_tool() -> None:
    current: contextvars.ContextVar[str] = contextvars.ContextVar("current", default="none")

    class Attach(DispatchObserver):
        def __init__(self) -> None:
            self.tokens: dict[int, contextvars.Token[str]] = {}

        def scope_started(self, context: HookContext) -> None:
            self.tokens[id(context)] = current.set(type(context).__name__)

        def scope_ended(self, context: HookContext, error: BaseException | None) -> None:
            current.reset(self.tokens.pop(id(context)))

    async with HookRunner([Attach()]).session() as session, session.turn() as turn:
        outcome = await turn.call_tool(ToolCall("peek"), current.get)
        in_turn = current.get()
    assert (outcome.value, in_turn, current.get()) == ("OperationContext", "TurnContext", "none")
