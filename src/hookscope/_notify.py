"""The one notifier: how observers hear of scopes, dispatches and hook runs.

The runner and every adapter report through a :class:`Notifier`; nothing else calls observers.
An observer that raises is logged once and otherwise ignored — telemetry must never break the
agent. A ``BaseException`` (cancellation, ``KeyboardInterrupt``) raised by an observer is not
swallowed, but it is held until every other observer has been told, so one observer's
interruption never leaves another's span open.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from time import perf_counter
from typing import Any, Final, final

from hookscope.context import NO_RECOVERY_KEY, HookContext
from hookscope.hooks import EVENTS, HookEvent
from hookscope.types import HookResult

__all__ = [
    "OBSERVER_METHODS",
    "DispatchObserver",
    "HookRun",
    "Notifier",
    "check_observer",
    "is_observer",
    "verdict_of",
]

logger = logging.getLogger("hookscope")

#: The methods an observer must have; the rest (scope and hook-run methods) are optional.
OBSERVER_METHODS: Final = ("dispatch_started", "hook_finished", "dispatch_finished")

Callback = Callable[..., None]


@final
class HookRun:
    """One run of a non-Python hook (a command or a prompt), as observers see it.

    The runner creates it, the hook fills :attr:`attributes` while it runs (through
    :func:`hookscope.runner.current_hook_run`), and observers turn it into telemetry
    (``execute_hook {name}`` spans). :attr:`state` is the observer's own slot.
    """

    __slots__ = (
        "attributes",
        "duration_s",
        "error",
        "event",
        "hook_name",
        "hook_type",
        "started",
        "state",
        "verdict",
    )

    def __init__(self, event: str, hook_name: str, hook_type: str) -> None:
        self.event = event
        self.hook_name = hook_name
        self.hook_type = hook_type
        #: Telemetry attributes the hook reports, e.g. ``process.exit.code``.
        self.attributes: dict[str, str | int | float | bool] = {}
        #: ``allow``, ``deny``, ``ask`` or ``none`` (no opinion); set when the hook returned.
        self.verdict = "none"
        self.error: BaseException | None = None
        self.started = perf_counter()
        self.duration_s = 0.0
        self.state: Any = None

    def __repr__(self) -> str:
        return (
            f"HookRun(event={self.event!r}, hook_name={self.hook_name!r}, "
            f"hook_type={self.hook_type!r}, verdict={self.verdict!r})"
        )


class DispatchObserver:
    """Base class for objects that watch dispatches without changing them.

    Override what you need; every method is a no-op. Methods are called synchronously, in the
    task that dispatches, and must not block. An observer that raises is logged once and
    otherwise ignored. ``scope_started``/``scope_ended`` are called in the scope's own task,
    properly nested, so an observer may attach a ``contextvars`` value on start and reset it
    on end (OTelHook makes each scope's span current this way); ``hook_run_started`` and
    ``hook_run_finished`` bracket each run of a command or prompt hook the same way.
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

    def hook_run_started(self, run: HookRun, context: HookContext) -> None:
        """A command or prompt hook is about to run (``execute_hook`` spans start here)."""

    def hook_run_finished(self, run: HookRun, context: HookContext) -> None:
        """A command or prompt hook finished; ``run`` holds its verdict and attributes."""

    __module__ = "hookscope.runner"


@final
class Notifier:
    """Fans every report out to the observers' bound methods, resolved once per change.

    ``active`` is ``False`` when nobody observes, so callers can skip building reports.
    """

    __slots__ = (
        "_dispatch_finished",
        "_dispatch_started",
        "_failed",
        "_hook_finished",
        "_hook_run_finished",
        "_hook_run_started",
        "_one",
        "_scope_ended",
        "_scope_started",
        "active",
        "observers",
        "starts",
    )

    def __init__(self, observers: Sequence[object] = ()) -> None:
        def bound(method: str) -> tuple[Callback, ...]:
            # A DispatchObserver's inherited no-op is not worth a call per event.
            return tuple(
                m
                for o in observers
                if (m := getattr(o, method, None)) is not None
                and getattr(type(o), method, None) is not getattr(DispatchObserver, method)
            )

        started_by = tuple(
            o
            for o in observers
            if getattr(o, "dispatch_started", None) is not None
            and getattr(type(o), "dispatch_started", None) is not DispatchObserver.dispatch_started
        )
        self.observers: tuple[object, ...] = tuple(observers)
        self.active = bool(observers)
        self._scope_started = bound("scope_started")
        # Reversed: observers unwind what they attached when the scope started, innermost first.
        self._scope_ended = bound("scope_ended")[::-1]
        self._dispatch_started = bound("dispatch_started")
        self._hook_finished = bound("hook_finished")
        self._dispatch_finished = bound("dispatch_finished")
        self._hook_run_started = bound("hook_run_started")
        # Reversed: observers unwind what they attached in started, innermost first.
        self._hook_run_finished = bound("hook_run_finished")[::-1]
        self._failed: set[int] = set()
        # dispatch_started per event: an observer may declare the events it acts on there
        # (OTelHook: model events only), and is not called for the others.
        #: Who is told of each event's start: a dispatch whose event nobody wants skips the call.
        self.starts: dict[str, tuple[Callback, ...]] = {
            event: tuple(
                m
                for o, m in zip(started_by, self._dispatch_started, strict=True)
                if _acts_on_start(o, event)
            )
            for event in EVENTS
        }
        # One observer (OTelHook, usually) is told directly: no loop, no extra frame per
        # report. The reports below are per hook and per dispatch, the agent's hot path.
        self._one: tuple[Callback | None, ...] = tuple(
            callbacks[0] if len(callbacks) == 1 else None
            for callbacks in (
                self._scope_started,
                self._scope_ended,
                self._dispatch_started,
                self._hook_finished,
                self._dispatch_finished,
            )
        )

    def scope_started(self, context: HookContext) -> None:
        """A session, turn or operation scope opened."""
        one = self._one[0]
        if one is not None:
            try:
                one(context)
            except Exception:
                self._log_failure(one)
        elif self._scope_started:
            self._notify(self._scope_started, context)

    def scope_ended(self, context: HookContext, error: BaseException | None) -> None:
        """A scope closed; ``error`` is what ended it abnormally, cancellation included."""
        one = self._one[1]
        if one is not None:
            try:
                one(context, error)
            except Exception:
                self._log_failure(one)
        elif self._scope_ended:
            self._notify(self._scope_ended, context, error)

    def dispatch_started(self, event: str, context: HookContext, data: Any) -> None:
        """``event`` is about to run its hooks on ``data``."""
        callbacks = self.starts.get(event, self._dispatch_started)
        if not callbacks:
            return
        if len(callbacks) == 1:
            one = callbacks[0]
            try:
                one(event, context, data)
            except Exception:
                self._log_failure(one)
        else:
            self._notify(callbacks, event, context, data)

    def hook_finished(
        self,
        event: str,
        hook_name: str,
        context: HookContext,
        result: Any,
        error: BaseException | None,
        duration_s: float,
    ) -> None:
        """One hook returned ``result`` or failed with ``error``."""
        one = self._one[3]
        if one is not None:
            try:
                one(event, hook_name, context, result, error, duration_s)
            except Exception:
                self._log_failure(one)
        elif self._hook_finished:
            self._notify(self._hook_finished, event, hook_name, context, result, error, duration_s)

    def dispatch_finished(
        self, event: str, context: HookContext, data: Any, result: Any, decided_by: str | None
    ) -> None:
        """The dispatch ended with ``result``; ``decided_by`` names the hook that stopped it.

        Observers hear what took effect: where the SDK cannot put a recovery in a tool error's
        place (``NO_RECOVERY_KEY`` on the call's context), an ``on_tool_error`` dispatch ends
        with no recovery and no decider, whatever a hook returned (every observer agrees).
        """
        if event == "on_tool_error" and result is not None and context.get(NO_RECOVERY_KEY):
            result = decided_by = None
        one = self._one[4]
        if one is not None:
            try:
                one(event, context, data, result, decided_by)
            except Exception:
                self._log_failure(one)
        elif self._dispatch_finished:
            self._notify(self._dispatch_finished, event, context, data, result, decided_by)

    def hook_run_started(self, run: HookRun, context: HookContext) -> None:
        """A command or prompt hook is about to run."""
        if self._hook_run_started:
            self._notify(self._hook_run_started, run, context)

    def hook_run_finished(self, run: HookRun, context: HookContext) -> None:
        """A command or prompt hook finished (``run.error`` says whether it failed)."""
        if self._hook_run_finished:
            self._notify(self._hook_run_finished, run, context)

    def _notify(self, callbacks: tuple[Callback, ...], *args: Any) -> None:
        interrupted: BaseException | None = None
        for callback in callbacks:
            try:
                callback(*args)
            except Exception:
                self._log_failure(callback)
            except BaseException as error:
                interrupted = interrupted or error
        if interrupted is not None:
            raise interrupted

    def _log_failure(self, callback: Callback) -> None:
        key = id(getattr(callback, "__self__", callback))
        if key not in self._failed:
            self._failed.add(key)
            logger.exception(
                "dispatch observer %r failed; its further failures are not logged", callback
            )


def _acts_on_start(observer: object, event: str) -> bool:
    """Whether ``observer``'s ``dispatch_started`` wants ``event``: every event, unless it
    declares the ones it acts on (``_hookscope_started_events``, a set of names; anything
    else, such as what an object answering every attribute returns, declares nothing)."""
    if not hasattr(type(observer), "_hookscope_started_events"):  # declared by its class
        return True
    events = getattr(observer, "_hookscope_started_events", None)
    return not isinstance(events, (set, frozenset)) or event in events


def verdict_of(value: Any) -> str:
    """How a hook run reads in telemetry: allow, deny, ask or none (no opinion)."""
    if value is None:
        return "none"
    if isinstance(value, HookResult):
        return "ask" if value.confirm else ("allow" if value.allow else "deny")
    action = getattr(value, "action", None)
    if action in ("block", "retry_with_feedback"):
        return "deny"
    return "allow"


def is_observer(hook: object) -> bool:
    return isinstance(hook, DispatchObserver)


def check_observer(observer: object) -> None:
    missing = [m for m in OBSERVER_METHODS if not callable(getattr(observer, m, None))]
    if missing:
        raise TypeError(
            f"cannot observe {observer!r}: it has no {', '.join(missing)}; "
            "subclass hookscope.runner.DispatchObserver"
        )
