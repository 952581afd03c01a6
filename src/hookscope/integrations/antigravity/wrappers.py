"""The wrappers that watch google-antigravity 0.1.x and report to a :class:`Tracker`.

Imported only when instrumenting (it imports the SDK). Every wrapper observes: it calls the
wrapped SDK function unchanged, returns its result and lets its exceptions through; its own
bookkeeping is guarded, so a failure in it is logged once and never reaches the agent.

Where each lifecycle point is observed (read with the SDK's source at hand):

* session: ``Agent.__aenter__`` / ``__aexit__``; the SDK objects created while entering (hook
  runner, connection, event processor, hook router) are bound to the session by identity.
* turn: starts at ``LocalConnection.send``; ends when ``process_event`` sees the main
  trajectory reach fully idle (completed, failed when it carries an error, cancelled after
  ``LocalConnection.cancel``) or cancelled (blocked when ``pre_turn`` denied it); or when the
  session ends first (cancelled when the caller's task was cancelled or timed out, else
  failed). ``Agent.chat()`` returns before that: it is no end.
* tool calls: ``_emit_step`` (every step update: tool steps, harness denials, final answers),
  ``_execute_client_tool`` (Python tools; the ToolResult it returns carries the real
  exception), the policy-decision handler (rules with ``when`` or ask-user), and the hook
  router (see ``hook_router``).
* SDK hooks: ``HookRunner.register_hook`` registers a transparent proxy of each hook, which
  reports the hook's duration and result to the dispatch running in its task.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable
from contextvars import ContextVar
from time import perf_counter
from typing import Any, Final

from google.antigravity import types as ag_types
from google.antigravity.proto import localharness_pb2 as pb2

from hookscope.context import OperationContext
from hookscope.hooks import HookEvent
from hookscope.integrations._kit.report import DispatchReport
from hookscope.integrations._kit.scopes import DetachedScope
from hookscope.integrations.antigravity import sdk_values as sdk
from hookscope.integrations.antigravity.hook_proxy import RUNNER_LISTS, proxy
from hookscope.integrations.antigravity.hook_router import HANDLERS, router_wrapper
from hookscope.integrations.antigravity.policy_rules import HARNESS_POLICY, POLICY_HOOK
from hookscope.integrations.antigravity.reported_op import ReportedOp, StepKey
from hookscope.integrations.antigravity.sessions import SdkProbe, SessionState, Tracker
from hookscope.integrations.antigravity.subagents import subagent_state
from hookscope.runner import HookRunner
from hookscope.types import Question, Usage

__all__ = ["Adapter", "Wrapper"]

logger = logging.getLogger("hookscope.integrations.antigravity")

#: A ``wrapt`` wrapper: ``(wrapped, instance, args, kwargs) -> result``.
Wrapper = Callable[[Any, Any, Any, Any], Any]
Args = tuple[Any, ...]
Kwargs = dict[str, Any]

#: The session whose SDK objects are being created (set while ``Agent.__aenter__`` runs).
_BINDING: Final[ContextVar[SessionState | None]] = ContextVar(
    "hookscope_antigravity_binding", default=None
)
#: The trajectory of the tool call the harness asked this task to run.
_TOOL_TRAJECTORY: Final[ContextVar[str | None]] = ContextVar(
    "hookscope_antigravity_tool_trajectory", default=None
)
#: The policy-decision request being handled in this task.
_POLICY_REQUEST: Final[ContextVar[Any]] = ContextVar(
    "hookscope_antigravity_policy_request", default=None
)

_TRAJECTORY: Final = pb2.TrajectoryStateUpdate.State
_OUTCOME_NAME: Final = pb2.PolicyEvaluationOutcome.Name
_StepStatus: Final = ag_types.StepStatus

_AGENT: Final = "google.antigravity.agent"
_RUNNER: Final = "google.antigravity.hooks.hook_runner"
_CONNECTION: Final = "google.antigravity.connections.local.local_connection"
_PROCESSOR: Final = "google.antigravity.connections.local.event_processor"
_ROUTER: Final = "google.antigravity.connections.local.hook_router"


class Adapter:
    """The wrapper functions, bound to one tracker; :meth:`targets` says where they go.

    SDK objects are mapped to their session by identity (weakly), never through the SDK's
    hook contexts, which it replaces.
    """

    def __init__(self, tracker: Tracker, governing: HookRunner | None = None) -> None:
        self.tracker = tracker
        #: The runner that governs every agent created while instrumented, if any.
        self.governing = governing
        self._bound: weakref.WeakKeyDictionary[Any, SessionState] = weakref.WeakKeyDictionary()
        self._configs: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
        self._failed: set[str] = set()

    def targets(self) -> list[tuple[str, str, Wrapper]]:
        """``(module, "Class.method", wrapper)`` for every function to wrap."""
        base, harness = "BaseLocalEventProcessor", "LocalHarnessEventProcessor"
        tracker, guard = self.tracker, self.guard
        return [
            (_AGENT, "Agent.__init__", self._agent_init),
            (_AGENT, "Agent.__aenter__", self._agent_enter),
            (_AGENT, "Agent.__aexit__", self._agent_exit),
            (_RUNNER, "HookRunner.__init__", self._bind_runner),
            (_RUNNER, "HookRunner.register_hook", self._register_hook),
            (_CONNECTION, "LocalConnection.__init__", self._bind),
            (_CONNECTION, "LocalConnection.send", self._send),
            (_CONNECTION, "LocalConnection.cancel", self._cancel),
            (_PROCESSOR, f"{base}.__init__", self._bind_processor),
            (_PROCESSOR, f"{base}._emit_step", self._emit_step),
            (_PROCESSOR, f"{base}._execute_client_tool", self._execute_tool),
            (_PROCESSOR, f"{harness}.handle_tool_call", self._handle_tool_call),
            (_PROCESSOR, f"{base}._evaluate_dynamic_policy", self._evaluate_policy),
            (_PROCESSOR, f"{base}._dispatch_question_interaction", self._interaction),
            (_PROCESSOR, f"{harness}.process_event", self._process_event),
            (_PROCESSOR, f"{harness}._handle_policy_decision_request", self._policy_request),
            (_ROUTER, "HookRouter.__init__", self._bind),
            *(
                (_ROUTER, f"HookRouter.{name}", router_wrapper(tracker, self.session, guard, e))
                for name, e in HANDLERS
            ),
        ]

    def session(self, obj: Any) -> SessionState | None:
        """The open session ``obj`` (an SDK object) belongs to."""
        if not self.tracker.active:
            return None
        session = self._bound.get(obj)
        return None if session is None or session.closed else session

    def guard(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run bookkeeping; log its first failure per function, never raise into the SDK."""
        try:
            return fn(*args)
        except Exception:
            name = getattr(fn, "__name__", repr(fn))
            if name not in self._failed:
                self._failed.add(name)
                logger.exception(
                    "hookscope's antigravity instrumentation failed in %s; the agent is "
                    "unaffected, but this session's telemetry may be incomplete",
                    name,
                )
            return None

    # --- sessions and binding ---

    def _agent_init(self, wrapped: Any, instance: Any, args: Args, kwargs: Kwargs) -> Any:
        if self.governing is not None and self.tracker.active:
            args, kwargs = _governed(self.governing, args, kwargs)
        result = wrapped(*args, **kwargs)
        # The config as given (the constructor's public argument), for the session's rules.
        config = args[0] if args else kwargs.get("config")
        if config is not None and self.tracker.active:
            self._configs[instance] = config
        return result

    async def _agent_enter(self, wrapped: Any, instance: Any, args: Args, kwargs: Kwargs) -> Any:
        if not self.tracker.active or self.session(instance) is not None:
            return await wrapped(*args, **kwargs)
        session = self.guard(self._open_session, instance)
        if session is None:
            return await wrapped(*args, **kwargs)
        token = _BINDING.set(session)
        try:
            result = await wrapped(*args, **kwargs)
        except BaseException as error:
            self.guard(self.tracker.close_session, session, error)
            raise
        finally:
            _BINDING.reset(token)
        self.guard(self.tracker.session_started, session)
        return result

    def _open_session(self, agent: Any) -> SessionState:
        config = self._configs.get(agent)
        probe = SdkProbe(sdk.model_of(config), sdk.rules_of(config), sdk.subagent_names(config))
        session = self.tracker.open_session(getattr(config, "conversation_id", None), probe)
        self._bound[agent] = session
        return session

    async def _agent_exit(self, wrapped: Any, instance: Any, args: Args, kwargs: Kwargs) -> Any:
        session = self.session(instance)
        if session is None:
            return await wrapped(*args, **kwargs)
        error = args[1] if len(args) > 1 else kwargs.get("exc_val")
        try:
            result = await wrapped(*args, **kwargs)
        except BaseException as raised:
            self.guard(self.tracker.close_session, session, raised)
            raise
        self.guard(self.tracker.close_session, session, error)
        return result

    def _bind(self, wrapped: Any, instance: Any, args: Args, kwargs: Kwargs) -> Any:
        result = wrapped(*args, **kwargs)
        session = _BINDING.get()
        if session is not None:
            self._bound[instance] = session
        return result

    def _bind_runner(self, wrapped: Any, instance: Any, args: Args, kwargs: Kwargs) -> Any:
        result = self._bind(wrapped, instance, args, kwargs)
        session = _BINDING.get()
        if session is not None:
            runner = weakref.ref(instance)

            def has_hooks(event: HookEvent) -> bool:
                live, attribute = runner(), RUNNER_LISTS.get(event)
                return bool(live is not None and attribute and getattr(live, attribute, ()))

            session.probe.has_hooks = has_hooks
        return result

    def _bind_processor(self, wrapped: Any, instance: Any, args: Args, kwargs: Kwargs) -> Any:
        result = self._bind(wrapped, instance, args, kwargs)
        session = _BINDING.get()
        if session is not None:
            processor = weakref.ref(instance)

            def usage() -> Usage | None:
                live = processor()
                return sdk.usage_of(live.cumulative_usage) if live is not None else None

            session.probe.usage = usage
            # The rules Python evaluates, by the id the harness's requests name them with.
            session.probe.dynamic_policies = dict(kwargs.get("dynamic_policy_map") or {})
        return result

    def _register_hook(self, wrapped: Any, instance: Any, args: Args, kwargs: Kwargs) -> Any:
        if args and self.tracker.active:
            args = (proxy(args[0]), *args[1:])
        return wrapped(*args, **kwargs)

    # --- turns ---

    async def _send(self, wrapped: Any, instance: Any, args: Args, kwargs: Kwargs) -> Any:
        session = self.session(instance)
        if session is None:
            return await wrapped(*args, **kwargs)
        self.guard(self.tracker.start_turn, session, args[0] if args else kwargs.get("prompt"))
        try:
            return await wrapped(*args, **kwargs)
        except BaseException as error:
            self.guard(self.tracker.end_turn, session, error)
            raise

    async def _cancel(self, wrapped: Any, instance: Any, args: Args, kwargs: Kwargs) -> Any:
        session = self.session(instance)
        if session is not None and session.turn is not None:
            session.turn.request_cancel()
        return await wrapped(*args, **kwargs)

    async def _process_event(self, wrapped: Any, instance: Any, args: Args, kwargs: Kwargs) -> Any:
        session = self.session(instance)
        if session is not None and args and args[0].HasField("trajectory_state_update"):
            # Before the SDK sees it, so the turn's spans end before `chat()` can return.
            self.guard(self._trajectory, session, instance, args[0].trajectory_state_update)
        return await wrapped(*args, **kwargs)

    def _trajectory(self, session: SessionState, processor: Any, update: Any) -> None:
        main = processor.main_trajectory_id
        if update.parent_trajectory_id or (main and update.trajectory_id != main):
            subagent_state(self.tracker, session, update)  # the SDK itself ignores these
            return
        if update.state == _TRAJECTORY.STATE_RUNNING:
            context = session.context
            if context.conversation_id is None:
                # Stable across turns, known only now: the conversation's id (DESIGN §6).
                context.conversation_id = update.trajectory_id or None
            self.tracker.current_turn(session)
            return
        ending = sdk.TURN_ENDS.get(update.state)
        if ending is not None:
            turn = session.turn
            cancel_requested = turn is not None and turn.cancel_requested
            error = ending(update, cancel_requested, turn is not None and turn.blocked)
            self.tracker.end_turn(session, error)

    # --- steps ---

    async def _emit_step(self, wrapped: Any, instance: Any, args: Args, kwargs: Kwargs) -> Any:
        session = self.session(instance)
        if session is not None and args:
            self.guard(self._step, session, args[0])
        return await wrapped(*args, **kwargs)

    def _step(self, session: SessionState, step: Any) -> None:
        status = step.status
        turn = session.turn
        if turn is not None and step.is_complete_response and not step.parent_trajectory_id:
            turn.answer(step.content)
        if step.type == ag_types.StepType.COMPACTION and status == _StepStatus.DONE:
            self._compacted(session, step)
        if step.source != ag_types.StepSource.MODEL:
            return
        step_key = (step.trajectory_id, step.step_index)
        if not step.tool_calls:
            if status == _StepStatus.ERROR and sdk.is_denial(step):
                self._denial_step(session, step_key, sdk.denial_message(step))
            return
        self._tool_step(session, step_key, step)

    def _tool_step(self, session: SessionState, step_key: StepKey, step: Any) -> None:
        """A tool call's step update: running, done, failed, or denied by the harness."""
        tracker, status = self.tracker, step.status
        tool_call = step.tool_calls[0]
        # A harness tool's step carries no call id: the SDK puts the step's id there.
        call_id = tool_call.id if tool_call.id and tool_call.id != step.id else None
        call = sdk.call_from_sdk(tool_call, call_id)
        op = tracker.op_for_step(session, step_key, call)
        if op.closed:
            return  # a repeated update of a step already finished
        if status == _StepStatus.ACTIVE:
            op.allow()
        elif status == _StepStatus.DONE:
            # A harness tool ran outside Python; the SDK's post-call hooks may report later.
            op.returned(None, hooks_pending=session.probe.has_hooks("post_tool_call"))
            tracker.step_finished(session, op)
        elif status == _StepStatus.ERROR:
            if not op.decided and sdk.is_denial(step):
                self._harness_denied(session, op, sdk.denial_message(step))
            else:
                error = sdk.tool_error(step.error, call.name)
                op.failed(error, hooks_pending=session.probe.has_hooks("on_tool_error"))
            tracker.step_finished(session, op)

    def _denial_step(self, session: SessionState, step_key: StepKey, message: str) -> None:
        """A denied call's step, which names no tool and no call id (module docs of operations).

        It reports a call Python already saw denied (a ``when`` rule, ask-user, a decide
        hook) or, when there is none, a call a static rule denied inside the harness.
        """
        op, new = self.tracker.op_for_denial_step(
            session, step_key, message, lambda: sdk.denied_call(session.probe.rules, message)
        )
        if new or not op.decided:
            self._harness_denied(session, op, message)
        self.tracker.step_finished(session, op)

    def _harness_denied(self, session: SessionState, op: ReportedOp, message: str) -> None:
        """A denial by a static rule, which the harness names by its name or its reason."""
        if op.decided:
            return
        op.deny(sdk.harness_denial(session.probe.rules, message), HARNESS_POLICY)

    def _compacted(self, session: SessionState, step: Any) -> None:
        key = (step.trajectory_id, step.step_index)
        if session.probe.has_hooks("on_compaction") or key in session.reported_compactions:
            return  # reported when the SDK's compaction hooks run, or already reported
        session.reported_compactions.add(key)
        turn = self.tracker.current_turn(session)
        DispatchReport(
            self.tracker.notify, "on_compaction", turn.context, step.content or ""
        ).finish(None)

    # --- Python tools ---

    async def _execute_tool(self, wrapped: Any, instance: Any, args: Args, kwargs: Kwargs) -> Any:
        session = self.session(instance)
        op = self.guard(self._tool_started, session, args[0]) if session and args else None
        if op is None:
            return await wrapped(*args, **kwargs)
        # The tool runs in a task spawned by the reader task: make its span current explicitly
        # (sync tools then see it too: asyncio.to_thread copies this context).
        with op.scope.current():
            result = await wrapped(*args, **kwargs)
        self.guard(self._tool_result, session, op, result)
        return result

    async def _handle_tool_call(
        self, wrapped: Any, instance: Any, args: Args, kwargs: Kwargs
    ) -> Any:
        # The harness's tool-call event names its trajectory; the SDK's ToolCall does not.
        token = _TOOL_TRAJECTORY.set(getattr(args[0], "trajectory_id", None) if args else None)
        try:
            return await wrapped(*args, **kwargs)
        finally:
            _TOOL_TRAJECTORY.reset(token)

    def _tool_started(self, session: SessionState, tool_call: Any) -> ReportedOp:
        call = sdk.call_from_sdk(tool_call, tool_call.id or None)
        op = self.tracker.op_for_request(session, _TOOL_TRAJECTORY.get() or None, call)
        op.start()
        return op

    def _tool_result(self, session: SessionState, op: ReportedOp, result: Any) -> None:
        if result is None:
            return
        if result.error is None:
            pending = session.probe.has_hooks("post_tool_call")
            op.returned(result.result, hooks_pending=pending)
        else:
            error = result.exception or sdk.tool_error(result.error, op.call.name)
            op.failed(error, hooks_pending=session.probe.has_hooks("on_tool_error"))

    # --- policy rules evaluated in Python (``when`` predicates, ask-user) ---

    async def _policy_request(self, wrapped: Any, instance: Any, args: Args, kwargs: Kwargs) -> Any:
        token = _POLICY_REQUEST.set(args[0] if args else kwargs.get("request"))
        try:
            return await wrapped(*args, **kwargs)
        finally:
            _POLICY_REQUEST.reset(token)

    async def _evaluate_policy(
        self, wrapped: Any, instance: Any, args: Args, kwargs: Kwargs
    ) -> Any:
        session, request = self.session(instance), _POLICY_REQUEST.get()
        if session is None or request is None:
            return await wrapped(*args, **kwargs)
        op = self.guard(self._policy_op, session, request)
        if op is None:
            return await wrapped(*args, **kwargs)
        rule_id = str(args[0] if args else kwargs.get("rule_id", ""))
        policy = session.probe.dynamic_policies.get(rule_id)
        started = perf_counter()
        op.evaluating += 1
        try:
            with op.scope.current():  # predicates and ask-user handlers run under its span
                outcome = await wrapped(*args, **kwargs)
        finally:
            op.evaluating -= 1
        self.guard(self._policy_decided, op, policy, outcome, perf_counter() - started)
        return outcome

    def _policy_op(self, session: SessionState, request: Any) -> ReportedOp:
        args = request.tool_args
        call = sdk.call_from_request(args)
        return self.tracker.op_for_request(session, args.trajectory_id or None, call)

    def _policy_decided(self, op: ReportedOp, policy: Any, outcome: Any, duration: float) -> None:
        """Report one rule's evaluation as a run of the ``antigravity.policy`` hook."""
        if op.decided:
            return
        verdict, deny_reason = outcome
        result = sdk.policy_result(policy, _OUTCOME_NAME(verdict), deny_reason)
        op.decision_report.hook_finished(POLICY_HOOK, result, None, duration)
        if result is None:
            return  # the rule did not match
        if result.allow:
            op.allow_pending(result)
        else:
            op.deny(result, POLICY_HOOK)

    # --- interactions (questions to the user) ---

    async def _interaction(self, wrapped: Any, instance: Any, args: Args, kwargs: Kwargs) -> Any:
        session = self.session(instance)
        begun = self.guard(self._ask, session, args[0]) if session and args else None
        if begun is None:
            return await wrapped(*args, **kwargs)
        scope, dispatch = begun
        error: BaseException | None = None
        result: Any = None
        try:
            with scope.current(), dispatch.running():
                result = await wrapped(*args, **kwargs)
            return result
        except BaseException as raised:
            error = raised
            raise
        finally:
            self.guard(self._answered, scope, dispatch, result, error)

    def _ask(
        self, session: SessionState, entries: Any
    ) -> tuple[DetachedScope[OperationContext], DispatchReport]:
        scope = self.tracker.interaction(session)
        questions = [
            Question(entry.question, [option.text for option in entry.options], str(index))
            for index, entry in enumerate(entries)
        ]
        return scope, DispatchReport(
            self.tracker.notify, "on_interaction", scope.context, questions
        )

    def _answered(
        self,
        scope: DetachedScope[OperationContext],
        dispatch: DispatchReport,
        result: Any,
        error: BaseException | None,
    ) -> None:
        dispatch.finish(None if error is not None else sdk.answers_of(result))
        self.tracker.end_interaction(scope, error)


def _governed(runner: HookRunner, args: Args, kwargs: Kwargs) -> tuple[Args, Kwargs]:
    """``Agent(config)``'s arguments with the config governed by ``runner`` (never ungoverned:
    a config this cannot govern fails the constructor, saying why)."""
    from hookscope.integrations.antigravity.governing import governing_hooks, runner_of

    config = args[0] if args else kwargs.get("config")
    present = list(getattr(config, "hooks", None) or ())
    if config is None or runner_of(present) is runner:
        return args, kwargs
    governed = config.model_copy(update={"hooks": [*present, *governing_hooks(runner)]})
    if args:
        return (governed, *args[1:]), kwargs
    return args, {**kwargs, "config": governed}
