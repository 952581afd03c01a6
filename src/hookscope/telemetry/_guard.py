"""The guard around every exporter ``configure()`` builds: log once, count, fail fast.

:func:`hookscope.telemetry.setup.configure` wraps every exporter, OTLP, console or files, in a
:class:`GuardedSpanExporter`, :class:`GuardedMetricExporter` or :class:`GuardedLogExporter`,
each with its own :class:`ExportGuard`: what stands between the SDK's export threads and a
destination that fails. A guard promises three things.

**Never raise, log once, count.** An export that fails or raises is reported to the SDK as a
failure. The destination's first failure is logged as a warning with the error, and a recovery
is logged too. Every failed batch adds 1 to ``hookscope.telemetry.export.failures`` and its
items (spans, log records, or metric data points) to ``hookscope.telemetry.export.dropped``,
both with ``hookscope.telemetry.signal``. These two are process-level metrics: a batch holds
every agent's telemetry, so they carry no agent name. hookscope installs no logging filter on
other libraries' loggers: the breaker below is what keeps a failing exporter quiet, since it
lets the exporter see at most one batch per window (the exporter logs each failure it sees).

**Fail fast (a circuit breaker).** Encoding a batch to protobuf costs ~0.1 ms per span in the
export thread, and that thread competes with the agent for the GIL; with the endpoint down the
work is wasted. So after a failed export the breaker opens: batches arriving within the backoff
window (1 s, doubling with each consecutive failure up to 30 s, back to 1 s after a success)
are dropped before the exporter sees them. When the window has passed, and before the very
first export, the destination is not known to work: a TCP connect to its host and port (see
:mod:`hookscope.telemetry._endpoint`) must succeed before the batch is encoded, else the batch
fails at once. An explicit flush or shutdown ends an open window, so what is buffered gets that
probe rather than being dropped unseen. Spans the breaker or the probe drop never reach the
exporter, so the SDK's own ``otel.sdk.exporter.span.exported`` does not count them;
``hookscope.telemetry.export.dropped`` does. Metrics lose little: with the default cumulative
temporality the next collection that gets through carries the totals.

**Bounded waits.** :func:`run_bounded` runs flush and shutdown steps under one deadline even
when an exporter hangs.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable, Sequence
from time import monotonic
from typing import Any, Final, final

from opentelemetry import metrics
from opentelemetry.metrics import Counter
from opentelemetry.sdk._logs import ReadableLogRecord
from opentelemetry.sdk._logs.export import LogRecordExporter, LogRecordExportResult
from opentelemetry.sdk.metrics.export import MetricExporter, MetricExportResult, MetricsData
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from hookscope._version import __version__
from hookscope.telemetry._endpoint import (
    EndpointRefused,
    HttpStatus,
    Signal,
    Target,
    probe,
    status_of,
)
from hookscope.telemetry.semconv import (
    INSTRUMENTATION_SCOPE,
    METRIC_EXPORT_DROPPED,
    METRIC_EXPORT_FAILURES,
    TELEMETRY_SIGNAL,
)

__all__ = [
    "INITIAL_BACKOFF_S",
    "MAX_BACKOFF_S",
    "ExportGuard",
    "ExportHealth",
    "GuardedLogExporter",
    "GuardedMetricExporter",
    "GuardedSpanExporter",
    "run_bounded",
]

logger = logging.getLogger(__name__)

#: The breaker's first open window, after one failure.
INITIAL_BACKOFF_S: Final = 1.0
#: The longest window: a collector that comes back is used again within this time.
MAX_BACKOFF_S: Final = 30.0


@final
class ExportHealth:
    """Per-signal failure state shared by the guards of one configuration."""

    __slots__ = ("_dropped", "_failed", "_failures", "_lock")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._failures: dict[str, int] = {}
        self._failed: Counter | None = None
        self._dropped: Counter | None = None

    def bind(self, meter_provider: metrics.MeterProvider) -> None:
        """Count failures in ``meter_provider`` from now on."""
        meter = meter_provider.get_meter(INSTRUMENTATION_SCOPE, __version__)
        self._failed = meter.create_counter(
            METRIC_EXPORT_FAILURES,
            unit="{batch}",
            description="Telemetry export calls that failed (the batch was dropped)",
        )
        self._dropped = meter.create_counter(
            METRIC_EXPORT_DROPPED,
            unit="{item}",
            description="Spans or metric data points in telemetry batches that failed to export",
        )

    def reported(self, signal: Signal) -> bool:
        """Whether ``signal``'s current run of failures has been logged already."""
        return self._failures.get(signal, 0) > 0

    def record(
        self,
        target: Target,
        ok: bool,
        error: Exception | None,
        dropped: int,
        *,
        silent: bool = False,
    ) -> None:
        """Note one export's outcome: log a first failure or a recovery, count a failure.

        Args:
            target: Where the batch was going.
            ok: Whether it was delivered.
            error: What failed, for the log message, when known.
            dropped: How many items the batch held (0 when ``ok``).
            silent: Count a failure without logging it: the breaker dropped the batch, and
                the failure that opened the breaker is the one to log.
        """
        signal = target.signal
        with self._lock:
            failures = self._failures.get(signal, 0)
            self._failures[signal] = 0 if ok else failures + 1
        if ok:
            if failures:
                logger.info(
                    "hookscope: exporting %s to %s works again after %d failed export(s)",
                    signal,
                    target.text,
                    failures,
                )
            return
        attributes = {TELEMETRY_SIGNAL: signal}
        if self._failed is not None and self._dropped is not None:
            self._failed.add(1, attributes)
            self._dropped.add(dropped, attributes)
        if failures or silent:
            return
        if isinstance(error, EndpointRefused) and error.takes_no_signal:
            # Up, but not for this signal: say so, and what to set ("check that it is up"
            # would send the user after a server that is running).
            logger.warning(
                "hookscope: %s takes no %s (HTTP %d): the endpoint is up but has no %s "
                "route (traces-only backends such as Phoenix and Jaeger take traces alone). "
                "Set OTEL_%s_EXPORTER=none to stop sending them; until then they are "
                "dropped, counted in %s (items in %s), not logged.",
                target.text,
                signal,
                error.code,
                signal,
                signal.upper(),
                METRIC_EXPORT_FAILURES,
                METRIC_EXPORT_DROPPED,
            )
            return
        if isinstance(error, EndpointRefused):  # it answered: it is up, the batch was refused
            detail = f" ({error}: the endpoint is up and refused the batch)"
            hint = "Check the endpoint's URL path, headers and credentials"
        else:
            detail = f" ({type(error).__name__}: {error})" if error is not None else ""
            hint = target.hint
        logger.warning(
            "hookscope: exporting %s to %s failed%s; the agent is unaffected but %s are "
            "dropped until it recovers. %s. Further failures are counted in %s (items in "
            "%s), not logged.",
            signal,
            target.text,
            detail,
            signal,
            hint,
            METRIC_EXPORT_FAILURES,
            METRIC_EXPORT_DROPPED,
        )


# --- the circuit breaker ------------------------------------------------------------------


@final
class ExportGuard:
    """Runs one exporter's exports behind a circuit breaker, logging and counting failures.

    Args:
        health: Where outcomes are logged and counted.
        target: The destination; its ``address`` is probed while it is not known to work.
        clock: Monotonic seconds; tests pass a fake one.
    """

    __slots__ = (
        "_abandoned",
        "_backoff_s",
        "_clock",
        "_health",
        "_lock",
        "_open_until",
        "_status",
        "_verified",
        "target",
    )

    def __init__(
        self,
        health: ExportHealth,
        target: Target,
        clock: Callable[[], float] = monotonic,
        status: HttpStatus | None = None,
    ) -> None:
        self.target = target
        #: The exporter's latest HTTP status (OTLP/HTTP): a failed export that got an answer
        #: was refused by a live endpoint, which the log message says rather than "down".
        self._status = status
        self._health = health
        self._clock = clock
        self._lock = threading.Lock()
        self._abandoned = False
        self._verified = False  # the last export was delivered: no probe needed
        self._backoff_s = 0.0  # the current window; 0 while no failure is outstanding
        self._open_until = -math.inf

    def run(self, export: Callable[[], bool], items: Callable[[], int]) -> bool:
        """Export one batch unless the breaker or the probe stops it; True when delivered.

        Args:
            export: Encodes and sends the batch, True on success. Runs only while the breaker
                is closed and, for a destination not known to work, after a probe connected.
            items: How many items the batch holds; asked only when the batch is lost.
        """
        with self._lock:
            if self._abandoned:
                return False
            dropping = self._clock() < self._open_until
            verified = self._verified
        if dropping:
            self._health.record(self.target, False, None, items(), silent=True)
            return False
        error: Exception | None = None
        address = self.target.address
        if not verified and address is not None:
            error = probe(address)
        ok = False
        if error is None:
            status = self._status
            if status is not None:
                status.code = None
            try:
                ok = export()
            except Exception as caught:  # an exporter bug must not kill the SDK's worker thread
                error = caught
            if not ok and error is None and status is not None and status.code is not None:
                error = EndpointRefused(status.code)
        self._settle(ok)
        self._health.record(self.target, ok, error, 0 if ok else items())
        return ok

    def _settle(self, ok: bool) -> None:
        with self._lock:
            if ok:
                self._verified, self._backoff_s, self._open_until = True, 0.0, -math.inf
                return
            self._verified = False
            self._backoff_s = (
                min(self._backoff_s * 2, MAX_BACKOFF_S) if self._backoff_s else INITIAL_BACKOFF_S
            )
            # From the end of the failed attempt: an export that hung for its whole timeout
            # must not leave a window that is already over.
            self._open_until = self._clock() + self._backoff_s

    def retry_now(self) -> None:
        """End an open window: the next batch is probed and, if that connects, sent.

        For explicit flushes: buffered telemetry deserves a try at a collector that may be
        back, and the probe keeps that try cheap when it is not.
        """
        with self._lock:
            self._open_until = -math.inf

    def abandon(self) -> None:
        """Drop every later batch at once, uncounted: shutdown ran out of time."""
        with self._lock:
            self._abandoned = True


@final
class GuardedSpanExporter(SpanExporter):
    """Wraps a span exporter: exports go through an :class:`ExportGuard`, never raise."""

    def __init__(
        self,
        inner: SpanExporter,
        health: ExportHealth,
        target: Target,
        clock: Callable[[], float] = monotonic,
    ) -> None:
        self._inner = inner
        self.guard = ExportGuard(health, target, clock, status_of(inner))

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        ok = self.guard.run(
            lambda: self._inner.export(spans) is SpanExportResult.SUCCESS, lambda: len(spans)
        )
        return SpanExportResult.SUCCESS if ok else SpanExportResult.FAILURE

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self._inner.force_flush(timeout_millis)

    def shutdown(self) -> None:
        self._inner.shutdown()


def _data_points(metrics_data: MetricsData) -> int:
    return sum(
        len(metric.data.data_points)
        for resource_metrics in metrics_data.resource_metrics
        for scope_metrics in resource_metrics.scope_metrics
        for metric in scope_metrics.metrics
    )


@final
class GuardedMetricExporter(MetricExporter):
    """Wraps a metric exporter: exports go through an :class:`ExportGuard`, never raise."""

    def __init__(
        self,
        inner: MetricExporter,
        health: ExportHealth,
        target: Target,
        clock: Callable[[], float] = monotonic,
    ) -> None:
        # The reader takes temporality and aggregation preferences from the exporter it is
        # given; keep the inner exporter's (OTLP ones read them from the environment).
        super().__init__(
            preferred_temporality=inner._preferred_temporality,
            preferred_aggregation=inner._preferred_aggregation,
        )
        self._inner = inner
        self.guard = ExportGuard(health, target, clock, status_of(inner))

    def export(
        self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: Any
    ) -> MetricExportResult:
        ok = self.guard.run(
            lambda: (
                self._inner.export(metrics_data, timeout_millis=timeout_millis)
                is MetricExportResult.SUCCESS
            ),
            lambda: _data_points(metrics_data),
        )
        return MetricExportResult.SUCCESS if ok else MetricExportResult.FAILURE

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        return self._inner.force_flush(timeout_millis)

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        self._inner.shutdown(timeout_millis=timeout_millis)


@final
class GuardedLogExporter(LogRecordExporter):
    """Wraps a log record exporter: exports go through an :class:`ExportGuard`, never raise."""

    def __init__(
        self,
        inner: LogRecordExporter,
        health: ExportHealth,
        target: Target,
        clock: Callable[[], float] = monotonic,
    ) -> None:
        self._inner = inner
        self.guard = ExportGuard(health, target, clock, status_of(inner))

    def export(self, batch: Sequence[ReadableLogRecord]) -> LogRecordExportResult:
        ok = self.guard.run(
            lambda: self._inner.export(batch) is LogRecordExportResult.SUCCESS, lambda: len(batch)
        )
        return LogRecordExportResult.SUCCESS if ok else LogRecordExportResult.FAILURE

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self._inner.force_flush(timeout_millis)

    def shutdown(self) -> None:
        stop: Callable[[], object] = self._inner.shutdown  # the SDK leaves it unannotated
        stop()


# --- bounded waits ------------------------------------------------------------------------


def run_bounded(steps: Sequence[Callable[[], object]], timeout_s: float, what: str) -> bool:
    """Run ``steps`` in order within ``timeout_s``; True when all finished in time and succeeded.

    Each step runs in a daemon thread: a hanging exporter holds the SDK's flush and shutdown
    for its whole request timeout (``force_flush`` even ignores its timeout), and the caller's
    deadline must hold regardless. Step ``i`` starts when step ``i - 1`` finished, or at the
    latest when its share of the time is up, so a stuck trace exporter does not starve the
    metrics and, normally, the metrics flushed last include the final span export's.
    """
    results: list[bool] = []

    def run(step: Callable[[], object]) -> None:
        try:
            results.append(step() is not False)
        except Exception:
            logger.exception("hookscope: telemetry %s failed", what)
            results.append(False)

    started = monotonic()
    threads: list[threading.Thread] = []
    for index, step in enumerate(steps):
        if threads:
            share_ends = started + timeout_s * index / len(steps)
            threads[-1].join(max(0.0, share_ends - monotonic()))
        thread = threading.Thread(
            target=run, args=(step,), name=f"hookscope-telemetry-{what}", daemon=True
        )
        try:
            thread.start()
        except RuntimeError:  # Python >= 3.12 at exit: no new threads; the SDK's timeouts apply
            run(step)
            continue
        threads.append(thread)
    for thread in threads:
        thread.join(max(0.0, started + timeout_s - monotonic()))
    return not any(thread.is_alive() for thread in threads) and all(results)
