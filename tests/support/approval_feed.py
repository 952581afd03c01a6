"""Approval waits with known outcomes, for the dashboards' and alert rules' tests.

The fleet in :mod:`tests.support.workload` has nobody to approve anything, and its counts are
what other tests assert, so approval waits come from here: real ``builtins.Approvals`` on a
queue directory nobody answers, with a deadline short enough that each wait ends
``timed_out`` at once (and is denied), recorded in ``hookscope.approval.duration``.
"""

from __future__ import annotations

import asyncio
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path

from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import NoOpTracerProvider

from hookscope import HookResult, HookRunner, ToolCall, hooks
from hookscope.builtins import Approvals

#: Seconds each unanswered request waits before it times out.
TIMEOUT_S = 0.01


@hooks.pre_tool_call_decide
def confirm_every_deploy(call: ToolCall) -> HookResult | None:
    return HookResult.ask("deploy?") if call.name == "deploy" else None


def _runner(meter_provider: MeterProvider, queue: Path) -> HookRunner:
    approvals = Approvals(
        queue,
        timeout_s=TIMEOUT_S,
        poll_s=TIMEOUT_S / 2,
        tracer_provider=NoOpTracerProvider(),
        meter_provider=meter_provider,
    )
    return HookRunner([confirm_every_deploy, approvals])


async def _wait(runner: HookRunner, agent: str) -> None:
    async with runner.session(agent_name=agent) as session, session.turn("deploy") as turn:
        outcome = await turn.call_tool(ToolCall("deploy", {}), lambda: "deployed")
        assert not outcome.allowed, outcome  # timed out, and on_timeout="deny"


async def wait_once(meter_provider: MeterProvider, agents: Sequence[str]) -> None:
    """One timed-out approval wait for each of ``agents``."""
    with tempfile.TemporaryDirectory() as queue:
        runner = _runner(meter_provider, Path(queue))
        for agent in agents:
            await _wait(runner, agent)


class ApprovalFeed:
    """One timed-out approval wait per agent every ``tick_s``, in a thread, until stopped
    (so rates over recent windows, and quantiles of them, always have data)."""

    def __init__(
        self, meter_provider: MeterProvider, agents: Sequence[str], tick_s: float = 0.5
    ) -> None:
        self._meter_provider = meter_provider
        self._agents = tuple(agents)
        self._tick_s = tick_s
        self._stop = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="approval-feed", daemon=True)

    def __enter__(self) -> ApprovalFeed:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        if self._error is not None:
            raise self._error

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                asyncio.run(wait_once(self._meter_provider, self._agents))
                self._stop.wait(self._tick_s)
        except BaseException as error:  # re-raised in the test's thread on exit
            self._error = error
