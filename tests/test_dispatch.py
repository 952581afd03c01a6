"""Every row of DESIGN §2: each event's dispatch rule and the failure table."""

from __future__ import annotations

import asyncio
import logging
import re
from typing import Any

import pytest

from hookscope._events import RULES
from hookscope.context import OperationContext, SessionContext, TurnContext
from hookscope.hooks import Hook
from hookscope.runner import Dispatch, DispatchObserver, HookRunner
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


class Scripted(Hook):
    """A hook that answers every event with a fixed value and logs that it ran."""

    def __init__(
        self, name: str, log: list[str], returns: Any = None, raises: Exception | None = None
    ):
        self.name = name
        self.log = log
        self.returns = returns
        self.raises = raises

    def _answer(self, event: str) -> Any:
        self.log.append(f"{self.name}.{event}")
        if self.raises is not None:
            raise self.raises
        return self.returns

    async def on_session_start(self, context: Any) -> None:
        self._answer("on_session_start")

    async def on_session_end(self, context: Any) -> None:
        self._answer("on_session_end")

    async def pre_turn(self, context: Any, prompt: Any) -> Any:
        return self._answer("pre_turn")

    async def post_turn(self, context: Any, response: Any) -> None:
        self._answer("post_turn")

    async def pre_llm_request(self, context: Any, request: Any) -> Any:
        return self._answer("pre_llm_request")

    async def on_llm_response(self, context: Any, response: Any) -> Any:
        return self._answer("on_llm_response")

    async def pre_tool_call(self, context: Any, call: Any) -> Any:
        return self._answer("pre_tool_call")

    async def post_tool_call(self, context: Any, result: Any) -> None:
        self._answer("post_tool_call")

    async def on_tool_error(self, context: Any, error: Any) -> Any:
        return self._answer("on_tool_error")

    async def on_interaction(self, context: Any, questions: Any) -> Any:
        return self._answer("on_interaction")

    async def on_compaction(self, context: Any, summary: Any) -> None:
        self._answer("on_compaction")


SESSION = SessionContext("s1", "coder")
TURN = TurnContext(SESSION, 0, "hi")
OPERATION = OperationContext(TURN, "tool", ToolCall("t"), "c1")


def _runner(log: list[str], *answers: Any) -> HookRunner:
    """Hooks h1, h2, … returning the given answers (an Exception instance raises)."""
    return HookRunner(
        Scripted(f"h{i}", log, raises=a) if isinstance(a, Exception) else Scripted(f"h{i}", log, a)
        for i, a in enumerate(answers, 1)
    )


# --- inspect events: every hook, in order ---


@pytest.mark.parametrize(
    ("event", "dispatch"),
    [
        ("on_session_start", lambda r: r.dispatch_on_session_start(SESSION)),
        ("on_session_end", lambda r: r.dispatch_on_session_end(SESSION)),
        ("post_turn", lambda r: r.dispatch_post_turn(TURN, ChatResponse("x"))),
        (
            "post_tool_call",
            lambda r: r.dispatch_post_tool_call(OPERATION, ToolResult(ToolCall("t"))),
        ),
        ("on_compaction", lambda r: r.dispatch_on_compaction(TURN, "summary")),
    ],
)
async def test_inspect_event_runs_every_hook_in_order(event: str, dispatch: Any) -> None:
    log: list[str] = []
    assert await dispatch(_runner(log, None, None, None)) is None
    assert log == [f"h1.{event}", f"h2.{event}", f"h3.{event}"]


@pytest.mark.parametrize(
    ("event", "dispatch"),
    [
        ("on_session_start", lambda r: r.dispatch_on_session_start(SESSION)),
        ("post_turn", lambda r: r.dispatch_post_turn(TURN, ChatResponse("x"))),
        ("on_compaction", lambda r: r.dispatch_on_compaction(TURN, "summary")),
    ],
)
async def test_failing_inspect_hook_is_isolated_and_reported(
    event: str, dispatch: Any, recorder: Recorder
) -> None:
    log: list[str] = []
    runner = _runner(log, None, RuntimeError("boom"), None)
    runner.observe(recorder)
    await dispatch(runner)
    assert log == [f"h1.{event}", f"h2.{event}", f"h3.{event}"]
    assert [c[2:] for c in recorder.named("hook_finished")] == [
        ("h1", None, None),
        ("h2", None, "RuntimeError"),
        ("h3", None, None),
    ]
    assert recorder.named("dispatch_finished") == [("dispatch_finished", event, None, None)]


async def test_hook_failure_is_logged_once_in_full(caplog: pytest.LogCaptureFixture) -> None:
    runner = _runner([], RuntimeError("boom"))
    with caplog.at_level(logging.DEBUG, logger="hookscope"):
        await runner.dispatch_post_turn(TURN, ChatResponse())
        await runner.dispatch_post_turn(TURN, ChatResponse())
    levels = [(r.levelname, r.exc_info is not None) for r in caplog.records]
    assert levels == [("WARNING", True), ("DEBUG", False)]
    assert "hook 'h1' failed in post_turn (ignored)" in caplog.records[0].getMessage()


# --- pre_turn: stop at the first allow=False ---


async def test_pre_turn_stops_at_first_denial() -> None:
    log: list[str] = []
    result = await _runner(log, None, HookResult.deny("busy"), None).dispatch_pre_turn(TURN, "hi")
    assert result == HookResult(allow=False, message="busy")
    assert log == ["h1.pre_turn", "h2.pre_turn"]


async def test_pre_turn_allows_when_every_hook_allows() -> None:
    log: list[str] = []
    result = await _runner(log, HookResult(), None).dispatch_pre_turn(TURN, "hi")
    assert result == HookResult(allow=True)
    assert log == ["h1.pre_turn", "h2.pre_turn"]


# --- pre_tool_call: stop at first deny; modified_args merge in order ---


async def test_pre_tool_call_stops_at_first_deny() -> None:
    log: list[str] = []
    runner = _runner(log, HookResult(), HookResult.deny("no"), HookResult())
    result, call = await runner.dispatch_pre_tool_call(OPERATION, ToolCall("t", {"a": 1}))
    assert (result, call) == (HookResult(allow=False, message="no"), ToolCall("t", {"a": 1}))
    assert log == ["h1.pre_tool_call", "h2.pre_tool_call"]


async def test_modified_args_merge_in_order_into_the_call_the_next_hook_sees() -> None:
    seen: list[dict[str, Any]] = []

    class Capture(Hook):
        def pre_tool_call(self, context: Any, call: ToolCall) -> None:
            seen.append(dict(call.args))

    runner = HookRunner(
        [
            Scripted("a", [], HookResult(modified_args={"x": 1, "y": 1})),
            Capture(),
            Scripted("b", [], HookResult(modified_args={"y": 2})),
            Capture(),
        ]
    )
    result, call = await runner.dispatch_pre_tool_call(OPERATION, ToolCall("t", {"x": 0, "z": 0}))
    assert seen == [{"x": 1, "y": 1, "z": 0}, {"x": 1, "y": 2, "z": 0}]
    assert call == ToolCall("t", {"x": 1, "y": 2, "z": 0})
    assert result == HookResult(allow=True, modified_args={"x": 1, "y": 2, "z": 0})


async def test_replace_args_replaces_instead_of_merging() -> None:
    seen: list[dict[str, Any]] = []

    class Capture(Hook):
        def pre_tool_call(self, context: Any, call: ToolCall) -> None:
            seen.append(dict(call.args))

    runner = HookRunner(
        [
            Scripted("a", [], HookResult(modified_args={"y": 1}, replace_args=True)),
            Capture(),
            Scripted("b", [], HookResult(modified_args={}, replace_args=True)),
        ]
    )
    result, call = await runner.dispatch_pre_tool_call(OPERATION, ToolCall("t", {"x": 0}))
    assert seen == [{"y": 1}]
    assert dict(call.args) == {}
    assert result == HookResult(allow=True, modified_args={})


async def test_unmodified_allowed_call_is_equal_with_read_only_args() -> None:
    tags = ["x"]
    original = ToolCall("t", {"a": 1, "tags": tags})
    result, call = await _runner([], None, HookResult()).dispatch_pre_tool_call(OPERATION, original)
    assert call is original  # frozen when built: nothing to copy
    assert result == HookResult()
    with pytest.raises(TypeError, match="does not support item assignment"):
        call.args["a"] = 2  # type: ignore[index]
    assert call.args["tags"] == tags
    assert call.args["tags"] is not tags  # the caller's list is not the call's


# --- pre_llm_request: modify chains; stop at first block ---


async def test_pre_llm_request_modifications_chain_into_the_next_hook() -> None:
    seen: list[str] = []

    class Rewrite(Hook):
        def __init__(self, suffix: str) -> None:
            self.suffix = suffix

        def pre_llm_request(self, context: Any, request: LlmRequest) -> RequestDecision:
            seen.append(request.model)
            return RequestDecision.modify(LlmRequest(model=request.model + self.suffix))

    runner = HookRunner([Rewrite("-a"), Rewrite("-b")])
    decision = await runner.dispatch_pre_llm_request(TURN, LlmRequest(model="m"))
    assert seen == ["m", "m-a"]
    assert decision == RequestDecision.modify(LlmRequest(model="m-a-b"))


async def test_pre_llm_request_stops_at_first_block() -> None:
    log: list[str] = []
    runner = _runner(log, RequestDecision.proceed(), RequestDecision.block("pii"), None)
    assert await runner.dispatch_pre_llm_request(TURN, LlmRequest("m")) == RequestDecision.block(
        "pii"
    )
    assert log == ["h1.pre_llm_request", "h2.pre_llm_request"]


async def test_pre_llm_request_proceeds_when_nobody_objects() -> None:
    decision = await _runner([], None, RequestDecision.proceed()).dispatch_pre_llm_request(
        TURN, LlmRequest("m")
    )
    assert decision == RequestDecision.proceed()


# --- on_llm_response: stop at first non-accept ---


async def test_on_llm_response_stops_at_first_non_accept() -> None:
    log: list[str] = []
    retry = ResponseDecision.retry_with_feedback("cite")
    runner = _runner(log, ResponseDecision.accept(), retry, ResponseDecision.block("x"))
    assert await runner.dispatch_on_llm_response(TURN, LlmResponse("m")) == retry
    assert log == ["h1.on_llm_response", "h2.on_llm_response"]


async def test_on_llm_response_accepts_when_every_hook_accepts() -> None:
    runner = _runner([], None, ResponseDecision.accept())
    assert (
        await runner.dispatch_on_llm_response(TURN, LlmResponse("m")) == ResponseDecision.accept()
    )


# --- on_tool_error: stop at first Recovery ---


async def test_on_tool_error_stops_at_first_recovery() -> None:
    log: list[str] = []
    runner = _runner(log, None, Recovery("fallback", "timeout"), Recovery("late"))
    assert await runner.dispatch_on_tool_error(OPERATION, ValueError()) == Recovery(
        "fallback", "timeout"
    )
    assert log == ["h1.on_tool_error", "h2.on_tool_error"]


async def test_on_tool_error_without_recovery_returns_none() -> None:
    assert await _runner([], None, None).dispatch_on_tool_error(OPERATION, ValueError()) is None


async def test_failing_error_hook_gives_no_recovery_but_the_next_may(recorder: Recorder) -> None:
    log: list[str] = []
    runner = _runner(log, RuntimeError("bad"), Recovery(0))
    runner.observe(recorder)
    assert await runner.dispatch_on_tool_error(OPERATION, ValueError()) == Recovery(0)
    assert recorder.named("dispatch_finished") == [
        ("dispatch_finished", "on_tool_error", Recovery(0), "h2")
    ]


async def test_error_hook_returning_a_non_recovery_counts_as_failed(recorder: Recorder) -> None:
    runner = _runner([], "just a string")
    runner.observe(recorder)
    assert await runner.dispatch_on_tool_error(OPERATION, ValueError()) is None
    assert recorder.named("hook_finished") == [
        ("hook_finished", "on_tool_error", "h1", None, "HookFailure")
    ]


# --- on_interaction: stop at first answer ---


async def test_on_interaction_stops_at_first_answer() -> None:
    log: list[str] = []
    answers = [Answer("yes", "q1")]
    runner = _runner(log, None, answers, [Answer("no")])
    assert await runner.dispatch_on_interaction(OPERATION, [Question("ok?", id="q1")]) == answers
    assert log == ["h1.on_interaction", "h2.on_interaction"]


async def test_on_interaction_unanswered_returns_none() -> None:
    assert await _runner([], None).dispatch_on_interaction(OPERATION, [Question("?")]) is None


# --- decide hooks fail closed unless they opt into fail-open ---


@pytest.mark.parametrize(
    ("dispatch", "expected"),
    [
        (
            lambda r: r.dispatch_pre_turn(TURN, "hi"),
            HookResult.deny("hook 'h1' failed in pre_turn (RuntimeError); failing closed"),
        ),
        (
            lambda r: r.dispatch_pre_tool_call(OPERATION, ToolCall("t")),
            (
                HookResult.deny("hook 'h1' failed in pre_tool_call (RuntimeError); failing closed"),
                ToolCall("t"),
            ),
        ),
        (
            lambda r: r.dispatch_pre_llm_request(TURN, LlmRequest("m")),
            RequestDecision.block(
                "hook 'h1' failed in pre_llm_request (RuntimeError); failing closed"
            ),
        ),
        (
            lambda r: r.dispatch_on_llm_response(TURN, LlmResponse("m")),
            ResponseDecision.block(
                "hook 'h1' failed in on_llm_response (RuntimeError); failing closed"
            ),
        ),
    ],
    ids=["pre_turn", "pre_tool_call", "pre_llm_request", "on_llm_response"],
)
async def test_failing_decide_hook_fails_closed_naming_the_hook(
    dispatch: Any, expected: Any
) -> None:
    log: list[str] = []
    assert await dispatch(_runner(log, RuntimeError("boom"), None)) == expected
    assert len(log) == 1  # the dispatch stopped at the failing hook


async def test_fail_open_decide_hook_lets_the_dispatch_go_on(recorder: Recorder) -> None:
    log: list[str] = []
    failing = Scripted("h1", log, raises=RuntimeError("boom"))
    failing.fail_open = True
    runner = HookRunner([failing, Scripted("h2", log, HookResult())])
    runner.observe(recorder)
    assert await runner.dispatch_pre_turn(TURN, "hi") == HookResult()
    assert log == ["h1.pre_turn", "h2.pre_turn"]
    assert recorder.named("hook_finished")[0] == (
        "hook_finished",
        "pre_turn",
        "h1",
        None,
        "RuntimeError",
    )


async def test_decide_hook_returning_a_wrong_type_fails_closed() -> None:
    result = await _runner([], True).dispatch_pre_turn(TURN, "hi")
    assert result == HookResult.deny(
        "hook 'h1' failed in pre_turn (HookFailure: returned bool, expected hookscope.HookResult "
        "or None; return hookscope.HookResult(...), HookResult.deny(message) or None); "
        "failing closed"
    )


async def test_modify_without_request_fails_closed() -> None:
    decision = await _runner([], RequestDecision(action="modify")).dispatch_pre_llm_request(
        TURN, LlmRequest("m")
    )
    assert decision.action == "block"
    assert "modify without a request" in decision.message


async def test_decide_hook_timeout_fails_closed() -> None:
    class Slow(Hook):
        timeout = 0.01

        async def pre_tool_call(self, context: Any, call: Any) -> None:
            await asyncio.Event().wait()

    result, _ = await HookRunner([Slow()]).dispatch_pre_tool_call(OPERATION, ToolCall("t"))
    assert result == HookResult.deny(
        "hook 'Slow' failed in pre_tool_call (HookTimeoutError: hook 'Slow' took longer than 0.01s); "
        "failing closed"
    )


async def test_inspect_hook_timeout_is_isolated(recorder: Recorder) -> None:
    class Slow(Hook):
        timeout = 0.01

        async def post_turn(self, context: Any, response: Any) -> None:
            await asyncio.Event().wait()

    log: list[str] = []
    runner = HookRunner([Slow(), Scripted("after", log)])
    runner.observe(recorder)
    await runner.dispatch_post_turn(TURN, ChatResponse())
    assert log == ["after.post_turn"]
    assert [c[2:] for c in recorder.named("hook_finished")] == [
        ("Slow", None, "HookTimeoutError"),
        ("after", None, None),
    ]


def test_timeout_on_a_sync_hook_is_rejected_at_registration() -> None:
    class SyncSlow(Hook):
        timeout = 1.0

        def pre_turn(self, context: Any, prompt: Any) -> None: ...

    with pytest.raises(TypeError, match=r"timeout=1.0 needs an async pre_turn \(async def\)"):
        HookRunner([SyncSlow()])


@pytest.mark.parametrize("timeout", [0, -1, "1", True, float("nan"), float("inf")])
def test_timeout_must_be_a_finite_positive_number(timeout: Any) -> None:
    class Bad(Hook):
        async def pre_turn(self, context: Any, prompt: Any) -> None: ...

    hook = Bad()
    hook.timeout = timeout
    with pytest.raises(
        ValueError,
        match=re.escape(
            f"hook 'Bad': timeout must be a finite positive number of seconds or None, "
            f"got {timeout!r}"
        ),
    ):
        HookRunner([hook])


# --- cancellation and interrupts are never swallowed ---


@pytest.mark.parametrize("error", [asyncio.CancelledError(), KeyboardInterrupt()], ids=type)
async def test_cancellation_and_interrupts_propagate_out_of_any_hook(error: BaseException) -> None:
    class Interrupted(Hook):
        async def post_turn(self, context: Any, response: Any) -> None:
            raise error

    with pytest.raises(type(error)) as raised:
        await HookRunner([Interrupted()]).dispatch_post_turn(TURN, ChatResponse())
    assert raised.value is error


# --- registration ---


def test_registering_a_non_hook_names_what_is_accepted() -> None:
    with pytest.raises(
        TypeError, match=r"cannot register 42: accepted: an instance of a hookscope.Hook"
    ):
        HookRunner([42])


def test_registering_a_hook_class_asks_for_an_instance() -> None:
    with pytest.raises(
        TypeError, match=r"cannot register the class Hook; register an instance: Hook\(\)"
    ):
        HookRunner([Hook])


def test_registering_a_plain_function_asks_to_decorate_it() -> None:
    def check(call: Any) -> None: ...

    with pytest.raises(
        TypeError, match=r"cannot register the plain function .*check; decorate it first"
    ):
        HookRunner([check])


def test_registration_order_is_dispatch_order() -> None:
    log: list[str] = []
    runner = _runner(log, None, None)
    runner.register(Scripted("late", log))
    assert runner.hook_names("pre_turn") == ("h1", "h2", "late")


def test_a_hook_overriding_nothing_registers_for_no_event() -> None:
    runner = HookRunner([Hook()])
    assert all(
        runner.hook_names(event) == () for event in ("pre_turn", "pre_tool_call", "on_session_end")
    )


async def test_a_secret_in_a_hook_exception_never_reaches_the_denial() -> None:
    result = await _runner([], RuntimeError("GET /?token=sk-live-123 failed")).dispatch_pre_turn(
        TURN, "hi"
    )
    assert result == HookResult.deny("hook 'h1' failed in pre_turn (RuntimeError); failing closed")


@pytest.mark.parametrize(
    ("allow", "kind"), [("false", "str"), (0, "int"), (1, "int"), (None, "NoneType")]
)
async def test_a_non_bool_allow_fails_closed_naming_its_type_not_its_value(
    allow: Any, kind: str
) -> None:
    result = await _runner([], HookResult(allow=allow)).dispatch_pre_turn(TURN, "hi")
    assert result == HookResult.deny(
        f"hook 'h1' failed in pre_turn (HookFailure: returned HookResult(allow=<{kind}>); "
        "allow must be True or False); failing closed"
    )


async def test_an_unknown_request_action_blocks() -> None:
    decision = await _runner([], RequestDecision(action="deny")).dispatch_pre_llm_request(  # type: ignore[arg-type]
        TURN, LlmRequest("m")
    )
    assert decision.action == "block"
    assert decision.message == (
        "hook 'h1' failed in pre_llm_request (HookFailure: returned RequestDecision with an "
        "unknown action (a str); build it with RequestDecision.proceed(), .modify() or "
        ".block()); failing closed"
    )


async def test_an_unknown_response_action_blocks() -> None:
    decision = await _runner([], ResponseDecision(action="reject")).dispatch_on_llm_response(  # type: ignore[arg-type]
        TURN, LlmResponse("m")
    )
    assert decision.action == "block"
    assert decision.message == (
        "hook 'h1' failed in on_llm_response (HookFailure: returned ResponseDecision with an "
        "unknown action (a str); build it with ResponseDecision.accept(), .block() or "
        ".retry_with_feedback()); failing closed"
    )


async def test_a_hook_that_swallows_its_timeout_still_fails_closed() -> None:
    class Stubborn(Hook):
        timeout = 0.01

        async def pre_tool_call(self, context: Any, call: Any) -> None:
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                return None  # swallows the timeout's cancellation and "allows"

    result, _ = await HookRunner([Stubborn()]).dispatch_pre_tool_call(OPERATION, ToolCall("t"))
    assert result.allow is False
    assert "HookTimeoutError: hook 'Stubborn' took longer than 0.01s" in result.message


async def test_an_empty_answer_list_lets_the_next_hook_answer() -> None:
    log: list[str] = []
    answers = [Answer("yes")]
    runner = _runner(log, [], answers)
    assert await runner.dispatch_on_interaction(OPERATION, [Question("?")]) == answers
    assert log == ["h1.on_interaction", "h2.on_interaction"]


def test_observing_the_same_observer_twice_is_refused(recorder: Recorder) -> None:
    runner = HookRunner([recorder])
    with pytest.raises(ValueError, match="is already observed by this runner"):
        runner.observe(recorder)


def test_a_timed_hook_driven_without_an_event_loop_fails_closed_saying_why() -> None:
    class Timed(Hook):
        timeout = 1.0

        async def pre_tool_call(self, context: Any, call: Any) -> None:
            return None

    dispatch = HookRunner([Timed()]).dispatch_pre_tool_call(OPERATION, ToolCall("t"))
    with pytest.raises(StopIteration) as done:
        dispatch.send(None)  # as a synchronous caller drives it: no loop, no task
    result, _ = done.value.value
    assert result.allow is False
    assert "hook 'Timed' has a timeout, which needs a running event loop" in result.message


@pytest.mark.parametrize("event", sorted(RULES))
def test_an_event_with_no_hooks_ends_with_what_its_rule_finishes_an_empty_fold_with(
    event: str,
) -> None:
    # A dispatch with no hook to run hands back the rule's default without folding (the
    # runner's fast path); that is right only while finishing an untouched fold gives it.
    rule = RULES[event]
    data = ToolCall("view_file", {"path": "a.md"}) if event == "pre_tool_call" else object()
    fold = Dispatch(rule.default, data, None)
    assert rule.finish(fold) is rule.default
    assert not getattr(rule.default, "confirm", False)  # nothing left to settle


async def test_an_observed_event_with_no_hooks_reports_its_default() -> None:
    seen: list[tuple[str, Any, str | None]] = []

    class Watcher(DispatchObserver):
        def dispatch_finished(
            self, event: str, context: Any, data: Any, result: Any, decided_by: str | None
        ) -> None:
            seen.append((event, result, decided_by))

    runner = HookRunner()
    runner.observe(Watcher())
    call = ToolCall("view_file", {"path": "a.md"})
    async with runner.session() as session, session.turn("go") as turn:
        outcome = await turn.call_tool(call, lambda path: path)
    assert outcome.allowed
    assert outcome.value == "a.md"
    assert [(e, r, d) for e, r, d in seen if e == "pre_tool_call"] == [
        ("pre_tool_call", RULES["pre_tool_call"].default, None)
    ]
    assert [e for e, _, _ in seen] == [
        "on_session_start",
        "pre_turn",
        "pre_tool_call",
        "post_tool_call",
        "post_turn",
        "on_session_end",
    ]
