"""HookRunner: the one dispatch loop, scopes and observers.

Every lifecycle event goes through :meth:`HookRunner.dispatch`. What differs between events —
when to stop, what a hook's return value means, what a failing hook means — is data: a rule
attached to the event (:mod:`hookscope._events`), never code at the call site. The scopes an
agent loop drives the runner through live in :mod:`hookscope._scopes`, re-exported here.

Observers (``runner.observe(observer)``) are told of every dispatch, every hook's result and
duration, every scope opening and closing, and every run of a command or prompt hook, through
the runner's one :class:`~hookscope._notify.Notifier`; they cannot change anything. Telemetry
is one such observer.

The runner is assembled from three parts, each in its own module: registration and observers
(:mod:`hookscope._registrar`, which swaps the hook table), the dispatch loop (here), and the
typed ``dispatch_<event>`` coroutines (:mod:`hookscope._dispatch_api`). Settling an ask lives
in :mod:`hookscope._asks`; every public name is re-exported here.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Coroutine, Sequence
from time import perf_counter
from typing import Any, Final, Generic, TypeVar, cast, final

from hookscope import _events as rules
from hookscope._asks import Confirm, ask_text, settle_ask
from hookscope._dispatch_api import TypedDispatch
from hookscope._events import (
    GO_ON,
    RULES,
    SKIPPED_GUARDS,
    STOP,
    Fold,
    HookFailure,
    HookTimeoutError,
    Rule,
    hook_failed,
)
from hookscope._notify import DispatchObserver, HookRun, Notifier, verdict_of
from hookscope._registrar import HookRegistrar
from hookscope._registry import Registration
from hookscope._scopes import ScopeError, SessionScope, ToolOutcome, TurnScope, is_awaitable
from hookscope._timeouts import abandoned_hooks, with_timeout
from hookscope.context import HookContext, SessionContext, new_session_id
from hookscope.hooks import HookEvent
from hookscope.types import HookResult, Question, ToolCall

__all__ = [
    "Confirm",
    "Dispatch",
    "DispatchObserver",
    "HookFailure",
    "HookRun",
    "HookRunner",
    "HookTimeoutError",
    "ScopeError",
    "SessionScope",
    "ToolOutcome",
    "TurnScope",
    "abandoned_hooks",
    "ask_text",
    "current_hook_run",
    "settle_ask",
    "skipped_guards",
]

logger = logging.getLogger("hookscope")

R = TypeVar("R")

_CURRENT_RUN: Final[contextvars.ContextVar[HookRun | None]] = contextvars.ContextVar(
    "hookscope_hook_run", default=None
)


def current_hook_run() -> HookRun | None:
    """The run of the command or prompt hook being called, for it to report attributes."""
    return _CURRENT_RUN.get()


def skipped_guards() -> dict[tuple[str, str], int]:
    """How many times each fail-open decide hook failed and let a call (or turn, or model
    request) go on unjudged in this process, by ``(hook name, event)``.

    Each skip is also logged at WARNING on the ``hookscope`` logger, and observers see the
    hook's failure (``OTelHook`` counts it in ``hookscope.hook.failures``).
    """
    return SKIPPED_GUARDS.snapshot()


@final
class Dispatch(Fold, Generic[R]):
    """What one dispatch produced.

    Args:
        result: The event's verdict or answer (``HookResult``, ``Recovery`` …).
        data: The data as the last hook saw it (the effective ``ToolCall`` for
            ``pre_tool_call``, the final request for ``pre_llm_request``).
        decided_by: The hook that stopped the dispatch (or asked), ``None`` when none did.
    """

    __slots__ = ("decided_by",)

    def __init__(self, result: R, data: Any, decided_by: str | None) -> None:
        # Fold's fields too, set here: the loop folds hook results into its Dispatch.
        self.result: R = result
        self.data = data
        self.decided_by = decided_by
        self.original = data
        self.extra = None

    def __repr__(self) -> str:
        return f"Dispatch(result={self.result!r}, decided_by={self.decided_by!r})"


# --- the runner -------------------------------------------------------------------------


@final
class HookRunner(HookRegistrar, TypedDispatch):
    """Registers hooks and dispatches lifecycle events to them.

    Registration, replacement and observers come from
    :class:`~hookscope._registrar.HookRegistrar`, the ``dispatch_<event>`` coroutines from
    :class:`~hookscope._dispatch_api.TypedDispatch`; the one dispatch loop is here.

    Args:
        hooks: Hooks to register, in order (see :meth:`register`).

    Example::

        runner = HookRunner([OTelHook(), enforce([deny("run_command")]), MyHook()])
        async with runner.session(agent_name="coder") as session:
            async with session.turn(prompt) as turn:
                outcome = await turn.call_tool(ToolCall("view_file", {"path": p}), view_file)
    """

    __slots__ = ()

    # --- the dispatch loop ---

    def dispatch(
        self,
        event: HookEvent,
        context: HookContext,
        data: Any,
        *,
        confirm: Confirm | None = None,
        notifier: Notifier | None = None,
    ) -> Coroutine[Any, Any, Dispatch[Any]]:
        """Run ``event``'s hooks on ``data`` under the event's rule (DESIGN §2); await it.

        For adapters and scopes; agent loops use the scopes or the typed ``dispatch_*``
        coroutines. (A plain function returning the loop's coroutine: no extra frame per
        dispatch.)

        Args:
            confirm: Settles an ask every hook let stand (``pre_tool_call``), instead of the
                ``on_interaction`` hooks: an adapter hands the question to the SDK's own
                approval this way (``ask="native"``); build its answer with
                :func:`settle_ask`.
            notifier: Reports this dispatch to other observers than the runner's: an
                adapter whose SDK runs hooks of its own for the same event folds the
                runner's hooks into the one dispatch it reports itself. The confirm
                question of an ask still goes to the runner's observers.
        """
        return self._run(RULES[event], event, context, data, confirm, notifier)

    async def _run(
        self,
        rule: Rule[R],
        event: HookEvent,
        context: HookContext,
        data: Any,
        confirm: Confirm | None = None,
        notifier: Notifier | None = None,
    ) -> Dispatch[R]:
        table = self._table
        if table.gated:  # a hook's gate (LoggingHook's logger) may have opened or shut
            stamp = table.stamp  # one gate: its stamp checked inline
            if (stamp is None or stamp[0].get(stamp[1]) is not stamp[2]) and not table.holds():
                table = self._regate(table)
        registrations = table.by_event[event]
        if registrations and table.narrowed:
            narrowing = table.narrowed.get(event)
            if narrowing is not None:  # only the hooks that may act on this tool
                call = data if type(data) is ToolCall else narrowing.call_of(context, data)
                server = call.server  # the key, inlined (ToolNarrowing.key): once per call
                found = narrowing.cache.get(call.name if server is None else (call.name, server))
                registrations = found if found is not None else narrowing.select(call)
        if notifier is None:
            notifier = self.notifier
        observed = notifier.active
        if not registrations:  # the event's default (what finishing an empty fold gives)
            if observed:
                if notifier.starts[event]:
                    notifier.dispatch_started(event, context, data)
                notifier.dispatch_finished(event, context, data, rule.default, None)
            return Dispatch(rule.default, data, None)
        if observed and notifier.starts[event]:  # OTelHook wants model events only
            notifier.dispatch_started(event, context, data)
        fold: Dispatch[R] = Dispatch(rule.default, data, None)  # folded into, handed back
        decided_by: str | None = None
        tentative: str | None = None
        started = 0.0
        batch: list[tuple[Registration, Any, Exception | None, float]] | None = None
        for registration in registrations:
            data = fold.data  # as the previous hook left it
            matcher = registration.matcher
            if matcher is not None and not matcher.admits(context, data):
                continue
            if registration.group is not None:
                # A parallel group's first admitted member runs the whole group at once; the
                # loop then folds each member's result as if it had run here, in order.
                if batch is None or batch[0][0].group is not registration.group:
                    batch = await self._run_group(registrations, registration, event, context, data)
                ran = next((b for b in batch if b[0] is registration), None)
                if ran is None:  # an identical command already ran in this group
                    continue
                value, failure = ran[1], ran[2]
                step = GO_ON
                if failure is not None:
                    if hook_failed(rule, registration, event, fold, failure):
                        step = STOP
                elif value is not None:
                    try:
                        step = rule.step(fold, value)
                    except Exception as exc:
                        failure = exc
                        step = STOP if hook_failed(rule, registration, event, fold, exc) else GO_ON
                if observed:
                    notifier.hook_finished(
                        event, registration.name, context, value, failure, ran[3]
                    )
                if step == STOP:
                    decided_by = registration.name
                    if observed:  # the rest of the group ran too: observers see every run
                        for later in batch[batch.index(ran) + 1 :]:
                            notifier.hook_finished(event, later[0].name, context, *later[1:])
                    break
                if step:
                    tentative = tentative or registration.name
                continue
            if observed:
                started = perf_counter()
            error: Exception | None = None
            step = GO_ON
            try:
                if registration.direct:
                    value = registration.call(context, data)
                    if registration.is_async or (value is not None and is_awaitable(value)):
                        value = await value
                else:  # timed, or a command/prompt hook whose run observers see
                    value = await self._call_guarded(registration, event, context, data)
                if value is not None:  # None never stops a dispatch nor breaks a rule
                    step = rule.step(fold, value)
            except Exception as exc:
                value, error = None, exc
                if hook_failed(rule, registration, event, fold, exc):
                    step = STOP
            if observed:
                notifier.hook_finished(
                    event, registration.name, context, value, error, perf_counter() - started
                )
            if step:
                if step == STOP:
                    decided_by = registration.name
                    break
                # TENTATIVE: the first such hook decides unless a later one stops the dispatch.
                tentative = tentative or registration.name
        result = rule.finish(fold)
        decided_by = decided_by or tentative
        if rule.confirms and result.confirm:  # type: ignore[attr-defined]  # an ask let stand
            settle = confirm or self._confirm
            result = cast(R, await settle(context, cast(HookResult, result)))
        fold.result, fold.decided_by = result, decided_by
        if observed:
            notifier.dispatch_finished(event, context, fold.data, result, decided_by)
        return fold

    async def _run_group(
        self,
        registrations: Sequence[Registration],
        first: Registration,
        event: HookEvent,
        context: HookContext,
        data: Any,
    ) -> list[tuple[Registration, Any, Exception | None, float]]:
        """Run every admitted member of ``first``'s parallel group concurrently, on the same
        data; identical members (same ``dedupe_key``) once. Returns (member, value, error,
        seconds) per member that ran, in registration order."""
        group = first.group
        start = registrations.index(first)
        members: list[Registration] = []
        seen: set[object] = set()
        for registration in registrations[start:]:
            if registration.group is not group:
                break
            matcher = registration.matcher
            if matcher is not None and not matcher.admits(context, data):
                continue
            key = registration.once_key
            if key is not None:
                if key in seen:
                    continue
                seen.add(key)
            members.append(registration)

        async def one(registration: Registration) -> tuple[Any, Exception | None, float]:
            started = perf_counter()
            try:
                value = await self._call_guarded(registration, event, context, data)
            except Exception as exc:
                return None, exc, perf_counter() - started
            return value, None, perf_counter() - started

        # Each member in its own task: its HookRun and span context stay its own.
        results = await asyncio.gather(*(asyncio.ensure_future(one(r)) for r in members))
        return [(r, *result) for r, result in zip(members, results, strict=True)]

    async def _call_guarded(
        self, registration: Registration, event: HookEvent, context: HookContext, data: Any
    ) -> Any:
        """Call a timed hook under its timeout, and a command or prompt hook inside a
        :class:`HookRun` that observers see."""
        if not registration.traced:
            return await with_timeout(registration, context, data)
        run = HookRun(event, registration.name, registration.hook_type)
        token = _CURRENT_RUN.set(run)
        notifier = self.notifier
        if notifier.active:
            notifier.hook_run_started(run, context)
        try:
            if registration.timeout is None:
                value = registration.call(context, data)
                if registration.is_async or (value is not None and is_awaitable(value)):
                    value = await value
            else:
                value = await with_timeout(registration, context, data)
            run.verdict = verdict_of(value)
            return value
        except BaseException as error:
            run.error = error
            raise
        finally:
            run.duration_s = perf_counter() - run.started
            _CURRENT_RUN.reset(token)
            if notifier.active:
                notifier.hook_run_finished(run, context)

    async def _confirm(self, context: HookContext, asked: HookResult) -> HookResult:
        """Settle a pending ask: put a confirm question to the ``on_interaction`` hooks.

        Only an answer ``"allow"`` lets the call run; no answer, another answer or a failing
        hook denies (fail closed).
        """
        question = Question(
            text=ask_text(context, asked), options=("allow", "deny"), id="confirm", kind="confirm"
        )
        asking = await self._run(rules.ON_INTERACTION, "on_interaction", context, (question,))
        answers = asking.result
        reply = next((a for a in answers or () if a.question_id in ("", question.id)), None)
        return settle_ask(context, asked, None if reply is None else reply.text)

    # --- scopes ---

    def session(
        self, agent_name: str = "", session_id: str | None = None, provider: str | None = None
    ) -> SessionScope:
        """Open a session: ``async with runner.session(...) as session``.

        Args:
            agent_name: The agent's name, recorded on every span and metric (telemetry falls
                back to its own default when empty).
            session_id: The session's id; a random one when ``None``.
            provider: The model provider the agent uses (``gen_ai.provider.name``), if known.
        """
        context = SessionContext(session_id or new_session_id(), agent_name, provider)
        return SessionScope(self, context)
