"""Scopes and dispatches reported to observers from outside a HookRunner.

A :class:`~hookscope.runner.HookRunner` tells its observers of scopes and dispatches as it
runs them. An adapter for an agent SDK that runs its own hooks reports the same calls itself:
:class:`Scope` opens and closes one hookscope context, :class:`Dispatch` reports one lifecycle
event (started, each hook's result, finished), both isolating the observers' failures.

Each scope has a private :class:`contextvars.Context` in which its observers are told it opened
and closed, because in such SDKs those two moments happen in different tasks. Observers that
make a span current on open (OTelHook does) therefore attach and detach in one context, and the
adapter can make that span current, explicitly, in whatever task runs a tool or a hook.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Final, final

from opentelemetry import context as otel_context

from hookscope.context import HookContext
from hookscope.hooks import HookEvent
from hookscope.types import HookResult

__all__ = ["DISPATCH", "Dispatch", "Notifier", "Scope"]

logger = logging.getLogger("hookscope.integrations")

#: The dispatch whose SDK hooks are running in this task, for the hook proxies to report to.
DISPATCH: Final[contextvars.ContextVar[Dispatch | None]] = contextvars.ContextVar(
    "hookscope_antigravity_dispatch", default=None
)


class Notifier:
    """The observers; each call isolated, because telemetry must never break the agent."""

    __slots__ = ("_failed", "observers")

    def __init__(self, observers: Sequence[object]) -> None:
        self.observers = tuple(observers)
        self._failed: set[tuple[int, str]] = set()

    def __call__(self, method: str, *args: Any) -> None:
        for observer in self.observers:
            callback = getattr(observer, method, None)
            if callback is None:
                continue
            try:
                callback(*args)
            except Exception:
                key = (id(observer), method)
                if key not in self._failed:
                    self._failed.add(key)
                    logger.exception(
                        "observer %r failed in %s; its further failures are not logged",
                        observer,
                        method,
                    )


@final
class Scope:
    """A hookscope context and the private context its observers open and close it in."""

    __slots__ = ("context", "env", "span_context")

    def __init__(self, context: HookContext, env: contextvars.Context, notify: Notifier) -> None:
        self.context = context
        self.env = env
        env.run(notify, "scope_started", context)
        #: The OTel context as the observers left it: the scope's span is current in it.
        self.span_context = env.run(otel_context.get_current)

    def end(self, notify: Notifier, error: BaseException | None) -> None:
        self.env.run(notify, "scope_ended", self.context, error)

    @contextmanager
    def current(self) -> Iterator[None]:
        """Make the scope's span current in the calling task (for tools and hooks)."""
        token = otel_context.attach(self.span_context)
        try:
            yield
        finally:
            otel_context.detach(token)


@final
class Dispatch:
    """One lifecycle event in flight: started once, told of each hook, finished once."""

    __slots__ = ("_notify", "context", "data", "decided_by", "event", "finished")

    def __init__(self, notify: Notifier, event: HookEvent, context: HookContext, data: Any) -> None:
        self._notify = notify
        self.event = event
        self.context = context
        self.data = data
        self.decided_by: str | None = None
        self.finished = False
        notify("dispatch_started", event, context, data)

    def hook_finished(
        self, hook_name: str, result: Any, error: BaseException | None, duration_s: float
    ) -> None:
        """One hook ran; the first whose result stops the event is remembered as deciding."""
        if self.finished:
            return
        self._notify(
            "hook_finished", self.event, hook_name, self.context, result, error, duration_s
        )
        if self.decided_by is None and _stops(self.event, result):
            self.decided_by = hook_name

    def finish(self, result: Any, decided_by: str | None = None, data: Any = None) -> None:
        """End the dispatch with ``result`` (a no-op when already finished)."""
        if self.finished:
            return
        self.finished = True
        if data is not None:
            self.data = data
        by = decided_by or self.decided_by
        self._notify("dispatch_finished", self.event, self.context, self.data, result, by)

    def abandon(self) -> None:
        """End the dispatch without a result: its scope closed before its hooks reported.

        Observers are not told it finished, as a :class:`~hookscope.runner.HookRunner` does
        not tell them when a dispatch is cancelled; later reports of it are ignored.
        """
        self.finished = True

    @contextmanager
    def running(self) -> Iterator[Dispatch]:
        """Let hook proxies in this task report to this dispatch."""
        token = DISPATCH.set(self)
        try:
            yield self
        finally:
            DISPATCH.reset(token)


def _stops(event: HookEvent, result: Any) -> bool:
    if result is None:
        return False
    if event in ("pre_turn", "pre_tool_call"):
        return isinstance(result, HookResult) and not result.allow
    if event == "on_interaction":
        return bool(result)  # no answers answer nothing, as in HookRunner
    return event == "on_tool_error"
