"""A runner's hooks inside an event whose hooks the SDK runs (report mode, governed).

An SDK that runs hooks of its own (antigravity) reports each event as a
:class:`~hookscope.integrations._kit.report.DispatchReport`. When a hookscope runner governs
it, the runner's hooks for the same event run from inside one of the SDK's hooks; they must
appear as more hooks of that one dispatch, not as a second dispatch of the same event (which
would record the decision twice). :func:`dispatch_into` runs the runner's dispatch loop with a
notifier that hands each hook's result to the report, and keeps the runner's verdict there.
"""

from __future__ import annotations

from typing import Any, final

from hookscope._notify import DispatchObserver, Notifier
from hookscope.context import HookContext
from hookscope.hooks import HookEvent
from hookscope.integrations._kit.report import DispatchReport
from hookscope.runner import Dispatch, HookRunner

__all__ = ["dispatch_into"]


async def dispatch_into(runner: HookRunner, report: DispatchReport, data: Any) -> Dispatch[Any]:
    """Run ``runner``'s hooks for ``report``'s event on ``data``, reported as the report's.

    The runner's rules decide (matchers, timeouts, fail-closed, asks settled through its
    ``on_interaction`` hooks); the verdict is kept with :meth:`DispatchReport.settle` for
    whoever finishes the report.
    """
    dispatched = await runner.dispatch(
        report.event, report.context, data, notifier=Notifier([_Relay(report)])
    )
    report.settle(dispatched.result, dispatched.decided_by)
    return dispatched


@final
class _Relay(DispatchObserver):
    """Tells a report of each hook of the runner's dispatch; not of its start or finish."""

    __slots__ = ("_report",)

    def __init__(self, report: DispatchReport) -> None:
        self._report = report

    def hook_finished(
        self,
        event: HookEvent,
        hook_name: str,
        context: HookContext,
        result: Any,
        error: BaseException | None,
        duration_s: float,
    ) -> None:
        if event == self._report.event:
            self._report.hook_finished(hook_name, result, error, duration_s)
