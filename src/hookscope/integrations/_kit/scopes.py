"""Scopes an SDK opens in one task and ends in another, and the one rule for how they end.

A hookscope scope (session, turn, tool call) is normally an ``async with`` block: observers are
told it opened and closed in the same task, so OTelHook can attach its span to the current
OpenTelemetry context and detach it again. Agent SDKs call back from whatever task they like: a
turn starts in the task that sent the prompt and ends in the task that read the final message.
:class:`DetachedScope` therefore opens and closes each scope inside a private
:class:`contextvars.Context`, so observers attach and detach in one context, and
:meth:`DetachedScope.current` makes the scope's span current, explicitly, in whatever task runs
a tool or a hook.
"""

from __future__ import annotations

import contextvars
from typing import Generic, TypeVar, final

from opentelemetry import context as otel_context

from hookscope._notify import Notifier
from hookscope._scopes import ended_by, is_cancellation
from hookscope.context import HookContext
from hookscope.types import HookscopeError

__all__ = ["CallInterrupted", "DetachedScope", "TurnInterrupted", "ended_by", "is_cancellation"]

C = TypeVar("C", bound=HookContext)


class CallInterrupted(HookscopeError):
    """A tool call ended because its turn or session ended before the SDK reported it done."""


class TurnInterrupted(HookscopeError):
    """A turn ended because its session ended before the SDK reported its final answer."""


@final
class DetachedScope(Generic[C]):
    """A hookscope context whose observers are told of it in a private ``contextvars.Context``.

    Args:
        context: The session, turn or operation context.
        notifier: The runner's notifier at the time the scope opens.
        parent: The OpenTelemetry context to open the scope's span under (a delegating call's
            span for a subagent run); the private context's own (empty) one when ``None``.
    """

    __slots__ = ("context", "ended", "env", "span_context")

    def __init__(
        self, context: C, notifier: Notifier, parent: otel_context.Context | None = None
    ) -> None:
        self.context: C = context
        self.env = contextvars.Context()
        self.ended = False
        self.env.run(_open, notifier, context, parent)
        #: The OTel context as the observers left it: the scope's span is current in it.
        self.span_context = self.env.run(otel_context.get_current)

    def end(self, notifier: Notifier, error: BaseException | None = None) -> bool:
        """Tell the observers the scope closed (``error``: why, when abnormal).

        Returns:
            ``False`` when the scope had already ended (nothing is told twice).
        """
        if self.ended:
            return False
        self.ended = True
        self.env.run(notifier.scope_ended, self.context, error)
        return True

    def current(self) -> _Current:
        """Make the scope's span current in the calling task (while a tool or hook runs)."""
        return _Current(self.span_context)


@final
class _Current:
    """``with scope.current():`` — a class, not a generator: it runs on every dispatch."""

    __slots__ = ("_context", "_token")

    def __init__(self, context: otel_context.Context) -> None:
        self._context = context
        self._token: object = None

    def __enter__(self) -> None:
        self._token = otel_context.attach(self._context)

    def __exit__(self, *exc: object) -> None:
        otel_context.detach(self._token)  # type: ignore[arg-type]


def _open(notifier: Notifier, context: HookContext, parent: otel_context.Context | None) -> None:
    if parent is not None:  # in the scope's own context: observers start its span under it
        otel_context.attach(parent)
    notifier.scope_started(context)
