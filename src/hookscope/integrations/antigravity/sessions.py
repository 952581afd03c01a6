"""The state behind the antigravity adapter: sessions, turns and tool calls in flight.

The google-antigravity SDK reports a session's life piecemeal, from several tasks: prompts from
the caller's task; tool calls, hook callbacks and policy questions from tasks spawned by the
connection's reader task; turn ends from the reader itself. :class:`Tracker` turns those
reports into scopes and dispatches with hookscope's own :class:`SessionContext`,
:class:`TurnContext` and :class:`OperationContext`, told through the runner's one notifier, so
OTelHook (or any observer) sees the calls a :class:`~hookscope.runner.HookRunner` would make.
The runner's own scopes cannot serve here: they are ``async with`` blocks that run
hookscope's hooks, while an SDK session opens and closes in different tasks and runs the SDK's
hooks; what is kept here is what those blocks would keep on their stack.

Nothing here knows the SDK's types; the adapter translates. Every scope is keyed by hookscope
state, never by the SDK's context objects: the SDK hands hooks a fresh ``TurnContext`` when a
StopHook is registered, and OpenAI-style tool-call ids repeat across sessions. A session holds
its current turn; its tool operations are found by identity (:mod:`.operations`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any, Final, final

from opentelemetry import context as otel_context

from hookscope._notify import Notifier
from hookscope._scopes import is_cancellation
from hookscope.context import OperationContext, SessionContext, TurnContext, TurnOutcome
from hookscope.hooks import HookEvent
from hookscope.integrations._kit.report import DispatchReport
from hookscope.integrations._kit.scopes import DetachedScope, TurnInterrupted
from hookscope.integrations.antigravity.operations import OpIndex
from hookscope.integrations.antigravity.policy_rules import RuleInfo
from hookscope.integrations.antigravity.reported_op import ReportedOp, StepKey
from hookscope.runner import HookRunner
from hookscope.types import ChatResponse, Decision, HookResult, ToolCall, Usage

__all__ = ["TURN_INTERRUPTED", "SessionState", "Tracker", "TurnState", "ends_by_cancellation"]

_ALLOW: Final = HookResult()
#: Why a turn fails when its session ended before the agent finished the turn.
TURN_INTERRUPTED: Final = "the session ended before the turn did; read the whole response first"


def ends_by_cancellation(error: BaseException) -> bool:
    """Whether ``error`` ending a turn or session means it was cancelled, not failed.

    A cancelled task, and a timeout (``asyncio.timeout``/``wait_for`` cancel the awaited
    turn and raise ``TimeoutError`` in its place; the kit's ``ended_by`` calls that failed);
    the SDK's own ``conversation.cancel()`` is recognised where it is called
    (``LocalConnection.cancel``) instead.
    """
    return is_cancellation(error) or isinstance(error, TimeoutError)


@final
class TurnState:
    """One turn: from the prompt being sent to the trajectory going idle."""

    __slots__ = (
        "blocked",
        "cancel_requested",
        "post_turn",
        "pre_turn",
        "response_text",
        "scope",
        "usage_start",
    )

    def __init__(self, scope: DetachedScope[TurnContext], usage_start: Usage | None) -> None:
        self.scope = scope
        self.usage_start = usage_start
        self.pre_turn: DispatchReport | None = None
        self.post_turn = False
        self.blocked = False
        #: The SDK's ``cancel()`` was called: the harness then just goes idle.
        self.cancel_requested = False
        self.response_text = ""

    @property
    def context(self) -> TurnContext:
        """The turn's hookscope context."""
        return self.scope.context


def _no_hooks(event: HookEvent) -> bool:
    return False


def _no_usage() -> Usage | None:
    return None


@final
class SessionState:
    """One agent session and everything open in it."""

    __slots__ = (
        "closed",
        "compactions",
        "dynamic_policies",
        "end_reported",
        "has_hooks",
        "model",
        "ops",
        "rules",
        "scope",
        "start_reported",
        "subagent_names",
        "subagents",
        "turn",
        "usage",
    )

    def __init__(
        self, scope: DetachedScope[SessionContext], model: str | None, rules: Sequence[RuleInfo]
    ) -> None:
        self.scope = scope
        self.model = model
        self.rules = tuple(rules)
        #: The SDK's policies evaluated in Python, by rule id (``rule_0`` …).
        self.dynamic_policies: dict[str, Any] = {}
        #: Subagent runs in flight by trajectory (:mod:`.subagents`); the agent's subagents.
        self.subagents: dict[str, TurnState] = {}
        self.subagent_names: tuple[str, ...] = ()
        self.turn: TurnState | None = None
        self.ops = OpIndex()
        #: Whether the SDK has hooks for an event: then the harness calls back for it, and
        #: the dispatch is reported when those hooks run.
        self.has_hooks: Callable[[HookEvent], bool] = _no_hooks
        #: Cumulative token usage of the session so far, when known.
        self.usage: Callable[[], Usage | None] = _no_usage
        #: Whether ``on_session_start`` / ``on_session_end`` have been reported.
        self.start_reported = False
        self.end_reported = False
        self.closed = False
        self.compactions: set[StepKey] = set()

    @property
    def context(self) -> SessionContext:
        """The session's hookscope context."""
        return self.scope.context

    def rules_named(self, name: str, decision: Decision) -> list[RuleInfo]:
        """Static (harness-enforced) rules called ``name`` that decide ``decision``."""
        return [r for r in self.rules if r.name == name and r.decision is decision]


class Tracker:
    """Opens and closes hookscope scopes from SDK events and tells the observers.

    Args:
        runner: The runner whose notifier tells the observers (OTelHook): scopes and
            dispatches are reported through it, exactly as the runner reports its own.
        agent_name: The agent name every session reports.
        nest_sessions: Whether a session that starts while a span is current (an agent run
            inside a tool) is recorded under that span rather than in a trace of its own.
    """

    def __init__(self, runner: HookRunner, agent_name: str, *, nest_sessions: bool = False) -> None:
        self.runner = runner
        self.nest_sessions = nest_sessions
        self.agent_name = agent_name
        self.active = True
        self._sessions: dict[int, SessionState] = {}

    @property
    def notify(self) -> Notifier:
        """The runner's notifier (replaced whenever the runner's observers change)."""
        return self.runner.notifier

    # --- sessions ---

    def open_session(
        self, session_id: str | None, model: str | None, rules: Sequence[RuleInfo]
    ) -> SessionState:
        """Open a session scope (in a copy of the caller's context: it may link to a span)."""
        context = SessionContext(session_id or os.urandom(16).hex(), self.agent_name)
        if self.nest_sessions:
            # Imported here: importing the integration must not load the OTel SDK.
            from hookscope.telemetry.otel_hook import NEST_SESSION_KEY

            context.set(NEST_SESSION_KEY, True)
        session = SessionState(
            DetachedScope(context, self.notify, otel_context.get_current()), model, rules
        )
        self._sessions[id(session)] = session
        return session

    def session_started(self, session: SessionState) -> None:
        """Report ``on_session_start`` unless SDK hooks will (the harness calls them later)."""
        if not session.start_reported and not session.has_hooks("on_session_start"):
            session.start_reported = True
            DispatchReport(self.notify, "on_session_start", session.context, None).finish(None)

    def close_session(self, session: SessionState, error: BaseException | None) -> None:
        """End whatever is open in ``session``, then the session itself."""
        if session.closed:
            return
        session.closed = True
        self._sessions.pop(id(session), None)
        interruption = error or TurnInterrupted(TURN_INTERRUPTED)
        if session.turn is not None:  # the session ended before the trajectory went idle
            # Cancelled by the caller's task being cancelled (a timeout included), or failed.
            cancelled = error is not None and ends_by_cancellation(error)
            outcome: TurnOutcome = "cancelled" if cancelled else "failed"
            self.end_turn(session, error=interruption, outcome=outcome)
        for op in list(session.ops.open.values()):
            self.close_op(session, op, interruption)
        context = session.context
        if error is None:
            context.outcome = "completed"
        else:
            context.outcome = "cancelled" if ends_by_cancellation(error) else "failed"
        if not session.end_reported:
            session.end_reported = True
            DispatchReport(self.notify, "on_session_end", context, None).finish(None)
        session.scope.end(self.notify, error)

    def close_all(self) -> None:
        """End every open session (``uninstrument()`` while agents still run)."""
        for session in list(self._sessions.values()):
            self.close_session(session, None)

    # --- turns ---

    def start_turn(self, session: SessionState, prompt: Any) -> TurnState:
        """Open the session's next turn; ``pre_turn`` waits for SDK hooks when there are any."""
        if session.turn is not None:  # the previous turn never reported idle
            self.end_turn(session)
        context = session.context
        turn_context = TurnContext(context, context.turn_count, prompt)
        context.turn_count += 1
        turn = TurnState(DetachedScope(turn_context, self.notify), session.usage())
        session.turn = turn
        turn.pre_turn = DispatchReport(self.notify, "pre_turn", turn_context, prompt)
        if not session.has_hooks("pre_turn"):
            turn.pre_turn.finish(_ALLOW)
        return turn

    def current_turn(self, session: SessionState) -> TurnState:
        """The open turn, or a new one for activity no prompt started (a trigger)."""
        return session.turn if session.turn is not None else self.start_turn(session, None)

    def turn_decided(self, turn: TurnState, result: HookResult) -> None:
        """``pre_turn`` ended with ``result``."""
        if turn.pre_turn is not None:
            turn.pre_turn.finish(result)
        turn.blocked = not result.allow

    def post_turn(
        self, session: SessionState, turn: TurnState, text: str | None = None
    ) -> DispatchReport:
        """Start ``post_turn`` with the turn's response (text, usage, model)."""
        turn.post_turn = True
        usage = _usage_since(turn.usage_start, session.usage())
        response = ChatResponse(
            text=turn.response_text if text is None else text, model=session.model, usage=usage
        )
        return DispatchReport(self.notify, "post_turn", turn.context, response)

    def end_turn(
        self,
        session: SessionState,
        *,
        error: BaseException | None = None,
        outcome: TurnOutcome | None = None,
    ) -> None:
        """Close the open turn: completed (with ``post_turn``), blocked, failed or cancelled.

        A turn ended by ``error`` (failed or cancelled) ends its calls in flight with it.
        """
        turn = session.turn
        if turn is None:
            return
        session.turn = None
        if turn.pre_turn is not None:
            if error is None:  # the turn ran, though the SDK's pre_turn hooks never reported
                turn.pre_turn.finish(_ALLOW)
            else:  # it failed before they decided: no verdict to invent
                turn.pre_turn.abandon()
        if outcome is None:
            outcome = "blocked" if turn.blocked else ("failed" if error else "completed")
        for trajectory in list(session.subagents):  # runs its turn started end with it
            self.end_subagent(session, trajectory, error, outcome == "cancelled")
        for op in list(session.ops.open.values()):
            if op.scope.context.parent is turn.context:
                self.close_op(session, op, error)
        if outcome == "completed" and not turn.post_turn:
            self.post_turn(session, turn).finish(None)
        turn.context.outcome = outcome
        turn.scope.end(self.notify, error)

    # --- tool operations ---

    def _open_op(self, session: SessionState, call: ToolCall, trajectory: str | None) -> ReportedOp:
        # A subagent's call belongs to its run; any other to the current turn.
        run = session.subagents.get(trajectory) if trajectory else None
        turn = run if run is not None else self.current_turn(session)
        context = OperationContext(turn.context, "tool", call, call.id)
        op = ReportedOp(self.runner, context, call, trajectory)
        session.ops.add(op)
        return op

    def op_for_request(
        self, session: SessionState, trajectory: str | None, call: ToolCall
    ) -> ReportedOp:
        """The call a policy or hook request (or a Python tool run) is about.

        Found by its call id, else it is the operation a step update opened for the same
        trajectory and tool (which learns the call id now), else a new one.
        """
        ops = session.ops
        op = ops.by_call(call.id, trajectory)
        if op is None:
            op = ops.unbound(trajectory, call, lacking="call")
            if op is None:
                return self._open_op(session, call, trajectory)
            if call.id:
                ops.bind_call(op, call.id)
        op.learn_trajectory(trajectory)
        return op

    def late_op(self, session: SessionState, call_id: str | None) -> ReportedOp | None:
        """The open call with ``call_id``, or one that closed moments ago (a late callback)."""
        return session.ops.by_call(call_id) or session.ops.recently_closed(call_id=call_id)

    def op_for_step(self, session: SessionState, step_key: StepKey, call: ToolCall) -> ReportedOp:
        """The call a tool step update is about (open or recently closed), else a new one.

        A Python tool's step carries the call id; a harness tool's does not, and is matched to
        the request that named the same tool in the same trajectory.
        """
        ops = session.ops
        op = ops.by_step(step_key) or ops.recently_closed(step_key=step_key)
        if op is not None:
            return op
        op = ops.by_call(call.id, step_key[0]) or ops.unbound(step_key[0], call, lacking="step")
        if op is None:
            op = self._open_op(session, call, step_key[0])
        ops.bind_step(op, step_key)
        return op

    def op_for_denial_step(
        self,
        session: SessionState,
        step_key: StepKey,
        message: str,
        call: Callable[[], ToolCall],
    ) -> tuple[ReportedOp, bool]:
        """The call a denial step (which names no tool) reports, and whether it is new.

        A step already seen, or the call of its trajectory Python saw and no step claimed
        (:meth:`OpIndex.denial_target`); else a call the harness denied before Python heard
        of it (``call`` names it as far as the rule tells).
        """
        ops = session.ops
        op = ops.by_step(step_key) or ops.recently_closed(step_key=step_key)
        if op is not None:
            return op, False
        op = ops.denial_target(step_key[0], message)
        new = op is None
        if op is None:
            op = self._open_op(session, call(), step_key[0])
        ops.bind_step(op, step_key)
        return op, new

    def step_finished(self, session: SessionState, op: ReportedOp) -> None:
        """The harness reports the call's step done: close it, once its SDK hooks reported.

        The harness may call the SDK's post-call or error hooks after the step update that
        ends the call; the operation stays open for them (at the latest, until its turn ends).
        """
        if op.finish_step():
            self.close_op(session, op)

    def hooks_reported(self, session: SessionState, op: ReportedOp) -> None:
        """The SDK's post-call or error hooks of ``op`` reported: close it if its step is done."""
        if op.step_done:
            self.close_op(session, op)

    def close_op(
        self, session: SessionState, op: ReportedOp, interruption: BaseException | None = None
    ) -> None:
        """End the call (:meth:`ReportedOp.close`) and keep it findable for late reports."""
        if op.close(interruption):
            session.ops.close(op)

    def end_subagent(
        self,
        session: SessionState,
        trajectory: str,
        error: BaseException | None = None,
        cancelled: bool = False,
    ) -> None:
        """Close the run of the subagent in ``trajectory``; its calls still open end with it."""
        run = session.subagents.pop(trajectory, None)
        if run is None:
            return
        for op in list(session.ops.open.values()):
            if op.context.parent is run.context:
                self.close_op(session, op, error)
        run.context.outcome = (
            "completed" if error is None else "cancelled" if cancelled else "failed"
        )
        run.scope.end(self.notify, error)

    def interaction(self, session: SessionState) -> DetachedScope[OperationContext]:
        """Open an interaction (a question to the user) in the current turn."""
        turn = self.current_turn(session)
        return DetachedScope(OperationContext(turn.context, "interaction"), self.notify)

    def end_interaction(
        self, scope: DetachedScope[OperationContext], error: BaseException | None
    ) -> None:
        """Close an interaction."""
        scope.end(self.notify, error)


def _usage_since(start: Usage | None, end: Usage | None) -> Usage | None:
    if end is None:
        return None
    if start is None:
        return end
    usage = Usage(end.input_tokens - start.input_tokens, end.output_tokens - start.output_tokens)
    return usage if usage.total_tokens else None
