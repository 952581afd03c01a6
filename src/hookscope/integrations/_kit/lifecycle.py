"""Session, turn and tool-call state for SDKs that call back before and after, not around.

Each object owns its transitions; nothing else writes its fields. Closing cascades: a session
ends its open turn, a turn its subagent runs and open calls. How a scope ended is decided by one
rule (:func:`~hookscope.integrations._kit.scopes.ended_by`): an error ends it ``failed``,
cancellation ``cancelled``, a ``pre_turn`` denial ``blocked``.

Every dispatch runs the runner's hooks inside the scope's span (``scope.current()``), and every
report goes through the runner's one notifier (read at each use: registering a hook replaces it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, final

from hookscope._notify import Notifier
from hookscope._scopes import ToolOutcome, run_tool
from hookscope.context import (
    SUBAGENT_KEY,
    SessionContext,
    TurnContext,
)
from hookscope.integrations._kit.scopes import (
    CallInterrupted,
    DetachedScope,
    TurnInterrupted,
    ended_by,
)
from hookscope.integrations._kit.tool_ops import Phase, ToolOp
from hookscope.integrations._kit.verdicts import TurnVerdict
from hookscope.types import (
    ChatResponse,
    HookResult,
    LlmRequest,
    LlmResponse,
    RequestDecision,
    ResponseDecision,
    ToolCall,
)

if TYPE_CHECKING:
    from opentelemetry.context import Context

    from hookscope.runner import HookRunner

__all__ = ["Phase", "Session", "SubagentRun", "ToolOp", "Turn"]


class Session:
    """One SDK conversation, open from the first prompt to the client's end.

    Open it with :meth:`Governor.open_session
    <hookscope.integrations._kit.govern.Governor.open_session>`.
    """

    __slots__ = ("__weakref__", "_on_end", "context", "ended", "runner", "scope", "turn")

    def __init__(
        self,
        runner: HookRunner,
        context: SessionContext,
        parent: Context | None,
        on_end: Callable[[Session], None] | None = None,
    ) -> None:
        self.runner = runner
        self.context = context
        self.scope = DetachedScope(context, runner.notifier, parent)
        self.turn: Turn | None = None
        self.ended = False
        #: Told once the session's span has ended (the governor's bookkeeping).
        self._on_end = on_end

    @property
    def session_id(self) -> str:
        """The session's id (``session.id``)."""
        return self.context.session_id

    def set_conversation_id(self, sdk_id: str | None) -> None:
        """Record the SDK's own conversation id (``gen_ai.conversation.id``) once known."""
        if sdk_id:
            self.context.conversation_id = sdk_id

    async def start_turn(self, prompt: Any = None) -> Turn:
        """Open the next turn and run ``pre_turn``; a turn still open ends interrupted first.

        Check :attr:`Turn.verdict`: a blocked turn has already ended (outcome ``blocked``).
        """
        if self.turn is not None:
            await self.turn.end(TurnInterrupted("a new prompt arrived before the turn ended"))
        context = self.context
        turn = Turn(self, TurnContext(context, context.turn_count, prompt))
        context.turn_count += 1
        self.turn = turn
        await turn._begin()
        return turn

    async def end(self, error: BaseException | None = None) -> None:
        """End the session (``on_session_end`` runs); an open turn ends first. Idempotent."""
        if self.ended:
            return
        self.ended = True
        if self.turn is not None:
            await self.turn.end(error or TurnInterrupted("the session ended during the turn"))
        context = self.context
        context.outcome = "completed" if error is None else ended_by(error)
        try:
            with self.scope.current():
                await self.runner.dispatch_on_session_end(context)
        finally:
            self.scope.end(self.runner.notifier, error)
            if self._on_end is not None:
                self._on_end(self)


@final
class SubagentRun:
    """A subagent's run: an ``invoke_agent {name}`` span under the call that delegated to it."""

    __slots__ = ("context", "delegating", "name", "ops", "run_id", "scope")

    def __init__(self, turn: Turn, run_id: str, name: str, delegating: ToolOp | None) -> None:
        self.run_id = run_id
        self.name = name
        self.delegating = delegating
        context = TurnContext(turn.session.context, turn.context.turn_index, None)
        context.set(SUBAGENT_KEY, (name, run_id))
        self.context = context
        owner: DetachedScope[Any] = delegating.scope if delegating is not None else turn.scope
        parent = owner.span_context
        self.scope = DetachedScope(context, turn.runner.notifier, parent)
        self.ops: list[ToolOp] = []

    def end(self, notifier: Notifier, error: BaseException | None = None) -> None:
        """End the run and its open calls (``error``: why, when it failed)."""
        for op in tuple(self.ops):
            op.close(error or CallInterrupted("the subagent ended before the call finished"))
        if error is None:
            self.context.outcome = "completed"
        else:
            self.context.outcome = ended_by(error)
        self.scope.end(notifier, error)


class Turn:
    """One prompt to its final answer. Created by :meth:`Session.start_turn`."""

    __slots__ = (
        "_chats",
        "context",
        "ended",
        "ops",
        "response",
        "runner",
        "runs",
        "scope",
        "session",
        "verdict",
    )

    def __init__(self, session: Session, context: TurnContext) -> None:
        self.session = session
        self.runner = session.runner
        self.context = context
        self.scope: DetachedScope[TurnContext] = DetachedScope(
            context, self.runner.notifier, session.scope.span_context
        )
        self.verdict = TurnVerdict()
        self.ops: list[ToolOp] = []
        self.runs: dict[str, SubagentRun] = {}
        self.response: ChatResponse | None = None
        self.ended = False
        self._chats: dict[int, LlmRequest] = {}

    @property
    def allowed(self) -> bool:
        """Whether ``pre_turn`` let the turn run."""
        return self.verdict.allowed

    async def _begin(self) -> None:
        try:
            with self.scope.current():
                decided = await self.runner.dispatch("pre_turn", self.context, self.context.prompt)
        except BaseException as error:
            await self.end(error)
            raise
        result: HookResult = decided.result
        self.verdict = TurnVerdict(result.allow, result.message, decided.decided_by)
        if not result.allow:
            await self.end()

    # --- calls ---

    def open_tool(self, call: ToolCall, run: SubagentRun | None = None) -> ToolOp:
        """Open the scope of one tool call (in ``run`` when a subagent made it)."""
        op = ToolOp(self, call, run)
        self.ops.append(op)
        if run is not None:
            run.ops.append(op)
        return op

    async def run_tool(
        self, call: ToolCall, invoke: Callable[[ToolCall], Any], run: SubagentRun | None = None
    ) -> ToolOutcome:
        """The around seam: decide, run ``invoke(effective_call)``, report, all in one call.

        Raises:
            Exception: the tool's own, unchanged, when no ``on_tool_error`` hook recovered it.
        """
        op = self.open_tool(call, run)
        try:
            with op.scope.current():
                outcome = await run_tool(self.runner, op.context, call, invoke)
        except BaseException as error:
            op.close(error)
            raise
        op.close()
        return outcome

    def start_subagent(
        self, run_id: str, name: str, delegating: ToolOp | None = None
    ) -> SubagentRun:
        """Open the run ``run_id`` (once) under ``delegating``'s span, else the turn's."""
        run = self.runs.get(run_id)
        if run is None:
            run = self.runs[run_id] = SubagentRun(self, run_id, name, delegating)
        return run

    def end_subagent(self, run_id: str, error: BaseException | None = None) -> None:
        """End the run ``run_id`` (a no-op when unknown or already ended)."""
        run = self.runs.pop(run_id, None)
        if run is not None:
            run.end(self.runner.notifier, error)

    # --- model calls, reported (the SDK has no hook that could change them) ---

    def model_call_started(self, request: LlmRequest, run: SubagentRun | None = None) -> None:
        """A model call began: its ``chat {model}`` span opens (no hooks run)."""
        context = run.context if run is not None else self.context
        self._chats[id(context)] = request
        notifier = self.runner.notifier
        with (run.scope if run is not None else self.scope).current():
            notifier.dispatch_started("pre_llm_request", context, request)
            # No decision: no hook ran, so telemetry records no guardrail verdict.
            notifier.dispatch_finished("pre_llm_request", context, request, None, None)

    def model_call_finished(self, response: LlmResponse, run: SubagentRun | None = None) -> None:
        """The model answered: its span ends with model, usage and finish reasons."""
        context = run.context if run is not None else self.context
        if self._chats.pop(id(context), None) is None:
            self.model_call_started(LlmRequest(response.model, provider=response.provider), run)
            self._chats.pop(id(context), None)
        notifier = self.runner.notifier
        notifier.dispatch_started("on_llm_response", context, response)
        notifier.dispatch_finished("on_llm_response", context, response, None, None)

    # --- model calls, governed (SDKs with model hooks) ---

    async def llm_request(self, request: LlmRequest) -> RequestDecision:
        """Run ``pre_llm_request`` hooks: proceed, modify or block."""
        with self.scope.current():
            return await self.runner.dispatch_pre_llm_request(self.context, request)

    async def llm_response(self, response: LlmResponse) -> ResponseDecision:
        """Run ``on_llm_response`` hooks: accept, block or retry."""
        with self.scope.current():
            return await self.runner.dispatch_on_llm_response(self.context, response)

    async def compacting(self, messages: Any = ()) -> str | None:
        """Run ``pre_compaction`` hooks (the SDK is about to compact its context)."""
        with self.scope.current():
            return await self.runner.dispatch_pre_compaction(self.context, messages)

    async def compacted(self, summary: str) -> None:
        """Run ``on_compaction`` hooks (the SDK compacted its context into ``summary``)."""
        with self.scope.current():
            await self.runner.dispatch_on_compaction(self.context, summary)

    # --- the end ---

    def respond(self, response: ChatResponse) -> None:
        """Record the turn's answer; ``post_turn`` hooks receive it."""
        self.response = response

    async def stop(self, response: ChatResponse | None = None) -> TurnVerdict:
        """The agent wants to stop: run ``post_turn`` hooks.

        Returns:
            ``allowed=False`` with a message when a hook asks the agent to go on (the adapter
            feeds the message back, e.g. as a Claude ``Stop`` block; the turn stays open);
            otherwise the turn has ended ``completed``.
        """
        if response is not None:
            self.response = response
        if self.ended:
            return TurnVerdict()
        try:
            with self.scope.current():
                decided = await self.runner.dispatch(
                    "post_turn", self.context, self.response or ChatResponse()
                )
        except BaseException as error:
            await self.end(error)
            raise
        result = decided.result
        if isinstance(result, HookResult) and not result.allow:
            return TurnVerdict(False, result.message, decided.decided_by)
        self._close(None)
        return TurnVerdict()

    async def end(self, error: BaseException | None = None) -> None:
        """End the turn now: with ``error`` (failed or cancelled), blocked when ``pre_turn``
        denied it, else completed after ``post_turn``. Idempotent."""
        if self.ended:
            return
        if error is None and self.allowed:
            await self.stop()  # a request to go on cannot hold a turn the SDK ended
        self._close(error)

    def _close(self, error: BaseException | None) -> None:
        if self.ended:
            return
        self.ended = True
        notifier = self.runner.notifier
        for run_id in tuple(self.runs):
            self.end_subagent(run_id, error or CallInterrupted("the turn ended during the run"))
        for op in tuple(self.ops):
            op.close(error or CallInterrupted("the turn ended before the call finished"))
        if error is not None:
            self.context.outcome = ended_by(error)
        elif not self.allowed:
            self.context.outcome = "blocked"
        else:
            self.context.outcome = "completed"
        self.scope.end(notifier, error)
        if self.session.turn is self:
            self.session.turn = None
