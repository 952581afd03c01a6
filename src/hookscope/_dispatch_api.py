"""The typed low-level dispatch API: one coroutine per event, for adapters.

Each ``dispatch_<event>`` runs its event through the runner's one loop
(:meth:`HookRunner._run <hookscope.runner.HookRunner._run>`) with the event's rule and hands back
what the event yields. :class:`TypedDispatch` is a mixin of
:class:`~hookscope.runner.HookRunner`; it holds no state.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from hookscope import _events as rules
from hookscope._events import freeze_call
from hookscope.context import OperationContext, SessionContext, TurnContext
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

if TYPE_CHECKING:
    from hookscope._asks import Confirm
    from hookscope._events import Rule
    from hookscope._notify import Notifier
    from hookscope.context import HookContext
    from hookscope.hooks import HookEvent
    from hookscope.runner import Dispatch

__all__ = ["TypedDispatch"]

R = TypeVar("R")


class TypedDispatch:
    """``dispatch_<event>`` coroutines over the runner's one dispatch loop."""

    __slots__ = ()

    if TYPE_CHECKING:  # the loop, provided by HookRunner

        async def _run(
            self,
            rule: Rule[R],
            event: HookEvent,
            context: HookContext,
            data: Any,
            confirm: Confirm | None = None,
            notifier: Notifier | None = None,
        ) -> Dispatch[R]:
            raise NotImplementedError

    async def dispatch_on_session_start(self, context: SessionContext) -> None:
        """Run every ``on_session_start`` hook."""
        await self._run(rules.INSPECT, "on_session_start", context, None)

    async def dispatch_on_session_end(self, context: SessionContext) -> None:
        """Run every ``on_session_end`` hook."""
        await self._run(rules.INSPECT, "on_session_end", context, None)

    async def dispatch_session_start(self, context: SessionContext) -> None:
        """Deprecated alias of :meth:`dispatch_on_session_start` (removed in 0.3)."""
        _deprecated("dispatch_session_start", "dispatch_on_session_start")
        await self.dispatch_on_session_start(context)

    async def dispatch_session_end(self, context: SessionContext) -> None:
        """Deprecated alias of :meth:`dispatch_on_session_end` (removed in 0.3)."""
        _deprecated("dispatch_session_end", "dispatch_on_session_end")
        await self.dispatch_on_session_end(context)

    async def dispatch_pre_turn(self, context: TurnContext, prompt: Any) -> HookResult:
        """Run ``pre_turn`` hooks until one denies; return the deciding result."""
        return (await self._run(rules.PRE_TURN, "pre_turn", context, prompt)).result

    async def dispatch_post_turn(
        self, context: TurnContext, response: ChatResponse
    ) -> HookResult | None:
        """Run every ``post_turn`` hook; a :meth:`HookResult.continue_with` result when one
        asked the agent to go on."""
        return (await self._run(rules.POST_TURN, "post_turn", context, response)).result

    async def dispatch_pre_llm_request(
        self, context: TurnContext, request: LlmRequest
    ) -> RequestDecision:
        """Run ``pre_llm_request`` hooks, chaining modifications, until one blocks."""
        return (await self._run(rules.PRE_LLM_REQUEST, "pre_llm_request", context, request)).result

    async def dispatch_on_llm_response(
        self, context: TurnContext, response: LlmResponse
    ) -> ResponseDecision:
        """Run ``on_llm_response`` hooks until one does not accept."""
        return (await self._run(rules.ON_LLM_RESPONSE, "on_llm_response", context, response)).result

    async def dispatch_pre_tool_call(
        self, context: OperationContext, call: ToolCall
    ) -> tuple[HookResult, ToolCall]:
        """Run ``pre_tool_call`` hooks until one denies, merging ``modified_args`` in order.

        A pending :meth:`HookResult.ask` is settled with the ``on_interaction`` hooks before
        this returns.

        Returns:
            The deciding result and the effective call (read-only arguments, with every
            merged modification).
        """
        frozen = freeze_call(call)
        dispatched = await self._run(rules.PRE_TOOL_CALL, "pre_tool_call", context, frozen)
        return dispatched.result, dispatched.data

    async def dispatch_post_tool_call(
        self, context: OperationContext, result: ToolResult
    ) -> HookResult | None:
        """Run every ``post_tool_call`` hook; a denial carries feedback for the model."""
        return (await self._run(rules.POST_TOOL_CALL, "post_tool_call", context, result)).result

    async def dispatch_on_tool_error(
        self, context: OperationContext, error: Exception
    ) -> Recovery | None:
        """Run ``on_tool_error`` hooks until one returns a :class:`Recovery`."""
        return (await self._run(rules.ON_TOOL_ERROR, "on_tool_error", context, error)).result

    async def dispatch_on_interaction(
        self, context: OperationContext, questions: Sequence[Question]
    ) -> Sequence[Answer] | None:
        """Run ``on_interaction`` hooks until one answers (a list of :class:`Answer`)."""
        return (await self._run(rules.ON_INTERACTION, "on_interaction", context, questions)).result

    async def dispatch_pre_compaction(
        self, context: TurnContext, messages: Sequence[Any]
    ) -> str | None:
        """Run ``pre_compaction`` hooks until one supplies a summary."""
        return (await self._run(rules.PRE_COMPACTION, "pre_compaction", context, messages)).result

    async def dispatch_on_compaction(self, context: TurnContext, summary: str) -> None:
        """Run every ``on_compaction`` hook."""
        await self._run(rules.INSPECT, "on_compaction", context, summary)


def _deprecated(old: str, new: str) -> None:
    warnings.warn(
        f"HookRunner.{old} is deprecated; use HookRunner.{new}", DeprecationWarning, stacklevel=3
    )
