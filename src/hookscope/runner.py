"""HookRunner: registration, the one dispatch loop, scopes and observers.

Every lifecycle event goes through :meth:`HookRunner.dispatch`. What differs between events —
when to stop, what a hook's return value means, what a failing hook means — is data: a rule
attached to the event (:mod:`hookscope._events`), never code at the call site. The scopes an
agent loop drives the runner through live in :mod:`hookscope._scopes`, re-exported here.

Observers (``runner.observe(observer)``) are told of every dispatch, every hook's result and
duration, every scope opening and closing, and every run of a command or prompt hook, through
the runner's one :class:`~hookscope._notify.Notifier`; they cannot change anything. Telemetry
is one such observer.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import threading
import warnings
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Sequence
from time import perf_counter
from typing import Any, Final, Generic, TypeVar, cast, final

from hookscope import _events as rules
from hookscope._events import (
    GO_ON,
    RULES,
    SKIPPED_GUARDS,
    STOP,
    Fold,
    HookFailure,
    HookTimeoutError,
    Rule,
    freeze_call,
    hook_failed,
)
from hookscope._notify import (
    DispatchObserver,
    HookRun,
    Notifier,
    check_observer,
    is_observer,
    verdict_of,
)
from hookscope._registry import Registration, Table, not_a_hook, registrations
from hookscope._scopes import ScopeError, SessionScope, ToolOutcome, TurnScope, is_awaitable
from hookscope._timeouts import abandoned_hooks, with_timeout
from hookscope.context import (
    HookContext,
    OperationContext,
    SessionContext,
    TurnContext,
    new_session_id,
)
from hookscope.hooks import CategoryHook, Hook, HookEvent
from hookscope.types import (
    Answer,
    ChatResponse,
    Decision,
    HookResult,
    LlmRequest,
    LlmResponse,
    PolicyDecision,
    Question,
    Recovery,
    RequestDecision,
    ResponseDecision,
    ToolCall,
    ToolResult,
)

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
class HookRunner:
    """Registers hooks and dispatches lifecycle events to them.

    Args:
        hooks: Hooks to register, in order (see :meth:`register`).

    Example::

        runner = HookRunner([OTelHook(), enforce([deny("run_command")]), MyHook()])
        async with runner.session(agent_name="coder") as session:
            async with session.turn(prompt) as turn:
                outcome = await turn.call_tool(ToolCall("view_file", {"path": p}), view_file)
    """

    __slots__ = ("_entries", "_lock", "_observed", "_table", "notifier")

    def __init__(self, hooks: Iterable[object] = ()) -> None:
        # Held while a change reads and replaces the table, so changes from several threads
        # (register() racing a watch()'s reload) never lose one; dispatches never take it.
        self._lock = threading.Lock()
        self._entries: tuple[tuple[object, list[tuple[HookEvent, Registration]]], ...] = ()
        self._observed: tuple[object, ...] = ()  # observers added with observe()
        self._table = Table.build(())
        #: The one notifier observers are told through; adapters report through it too.
        self.notifier = Notifier()
        for hook in hooks:
            self.register(hook)

    # --- registration ---

    def register(self, hook: object) -> None:
        """Register ``hook`` after those already registered.

        Accepted: an instance of a :class:`~hookscope.hooks.Hook` subclass (registered for the
        methods it overrides), a category hook (``PreToolCallDecideHook`` …), a function
        decorated with ``@hooks.pre_turn`` and friends, and a :class:`DispatchObserver` (such
        as ``OTelHook``), which is observed wherever it stands in the list.

        Raises:
            TypeError: ``hook`` is none of these, a synchronous hook asks for a timeout, or
                the object has another SDK's lifecycle methods and none of ours.
            ValueError: an option (``timeout``, ``fail_open``, ``matcher``) is invalid.
        """
        self._swap((), (hook,))

    def unregister(self, hook: object) -> None:
        """Remove ``hook`` (registered or observed); dispatches in flight are not affected.

        Raises:
            ValueError: ``hook`` is not registered with this runner.
        """
        self._swap((hook,), ())

    def replace(
        self, old: Iterable[object], new: Iterable[object], *, missing_ok: bool = False
    ) -> None:
        """Swap the hooks ``old`` for ``new`` in one step, where ``old`` stood.

        A dispatch in flight finishes with the table it started with; the next one sees the
        new table — never a mix. When ``new`` is invalid nothing changes. Changes from several
        threads are applied one at a time, none lost.

        Args:
            old: The hooks to take out.
            new: The hooks to put in their place.
            missing_ok: Skip hooks of ``old`` that are no longer registered (unregistered
                meanwhile) instead of failing; with none left, ``new`` goes last.

        Raises:
            ValueError: a hook of ``old`` is not registered (unless ``missing_ok``), or a hook
                of ``new`` is invalid.
            TypeError: a hook of ``new`` is no hook.
        """
        self._swap(tuple(old), tuple(new), missing_ok)

    def _swap(
        self, old: tuple[object, ...], new: tuple[object, ...], missing_ok: bool = False
    ) -> None:
        with self._lock:
            self._swap_locked(old, new, missing_ok)

    def _swap_locked(
        self, old: tuple[object, ...], new: tuple[object, ...], missing_ok: bool
    ) -> None:
        # Everything is validated before anything changes: a bad hook leaves the table intact.
        entries = list(self._entries)
        position = len(entries)
        for hook in old:
            index = next((i for i, (h, _) in enumerate(entries) if h is hook), None)
            if index is None:
                if missing_ok:
                    continue
                raise ValueError(f"{hook!r} is not registered with this runner")
            del entries[index]
            position = min(position, index)
        fresh: list[tuple[object, list[tuple[HookEvent, Registration]]]] = []
        for hook in new:
            if any(h is hook for h, _ in (*entries, *fresh)) or any(
                o is hook for o in self._observed
            ):
                raise ValueError(f"{hook!r} is already registered with this runner")
            pairs = registrations(hook)
            observes = is_observer(hook)
            if not pairs and not observes and not isinstance(hook, (Hook, CategoryHook)):
                raise TypeError(not_a_hook(hook))
            if observes:
                check_observer(hook)
            fresh.append((hook, pairs))
        entries[position:position] = fresh
        self._entries = tuple(entries)
        self._table = Table.build(self._entries)
        self._notify_observers()

    def _notify_observers(self) -> None:
        registered = [h for h, _ in self._entries if is_observer(h)]
        self.notifier = Notifier([*registered, *self._observed])

    @property
    def hooks(self) -> tuple[object, ...]:
        """The registered hooks (and observers registered as hooks), in dispatch order."""
        return self._table.hooks

    def observe(self, observer: object) -> Callable[[], None]:
        """Tell ``observer`` of every dispatch and scope from now on.

        Args:
            observer: A :class:`DispatchObserver`, or any object with its three dispatch
                methods (the scope and hook-run methods are optional).

        Returns:
            A function that stops the observation; calling it again does nothing.

        Undo between sessions: an observer removed while a scope is open is not told the scope
        ended.

        Raises:
            TypeError: ``observer`` lacks a dispatch method.
            ValueError: ``observer`` is already observed.
        """
        with self._lock:
            if any(o is observer for o in self.notifier.observers):
                # Twice observed, it would open every scope twice and leave one span unended.
                raise ValueError(f"{observer!r} is already observed by this runner")
            check_observer(observer)
            self._observed = (*self._observed, observer)
            self._notify_observers()

        def undo() -> None:
            with self._lock:
                if any(o is observer for o in self._observed):
                    self._observed = tuple(o for o in self._observed if o is not observer)
                    self._notify_observers()

        return undo

    def idle(self, event: HookEvent) -> bool:
        """Whether dispatching ``event`` now would do nothing: no hook for it, no observer.

        Scopes skip such a dispatch (its coroutine would only return the event's default).
        A hook whose gate is shut (``LoggingHook`` on a logger that is off) is no hook here.
        """
        if self.notifier.active:
            return False
        table = self._table
        if table.gated and not table.holds():
            table = self._regate(table)
        return not table.by_event[event]

    def hook_names(self, event: HookEvent) -> tuple[str, ...]:
        """Names of the hooks registered for ``event``, in dispatch order."""
        return tuple(r.name for r in self._table.registered[event])

    def _regate(self, seen: Table) -> Table:
        """The table with every gate as it is now (a stamp of ``seen`` no longer holds)."""
        with self._lock:
            table = self._table
            if table is not seen:  # replaced meanwhile, with the gates as they were then
                return table
            if table.reopened():
                self._table = table = Table.build(self._entries)
            else:  # the logging configuration changed, not what it says about these hooks
                table.restamp()
            return table

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
        if not observed and not registrations:
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

    # --- low-level dispatch, one coroutine per event (for adapters) ---

    async def dispatch_on_session_start(self, context: SessionContext) -> None:
        """Run every ``on_session_start`` hook."""
        await self._run(rules.INSPECT, "on_session_start", context, None)

    async def dispatch_on_session_end(self, context: SessionContext) -> None:
        """Run every ``on_session_end`` hook."""
        await self._run(rules.INSPECT, "on_session_end", context, None)

    async def dispatch_session_start(self, context: SessionContext) -> None:
        """Deprecated alias of :meth:`dispatch_on_session_start` (removed in 0.3)."""
        _deprecated("dispatch_session_start", "dispatch_on_session_start")
        await self.dispatch_on_session_start(context)

    async def dispatch_session_end(self, context: SessionContext) -> None:
        """Deprecated alias of :meth:`dispatch_on_session_end` (removed in 0.3)."""
        _deprecated("dispatch_session_end", "dispatch_on_session_end")
        await self.dispatch_on_session_end(context)

    async def dispatch_pre_turn(self, context: TurnContext, prompt: Any) -> HookResult:
        """Run ``pre_turn`` hooks until one denies; return the deciding result."""
        return (await self._run(rules.PRE_TURN, "pre_turn", context, prompt)).result

    async def dispatch_post_turn(
        self, context: TurnContext, response: ChatResponse
    ) -> HookResult | None:
        """Run every ``post_turn`` hook; a :meth:`HookResult.continue_with` result when one
        asked the agent to go on."""
        return (await self._run(rules.POST_TURN, "post_turn", context, response)).result

    async def dispatch_pre_llm_request(
        self, context: TurnContext, request: LlmRequest
    ) -> RequestDecision:
        """Run ``pre_llm_request`` hooks, chaining modifications, until one blocks."""
        return (await self._run(rules.PRE_LLM_REQUEST, "pre_llm_request", context, request)).result

    async def dispatch_on_llm_response(
        self, context: TurnContext, response: LlmResponse
    ) -> ResponseDecision:
        """Run ``on_llm_response`` hooks until one does not accept."""
        return (await self._run(rules.ON_LLM_RESPONSE, "on_llm_response", context, response)).result

    async def dispatch_pre_tool_call(
        self, context: OperationContext, call: ToolCall
    ) -> tuple[HookResult, ToolCall]:
        """Run ``pre_tool_call`` hooks until one denies, merging ``modified_args`` in order.

        A pending :meth:`HookResult.ask` is settled with the ``on_interaction`` hooks before
        this returns.

        Returns:
            The deciding result and the effective call (read-only arguments, with every
            merged modification).
        """
        frozen = freeze_call(call)
        dispatched = await self._run(rules.PRE_TOOL_CALL, "pre_tool_call", context, frozen)
        return dispatched.result, dispatched.data

    async def dispatch_post_tool_call(
        self, context: OperationContext, result: ToolResult
    ) -> HookResult | None:
        """Run every ``post_tool_call`` hook; a denial carries feedback for the model."""
        return (await self._run(rules.POST_TOOL_CALL, "post_tool_call", context, result)).result

    async def dispatch_on_tool_error(
        self, context: OperationContext, error: Exception
    ) -> Recovery | None:
        """Run ``on_tool_error`` hooks until one returns a :class:`Recovery`."""
        return (await self._run(rules.ON_TOOL_ERROR, "on_tool_error", context, error)).result

    async def dispatch_on_interaction(
        self, context: OperationContext, questions: Sequence[Question]
    ) -> Sequence[Answer] | None:
        """Run ``on_interaction`` hooks until one answers (a list of :class:`Answer`)."""
        return (await self._run(rules.ON_INTERACTION, "on_interaction", context, questions)).result

    async def dispatch_pre_compaction(
        self, context: TurnContext, messages: Sequence[Any]
    ) -> str | None:
        """Run ``pre_compaction`` hooks until one supplies a summary."""
        return (await self._run(rules.PRE_COMPACTION, "pre_compaction", context, messages)).result

    async def dispatch_on_compaction(self, context: TurnContext, summary: str) -> None:
        """Run every ``on_compaction`` hook."""
        await self._run(rules.INSPECT, "on_compaction", context, summary)

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


#: Settles a pending ask: ``(context, asked) -> the final HookResult`` (see :func:`settle_ask`).
Confirm = Callable[[HookContext, HookResult], Awaitable[HookResult]]


def ask_text(context: HookContext, asked: HookResult) -> str:
    """The question a pending ask puts to the user."""
    call = context.call if isinstance(context, OperationContext) else None
    return asked.message or (
        f"allow the call to {call.name!r}?" if call is not None else "allow this call?"
    )


def settle_ask(context: HookContext, asked: HookResult, answer: str | None) -> HookResult:
    """The verdict a pending ask becomes once answered.

    Only the answer ``"allow"`` lets the call run; no answer (``None``) or another answer
    denies (fail closed). The policy decision records that the user was asked and what they
    said.
    """
    approved = answer == "allow"
    policy = asked.decision
    reason = asked.message or ask_text(context, asked)
    decision = PolicyDecision(
        decision=Decision.ASK_USER,
        outcome="allowed" if approved else "denied",
        rule=policy.rule if policy is not None else None,
        bucket=policy.bucket if policy is not None else None,
        reason=reason,
        asked_user=True,
        user_approved=None if answer is None else approved,
    )
    if approved:
        return HookResult(
            allow=True, message=reason, modified_args=asked.modified_args, decision=decision
        )
    why = "the user did not confirm" if answer is None else f"the user answered {answer!r}"
    return HookResult(allow=False, message=f"{reason} ({why})", decision=decision)


def _deprecated(old: str, new: str) -> None:
    warnings.warn(
        f"HookRunner.{old} is deprecated; use HookRunner.{new}", DeprecationWarning, stacklevel=3
    )
