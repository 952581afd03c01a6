"""Subagent runs as the harness reports them: which trajectory, which call, which name.

The harness runs each subagent in a trajectory of its own, whose state updates name the
delegating trajectory as their parent (the SDK itself ignores them). The run itself is opened
and ended by :meth:`Tracker.start_subagent <.sessions.Tracker.start_subagent>` and
:meth:`~.sessions.Tracker.end_subagent` (an ``invoke_agent {subagent}`` span under the
delegating ``invoke_subagent`` call's span); here the SDK's updates are read.

Which call delegated: the newest ``invoke_subagent`` call of the parent trajectory (one call
may start several subagents). Its name: the ``TypeName`` the call's arguments give for that
run when Python saw them (a hook or policy request), else the only subagent the agent
configures, else ``subagent``.
"""

from __future__ import annotations

from typing import Any, Final

from google.antigravity import types as ag_types
from google.antigravity.proto import localharness_pb2 as pb2

from hookscope.integrations.antigravity.reported_op import ReportedOp
from hookscope.integrations.antigravity.sessions import SessionState, Tracker

__all__ = ["DEFAULT_SUBAGENT_NAME", "INVOKE_SUBAGENT", "subagent_state"]

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
    names = session.probe.subagent_names
    return names[0] if len(names) == 1 else DEFAULT_SUBAGENT_NAME


def subagent_state(tracker: Tracker, session: SessionState, update: Any) -> None:
    """A subagent trajectory's state update: running opens its run, idle or cancelled ends it."""
    trajectory = update.trajectory_id
    if update.state == _TRAJECTORY.STATE_RUNNING and update.parent_trajectory_id:
        if trajectory in session.runs:
            return
        delegating = session.ops.latest(update.parent_trajectory_id, INVOKE_SUBAGENT)
        tracker.start_subagent(session, trajectory, _name(session, delegating), delegating)
    elif update.state == _TRAJECTORY.STATE_FULLY_IDLE:
        error = ag_types.AntigravityExecutionError(update.error) if update.error else None
        tracker.end_subagent(session, trajectory, error)
    elif update.state == _TRAJECTORY.STATE_CANCELLED:
        cancelled = ag_types.AntigravityCancelledError(update.error or "subagent cancelled")
        tracker.end_subagent(session, trajectory, cancelled)
