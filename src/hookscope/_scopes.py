"""Scopes: how an agent loop drives the runner (``runner.session()`` → ``session.turn()``).

A scope opens a context, dispatches the events that bracket it and closes it however its block
ends, telling the runner's observers both times. Public names are re-exported by
:mod:`hookscope.runner`.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from time import perf_counter
from types import GeneratorType, TracebackType
from typing import TYPE_CHECKING, Any, Final, Literal, final

from hookscope._events import ALLOW, freeze_call
from hookscope.context import OperationContext, SessionContext, TurnContext, TurnOutcome
from hookscope.types import (
    MAX_CONTINUATIONS,
    Answer,
    ChatResponse,
    Continuation,
    HookResult,
    HookscopeError,
    LlmRequest,
    LlmResponse,
    PolicyDecision,
    Question,
    RequestDecision,
    ResponseDecision,
    ToolCall,
    ToolResult,
)

if TYPE_CHECKING:
    # The runner creates scopes and scopes call back into it: a cycle only for the checker.
    from hookscope.runner import HookRunner

__all__ = [
    "PROMPT_ID_KEY",
    "TOOL_DURATION_KEY",
    "ScopeError",
    "SessionScope",
    "ToolOutcome",
    "TurnScope",
]

logger = logging.getLogger("hookscope")

#: The operation-context key holding how long a tool ran before it raised (seconds), for
#: ``on_tool_error`` hooks (Claude Code's PostToolUseFailure ``duration_ms``).
TOOL_DURATION_KEY: Final = "hookscope.tool_duration_s"

#: The turn-context key under which the id of the user prompt a turn answers is kept
#: (Claude Code's ``prompt_id``; continuing turns keep their prompt's id).
PROMPT_ID_KEY: Final = "hookscope.prompt_id"


class ScopeError(HookscopeError, RuntimeError):
    """A scope was used in a way its state does not allow (e.g. a tool call in a blocked turn)."""

    __module__ = "hookscope.runner"


def is_cancellation(error: BaseException) -> bool:
    """Whether ``error`` ends a scope as cancelled rather than failed."""
    return isinstance(error, (asyncio.CancelledError, KeyboardInterrupt))


def ended_by(error: BaseException) -> Literal["cancelled", "failed"]:
    """How a session, turn or subagent run that ``error`` ended is recorded (the one rule;
    every adapter uses it).

    ``cancelled``: the work was stopped from outside — a cancelled task, ``KeyboardInterrupt``,
    or a deadline (``asyncio.timeout``/``wait_for`` cancel the awaited work and raise
    ``TimeoutError`` from that cancellation; scopes inside the deadline see the cancellation,
    so the scopes around them must agree). ``failed``: anything else, a ``TimeoutError`` a tool
    or client raised on its own included. ``error.type`` names the exception either way.
    """
    return "cancelled" if is_cancellation(error) or _is_deadline(error) else "failed"


def _is_deadline(error: BaseException) -> bool:
    # asyncio.TimeoutError is builtins.TimeoutError from Python 3.11, a class of its own before.
    return isinstance(error, (TimeoutError, asyncio.TimeoutError)) and isinstance(
        error.__cause__, asyncio.CancelledError
    )


def is_awaitable(value: object) -> bool:
    """Whether a hook's or tool's return value must be awaited."""
    # Awaitables have __await__ on their type, except generator-based coroutines
    # (@types.coroutine); inspect.isawaitable's ABC check costs a microsecond on every plain
    # value, which is what most hooks and tools return.
    return hasattr(type(value), "__await__") or (
        type(value) is GeneratorType and inspect.isawaitable(value)
    )


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """What became of one tool call made through :meth:`TurnScope.call_tool`.

    Args:
        allowed: ``False`` when a ``pre_tool_call`` hook denied the call (the tool did not run).
        call: The effective call: the model's call with every hook's ``modified_args``.
        value: The tool's return value, or the recovery's value.
        error: The exception the tool raised, when it raised and a hook recovered.
        recovered: Whether an ``on_tool_error`` hook replaced the error with a value.
        message: The denial message (for the model) or the recovery's note.
        decision: The policy decision behind the verdict, when a PolicyEnforcer made one.
        decided_by: The hook that denied or recovered the call.
        feedback: What ``post_tool_call`` hooks want the model to read with the result
            (Claude Code's PostToolUse ``decision: block`` reason); empty when none.
    """

    allowed: bool
    call: ToolCall
    value: Any = None
    error: Exception | None = None
    recovered: bool = False
    message: str = ""
    decision: PolicyDecision | None = None
    decided_by: str | None = None
    feedback: str = ""


_OPEN, _ACTIVE, _CLOSED = "open", "active", "closed"
_NO_RESPONSE: Final = ChatResponse()


@final
class SessionScope:
    """One agent session; use as ``async with runner.session(...) as session``.

    Entering dispatches ``on_session_start``; leaving dispatches ``on_session_end`` however
    the block ends, with ``context.outcome`` set to completed, failed or cancelled.
    """

    __slots__ = ("_runner", "_state", "context")

    def __init__(self, runner: HookRunner, context: SessionContext) -> None:
        self._runner = runner
        self._state = _OPEN
        self.context = context

    @property
    def session_id(self) -> str:
        """The session's id."""
        return self.context.session_id

    async def __aenter__(self) -> SessionScope:
        if self._state is not _OPEN:
            raise ScopeError(f"session {self.session_id} was already entered; open a new one")
        self._state = _ACTIVE
        runner = self._runner
        try:
            runner.notifier.scope_started(self.context)
            # A dispatch with no one to tell is skipped; dispatch() hands back the loop's own
            # coroutine (no extra frame, unlike dispatch_on_session_start).
            if not runner.idle("on_session_start"):
                await runner.dispatch("on_session_start", self.context, None)
        except BaseException as error:
            await self._end(error)
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self._end(exc)

    async def _end(self, error: BaseException | None) -> None:
        context = self.context
        if error is None:
            context.outcome = "completed"
        else:
            context.outcome = ended_by(error)
        self._state = _CLOSED
        runner = self._runner
        try:
            if not runner.idle("on_session_end"):
                await runner.dispatch("on_session_end", context, None)
        finally:
            runner.notifier.scope_ended(context, error)

    def turn(self, prompt: Any = None) -> TurnScope:
        """Open the session's next turn: ``async with session.turn(prompt) as turn``."""
        if self._state is not _ACTIVE:
            raise ScopeError(
                f"session {self.session_id} is {self._state}; turns need an active one"
            )
        context = self.context
        turn = TurnContext(context, context.turn_count, prompt)
        context.turn_count += 1
        return TurnScope(self._runner, turn)


def _continuation(context: TurnContext, asked: HookResult | None) -> Continuation | None:
    if asked is None or asked.allow:
        return None
    if context.continues >= MAX_CONTINUATIONS:
        logger.warning(
            "turn %d of session %s: post_turn hooks asked to continue %d times in a row; "
            "ending the turn",
            context.turn_index,
            context.session_id,
            context.continues + 1,
        )
        return None
    prompt_id = getattr(context.prompt, "prompt_id", "") or str(context.get(PROMPT_ID_KEY, ""))
    return Continuation(asked.continuation or asked.message, context.continues + 1, prompt_id)


@final
class TurnScope:
    """One turn; use as ``async with session.turn(prompt) as turn``.

    Entering dispatches ``pre_turn``: check :attr:`allowed` before doing the turn's work.
    Leaving an allowed turn without an exception dispatches ``post_turn`` with the response
    given to :meth:`respond`.
    """

    __slots__ = ("_response", "_runner", "_state", "context", "continuation", "result")

    def __init__(self, runner: HookRunner, context: TurnContext) -> None:
        self._runner = runner
        self._state = _OPEN
        self._response: ChatResponse | None = None
        self.context = context
        #: The ``pre_turn`` verdict; set when the turn is entered.
        self.result: HookResult = ALLOW
        #: Set when the turn ended and a ``post_turn`` hook asked the agent to go on: the
        #: next prompt (``session.turn(turn.continuation)``). ``None`` otherwise, and after
        #: :data:`~hookscope.types.MAX_CONTINUATIONS` continuations in a row.
        self.continuation: Continuation | None = None

    @property
    def context_additions(self) -> list[str]:
        """Text hooks asked to add to the model's context in this turn (adapters pass it on)."""
        return self.context.context_additions

    @property
    def allowed(self) -> bool:
        """Whether ``pre_turn`` let the turn start."""
        return self.result.allow

    async def __aenter__(self) -> TurnScope:
        if self._state is not _OPEN:
            raise ScopeError(f"turn {self.context.turn_index} was already entered")
        self._state = _ACTIVE
        runner, context = self._runner, self.context
        try:
            runner.notifier.scope_started(context)
            if not runner.idle("pre_turn"):  # else the verdict stays ALLOW, pre_turn's default
                self.result = (await runner.dispatch("pre_turn", context, context.prompt)).result
        except BaseException as error:
            self._close(ended_by(error), error)
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if exc is not None:
            self._close(ended_by(exc), exc)
        elif not self.allowed:
            self._close("blocked", None)
        else:
            runner = self._runner
            if not runner.idle("post_turn"):
                try:
                    asked = await runner.dispatch_post_turn(
                        self.context, self._response or _NO_RESPONSE
                    )
                except BaseException as error:
                    self._close(ended_by(error), error)
                    raise
                self.continuation = _continuation(self.context, asked)
            self._close("completed", None)

    def _close(self, outcome: TurnOutcome, error: BaseException | None) -> None:
        self._state = _CLOSED
        self.context.outcome = outcome
        self._runner.notifier.scope_ended(self.context, error)

    def _require_active(self, action: str) -> None:
        if self._state is not _ACTIVE:
            raise ScopeError(f"cannot {action}: turn {self.context.turn_index} is {self._state}")
        if not self.result.allow:
            raise ScopeError(
                f"cannot {action}: turn {self.context.turn_index} was blocked by pre_turn "
                f"({self.result.message!r}); check turn.allowed first"
            )

    def respond(self, response: ChatResponse) -> None:
        """Record the turn's answer; ``post_turn`` hooks receive it when the turn ends."""
        self._require_active("respond")
        self._response = response

    async def call_tool(self, call: ToolCall, fn: Callable[..., Any]) -> ToolOutcome:
        """Run one tool call through the hooks.

        ``pre_tool_call`` decides; an allowed call runs ``fn(**effective_args)`` (sync or
        async; a sync tool runs inline, so hand blocking work to a thread yourself), then
        ``post_tool_call``; a raising tool goes to ``on_tool_error`` instead.

        Returns:
            The outcome. A denied call returns ``allowed=False`` with the message for the model.

        Raises:
            Exception: the tool's own exception, unchanged, when no hook recovered it.
            ScopeError: the turn is blocked or closed.
        """
        self._require_active("call a tool")
        notifier = self._runner.notifier
        operation = OperationContext(self.context, "tool", call, call.id)
        try:
            notifier.scope_started(operation)
            outcome = await run_tool(
                self._runner, operation, call, lambda effective: fn(**effective.args)
            )
        except BaseException as error:
            notifier.scope_ended(operation, error)
            raise
        notifier.scope_ended(operation, None)
        return outcome

    async def ask(self, questions: Sequence[Question]) -> Sequence[Answer] | None:
        """Put ``questions`` to the ``on_interaction`` hooks; their answers, or ``None``."""
        self._require_active("ask")
        runner = self._runner
        operation = OperationContext(self.context, "interaction")
        try:
            runner.notifier.scope_started(operation)
            answers = await runner.dispatch_on_interaction(operation, questions)
        except BaseException as error:
            runner.notifier.scope_ended(operation, error)
            raise
        runner.notifier.scope_ended(operation, None)
        return answers

    async def summarize(self, messages: Sequence[Any]) -> str | None:
        """Ask the ``pre_compaction`` hooks for a summary of ``messages``.

        Returns:
            The first hook's summary, or ``None`` when no hook supplies one (the agent
            summarizes itself). Pass the summary used to :meth:`compact` afterwards.
        """
        self._require_active("summarize")
        return await self._runner.dispatch_pre_compaction(self.context, messages)

    async def compact(self, summary: str) -> None:
        """Tell ``on_compaction`` hooks the agent compacted its context into ``summary``."""
        self._require_active("compact")
        await self._runner.dispatch_on_compaction(self.context, summary)

    async def llm_request(self, request: LlmRequest) -> RequestDecision:
        """Put a model request to ``pre_llm_request`` hooks: proceed, modify or block."""
        self._require_active("send a model request")
        return await self._runner.dispatch_pre_llm_request(self.context, request)

    async def llm_response(self, response: LlmResponse) -> ResponseDecision:
        """Put a model response to ``on_llm_response`` hooks: accept, block or retry."""
        self._require_active("receive a model response")
        return await self._runner.dispatch_on_llm_response(self.context, response)


async def run_tool(
    runner: HookRunner,
    operation: OperationContext,
    call: ToolCall,
    invoke: Callable[[ToolCall], Any],
) -> ToolOutcome:
    """One tool call through the hooks, inside an operation scope already open.

    ``pre_tool_call`` decides; an allowed call runs ``invoke(effective_call)`` (its value
    awaited when awaitable), then ``post_tool_call``; a raising tool goes to ``on_tool_error``.
    :meth:`TurnScope.call_tool` and the adapters' around seams share it.

    Raises:
        Exception: the tool's own exception, unchanged, when no hook recovered it.
    """
    decided = await runner.dispatch("pre_tool_call", operation, freeze_call(call))
    verdict: HookResult = decided.result
    effective: ToolCall = decided.data
    if not verdict.allow:
        return ToolOutcome(
            allowed=False,
            call=effective,
            message=verdict.message,
            decision=verdict.decision,
            decided_by=decided.decided_by,
        )
    started = perf_counter()
    try:
        value = invoke(effective)
        if value is not None and is_awaitable(value):
            value = await value
    except Exception as error:
        operation.set(TOOL_DURATION_KEY, perf_counter() - started)
        recovered = await runner.dispatch("on_tool_error", operation, error)
        recovery = recovered.result
        if recovery is None:
            raise  # the tool's own exception, unchanged
        return ToolOutcome(
            allowed=True,
            call=effective,
            value=recovery.value,
            error=error,
            recovered=True,
            message=recovery.message,
            decision=verdict.decision,
            decided_by=recovered.decided_by,
        )
    result = ToolResult(effective, value, perf_counter() - started)
    posted = await runner.dispatch("post_tool_call", operation, result)
    return ToolOutcome(
        allowed=True,
        call=effective,
        value=value,
        decision=verdict.decision,
        decided_by=decided.decided_by,
        feedback=posted.result.message if posted.result is not None else "",
    )
