"""The plain-hooks path: google-antigravity hooks that drive a :class:`Tracker`.

Keyed like the instrumentation: a session by the root of the SDK's context chain (the one
``SessionContext`` its hook runner keeps), the turn by the session's current turn (never the
``TurnContext`` a hook receives, which the SDK replaces when a StopHook is registered), a tool
call by its id within the session (OpenAI-style ids repeat across sessions).
"""

from __future__ import annotations

import weakref
from typing import Any

from google.antigravity import types as ag_types
from google.antigravity.hooks import hooks as ag_hooks

from hookscope.integrations.antigravity.sdk_values import call_of_error, call_of_result
from hookscope.integrations.antigravity.sessions import SessionState, Tracker

__all__ = ["plain_hooks"]


def _root(context: Any) -> Any:
    while getattr(context, "parent", None) is not None:
        context = context.parent
    return context


class _Sessions:
    """Sessions by the SDK's root context, weakly: a finished agent leaves nothing behind."""

    def __init__(self, tracker: Tracker) -> None:
        self.tracker = tracker
        self._by_root: weakref.WeakKeyDictionary[Any, SessionState] = weakref.WeakKeyDictionary()

    def of(self, context: Any) -> SessionState:
        root = _root(context)
        session = self._by_root.get(root)
        if session is None or session.closed:
            session = self.tracker.open_session(None)
            self._by_root[root] = session
            self.tracker.session_started(session)
        return session

    def pop(self, context: Any) -> SessionState | None:
        return self._by_root.pop(_root(context), None)


def plain_hooks(tracker: Tracker) -> list[Any]:
    """SDK hook objects reporting session, turn and finished tool-call events to ``tracker``."""
    sessions = _Sessions(tracker)

    class SessionStart(ag_hooks.OnSessionStartHook):
        name = "hookscope.session_start"

        async def run(self, context: Any, data: None) -> None:
            sessions.of(context)

    class SessionEnd(ag_hooks.OnSessionEndHook):
        name = "hookscope.session_end"

        async def run(self, context: Any, data: None) -> None:
            session = sessions.pop(context)
            if session is not None:
                tracker.close_session(session, None)

    class PreTurn(ag_hooks.PreTurnHook):
        name = "hookscope.pre_turn"

        async def run(self, context: Any, data: Any) -> Any:
            tracker.start_turn(sessions.of(context), data)
            return ag_types.HookResult(allow=True)

    class PostTurn(ag_hooks.PostTurnHook):
        name = "hookscope.post_turn"

        async def run(self, context: Any, data: str) -> None:
            session = sessions.of(context)
            turn = session.turn
            if turn is not None:
                tracker.post_turn(session, turn, data).finish(None)
                tracker.end_turn(session)

    class PostToolCall(ag_hooks.PostToolCallHook):
        name = "hookscope.post_tool_call"

        async def run(self, context: Any, data: Any) -> None:
            session = sessions.of(context)
            op = tracker.op_for_request(session, None, call_of_result(data))
            if data.error:
                error = ag_types.ToolExecutionError(data.error, op.call.name)
                op.failed(error, hooks_pending=False)
            else:
                op.returned(data.result, hooks_pending=False)
            tracker.close_op(session, op)

    class OnToolError(ag_hooks.OnToolErrorHook):
        name = "hookscope.on_tool_error"

        async def run(self, context: Any, data: Exception) -> None:
            session = sessions.of(context)
            op = tracker.op_for_request(session, None, call_of_error(data))
            op.failed(data, hooks_pending=False)
            tracker.close_op(session, op)
            return None

    return [SessionStart(), SessionEnd(), PreTurn(), PostTurn(), PostToolCall(), OnToolError()]
