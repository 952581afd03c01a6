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

Nothing here knows the SDK's types; the adapter translates, and what it learns of a
session's SDK objects (rules, whether hooks are registered, usage so far) sits in the session's
:class:`SdkProbe`. Every scope is keyed by hookscope state, never by the SDK's context objects:
the SDK hands hooks a fresh ``TurnContext`` when a StopHook is registered, and OpenAI-style
tool-call ids repeat across sessions. A session holds its current turn and its subagent runs;
which call a report is about is :class:`~.operations.OpIndex`'s answer alone. How a turn,
run or session ended is one rule (:func:`outcome_of`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final, final

from opentelemetry import context as otel_context

from hookscope._notify import Notifier
from hookscope.context import (
    NEST_SESSION_KEY,
    SUBAGENT_KEY,
    OperationContext,
    SessionContext,
    SessionOutcome,
    TurnContext,
    TurnOutcome,
    new_session_id,
)
from hookscope.hooks import HookEvent
from hookscope.integrations._kit.report import DispatchReport
from hookscope.integrations._kit.scopes import DetachedScope, TurnInterrupted, ended_by
from hookscope.integrations.antigravity.operations import OpIndex
from hookscope.integrations.antigravity.policy_rules import RuleInfo
from hookscope.integrations.antigravity.reported_op import ReportedOp, StepKey
from hookscope.runner import HookRunner
from hookscope.types import ChatResponse, Decision, HookResult, ToolCall, Usage

__all__ = [
    "TURN_INTERRUPTED",
    "SdkProbe",
    "SessionState",
    "Tracker",
    "TurnState",
    "ends_by_cancellation",
    "outcome_of",
    "turn_outcome",
]

_ALLOW: Final = HookResult()
#: Why a turn fails when its session ended before the agent finished the turn.
TURN_INTERRUPTED: Final = "the session ended before the turn did; read the whole response first"


def ends_by_cancellation(error: BaseException) -> bool:
    """Whether ``error`` ending a turn or session means it was cancelled, not failed: the
    kit's rule (:func:`~hookscope.integrations._kit.scopes.ended_by`; a timeout that cancelled
    the turn is a cancellation, a tool's own ``TimeoutError`` a failure)."""
    return ended_by(error) == "cancelled"


def outcome_of(error: BaseException | None) -> SessionOutcome:
    """How a session, turn or subagent run that ``error`` ended (``None``: normally) ended;
    the one rule (a turn ``pre_turn`` denied is ``blocked``: :func:`turn_outcome`)."""
    return "completed" if error is None else ended_by(error)


def turn_outcome(error: BaseException | None, blocked: bool) -> TurnOutcome:
    """How a turn ended: :func:`outcome_of`, or ``blocked`` when ``pre_turn`` denied it."""
    return "blocked" if error is None and blocked else outcome_of(error)


@final
class TurnState:
    """One turn (or subagent run): from the prompt being sent to the trajectory going idle."""

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
        #: ``pre_turn``, reported until the SDK's pre-turn hooks decided (none: at once).
        self.pre_turn: DispatchReport | None = None
        #: Whether ``post_turn`` has been reported.
        self.post_turn = False
        self.blocked = False
        #: The SDK's ``cancel()`` was called: the harness then just goes idle.
        self.cancel_requested = False
        #: The agent's final answer so far.
        self.response_text = ""

    @property
    def context(self) -> TurnContext:
        """The turn's hookscope context."""
        return self.scope.context

    def request_cancel(self) -> None:
        """The SDK was asked to cancel the turn (it will just go idle)."""
        self.cancel_requested = True

    def answer(self, text: str) -> None:
        """The agent's final answer (the SDK may send it more than once)."""
        self.response_text = text


def _no_hooks(event: HookEvent) -> bool:
    return False


def _no_usage() -> Usage | None:
    return None


@final
class SdkProbe:
    """What the adapter reads from one session's SDK objects, as SDK-free values.

    Filled when the session opens (model, rules, subagents) and when its SDK objects are
    built (the hook runner, the event processor); read everywhere else.
    """

    __slots__ = ("dynamic_policies", "has_hooks", "model", "rules", "subagent_names", "usage")

    def __init__(
        self,
        model: str | None = None,
        rules: Sequence[RuleInfo] = (),
        subagent_names: Sequence[str] = (),
    ) -> None:
        self.model = model
        self.rules = tuple(rules)
        self.subagent_names = tuple(subagent_names)
        #: The SDK's policies evaluated in Python, by rule id (``rule_0`` …).
        self.dynamic_policies: dict[str, Any] = {}
        #: Whether the SDK has hooks for an event: then the harness calls back for it, and
        #: the dispatch is reported when those hooks run.
        self.has_hooks: Callable[[HookEvent], bool] = _no_hooks
        #: Cumulative token usage of the session so far, when known.
        self.usage: Callable[[], Usage | None] = _no_usage

    def rules_named(self, name: str, decision: Decision) -> list[RuleInfo]:
        """Static (harness-enforced) rules called ``name`` that decide ``decision``."""
        return [r for r in self.rules if r.name == name and r.decision is decision]


@final
class SessionState:
    """One agent session and everything open in it."""

    __slots__ = (
        "closed",
        "end_reported",
        "ops",
        "probe",
        "reported_compactions",
        "runs",
        "scope",
        "start_reported",
        "turn",
    )

    def __init__(self, scope: DetachedScope[SessionContext], probe: SdkProbe) -> None:
        self.scope = scope
        self.probe = probe
        self.turn: TurnState | None = None
        #: Subagent runs in flight, by trajectory.
        self.runs: dict[str, TurnState] = {}
        self.ops = OpIndex()
        #: Whether ``on_session_start`` / ``on_session_end`` have been reported.
        self.start_reported = False
        self.end_reported = False
        self.closed = False
        #: Compaction steps already reported.
        self.reported_compactions: set[StepKey] = set()

    @property
    def context(self) -> SessionContext:
        """The session's hookscope context."""
        return self.scope.context


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

    def open_session(self, session_id: str | None, probe: SdkProbe | None = None) -> SessionState:
        """Open a session scope (under the caller's OTel context: it may link to a span)."""
        context = SessionContext(session_id or new_session_id(), self.agent_name)
        if self.nest_sessions:
            context.set(NEST_SESSION_KEY, True)
        scope = DetachedScope(context, self.notify, otel_context.get_current())
        session = SessionState(scope, probe or SdkProbe())
        self._sessions[id(session)] = session
        return session

    def session_started(self, session: SessionState) -> None:
        """Report ``on_session_start`` unless SDK hooks will (the harness calls them later)."""
        if not session.start_reported and not session.probe.has_hooks("on_session_start"):
            self.report_session_start(session).finish(None)

    def report_session_start(self, session: SessionState) -> DispatchReport:
        """Start reporting ``on_session_start`` (its SDK hooks run now)."""
        session.start_reported = True
        return DispatchReport(self.notify, "on_session_start", session.context, None)

    def report_session_end(self, session: SessionState) -> DispatchReport:
        """Start reporting ``on_session_end`` (its SDK hooks run now)."""
        session.end_reported = True
        return DispatchReport(self.notify, "on_session_end", session.context, None)

    def close_session(self, session: SessionState, error: BaseException | None) -> None:
        """End whatever is open in ``session``, then the session itself."""
        if session.closed:
            return
        session.closed = True
        self._sessions.pop(id(session), None)
        interruption = error or TurnInterrupted(TURN_INTERRUPTED)
        if session.turn is not None:  # the session ended before the trajectory went idle
            self.end_turn(session, interruption)
        for op in list(session.ops.open.values()):
            self.close_op(session, op, interruption)
        session.context.outcome = outcome_of(error)
        if not session.end_reported:
            self.report_session_end(session).finish(None)
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
        turn = TurnState(DetachedScope(turn_context, self.notify), session.probe.usage())
        session.turn = turn
        turn.pre_turn = DispatchReport(self.notify, "pre_turn", turn_context, prompt)
        if not session.probe.has_hooks("pre_turn"):
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
        usage = _usage_since(turn.usage_start, session.probe.usage())
        response = ChatResponse(
            text=turn.response_text if text is None else text,
            model=session.probe.model,
            usage=usage,
        )
        return DispatchReport(self.notify, "post_turn", turn.context, response)

    def end_turn(self, session: SessionState, error: BaseException | None = None) -> None:
        """Close the open turn: completed (with ``post_turn``), blocked, failed or cancelled
        (:func:`outcome_of`). A turn ended by ``error`` ends its runs and calls with it."""
        turn = session.turn
        if turn is None:
            return
        session.turn = None
        if turn.pre_turn is not None:
            if error is None:  # the turn ran, though the SDK's pre_turn hooks never reported
                turn.pre_turn.finish(_ALLOW)
            else:  # it failed before they decided: no verdict to invent
                turn.pre_turn.abandon()
        outcome = turn_outcome(error, turn.blocked)
        for trajectory in list(session.runs):  # runs its turn started end with it
            self.end_subagent(session, trajectory, error)
        for op in list(session.ops.open.values()):
            if op.scope.context.parent is turn.context:
                self.close_op(session, op, error)
        if outcome == "completed" and not turn.post_turn:
            self.post_turn(session, turn).finish(None)
        turn.context.outcome = outcome
        turn.scope.end(self.notify, error)

    # --- subagent runs ---

    def start_subagent(
        self, session: SessionState, trajectory: str, name: str, delegating: ReportedOp | None
    ) -> TurnState:
        """Open the run of the subagent ``name`` in ``trajectory`` (once), under the call that
        delegated to it (else the turn): an ``invoke_agent {name}`` span there."""
        run = session.runs.get(trajectory)
        if run is not None:
            return run
        turn = self.current_turn(session)
        context = TurnContext(session.context, turn.context.turn_index, None)
        context.set(SUBAGENT_KEY, (name, trajectory))
        owner = delegating.scope if delegating is not None else turn.scope
        if delegating is not None:
            delegating.next_subagent()
        run = TurnState(DetachedScope(context, self.notify, owner.span_context), None)
        session.runs[trajectory] = run
        return run

    def end_subagent(
        self, session: SessionState, trajectory: str, error: BaseException | None = None
    ) -> None:
        """Close the run of the subagent in ``trajectory``; its calls still open end with it."""
        run = session.runs.pop(trajectory, None)
        if run is None:
            return
        for op in list(session.ops.open.values()):
            if op.context.parent is run.context:
                self.close_op(session, op, error)
        run.context.outcome = outcome_of(error)
        run.scope.end(self.notify, error)

    # --- tool calls ---

    def _open_op(self, session: SessionState, call: ToolCall, trajectory: str | None) -> ReportedOp:
        # A subagent's call belongs to its run; any other to the current turn.
        run = session.runs.get(trajectory) if trajectory else None
        turn = run if run is not None else self.current_turn(session)
        context = OperationContext(turn.context, "tool", call, call.id)
        op = ReportedOp(self.runner, context, call, trajectory)
        session.ops.add(op)
        return op

    def op_for_request(
        self, session: SessionState, trajectory: str | None, call: ToolCall
    ) -> ReportedOp:
        """The call a policy or hook request (or a Python tool run) is about, else a new one."""
        op = session.ops.for_request(trajectory, call)
        return op if op is not None else self._open_op(session, call, trajectory)

    def op_for_step(self, session: SessionState, step_key: StepKey, call: ToolCall) -> ReportedOp:
        """The call a tool step update is about (open or recently closed), else a new one."""
        op = session.ops.for_step(step_key, call)
        if op is None:
            op = self._open_op(session, call, step_key[0])
            session.ops.bind_step(op, step_key)
        return op

    def op_for_denial_step(
        self,
        session: SessionState,
        step_key: StepKey,
        message: str,
        call: Callable[[], ToolCall],
    ) -> tuple[ReportedOp, bool]:
        """The call a denial step (which names no tool) reports, and whether it is new: a call
        the harness denied before Python heard of it (``call`` names it as far as the rule
        tells)."""
        op = session.ops.for_denial_step(step_key, message)
        if op is not None:
            return op, False
        op = self._open_op(session, call(), step_key[0])
        session.ops.bind_step(op, step_key)
        return op, True

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

    # --- interactions ---

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
