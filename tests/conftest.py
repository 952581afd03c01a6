"""Shared fixtures (a recording observer, in-memory OpenTelemetry providers) and test hygiene.

``hookscope.testing``'s ``hookscope_recording`` fixture comes from hookscope's ``pytest11``
entry point. At the end of the session, no exporter thread may still be running: a test that
starts a BatchSpanProcessor or a PeriodicExportingMetricReader must shut its provider down.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any, Final

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from hookscope.context import HookContext
from hookscope.hooks import HookEvent
from hookscope.runner import DispatchObserver


@dataclass
class Recorder(DispatchObserver):
    """Records every observer call as a tuple, in order."""

    calls: list[tuple[Any, ...]] = field(default_factory=list)

    def scope_started(self, context: HookContext) -> None:
        self.calls.append(("scope_started", type(context).__name__))

    def scope_ended(self, context: HookContext, error: BaseException | None) -> None:
        outcome = getattr(context, "outcome", None)
        self.calls.append(
            (
                "scope_ended",
                type(context).__name__,
                outcome,
                type(error).__name__ if error else None,
            )
        )

    def dispatch_started(self, event: HookEvent, context: HookContext, data: Any) -> None:
        self.calls.append(("dispatch_started", event))

    def hook_finished(
        self,
        event: HookEvent,
        hook_name: str,
        context: HookContext,
        result: Any,
        error: BaseException | None,
        duration_s: float,
    ) -> None:
        assert duration_s >= 0.0
        self.calls.append(
            ("hook_finished", event, hook_name, result, type(error).__name__ if error else None)
        )

    def dispatch_finished(
        self, event: HookEvent, context: HookContext, data: Any, result: Any, decided_by: str | None
    ) -> None:
        self.calls.append(("dispatch_finished", event, result, decided_by))

    def named(self, kind: str) -> list[tuple[Any, ...]]:
        return [c for c in self.calls if c[0] == kind]


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def span_exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def tracer_provider(span_exporter: InMemorySpanExporter) -> TracerProvider:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(span_exporter))
    return provider


@pytest.fixture
def metric_reader() -> InMemoryMetricReader:
    return InMemoryMetricReader()


@pytest.fixture
def meter_provider(metric_reader: InMemoryMetricReader) -> MeterProvider:
    return MeterProvider(metric_readers=[metric_reader])


#: Names the OpenTelemetry SDK gives its exporter worker threads.
EXPORTER_THREADS: Final = ("OtelBatch", "OtelPeriodicExportingMetricReader")
#: How long a thread being shut down as the last test ends may take to go.
_GRACE_S: Final = 5.0


def exporter_threads() -> list[threading.Thread]:
    """Live exporter worker threads (batch processors, periodic metric readers)."""
    return [
        thread
        for thread in threading.enumerate()
        if thread.is_alive() and thread.name.startswith(EXPORTER_THREADS)
    ]


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the run if an exporter thread outlived the tests (a provider was never shut down)."""
    deadline = time.monotonic() + _GRACE_S
    leaked = exporter_threads()
    while leaked and time.monotonic() < deadline:
        leaked[0].join(timeout=max(0.0, deadline - time.monotonic()))
        leaked = exporter_threads()
    if leaked:
        names = ", ".join(sorted(thread.name for thread in leaked))
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        message = (
            f"{len(leaked)} OpenTelemetry exporter thread(s) outlived the tests ({names}): "
            "shut down the TracerProvider/MeterProvider a test starts"
        )
        if reporter is not None:
            reporter.write_line(f"ERROR: {message}", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
