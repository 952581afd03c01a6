"""One tool call seen by a split seam: decided, then returned or failed, then closed.

A :class:`ToolOp` is opened by :meth:`Turn.open_tool
<hookscope.integrations._kit.lifecycle.Turn.open_tool>`; its transition methods are the only
writers of its state, and every dispatch runs inside the call's span.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from time import perf_counter
from typing import TYPE_CHECKING, Any, Literal

from hookscope._events import freeze_call
from hookscope.context import NO_RECOVERY_KEY, OperationContext
from hookscope.integrations._kit.scopes import DetachedScope
from hookscope.integrations._kit.verdicts import ToolVerdict
from hookscope.runner import ask_text, settle_ask
from hookscope.types import HookResult, Recovery, ToolCall, ToolResult

if TYPE_CHECKING:
    from hookscope.integrations._kit.lifecycle import SubagentRun, Turn

__all__ = ["Phase", "ToolOp", "effective_args"]

Phase = Literal["deciding", "asking", "allowed", "denied", "done"]


class ToolOp:
    """One tool call seen by a split seam: decided, then returned or failed, then closed.

    ``phase``: deciding → (asking →) allowed → done, or → denied. Transition methods are its
    only writers.
    """

    __slots__ = (
        "_answer",
        "_task",
        "call",
        "context",
        "phase",
        "run",
        "scope",
        "started",
        "turn",
        "verdict",
    )

    def __init__(self, turn: Turn, call: ToolCall, run: SubagentRun | None = None) -> None:
        self.turn = turn
        self.run = run
        self.call = call
        parent = run.context if run is not None else turn.context
        self.context = OperationContext(parent, "tool", call, call.id)
        owner = run.scope if run is not None else turn.scope
        self.scope: DetachedScope[OperationContext] = DetachedScope(
            self.context, turn.runner.notifier, owner.span_context
        )
        self.phase: Phase = "deciding"
        self.verdict: ToolVerdict | None = None
        self.started = 0.0
        self._answer: asyncio.Future[str | None] | None = None
        self._task: asyncio.Task[ToolVerdict] | None = None

    @property
    def call_id(self) -> str:
        """The SDK's id for the call (``gen_ai.tool.call.id``)."""
        return self.call.id

    @property
    def effective(self) -> ToolCall:
        """The call as the tool runs it (after hooks modified it)."""
        return self.verdict.call if self.verdict is not None else self.call

    async def decide(self, *, native_ask: bool = False) -> ToolVerdict:
        """Run ``pre_tool_call``; a denied call is closed here.

        Args:
            native_ask: Hand an ask to the SDK's own approval instead of hookscope's confirm
                path: the verdict comes back ``pending`` as soon as a hook asks; settle it with
                :meth:`answer` once the SDK's approver answered.
        """
        if not native_ask:
            verdict = await self._dispatch(None)
            return self._decided(verdict)
        loop = asyncio.get_running_loop()
        asked = asyncio.Event()
        self._answer = loop.create_future()

        question: list[str] = []

        async def confirm(context: Any, pending: HookResult) -> HookResult:
            question.append(ask_text(context, pending))
            asked.set()
            self.phase = "asking"
            assert self._answer is not None
            return settle_ask(context, pending, await self._answer)

        task = loop.create_task(self._dispatch(confirm))
        waiting = loop.create_task(asked.wait())
        try:
            await asyncio.wait((task, waiting), return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            task.cancel()
            raise
        finally:
            waiting.cancel()
        if task.done():
            return self._decided(task.result())
        self._task = task
        pending = ToolVerdict(False, self.call, question[0], asked=True, pending=True)
        self.verdict = pending
        return pending

    async def answer(self, approved: bool | None) -> ToolVerdict:
        """Settle a pending native ask (``None``: nobody answered, a denial)."""
        task, answer = self._task, self._answer
        if task is None or answer is None:
            return self.verdict or ToolVerdict(False, self.call, "no ask is pending")
        self._task = None
        if not answer.done():
            answer.set_result(None if approved is None else ("allow" if approved else "deny"))
        return self._decided(await task)

    async def _dispatch(self, confirm: Any) -> ToolVerdict:
        frozen = freeze_call(self.call)
        with self.scope.current():
            decided = await self.turn.runner.dispatch(
                "pre_tool_call", self.context, frozen, confirm=confirm
            )
        result: HookResult = decided.result
        effective: ToolCall = decided.data
        changed = effective.args is not frozen.args and dict(effective.args) != dict(frozen.args)
        return ToolVerdict(
            allowed=result.allow,
            call=effective,
            message=result.message,
            args=effective.args if changed else None,
            asked=result.decision is not None and result.decision.asked_user,
            decision=result.decision,
            decided_by=decided.decided_by,
        )

    def _decided(self, verdict: ToolVerdict) -> ToolVerdict:
        self.verdict = verdict
        if verdict.allowed:
            self.phase = "allowed"
            self.started = perf_counter()
        else:
            self.phase = "denied"
            self.close()
        return verdict

    async def returned(self, value: Any) -> None:
        """The tool returned ``value``: ``post_tool_call`` runs, the call closes."""
        if self.phase == "done":
            return
        result = ToolResult(self.effective, value, _since(self.started))
        try:
            with self.scope.current():
                await self.turn.runner.dispatch_post_tool_call(self.context, result)
        finally:
            self.close()

    async def failed(self, error: Exception, *, recoverable: bool = True) -> Recovery | None:
        """The tool failed: ``on_tool_error`` runs, the call closes.

        Args:
            recoverable: ``False`` where the SDK cannot put a result in the error's place: the
                hooks still run, but any recovery is recorded as not recovered and ``None`` is
                returned.

        Returns:
            The recovery to hand the model instead of the error, if any.
        """
        if self.phase == "done":
            return None
        if not recoverable:
            self.context.set(NO_RECOVERY_KEY, True)
        recovery: Recovery | None = None
        try:
            with self.scope.current():
                recovery = await self.turn.runner.dispatch_on_tool_error(self.context, error)
        finally:
            self.close(None if recovery is not None and recoverable else error)
        return recovery if recoverable else None

    def close(self, error: BaseException | None = None) -> None:
        """End the call's span (``error``: why it ended abnormally). Idempotent."""
        if self.scope.ended:
            return
        if self._answer is not None and not self._answer.done():
            self._answer.set_result(None)  # an ask nobody answered denies
        if self.phase != "denied":
            self.phase = "done"
        self.scope.end(self.turn.runner.notifier, error)
        ops = self.turn.ops
        if self in ops:
            ops.remove(self)
        if self.run is not None and self in self.run.ops:
            self.run.ops.remove(self)


def _since(started: float) -> float:
    return perf_counter() - started if started else 0.0


def effective_args(verdict: ToolVerdict, original: Mapping[str, Any]) -> Mapping[str, Any]:
    """The arguments the tool runs with: the verdict's when a hook changed them."""
    return verdict.args if verdict.args is not None else original
