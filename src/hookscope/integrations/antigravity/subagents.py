"""Subagent runs: an agent the model delegates to through the ``invoke_subagent`` tool.

The harness runs each subagent in a trajectory of its own, whose state updates name the
delegating trajectory as their parent (the SDK itself ignores them). A run is reported as a
turn scope marked with :data:`~hookscope.telemetry.otel_hook.SUBAGENT_KEY` (the subagent's name
and its trajectory as conversation id) and started under the delegating ``invoke_subagent``
call's span, so OTelHook records an ``invoke_agent {subagent}`` span there; the calls made in
the subagent's trajectory belong to that run.

Which call delegated: the newest ``invoke_subagent`` call of the parent trajectory (one call
may start several subagents). Its name: the ``TypeName`` the call's arguments give for that
run when Python saw them (a hook or policy request), else the only subagent the agent
configures, else ``subagent``.
"""

from __future__ import annotations

from typing import Any, Final

from google.antigravity import types as ag_types
from google.antigravity.proto import localharness_pb2 as pb2

from hookscope.context import TurnContext
from hookscope.integrations._kit.scopes import DetachedScope
from hookscope.integrations.antigravity.reported_op import ReportedOp
from hookscope.integrations.antigravity.sessions import SessionState, Tracker, TurnState

__all__ = ["DEFAULT_SUBAGENT_NAME", "INVOKE_SUBAGENT", "start_subagent", "subagent_state"]

#: The harness tool that delegates to subagents.
INVOKE_SUBAGENT: Final = "invoke_subagent"
#: The agent name of a subagent run nothing names.
DEFAULT_SUBAGENT_NAME: Final = "subagent"

_TRAJECTORY: Final = pb2.TrajectoryStateUpdate.State


def _name(session: SessionState, delegating: ReportedOp | None) -> str:
    if delegating is not None:
        entries = delegating.call.args.get("Subagents")
        index = delegating.subagent_runs  # the runs it started before this one
        if isinstance(entries, (list, tuple)) and index < len(entries):
            entry: Any = entries[index]
            name = entry.get("TypeName") if isinstance(entry, dict) else None
            if isinstance(name, str) and name:
                return name
    names = session.subagent_names
    return names[0] if len(names) == 1 else DEFAULT_SUBAGENT_NAME


def start_subagent(
    tracker: Tracker, session: SessionState, trajectory: str, parent_trajectory: str
) -> TurnState:
    """Open the run of the subagent in ``trajectory`` (once), under the call that started it."""
    from hookscope.telemetry.otel_hook import SUBAGENT_KEY  # the OTel SDK only when used

    run = session.subagents.get(trajectory)
    if run is not None:
        return run
    turn = tracker.current_turn(session)
    delegating = session.ops.latest(parent_trajectory, INVOKE_SUBAGENT)
    name = _name(session, delegating)
    context = TurnContext(session.context, turn.context.turn_index, None)
    context.set(SUBAGENT_KEY, (name, trajectory))
    parent = delegating.scope.span_context if delegating is not None else turn.scope.span_context
    if delegating is not None:
        delegating.next_subagent()
    run = TurnState(DetachedScope(context, tracker.notify, parent), None)
    session.subagents[trajectory] = run
    return run


def subagent_state(tracker: Tracker, session: SessionState, update: Any) -> None:
    """A subagent trajectory's state update: running opens its run, idle or cancelled ends it."""
    trajectory = update.trajectory_id
    if update.state == _TRAJECTORY.STATE_RUNNING and update.parent_trajectory_id:
        start_subagent(tracker, session, trajectory, update.parent_trajectory_id)
    elif update.state == _TRAJECTORY.STATE_FULLY_IDLE:
        error = ag_types.AntigravityExecutionError(update.error) if update.error else None
        tracker.end_subagent(session, trajectory, error)
    elif update.state == _TRAJECTORY.STATE_CANCELLED:
        cancelled = ag_types.AntigravityCancelledError(update.error or "subagent cancelled")
        tracker.end_subagent(session, trajectory, cancelled, cancelled=True)
