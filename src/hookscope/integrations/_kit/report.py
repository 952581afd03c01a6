"""Report mode: lifecycle events whose hooks the SDK runs itself (antigravity).

The runner's observers are told of them through the same notifier, and the same rules
(:data:`hookscope._events.RULES`) say which hook decided. :class:`DispatchReport` is one event
in flight; :data:`REPORTING` is the report running in this task, for hook proxies to report to.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Final, final

from hookscope._events import GO_ON, RULES, STOP, TENTATIVE, Fold, HookFailure
from hookscope._notify import Notifier
from hookscope.context import HookContext
from hookscope.hooks import HookEvent

__all__ = ["REPORTING", "DispatchReport"]

#: The report whose SDK hooks run in this task.
REPORTING: Final[contextvars.ContextVar[DispatchReport | None]] = contextvars.ContextVar(
    "hookscope_kit_reporting", default=None
)


@final
class DispatchReport:
    """One lifecycle event the SDK runs: started once, told of each hook, finished once."""

    __slots__ = (
        "_fold",
        "_notifier",
        "_tentative",
        "context",
        "data",
        "decided_by",
        "event",
        "finished",
        "verdict",
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
        #: What a governing runner decided inside this report (:mod:`.fold`), if one ran.
        self.verdict: Any = None
        self._fold = Fold(data, RULES[event].default)
        notifier.dispatch_started(event, context, data)

    def hook_finished(
        self, hook_name: str, result: Any, error: BaseException | None, duration_s: float
    ) -> None:
        """One SDK hook ran; the first whose result stops the event decided it."""
        if self.finished:
            return
        self._notifier.hook_finished(self.event, hook_name, self.context, result, error, duration_s)
        if self.decided_by is None and result is not None:
            try:
                step = RULES[self.event].step(self._fold, result)
            except HookFailure:  # a value hookscope's rule rejects: the SDK's verdict stands
                step = GO_ON
            if step == STOP:
                self.decided_by = hook_name
            elif step == TENTATIVE and self._tentative is None:
                self._tentative = hook_name

    def settle(self, verdict: Any, decided_by: str | None) -> None:
        """A runner whose hooks were reported here (:mod:`.fold`) reached ``verdict``.

        Kept for whoever finishes the report; ``decided_by`` (the runner's) names the decider
        when no reported result did (a hook that failed, and so denied).
        """
        self.verdict = verdict
        if self.decided_by is None and self._tentative is None:
            self.decided_by = decided_by

    def finish(self, result: Any, decided_by: str | None = None, data: Any = None) -> None:
        """End the report with ``result`` (a no-op when already finished)."""
        if self.finished:
            return
        self.finished = True
        if data is not None:
            self.data = data
        by = decided_by or self.decided_by or self._tentative
        self._notifier.dispatch_finished(self.event, self.context, self.data, result, by)

    def abandon(self) -> None:
        """End without a result (its scope closed first); later reports are ignored."""
        self.finished = True

    @contextmanager
    def running(self) -> Iterator[DispatchReport]:
        """Let hook proxies in this task report to this event."""
        token = REPORTING.set(self)
        try:
            yield self
        finally:
            REPORTING.reset(token)
