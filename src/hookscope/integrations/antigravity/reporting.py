"""Scopes and dispatches of the SDK's own run, reported through the runner's notifier.

A :class:`~hookscope.runner.HookRunner` tells its observers of the scopes and dispatches it
runs. The google-antigravity SDK runs its own hooks, so the adapter reports the same calls
itself, through the same notifier (``runner.notifier``), and asks the same rules
(:data:`hookscope._events.RULES`) which hook decided: :class:`Scope` opens and closes one
hookscope context, :class:`Dispatch` reports one lifecycle event (started, each hook's
result, finished).

Each scope has a private :class:`contextvars.Context` in which its observers are told it opened
and closed, because in the SDK those two moments happen in different tasks. Observers that
make a span current on open (OTelHook does) therefore attach and detach in one context, and the
adapter can make that span current, explicitly, in whatever task runs a tool or a hook.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Final, Generic, TypeVar, final

from opentelemetry import context as otel_context

from hookscope._events import GO_ON, RULES, STOP, TENTATIVE, Fold, HookFailure
from hookscope._notify import DispatchObserver, Notifier
from hookscope.context import HookContext
from hookscope.hooks import HookEvent

__all__ = ["DISPATCH", "TRACKED", "Dispatch", "Scope"]

C = TypeVar("C", bound=HookContext)

#: The dispatch whose SDK hooks are running in this task, for the hook proxies to report to.
DISPATCH: Final[contextvars.ContextVar[Dispatch | None]] = contextvars.ContextVar(
    "hookscope_antigravity_dispatch", default=None
)

#: Whether the SDK object whose callback runs in this task belongs to a session the adapter
#: tracks (its wrappers then report every event; SDK hooks need not track it themselves).
TRACKED: Final[contextvars.ContextVar[bool]] = contextvars.ContextVar(
    "hookscope_antigravity_tracked", default=False
)


@final
class Scope(Generic[C]):
    """A hookscope context and the private context its observers open and close it in."""

    __slots__ = ("context", "env", "span_context")

    def __init__(
        self,
        context: C,
        env: contextvars.Context,
        notifier: Notifier,
        parent: otel_context.Context | None = None,
    ) -> None:
        self.context: C = context
        self.env = env
        env.run(_open, notifier, context, parent)
        #: The OTel context as the observers left it: the scope's span is current in it.
        self.span_context = env.run(otel_context.get_current)

    def end(self, notifier: Notifier, error: BaseException | None) -> None:
        """Tell the observers the scope closed (``error``: why, when it failed)."""
        self.env.run(notifier.scope_ended, self.context, error)

    @contextmanager
    def current(self) -> Iterator[None]:
        """Make the scope's span current in the calling task (for tools and hooks)."""
        token = otel_context.attach(self.span_context)
        try:
            yield
        finally:
            otel_context.detach(token)


def _open(notifier: Notifier, context: HookContext, parent: otel_context.Context | None) -> None:
    if parent is not None:  # in the scope's own context: observers start its span under it
        otel_context.attach(parent)
    notifier.scope_started(context)


@final
class Dispatch:
    """One lifecycle event in flight: started once, told of each hook, finished once.

    Which hook decided is the runner's rule for the event (:data:`hookscope._events.RULES`):
    the first hook whose converted result the rule says stops the event.
    """

    __slots__ = (
        "_fold",
        "_notifier",
        "_tentative",
        "context",
        "data",
        "decided_by",
        "event",
        "finished",
        "governed",
    )

    def __init__(
        self, notifier: Notifier, event: HookEvent, context: HookContext, data: Any
    ) -> None:
        self._notifier = notifier
        self.event = event
        self.context = context
        self.data = data
        self.decided_by: str | None = None
        self._tentative: str | None = None
        self.finished = False
        #: The verdict a governing runner reached inside this dispatch (:mod:`.governing`).
        self.governed: Any = None
        self._fold = Fold(data, RULES[event].default)
        notifier.dispatch_started(event, context, data)

    def hook_finished(
        self, hook_name: str, result: Any, error: BaseException | None, duration_s: float
    ) -> None:
        """One hook ran; the first whose result stops the event is remembered as deciding."""
        if self.finished:
            return
        self._notifier.hook_finished(self.event, hook_name, self.context, result, error, duration_s)
        if self.decided_by is None and result is not None:
            step = self._step(result)
            if step == STOP:
                self.decided_by = hook_name
            elif step == TENTATIVE and self._tentative is None:  # decides unless one stops
                self._tentative = hook_name

    def _step(self, result: Any) -> int:
        try:
            return RULES[self.event].step(self._fold, result)
        except HookFailure:  # a value hookscope's rule rejects: the SDK's verdict stands
            return GO_ON

    def finish(self, result: Any, decided_by: str | None = None, data: Any = None) -> None:
        """End the dispatch with ``result`` (a no-op when already finished)."""
        if self.finished:
            return
        self.finished = True
        if data is not None:
            self.data = data
        by = decided_by or self.decided_by or self._tentative
        self._notifier.dispatch_finished(self.event, self.context, self.data, result, by)

    def abandon(self) -> None:
        """End the dispatch without a result: its scope closed before its hooks reported.

        Observers are not told it finished, as a :class:`~hookscope.runner.HookRunner` does
        not tell them when a dispatch is cancelled; later reports of it are ignored.
        """
        self.finished = True

    def settle(self, verdict: Any, decided_by: str | None) -> None:
        """A governing runner reached ``verdict`` inside this dispatch (its hooks relayed).

        Kept for whoever finishes the dispatch; ``decided_by`` (the runner's) names the
        decider when no relayed result did, e.g. a hook that failed and so denied.
        """
        self.governed = verdict
        if self.decided_by is None and self._tentative is None:
            self.decided_by = decided_by

    def relay(self) -> Notifier:
        """A notifier that folds a runner's dispatch into this one: each of its hooks is
        reported here, as one more hook of this event; its start and finish are not."""
        return Notifier([_Relay(self)])

    @contextmanager
    def running(self) -> Iterator[Dispatch]:
        """Let hook proxies in this task report to this dispatch."""
        token = DISPATCH.set(self)
        try:
            yield self
        finally:
            DISPATCH.reset(token)


@final
class _Relay(DispatchObserver):
    """Observes a runner's dispatch on behalf of a :class:`Dispatch` (see ``relay``)."""

    __slots__ = ("_dispatch",)

    def __init__(self, dispatch: Dispatch) -> None:
        self._dispatch = dispatch

    def hook_finished(
        self,
        event: HookEvent,
        hook_name: str,
        context: HookContext,
        result: Any,
        error: BaseException | None,
        duration_s: float,
    ) -> None:
        if event == self._dispatch.event:
            self._dispatch.hook_finished(hook_name, result, error, duration_s)
