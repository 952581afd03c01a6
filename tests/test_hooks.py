"""The three hook styles register for exactly the events they implement."""

from __future__ import annotations

from typing import Any

import pytest

from hookscope import hooks
from hookscope.context import HookContext, OperationContext, SessionContext, TurnContext
from hookscope.hooks import EVENTS, Hook, PreToolCallDecideHook
from hookscope.runner import HookRunner
from hookscope.types import HookResult, ToolCall


def _op() -> OperationContext:
    return OperationContext(TurnContext(SessionContext("s"), 0), "tool")


def test_events_are_the_twelve_hook_methods() -> None:
    assert EVENTS == (
        "on_session_start",
        "on_session_end",
        "pre_turn",
        "post_turn",
        "pre_llm_request",
        "on_llm_response",
        "pre_tool_call",
        "post_tool_call",
        "on_tool_error",
        "on_interaction",
        "pre_compaction",
        "on_compaction",
    )
    assert all(callable(getattr(Hook, event)) for event in EVENTS)


def test_hook_subclass_is_registered_only_for_overridden_methods() -> None:
    class Audit(Hook):
        def post_tool_call(self, context: Any, result: Any) -> None: ...

        async def pre_turn(self, context: Any, prompt: Any) -> None: ...

    runner = HookRunner([Audit()])
    registered = [event for event in EVENTS if runner.hook_names(event)]
    assert registered == ["pre_turn", "post_tool_call"]
    assert runner.hook_names("post_tool_call") == ("Audit",)


def test_hook_name_defaults_to_the_class_and_can_be_set() -> None:
    class Named(Hook):
        name = "guard"

        def pre_tool_call(self, context: Any, call: Any) -> None: ...

    class Plain(Hook):
        def pre_tool_call(self, context: Any, call: Any) -> None: ...

    runner = HookRunner([Named(), Plain()])
    assert runner.hook_names("pre_tool_call") == ("guard", "Plain")


async def test_category_hook_runs_for_its_event() -> None:
    class DenyAll(PreToolCallDecideHook):
        async def run(self, context: Any, data: ToolCall) -> HookResult:
            return HookResult.deny(f"no {data.name}")

    runner = HookRunner([DenyAll()])
    result, _ = await runner.dispatch_pre_tool_call(_op(), ToolCall("rm"))
    assert result == HookResult(allow=False, message="no rm")
    assert runner.hook_names("pre_tool_call") == ("DenyAll",)


async def test_category_hook_may_be_synchronous() -> None:
    class SyncDeny(PreToolCallDecideHook):
        def run(self, context: Any, data: ToolCall) -> HookResult:
            return HookResult.deny("sync")

    result, _ = await HookRunner([SyncDeny()]).dispatch_pre_tool_call(_op(), ToolCall("x"))
    assert result.message == "sync"


async def test_decorator_passes_data_only_when_no_context_parameter() -> None:
    seen: list[Any] = []

    @hooks.pre_tool_call_decide
    def record(call: ToolCall) -> None:
        seen.append(call)

    await HookRunner([record]).dispatch_pre_tool_call(_op(), ToolCall("a"))
    assert seen == [ToolCall("a")]


async def test_decorator_passes_context_by_parameter_name() -> None:
    seen: list[Any] = []

    @hooks.pre_tool_call_decide
    async def record(call: ToolCall, context: Any) -> None:
        seen.append((call.name, type(context).__name__))

    await HookRunner([record]).dispatch_pre_tool_call(_op(), ToolCall("a"))
    assert seen == [("a", "OperationContext")]


async def test_decorator_passes_context_by_annotation_in_any_position() -> None:
    seen: list[Any] = []

    @hooks.pre_tool_call_decide
    def first(ctx: HookContext, call: ToolCall) -> None:
        seen.append(("first", type(ctx).__name__, call.name))

    @hooks.pre_tool_call_decide
    def second(call: ToolCall, ctx: OperationContext) -> None:
        seen.append(("second", type(ctx).__name__, call.name))

    await HookRunner([first, second]).dispatch_pre_tool_call(_op(), ToolCall("a"))
    assert seen == [("first", "OperationContext", "a"), ("second", "OperationContext", "a")]


async def test_session_decorator_takes_context_or_nothing() -> None:
    seen: list[str] = []

    @hooks.on_session_start
    def with_context(context: SessionContext) -> None:
        seen.append(context.session_id)

    @hooks.on_session_start
    async def without() -> None:
        seen.append("bare")

    await HookRunner([with_context, without]).dispatch_on_session_start(SessionContext("s7"))
    assert seen == ["s7", "bare"]


def test_decorator_options_set_name_timeout_and_fail_open() -> None:
    @hooks.pre_turn(name="budget", timeout=2.5, fail_open=True)
    async def check(prompt: Any) -> None: ...

    assert (check.name, check.timeout, check.fail_open) == ("budget", 2.5, True)
    assert HookRunner([check]).hook_names("pre_turn") == ("budget",)


def test_decorated_function_stays_callable_with_its_metadata() -> None:
    @hooks.post_turn
    def summarize(response: str) -> str:
        """Summarize a response."""
        return response.upper()

    assert summarize("ok") == "OK"
    assert (summarize.__name__, summarize.__doc__) == ("summarize", "Summarize a response.")


@pytest.mark.parametrize(
    "define",
    [
        lambda: hooks.pre_turn(lambda a, b, c: None),
        lambda: hooks.on_session_end(lambda data: None),
        lambda: hooks.post_tool_call(lambda *, data: None),
    ],
    ids=["three-required-params", "session-hook-wanting-data", "keyword-only-data"],
)
def test_impossible_signature_fails_at_decoration(define: Any) -> None:
    with pytest.raises(TypeError, match=r"hook takes .*name the context parameter 'context'"):
        define()


def test_decorating_a_non_callable_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="decorates a function"):
        hooks.pre_turn(42)  # type: ignore[call-overload]
