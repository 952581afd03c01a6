"""A hookscope runner governing google-antigravity agents through the SDK's own hooks.

:func:`govern` (and ``AntigravityInstrumentor().instrument(runner=...)``) adds one SDK hook
object per event the runner decides or watches. Each runs the runner's hooks for its event
*inside* the dispatch the adapter reports for that event (a kit ``DispatchReport``), so
the runner's hooks appear beside the SDK's own hooks and policies as hooks of one dispatch,
and the runner's verdict becomes the SDK's native answer:

==================  =============================  ========================================
hookscope event     SDK point                      enforced
==================  =============================  ========================================
``pre_tool_call``   ``PreToolCallDecideHook``      deny, ``modified_args`` (merged), ask
``pre_turn``        ``PreTurnHook``                block the prompt
``on_tool_error``   ``OnToolErrorHook``            ``Recovery``: its value, as text, is
                                                   what the model reads instead of the error
``on_interaction``  ``OnInteractionHook``          answers the agent's questions
inspect events      the matching inspect hooks     (observed; nothing to enforce)
==================  =============================  ========================================

The pre-tool hook is always registered, even for a runner with no ``pre_tool_call`` hooks:
the harness asks it before applying its static rules, so every call, including one a
wildcard or server-wide rule then denies, reaches Python with its tool name and call id.

Fail closed: a decide hook of the runner that raises denies (the runner's rule); an error
inside this module on a decide path denies too, naming the failure. The SDK's hook runner
stops at the first denying hook, so these hooks go after the agent's own.
"""

from __future__ import annotations

import json
import logging
import weakref
from collections.abc import Sequence
from typing import Any, Final

from google.antigravity import types as ag_types
from google.antigravity.hooks import hooks as ag_hooks

from hookscope._events import freeze_call
from hookscope._notify import Notifier
from hookscope.context import OperationContext, SessionContext, TurnContext
from hookscope.hooks import HookEvent
from hookscope.integrations._kit.fold import dispatch_into
from hookscope.integrations._kit.guard import Guard
from hookscope.integrations._kit.report import REPORTING, DispatchReport
from hookscope.integrations.antigravity.hook_router import TRACKED
from hookscope.integrations.antigravity.sdk_values import (
    call_from_sdk,
    call_of_error,
    call_of_result,
)
from hookscope.integrations.antigravity.sessions import SdkProbe, SessionState, Tracker
from hookscope.runner import HookRunner
from hookscope.types import Answer, HookResult, Recovery, ToolCall

__all__ = [
    "GOVERNED_EVENTS",
    "GoverningHook",
    "Standalone",
    "governing_hooks",
    "is_governing",
    "recovery_text",
    "runner_of",
]

logger = logging.getLogger("hookscope.integrations.antigravity")

#: Events governed whatever hooks the runner has at the time (hooks may be swapped in later).
GOVERNED_EVENTS: Final[tuple[HookEvent, ...]] = ("pre_tool_call", "pre_turn", "on_tool_error")


class GoverningHook:
    """Base of the SDK hook classes below: the runner, and where its dispatch is reported."""

    event: HookEvent
    name = "hookscope"
    #: Not put behind a :class:`~.hook_proxy.HookProxy`: it reports the runner's hooks itself.
    reports_itself = True

    def __init__(self, runner: HookRunner, standalone: Standalone | None) -> None:
        self.runner = runner
        self.standalone = standalone

    def __deepcopy__(self, memo: dict[int, Any]) -> GoverningHook:
        # ``Agent`` deep-copies its config (then registers the original hooks): a runner,
        # with its locks and observers, is shared, never copied.
        return self

    def report(self) -> DispatchReport | None:
        """The dispatch the adapter's wrappers report for this hook's event, in this task."""
        dispatch = REPORTING.get()
        return dispatch if dispatch is not None and dispatch.event == self.event else None

    def own_session(self, context: Any) -> SessionState | None:
        """The session these hooks track themselves: when no wrapper tracks the SDK's."""
        if self.standalone is None or TRACKED.get():
            return None
        return self.standalone.session(context)

    async def relay(self, report: DispatchReport, data: Any) -> Any:
        """Run the runner's hooks for the event inside ``report``; the runner's dispatch."""
        return await dispatch_into(self.runner, report, data)

    async def run(self, context: Any, data: Any) -> Any:
        report = self.report()
        if report is not None:
            return await self.reported(report, data)
        session = self.own_session(context)
        if session is not None:
            assert self.standalone is not None
            return await self.tracked(self.standalone.tracker, session, data)
        return await self.untracked(data)

    async def reported(self, report: DispatchReport, data: Any) -> Any:
        """The event, reported by the adapter: relay the runner's hooks into it."""
        await self.relay(report, report.data)

    async def tracked(self, tracker: Tracker, session: SessionState, data: Any) -> Any:
        """The event, in a session these hooks track (:func:`govern` without wrappers)."""

    async def untracked(self, data: Any) -> Any:
        """The event, seen by nothing that reports it: nothing to add (inspect events)."""


#: Fail closed: an error in this module on a decide path denies, naming only its type.
_GUARD: Final = Guard("google-antigravity", logger)


def _failure(event: HookEvent, error: Exception) -> str:
    return _GUARD.failed(f"the governing {event} hook", error)


class _PreToolCall(GoverningHook, ag_hooks.PreToolCallDecideHook):
    event: HookEvent = "pre_tool_call"

    async def run(self, context: Any, data: Any) -> Any:
        try:
            return await super().run(context, data)
        except Exception as error:  # fail closed
            return ag_types.HookResult(allow=False, message=_failure(self.event, error))

    async def reported(self, report: DispatchReport, data: Any) -> Any:
        call = _call(data, report.context)
        dispatched = await self.relay(report, freeze_call(call))
        result = _enforceable(dispatched.result, call, dispatched.data)
        if result is not dispatched.result:
            report.verdict = result  # what the SDK is told, and what the call records
            report.decided_by = report.decided_by or _CANNOT_DROP
        return _tool_verdict(result, call, dispatched.data)

    async def tracked(self, tracker: Tracker, session: SessionState, data: Any) -> Any:
        op = tracker.op_for_request(session, None, _call(data, None))
        if op.decided:  # asked again about a call already decided
            return await self.untracked(data)
        report = op.decision_report
        with op.scope.current():
            verdict = await self.reported(report, data)
        result = report.verdict
        if verdict.allow:
            if isinstance(result, HookResult):
                op.allow_pending(result)
            op.start()  # the tool runs now; its post-call hook closes it
        else:
            op.deny(result, report.decided_by)
            tracker.close_op(session, op)
        return verdict

    async def untracked(self, data: Any) -> Any:
        # An agent hookscope does not trace (built before instrumenting): govern it all the
        # same, on contexts of its own, reporting to nobody.
        call = _call(data, None)
        session = SessionContext("untracked")
        turn = TurnContext(session, 0)
        context = OperationContext(turn, "tool", call, call.id)
        dispatched = await self.runner.dispatch(
            self.event, context, freeze_call(call), notifier=_SILENT
        )
        result = _enforceable(dispatched.result, call, dispatched.data)
        return _tool_verdict(result, call, dispatched.data)


class _PreTurn(GoverningHook, ag_hooks.PreTurnHook):
    event: HookEvent = "pre_turn"

    async def run(self, context: Any, data: Any) -> Any:
        try:
            return await super().run(context, data)
        except Exception as error:  # fail closed
            return ag_types.HookResult(allow=False, message=_failure(self.event, error))

    async def reported(self, report: DispatchReport, data: Any) -> Any:
        result: HookResult = (await self.relay(report, report.data)).result
        return ag_types.HookResult(allow=result.allow, message=result.message)

    async def tracked(self, tracker: Tracker, session: SessionState, data: Any) -> Any:
        turn = tracker.start_turn(session, data)
        if turn.pre_turn is None or turn.pre_turn.finished:
            return ag_types.HookResult(allow=True)
        with turn.scope.current():
            verdict = await self.reported(turn.pre_turn, data)
        tracker.turn_decided(turn, turn.pre_turn.verdict)
        if not verdict.allow:
            tracker.end_turn(session)  # blocked: no post-turn hook will run for it
        return verdict

    async def untracked(self, data: Any) -> Any:
        session = SessionContext("untracked")
        context = TurnContext(session, 0, data)
        dispatched = await self.runner.dispatch(self.event, context, data, notifier=_SILENT)
        result: HookResult = dispatched.result
        return ag_types.HookResult(allow=result.allow, message=result.message)


class _OnToolError(GoverningHook, ag_hooks.OnToolErrorHook):
    event: HookEvent = "on_tool_error"

    async def reported(self, report: DispatchReport, data: Any) -> Any:
        recovery: Recovery | None = (await self.relay(report, report.data)).result
        return None if recovery is None else recovery_text(recovery)

    async def tracked(self, tracker: Tracker, session: SessionState, data: Any) -> Any:
        op = tracker.op_for_request(session, None, call_of_error(data))
        op.failed(data, hooks_pending=True)
        text = None
        report = op.result_report
        if report is not None and not report.finished:
            with op.scope.current():
                text = await self.reported(report, data)
        op.recovered(text)
        tracker.close_op(session, op)
        return text


class _PostToolCall(GoverningHook, ag_hooks.PostToolCallHook):
    event: HookEvent = "post_tool_call"

    async def tracked(self, tracker: Tracker, session: SessionState, data: Any) -> Any:
        call = call_of_result(data)
        op = tracker.op_for_request(session, None, call)
        if data.error:
            op.failed(ag_types.ToolExecutionError(data.error, call.name), False)
        else:
            op.returned(data.result, hooks_pending=True)
            report = op.result_report
            if report is not None and not report.finished:
                with op.scope.current():
                    await self.reported(report, data)
                report.finish(None)
        tracker.close_op(session, op)


class _PostTurn(GoverningHook, ag_hooks.PostTurnHook):
    event: HookEvent = "post_turn"

    async def tracked(self, tracker: Tracker, session: SessionState, data: Any) -> Any:
        turn = session.turn
        if turn is None:
            return
        report = tracker.post_turn(session, turn, data)
        with turn.scope.current():
            await self.reported(report, data)
        report.finish(None)
        tracker.end_turn(session)


class _SessionStart(GoverningHook, ag_hooks.OnSessionStartHook):
    event: HookEvent = "on_session_start"

    async def tracked(self, tracker: Tracker, session: SessionState, data: Any) -> Any:
        report = tracker.report_session_start(session)
        with session.scope.current():
            await self.reported(report, None)
        report.finish(None)


class _SessionEnd(GoverningHook, ag_hooks.OnSessionEndHook):
    event: HookEvent = "on_session_end"

    async def tracked(self, tracker: Tracker, session: SessionState, data: Any) -> Any:
        report = tracker.report_session_end(session)
        with session.scope.current():
            await self.reported(report, None)
        report.finish(None)
        assert self.standalone is not None
        self.standalone.close(session)


class _OnInteraction(GoverningHook, ag_hooks.OnInteractionHook):
    event: HookEvent = "on_interaction"

    async def reported(self, report: DispatchReport, data: Any) -> Any:
        answers: Sequence[Answer] | None = (await self.relay(report, report.data)).result
        return None if not answers else _question_result(answers, len(report.data or ()))


class _OnCompaction(GoverningHook, ag_hooks.OnCompactionHook):
    event: HookEvent = "on_compaction"


#: Session start and end, turn end and a call's end are tracked by these hooks when no
#: wrapper does: they are registered whenever :func:`govern` tracks the sessions itself.
_TRACKING: Final[tuple[HookEvent, ...]] = (
    "on_session_start",
    "on_session_end",
    "post_turn",
    "post_tool_call",
)
_HOOKS: Final[dict[HookEvent, type[GoverningHook]]] = {
    "on_session_start": _SessionStart,
    "pre_turn": _PreTurn,
    "pre_tool_call": _PreToolCall,
    "post_tool_call": _PostToolCall,
    "on_tool_error": _OnToolError,
    "on_interaction": _OnInteraction,
    "on_compaction": _OnCompaction,
    "post_turn": _PostTurn,
    "on_session_end": _SessionEnd,
}


class Standalone:
    """The sessions :func:`govern`'s hooks track themselves, keyed by the SDK's root context
    (the one ``SessionContext`` its hook runner keeps), weakly."""

    def __init__(self, tracker: Tracker) -> None:
        self.tracker = tracker
        self._by_root: weakref.WeakKeyDictionary[Any, SessionState] = weakref.WeakKeyDictionary()

    def session(self, context: Any) -> SessionState:
        """The session of the SDK hook ``context`` (opened on first sight)."""
        root = context
        while getattr(root, "parent", None) is not None:
            root = root.parent
        session = self._by_root.get(root)
        if session is None or session.closed:
            # The runner's pre_turn hooks decide (their dispatch waits for them).
            probe = SdkProbe()
            probe.has_hooks = _decides_turns
            session = self.tracker.open_session(None, probe)
            self._by_root[root] = session
        return session

    def close(self, session: SessionState) -> None:
        """End ``session`` and whatever is still open in it."""
        self.tracker.close_session(session, None)


def _decides_turns(event: HookEvent) -> bool:
    return event in ("pre_turn", "on_session_start", "on_session_end")


def governing_hooks(runner: HookRunner, standalone: Standalone | None = None) -> list[Any]:
    """SDK hook objects that run ``runner``'s hooks.

    The decide events always (the runner's hooks may be swapped later), the others for which
    ``runner`` has hooks now (an SDK hook changes what the harness calls back), and, with
    ``standalone``, the ones that track sessions, turns and calls without wrappers.
    """
    if not isinstance(runner, HookRunner):
        raise TypeError(
            f"govern() needs a hookscope.HookRunner, got {type(runner).__module__}."
            f"{type(runner).__qualname__}; build one with HookRunner([...hooks, policy])"
        )
    return [
        cls(runner, standalone)
        for event, cls in _HOOKS.items()
        if event in GOVERNED_EVENTS
        or runner.hook_names(event)
        or (standalone is not None and event in _TRACKING)
    ]


def is_governing(hook: Any) -> bool:
    """Whether ``hook`` is one of hookscope's governing SDK hooks."""
    return isinstance(hook, GoverningHook)


def runner_of(hooks: Sequence[Any]) -> HookRunner | None:
    """The runner the governing hooks among ``hooks`` dispatch to, if any."""
    return next((h.runner for h in hooks if isinstance(h, GoverningHook)), None)


_SILENT: Final = Notifier()


# --- values ------------------------------------------------------------------------------


def _call(data: Any, context: Any) -> ToolCall:
    """The call as the SDK's hooks see it (paths normalised, earlier hooks' changes merged),
    with the id the adapter knows it by."""
    call_id = context.call_id if isinstance(context, OperationContext) else None
    return call_from_sdk(data, call_id or data.id)


#: Who denies a call whose arguments a hook cut down (the SDK can only merge changes).
_CANNOT_DROP: Final = "hookscope"


def _enforceable(result: HookResult, call: ToolCall, effective: ToolCall) -> HookResult:
    """``result``, or a denial when a hook removed arguments: the SDK merges changed arguments
    into the call, so a removed one would reach the tool anyway (fail closed)."""
    if not result.allow:
        return result
    dropped = [key for key in call.args if key not in effective.args]
    if not dropped:
        return result
    return HookResult(
        allow=False,
        message=(
            f"hookscope denied this call: a hook removed its argument(s) {', '.join(dropped)}, "
            "and google-antigravity can only change arguments, not remove them"
        ),
    )


def _tool_verdict(result: HookResult, call: ToolCall, effective: ToolCall) -> Any:
    if not result.allow:
        return ag_types.HookResult(allow=False, message=result.message or "denied by hookscope")
    if dict(effective.args) == dict(call.args):
        return ag_types.HookResult(allow=True)
    # The SDK merges modified arguments into the call (a removed key was denied above).
    modified = {k: v for k, v in effective.args.items() if call.args.get(k) != v}
    return ag_types.HookResult(allow=True, modified_args=modified)


def recovery_text(recovery: Recovery) -> str:
    """A :class:`Recovery` as the SDK takes it: the non-empty text the model reads."""
    value = recovery.value
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if text.strip() else (recovery.message or "the tool failed; recovered")


def _question_result(answers: Sequence[Answer], count: int) -> Any:
    by_id = {a.question_id: a.text for a in answers}
    responses = [
        ag_types.QuestionResponse(freeform_response=text)
        if (text := by_id.get(str(index))) is not None
        else ag_types.QuestionResponse(skipped=True)
        for index in range(count)
    ]
    return ag_types.QuestionHookResult(responses=responses)
