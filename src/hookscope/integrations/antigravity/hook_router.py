"""The hook router's handlers: where the harness calls back the SDK's own hooks.

The harness calls back only for events the SDK has hooks for. Each handler is wrapped so that
its dispatch is reported around the SDK's hooks (which the hook proxies time one by one), with
the scope's span current while they run; the verdict is read from the response the handler
fills in for the harness.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

from google.antigravity.connections.local import (
    struct_converter,
)
from google.antigravity.proto import localharness_pb2 as pb2

from hookscope.hooks import HookEvent
from hookscope.integrations._kit.report import DispatchReport
from hookscope.integrations._kit.scopes import DetachedScope
from hookscope.integrations.antigravity.reported_op import ReportedOp
from hookscope.integrations.antigravity.sdk_values import (
    json_args,
    tool_error,
    tool_name,
)
from hookscope.integrations.antigravity.sessions import SessionState, Tracker, TurnState
from hookscope.types import HookResult, ToolCall

if TYPE_CHECKING:
    from hookscope.integrations.antigravity.wrappers import Adapter

__all__ = ["HANDLERS", "TRACKED", "router_wrapper"]

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

_PRE_TOOL_DENY: Final = pb2.PreToolResult.Decision.DENY
_PRE_TURN_DENY: Final = pb2.PreTurnResult.Decision.DENY

#: What a begin function returns: the dispatch, the scope whose span is current while the
#: hooks run, and what the end function needs; ``None`` when there is nothing to report.
Begun = tuple[DispatchReport, DetachedScope[Any], Any] | None


def router_wrapper(adapter: Adapter, event: HookEvent) -> Callable[..., Any]:
    """The ``wrapt`` wrapper for the router handler of ``event``."""
    begin = _BEGIN[event]
    end = _END.get(event, _end_plain)
    tracker = adapter.tracker

    async def handler(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        session = adapter.session(instance)
        if session is None:
            return await wrapped(*args, **kwargs)
        tracked = TRACKED.set(True)
        try:
            begun = adapter.guard(begin, tracker, session, args[0]) if len(args) == 2 else None
            if begun is None:
                return await wrapped(*args, **kwargs)
            dispatch, scope, target = begun
            error: BaseException | None = None
            try:
                with scope.current(), dispatch.running():
                    return await wrapped(*args, **kwargs)
            except BaseException as raised:
                error = raised
                raise
            finally:
                adapter.guard(end, tracker, dispatch, target, args[1], error)
        finally:
            TRACKED.reset(tracked)

    handler.__name__ = f"router_{event}"
    return handler


# --- begin: open the dispatch before the SDK's hooks run --------------------------------


def _session_start(tracker: Tracker, session: SessionState, request: Any) -> Begun:
    session.start_reported = True
    return (
        DispatchReport(tracker.notify, "on_session_start", session.context, None),
        session.scope,
        None,
    )


def _session_end(tracker: Tracker, session: SessionState, request: Any) -> Begun:
    session.end_reported = True
    return (
        DispatchReport(tracker.notify, "on_session_end", session.context, None),
        session.scope,
        None,
    )


def _pre_turn(tracker: Tracker, session: SessionState, request: Any) -> Begun:
    turn = tracker.current_turn(session)
    dispatch = turn.pre_turn
    if dispatch is None or dispatch.finished:
        return None
    return dispatch, turn.scope, turn


def _post_turn(tracker: Tracker, session: SessionState, request: Any) -> Begun:
    turn = session.turn
    if turn is None or turn.post_turn:
        return None
    text = request.post_turn_args.response_text if request.HasField("post_turn_args") else None
    return tracker.post_turn(session, turn, text), turn.scope, turn


def _call(args: Any, call_args: dict[str, Any]) -> ToolCall:
    return ToolCall(tool_name(args.tool_name), call_args, args.call_id, args.server_name or None)


def _pre_tool(tracker: Tracker, session: SessionState, request: Any) -> Begun:
    args = request.pre_tool_args
    call = _call(args, json_args(args.arguments_json))
    op = tracker.op_for_request(session, args.trajectory_id, call)
    return None if op.decided else (op.decision_report, op.scope, (session, op))


def _pending(session: SessionState, op: ReportedOp, event: HookEvent) -> Begun:
    dispatch = op.result_report
    if dispatch is None or dispatch.finished or dispatch.event != event:
        return None
    return dispatch, op.scope, (session, op)


def _after_call(tracker: Tracker, session: SessionState, args: Any) -> ReportedOp | None:
    """The call a post-call or error callback is about; ``None`` when it arrives too late.

    Such a callback never starts a call: it belongs to an open call with its id, or to one
    that closed moments ago (its turn ended first: nothing is left to report), or to the
    call a step opened for the same tool.
    """
    op = tracker.late_op(session, args.call_id or None)
    if op is None:
        op = tracker.op_for_request(session, args.trajectory_id, _call(args, {}))
    return None if op.closed else op


def _post_tool(tracker: Tracker, session: SessionState, request: Any) -> Begun:
    args = request.post_tool_args
    op = _after_call(tracker, session, args)
    if op is None:
        return None
    if op.result_report is None:  # a harness tool: it ran outside Python
        op.returned(args.result or None, hooks_pending=True)
    return _pending(session, op, "post_tool_call")


def _tool_error(tracker: Tracker, session: SessionState, request: Any) -> Begun:
    args = request.on_tool_error_args
    op = _after_call(tracker, session, args)
    if op is None:
        return None
    if op.result_report is None:
        error = tool_error(args.error_message, op.call.name)
        op.failed(error, hooks_pending=True)
    return _pending(session, op, "on_tool_error")


def _compaction(tracker: Tracker, session: SessionState, request: Any) -> Begun:
    turn = tracker.current_turn(session)
    summary = request.on_compaction_args.summary if request.HasField("on_compaction_args") else ""
    return DispatchReport(tracker.notify, "on_compaction", turn.context, summary), turn.scope, turn


# --- end: read the verdict the handler gave the harness ----------------------------------


def _end_plain(
    tracker: Tracker, dispatch: DispatchReport, target: Any, response: Any, error: Any
) -> None:
    dispatch.finish(None)


def _end_pre_turn(
    tracker: Tracker, dispatch: DispatchReport, turn: TurnState, response: Any, error: Any
) -> None:
    if error is not None:
        return  # no verdict reached the harness; the turn's end settles it
    result = response.pre_turn_result
    if result.decision == _PRE_TURN_DENY:
        tracker.turn_decided(turn, HookResult.deny(result.reason))
    else:
        tracker.turn_decided(turn, HookResult())


def _end_pre_tool(
    tracker: Tracker,
    dispatch: DispatchReport,
    target: tuple[SessionState, ReportedOp],
    response: Any,
    error: Any,
) -> None:
    op = target[1]
    if error is not None:
        return
    result = response.pre_tool_result
    governed = dispatch.verdict  # a governing runner's verdict, when one ran
    if result.decision == _PRE_TOOL_DENY:
        if not (isinstance(governed, HookResult) and not governed.allow):
            governed = HookResult.deny(result.reason)  # an SDK hook denied
        op.deny(governed, dispatch.decided_by)
        return
    if isinstance(governed, HookResult) and governed.allow:
        op.allow_pending(governed)  # the runner's policy decision, until the call runs
    if result.HasField("modified_args"):
        op.modify(struct_converter.to_json_fallback(result.modified_args))


def _end_post_tool(
    tracker: Tracker,
    dispatch: DispatchReport,
    target: tuple[SessionState, ReportedOp],
    response: Any,
    error: Any,
) -> None:
    dispatch.finish(None)
    tracker.hooks_reported(*target)


def _end_tool_error(
    tracker: Tracker,
    dispatch: DispatchReport,
    target: tuple[SessionState, ReportedOp],
    response: Any,
    error: Any,
) -> None:
    value = None
    if error is None and response.HasField("on_tool_error_result"):
        value = response.on_tool_error_result.custom_error_message or None
    target[1].recovered(value)
    tracker.hooks_reported(*target)


_BEGIN: Final[Mapping[HookEvent, Callable[[Tracker, SessionState, Any], Begun]]] = {
    "on_session_start": _session_start,
    "on_session_end": _session_end,
    "pre_turn": _pre_turn,
    "post_turn": _post_turn,
    "pre_tool_call": _pre_tool,
    "post_tool_call": _post_tool,
    "on_tool_error": _tool_error,
    "on_compaction": _compaction,
}
_END: Final[Mapping[HookEvent, Callable[..., None]]] = {
    "pre_turn": _end_pre_turn,
    "pre_tool_call": _end_pre_tool,
    "post_tool_call": _end_post_tool,
    "on_tool_error": _end_tool_error,
}
