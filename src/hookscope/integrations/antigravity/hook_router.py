"""The hook router's handlers: where the harness calls back the SDK's own hooks.

The harness calls back only for events the SDK has hooks for. Each handler is wrapped so that
its dispatch is reported around the SDK's hooks (which the hook proxies time one by one), with
the scope's span current while they run; the verdict is read from the response the handler
fills in for the harness.

Each event has a *begin* function, which finds what the callback is about and returns a
:class:`Begun` (or ``None``: nothing to report), and the :class:`Begun` carries its own *end*,
a closure over what it began, called with the handler's response (or its error).
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from hookscope.context import HookContext
from hookscope.hooks import HookEvent
from hookscope.integrations._kit.report import DispatchReport
from hookscope.integrations._kit.scopes import DetachedScope
from hookscope.integrations.antigravity import sdk_values as sdk
from hookscope.integrations.antigravity.reported_op import ReportedOp
from hookscope.integrations.antigravity.sessions import SessionState, Tracker
from hookscope.types import HookResult

__all__ = ["HANDLERS", "TRACKED", "Begun", "router_wrapper"]

#: Whether the SDK object whose callback runs in this task belongs to a session the adapter
#: tracks (its wrappers then report every event; SDK hooks need not track it themselves).
TRACKED: Final[contextvars.ContextVar[bool]] = contextvars.ContextVar(
    "hookscope_antigravity_tracked", default=False
)

#: The hook router's handler methods and the event each serves.
HANDLERS: Final[tuple[tuple[str, HookEvent], ...]] = (
    ("_handle_session_start", "on_session_start"),
    ("_handle_session_end", "on_session_end"),
    ("_handle_pre_turn", "pre_turn"),
    ("_handle_post_turn", "post_turn"),
    ("_handle_pre_tool", "pre_tool_call"),
    ("_handle_post_tool", "post_tool_call"),
    ("_handle_on_tool_error", "on_tool_error"),
    ("_handle_on_compaction", "on_compaction"),
)

#: Ends a reported dispatch: given the response the handler filled in and its error, if any.
End = Callable[[Any, BaseException | None], None]


@dataclass(frozen=True, slots=True)
class Begun:
    """A callback being reported: its dispatch, the scope whose span is current while the
    SDK's hooks run, and how the dispatch ends."""

    report: DispatchReport
    scope: DetachedScope[Any]
    end: End


Begin = Callable[[Tracker, SessionState, Any], "Begun | None"]


def router_wrapper(
    tracker: Tracker,
    session_of: Callable[[Any], SessionState | None],
    guard: Callable[..., Any],
    event: HookEvent,
) -> Callable[..., Any]:
    """The ``wrapt`` wrapper for the router handler of ``event``.

    Args:
        tracker: Where sessions, turns and calls are kept.
        session_of: The open session an SDK object (the router) belongs to.
        guard: Runs bookkeeping without ever raising into the SDK.
        event: The event the handler serves.
    """
    begin = _BEGIN[event]

    async def handler(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        session = session_of(instance)
        if session is None:
            return await wrapped(*args, **kwargs)
        tracked = TRACKED.set(True)
        try:
            begun: Begun | None = (
                guard(begin, tracker, session, args[0]) if len(args) == 2 else None
            )
            if begun is None:
                return await wrapped(*args, **kwargs)
            error: BaseException | None = None
            try:
                with begun.scope.current(), begun.report.running():
                    return await wrapped(*args, **kwargs)
            except BaseException as raised:
                error = raised
                raise
            finally:
                guard(begun.end, args[1], error)
        finally:
            TRACKED.reset(tracked)

    handler.__name__ = f"router_{event}"
    return handler


def _finish_plain(report: DispatchReport) -> End:
    def end(response: Any, error: BaseException | None) -> None:
        report.finish(None)

    return end


# --- sessions and compactions: reported as they are ---------------------------------------


def _session_start(tracker: Tracker, session: SessionState, request: Any) -> Begun:
    report = tracker.report_session_start(session)
    return Begun(report, session.scope, _finish_plain(report))


def _session_end(tracker: Tracker, session: SessionState, request: Any) -> Begun:
    report = tracker.report_session_end(session)
    return Begun(report, session.scope, _finish_plain(report))


def _compaction(tracker: Tracker, session: SessionState, request: Any) -> Begun:
    turn = tracker.current_turn(session)
    report = _report(tracker, "on_compaction", turn.context, sdk.compaction_summary(request))
    return Begun(report, turn.scope, _finish_plain(report))


def _report(tracker: Tracker, event: HookEvent, context: HookContext, data: Any) -> DispatchReport:
    return DispatchReport(tracker.notify, event, context, data)


# --- turns ---------------------------------------------------------------------------------


def _pre_turn(tracker: Tracker, session: SessionState, request: Any) -> Begun | None:
    turn = tracker.current_turn(session)
    report = turn.pre_turn
    if report is None or report.finished:
        return None

    def end(response: Any, error: BaseException | None) -> None:
        if error is None:  # else no verdict reached the harness; the turn's end settles it
            tracker.turn_decided(turn, sdk.pre_turn_verdict(response))

    return Begun(report, turn.scope, end)


def _post_turn(tracker: Tracker, session: SessionState, request: Any) -> Begun | None:
    turn = session.turn
    if turn is None or turn.post_turn:
        return None
    report = tracker.post_turn(session, turn, sdk.post_turn_text(request))
    return Begun(report, turn.scope, _finish_plain(report))


# --- tool calls ----------------------------------------------------------------------------


def _pre_tool(tracker: Tracker, session: SessionState, request: Any) -> Begun | None:
    args = request.pre_tool_args
    op = tracker.op_for_request(session, args.trajectory_id, sdk.call_from_request(args))
    if op.decided:
        return None
    report = op.decision_report
    op.evaluating += 1

    def end(response: Any, error: BaseException | None) -> None:
        op.evaluating -= 1
        if error is not None:
            return
        denial, modified = sdk.pre_tool_verdict(response)
        governed = report.verdict  # a governing runner's verdict, when one ran
        if denial is not None:
            if isinstance(governed, HookResult) and not governed.allow:
                denial = governed  # with the rule, bucket and reason it decided by
            op.deny(denial, report.decided_by)
            return
        if isinstance(governed, HookResult) and governed.allow:
            op.allow_pending(governed)  # the runner's policy decision, until the call runs
        if modified is not None:
            op.modify(modified)

    return Begun(report, op.scope, end)


def _after_call(tracker: Tracker, session: SessionState, args: Any) -> ReportedOp | None:
    """The call a post-call or error callback is about; ``None`` when it arrives too late.

    Such a callback never starts a call: it belongs to an open call with its id, or to one
    that closed moments ago (its turn ended first: nothing is left to report), or to the
    call a step opened for the same tool.
    """
    op = session.ops.late(args.call_id or None)
    if op is None:
        call = sdk.call_from_request(args, with_args=False)
        op = tracker.op_for_request(session, args.trajectory_id, call)
    return None if op.closed else op


def _result_reported(
    tracker: Tracker, session: SessionState, op: ReportedOp, event: HookEvent
) -> Begun | None:
    report = op.result_report
    if report is None or report.finished or report.event != event:
        return None

    def end(response: Any, error: BaseException | None) -> None:
        if event == "on_tool_error":
            op.recovered(sdk.recovery_of(response) if error is None else None)
        else:
            report.finish(None)
        tracker.hooks_reported(session, op)

    return Begun(report, op.scope, end)


def _post_tool(tracker: Tracker, session: SessionState, request: Any) -> Begun | None:
    args = request.post_tool_args
    op = _after_call(tracker, session, args)
    if op is None:
        return None
    if op.result_report is None:  # a harness tool: it ran outside Python
        op.returned(args.result or None, hooks_pending=True)
    return _result_reported(tracker, session, op, "post_tool_call")


def _tool_error(tracker: Tracker, session: SessionState, request: Any) -> Begun | None:
    args = request.on_tool_error_args
    op = _after_call(tracker, session, args)
    if op is None:
        return None
    if op.result_report is None:
        op.failed(sdk.tool_error(args.error_message, op.call.name), hooks_pending=True)
    return _result_reported(tracker, session, op, "on_tool_error")


_BEGIN: Final[Mapping[HookEvent, Begin]] = {
    "on_session_start": _session_start,
    "on_session_end": _session_end,
    "pre_turn": _pre_turn,
    "post_turn": _post_turn,
    "pre_tool_call": _pre_tool,
    "post_tool_call": _post_tool,
    "on_tool_error": _tool_error,
    "on_compaction": _compaction,
}
