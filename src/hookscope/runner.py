"""HookRunner: registration, the one dispatch loop, scopes and observers.

Every lifecycle event goes through :meth:`HookRunner._dispatch`. What differs between events
— when to stop, what a hook's return value means, what a failing hook means — is data: a rule
attached to the event (:mod:`hookscope._events`), never code at the call site. The scopes an
agent loop drives the runner through live in :mod:`hookscope._scopes`, re-exported here.

Observers (``runner.observe(observer)``) are told of every dispatch, every hook's result and
duration, and of every scope opening and closing; they cannot change anything. Telemetry is
one such observer.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
from collections.abc import Callable, Iterable, Sequence
from time import perf_counter
from typing import Any, Final, final

from hookscope._events import RULES, Fold, HookFailure, HookTimeoutError, Rule
from hookscope._scopes import ScopeError, SessionScope, ToolOutcome, TurnScope, is_awaitable
from hookscope.context import (
    HookContext,
    OperationContext,
    SessionContext,
    TurnContext,
)
from hookscope.hooks import EVENTS, CategoryHook, Hook, HookEvent, _FunctionHook
from hookscope.types import (
    Answer,
    ChatResponse,
    HookResult,
    LlmRequest,
    LlmResponse,
    Question,
    Recovery,
    RequestDecision,
    ResponseDecision,
    ToolCall,
    ToolResult,
)

__all__ = [
    "DispatchObserver",
    "HookFailure",
    "HookRunner",
    "HookTimeoutError",
    "ScopeError",
    "SessionScope",
    "ToolOutcome",
    "TurnScope",
]

logger = logging.getLogger("hookscope")


class DispatchObserver:
    """Base class for objects that watch dispatches without changing them.

    Override what you need; every method is a no-op. Methods are called synchronously, in the
    task that dispatches, and must not block. An observer that raises is logged once and
    otherwise ignored. ``scope_started``/``scope_ended`` are called in the scope's own task,
    properly nested, so an observer may attach a ``contextvars`` value on start and reset it
    on end (OTelHook makes each scope's span current this way).
    """

    def scope_started(self, context: HookContext) -> None:
        """A session, turn or operation scope opened (before its first dispatch)."""

    def scope_ended(self, context: HookContext, error: BaseException | None) -> None:
        """A scope closed; ``error`` is what ended it abnormally, including cancellation."""

    def dispatch_started(self, event: HookEvent, context: HookContext, data: Any) -> None:
        """``event`` is about to run its hooks on ``data``."""

    def hook_finished(
        self,
        event: HookEvent,
        hook_name: str,
        context: HookContext,
        result: Any,
        error: BaseException | None,
        duration_s: float,
    ) -> None:
        """One hook returned ``result`` or failed with ``error``."""

    def dispatch_finished(
        self,
        event: HookEvent,
        context: HookContext,
        data: Any,
        result: Any,
        decided_by: str | None,
    ) -> None:
        """The dispatch ended with ``result``; ``decided_by`` names the hook that stopped it."""


# --- registration -----------------------------------------------------------------------


@final
class _Registration:
    """One hook registered for one event, with everything the loop needs precomputed."""

    __slots__ = ("call", "fail_open", "failed_before", "is_async", "name", "timeout")

    def __init__(
        self,
        name: str,
        call: Callable[[Any, Any], Any],
        is_async: bool,
        timeout: float | None,
        fail_open: bool,
    ) -> None:
        self.name = name
        self.call = call
        self.is_async = is_async
        self.timeout = timeout
        self.fail_open = fail_open
        self.failed_before = False  # log a hook's first failure in full, later ones briefly


def _hook_name(hook: object) -> str:
    return getattr(hook, "name", "") or type(hook).__name__


def _context_only(method: Callable[[Any], Any]) -> Callable[[Any, Any], Any]:
    return lambda context, data: method(context)


def _registrations(hook: object) -> list[tuple[HookEvent, _Registration]]:
    """The (event, registration) pairs ``hook`` provides; empty when it is no hook."""
    name = _hook_name(hook)
    timeout = getattr(hook, "timeout", None)
    fail_open = bool(getattr(hook, "fail_open", False))
    found: list[tuple[HookEvent, Callable[[Any, Any], Any], bool]] = []
    if isinstance(hook, Hook):
        for event in EVENTS:
            # Only overridden methods are registered: unused no-ops cost nothing per dispatch.
            if getattr(type(hook), event) is getattr(Hook, event):
                continue
            method = getattr(hook, event)
            is_async = inspect.iscoroutinefunction(method)
            if event in ("on_session_start", "on_session_end"):
                found.append((event, _context_only(method), is_async))
            else:
                found.append((event, method, is_async))
    elif isinstance(hook, _FunctionHook):
        found.append((hook.event, hook.call, hook.call_is_async))
    elif isinstance(hook, CategoryHook):
        found.append((hook.event, hook.run, inspect.iscoroutinefunction(hook.run)))
    if timeout is not None:
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
            raise ValueError(f"hook {name!r}: timeout must be a positive number, got {timeout!r}")
        for event, _, is_async in found:
            if not is_async:
                raise TypeError(
                    f"hook {name!r}: timeout={timeout!r} needs an async {event} (async def); "
                    "a synchronous hook cannot be interrupted"
                )
    return [
        (event, _Registration(name, call, is_async, timeout, fail_open))
        for event, call, is_async in found
    ]


@final
class _Observers:
    """The registered observers' bound methods, resolved once per ``observe``."""

    __slots__ = (
        "_failed",
        "dispatch_finished",
        "dispatch_started",
        "hook_finished",
        "scope_ended",
        "scope_started",
    )

    def __init__(self, observers: Sequence[object]) -> None:
        def bound(method: str) -> tuple[Callable[..., None], ...]:
            return tuple(m for o in observers if (m := getattr(o, method, None)) is not None)

        self.scope_started = bound("scope_started")
        self.scope_ended = bound("scope_ended")
        self.dispatch_started = bound("dispatch_started")
        self.hook_finished = bound("hook_finished")
        self.dispatch_finished = bound("dispatch_finished")
        self._failed: set[int] = set()

    def notify(self, callbacks: tuple[Callable[..., None], ...], *args: Any) -> None:
        for callback in callbacks:
            try:
                callback(*args)
            except Exception:
                self.failed(callback)

    def failed(self, callback: Callable[..., None]) -> None:
        """Log an observer's first failure, then stay quiet: it must never break the agent.

        Call from the ``except`` block that caught the failure.
        """
        key = id(getattr(callback, "__self__", callback))
        if key not in self._failed:
            self._failed.add(key)
            logger.exception(
                "dispatch observer %r failed; its further failures are not logged", callback
            )


_OBSERVER_METHODS: Final = ("dispatch_started", "hook_finished", "dispatch_finished")


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

    __slots__ = ("_hooks", "_observer_list", "_observers")

    def __init__(self, hooks: Iterable[object] = ()) -> None:
        self._hooks: dict[HookEvent, tuple[_Registration, ...]] = {event: () for event in EVENTS}
        self._observer_list: tuple[object, ...] = ()
        self._observers: _Observers | None = None
        for hook in hooks:
            self.register(hook)

    def register(self, hook: object) -> None:
        """Register ``hook`` after those already registered.

        Accepted: an instance of a :class:`~hookscope.hooks.Hook` subclass (registered for the
        methods it overrides), a category hook (``PreToolCallDecideHook`` …), a function
        decorated with ``@hooks.pre_turn`` and friends, and a :class:`DispatchObserver` (such
        as ``OTelHook``), which is observed wherever it stands in the list.

        Raises:
            TypeError: ``hook`` is none of these, or a synchronous hook asks for a timeout.
            ValueError: ``hook.timeout`` is not a positive number.
        """
        registrations = _registrations(hook)
        is_observer = isinstance(hook, DispatchObserver)
        if not registrations and not is_observer and not isinstance(hook, (Hook, CategoryHook)):
            raise TypeError(_not_a_hook(hook))
        for event, registration in registrations:
            # Copy-on-write: dispatches in flight keep iterating the tuple they started with.
            self._hooks[event] = (*self._hooks[event], registration)
        if is_observer:
            self.observe(hook)

    def observe(self, observer: object) -> Callable[[], None]:
        """Tell ``observer`` of every dispatch and scope from now on.

        Args:
            observer: A :class:`DispatchObserver`, or any object with its three dispatch
                methods (``scope_started``/``scope_ended`` are optional).

        Returns:
            A function that stops the observation; calling it again does nothing.

        Undo between sessions: an observer removed while a scope is open is not told the scope
        ended.

        Raises:
            TypeError: ``observer`` lacks a dispatch method.
            ValueError: ``observer`` is already observed.
        """
        if any(o is observer for o in self._observer_list):
            # Twice observed, it would open every scope twice and leave one span unended.
            raise ValueError(f"{observer!r} is already observed by this runner")
        missing = [m for m in _OBSERVER_METHODS if not callable(getattr(observer, m, None))]
        if missing:
            raise TypeError(
                f"cannot observe {observer!r}: it has no {', '.join(missing)}; "
                "subclass hookscope.runner.DispatchObserver"
            )
        self._set_observers((*self._observer_list, observer))

        def undo() -> None:
            if any(o is observer for o in self._observer_list):
                self._set_observers(tuple(o for o in self._observer_list if o is not observer))

        return undo

    def _set_observers(self, observers: tuple[object, ...]) -> None:
        self._observer_list = observers
        self._observers = _Observers(observers) if observers else None

    def hook_names(self, event: HookEvent) -> tuple[str, ...]:
        """Names of the hooks registered for ``event``, in dispatch order."""
        return tuple(r.name for r in self._hooks[event])

    # --- the dispatch loop ---

    async def _dispatch(
        self, event: HookEvent, context: HookContext, data: Any
    ) -> tuple[Any, Any, str | None]:
        """Run ``event``'s hooks; return (result, data as the last hook saw it, decided_by)."""
        rule = RULES[event]
        registrations = self._hooks[event]
        observers = self._observers
        if observers is None:
            if not registrations:
                return rule.default, data, None
        else:
            for callback in observers.dispatch_started:
                try:
                    callback(event, context, data)
                except Exception:
                    observers.failed(callback)
        fold = Fold(data, rule.default)
        decided_by: str | None = None
        started = 0.0
        for registration in registrations:
            if observers is not None:
                started = perf_counter()
            error: Exception | None = None
            try:
                if registration.timeout is None:
                    value = registration.call(context, fold.data)
                    if registration.is_async or (value is not None and is_awaitable(value)):
                        value = await value
                else:
                    value = await _with_timeout(registration, context, fold.data)
                # ``None`` never stops a dispatch nor breaks a rule: skip the rule for it.
                stop = value is not None and rule.step(fold, value)
            except Exception as exc:
                value, error = None, exc
                stop = self._hook_failed(rule, registration, event, fold, exc)
            if observers is not None:
                duration = perf_counter() - started
                for callback in observers.hook_finished:
                    try:
                        callback(event, registration.name, context, value, error, duration)
                    except Exception:
                        observers.failed(callback)
            if stop:
                decided_by = registration.name
                break
        result = rule.finish(fold)
        if observers is not None:
            for callback in observers.dispatch_finished:
                try:
                    callback(event, context, fold.data, result, decided_by)
                except Exception:
                    observers.failed(callback)
        return result, fold.data, decided_by

    @staticmethod
    def _hook_failed(
        rule: Rule, registration: _Registration, event: HookEvent, fold: Fold, error: Exception
    ) -> bool:
        """Apply the failure table (DESIGN §2); return whether the dispatch stops here."""
        closes = rule.kind == "decide" and not registration.fail_open
        consequence = "failing closed" if closes else "ignored"
        if registration.failed_before:
            logger.debug(
                "hook %r failed again in %s: %r (%s)", registration.name, event, error, consequence
            )
        else:
            registration.failed_before = True
            logger.warning(
                "hook %r failed in %s (%s); later failures of this hook log at DEBUG",
                registration.name,
                event,
                consequence,
                exc_info=error,
            )
        if closes:
            fold.result = rule.fail_closed(registration.name, event, error)
        return closes

    # --- low-level dispatch, one coroutine per event (for adapters) ---

    async def dispatch_session_start(self, context: SessionContext) -> None:
        """Run every ``on_session_start`` hook."""
        await self._dispatch("on_session_start", context, None)

    async def dispatch_session_end(self, context: SessionContext) -> None:
        """Run every ``on_session_end`` hook."""
        await self._dispatch("on_session_end", context, None)

    async def dispatch_pre_turn(self, context: TurnContext, prompt: Any) -> HookResult:
        """Run ``pre_turn`` hooks until one denies; return the deciding result."""
        return (await self._dispatch("pre_turn", context, prompt))[0]  # type: ignore[no-any-return]

    async def dispatch_post_turn(self, context: TurnContext, response: ChatResponse) -> None:
        """Run every ``post_turn`` hook."""
        await self._dispatch("post_turn", context, response)

    async def dispatch_pre_llm_request(
        self, context: TurnContext, request: LlmRequest
    ) -> RequestDecision:
        """Run ``pre_llm_request`` hooks, chaining modifications, until one blocks."""
        return (await self._dispatch("pre_llm_request", context, request))[0]  # type: ignore[no-any-return]

    async def dispatch_on_llm_response(
        self, context: TurnContext, response: LlmResponse
    ) -> ResponseDecision:
        """Run ``on_llm_response`` hooks until one does not accept."""
        return (await self._dispatch("on_llm_response", context, response))[0]  # type: ignore[no-any-return]

    async def dispatch_pre_tool_call(
        self, context: OperationContext, call: ToolCall
    ) -> tuple[HookResult, ToolCall]:
        """Run ``pre_tool_call`` hooks until one denies, merging ``modified_args`` in order.

        Returns:
            The deciding result and the effective call (with every merged modification).
        """
        result, effective, _ = await self._dispatch("pre_tool_call", context, call)
        return result, effective

    async def dispatch_post_tool_call(self, context: OperationContext, result: ToolResult) -> None:
        """Run every ``post_tool_call`` hook."""
        await self._dispatch("post_tool_call", context, result)

    async def dispatch_on_tool_error(
        self, context: OperationContext, error: Exception
    ) -> Recovery | None:
        """Run ``on_tool_error`` hooks until one returns a :class:`Recovery`."""
        return (await self._dispatch("on_tool_error", context, error))[0]  # type: ignore[no-any-return]

    async def dispatch_on_interaction(
        self, context: OperationContext, questions: Sequence[Question]
    ) -> Sequence[Answer] | None:
        """Run ``on_interaction`` hooks until one answers."""
        return (await self._dispatch("on_interaction", context, questions))[0]  # type: ignore[no-any-return]

    async def dispatch_on_compaction(self, context: TurnContext, summary: str) -> None:
        """Run every ``on_compaction`` hook."""
        await self._dispatch("on_compaction", context, summary)

    # --- scopes ---

    def session(self, agent_name: str = "", session_id: str | None = None) -> SessionScope:
        """Open a session: ``async with runner.session(...) as session``.

        Args:
            agent_name: The agent's name, recorded on every span and metric (telemetry falls
                back to its own default when empty).
            session_id: The session's id; a random one when ``None``.
        """
        return SessionScope(self, SessionContext(session_id or os.urandom(16).hex(), agent_name))

    def _scope_started(self, context: HookContext) -> None:
        if self._observers is not None:
            self._observers.notify(self._observers.scope_started, context)

    def _scope_ended(self, context: HookContext, error: BaseException | None) -> None:
        if self._observers is not None:
            self._observers.notify(self._observers.scope_ended, context, error)


async def _with_timeout(registration: _Registration, context: HookContext, data: Any) -> Any:
    timeout = registration.timeout
    assert timeout is not None
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # driven without an event loop (a synchronous wrapped tool)
        raise HookFailure(
            f"hook {registration.name!r} has a timeout, which needs a running event loop; "
            "call the tool from async code, or register the hook without a timeout"
        ) from None
    deadline = loop.time() + timeout
    try:
        value = await asyncio.wait_for(registration.call(context, data), timeout)
    except asyncio.TimeoutError:
        raise HookTimeoutError(
            f"hook {registration.name!r} took longer than {timeout:g}s"
        ) from None
    if loop.time() >= deadline:
        # The hook swallowed the timeout's cancellation and returned anyway: still a timeout.
        raise HookTimeoutError(f"hook {registration.name!r} took longer than {timeout:g}s")
    return value


def _not_a_hook(hook: object) -> str:
    accepted = (
        "accepted: an instance of a hookscope.Hook subclass, a category hook such as "
        "PreToolCallDecideHook, a function decorated with @hooks.pre_turn (or another event "
        "decorator), or a DispatchObserver such as OTelHook"
    )
    if isinstance(hook, type):
        name = hook.__name__
        return f"cannot register the class {name}; register an instance: {name}(). {accepted}"
    if callable(hook):
        name = getattr(hook, "__qualname__", repr(hook))
        return f"cannot register the plain function {name}; decorate it first. {accepted}"
    return f"cannot register {hook!r}: {accepted}"
