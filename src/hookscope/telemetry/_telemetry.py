"""``Telemetry``: what ``configure()`` returns, the providers it chose and how to stop them."""

from __future__ import annotations

import atexit
import logging
import threading
from collections.abc import Callable, Sequence
from functools import partial
from types import TracebackType
from typing import final

from opentelemetry import _logs, metrics, trace
from opentelemetry._logs import NoOpLoggerProvider
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import TracerProvider

from hookscope.telemetry._guard import ExportGuard, run_bounded

__all__ = ["Telemetry"]

logger = logging.getLogger("hookscope.telemetry.setup")  # where configure()'s messages go


@final
class Telemetry:
    """The providers ``configure()`` chose, and how to flush and stop them.

    Made by :func:`configure`. Use it as a context manager, or call :meth:`shutdown` (it also
    runs at interpreter exit). Only providers hookscope built are shut down; providers borrowed
    from the application are its to shut down (:meth:`force_flush` flushes them too).

    Attributes:
        tracer_provider: Where hookscope's spans go; pass it to ``OTelHook`` when globals
            were not set.
        meter_provider: Where hookscope's metrics go.
        logger_provider: Where log records (the GenAI events) go.
        traces_destination: Where spans end up, for people: a file, an OTLP URL (credentials
            masked), ``"the console"``, ``"none"``, ``"existing provider"`` or ``"disabled"``.
        metrics_destination: The same for metrics.
        logs_destination: The same for log records.
    """

    __slots__ = (
        "_closed",
        "_closers",
        "_guards",
        "_lock",
        "_owned",
        "logger_provider",
        "logs_destination",
        "meter_provider",
        "metrics_destination",
        "tracer_provider",
        "traces_destination",
    )

    def __init__(
        self,
        tracer_provider: trace.TracerProvider,
        meter_provider: metrics.MeterProvider,
        traces_destination: str,
        metrics_destination: str,
        *,
        logger_provider: _logs.LoggerProvider | None = None,
        logs_destination: str = "disabled",
        owned: Sequence[TracerProvider | LoggerProvider | MeterProvider | None] = (),
        guards: Sequence[ExportGuard] = (),
        closers: Sequence[Callable[[], object]] = (),
    ) -> None:
        self.tracer_provider = tracer_provider
        self.meter_provider = meter_provider
        self.logger_provider = logger_provider or NoOpLoggerProvider()
        self.traces_destination = traces_destination
        self.metrics_destination = metrics_destination
        self.logs_destination = logs_destination
        # Shut down in this order: the meter provider last, so the last exports' self-metrics
        # go out too.
        self._owned = tuple(provider for provider in owned if provider is not None)
        self._guards = tuple(guards)
        self._closers = tuple(closers)  # servers to stop once the providers are down
        self._lock = threading.Lock()
        self._closed = not self._owned
        if not self._closed:
            atexit.register(self._at_exit)

    def __repr__(self) -> str:
        return (
            f"Telemetry(traces={self.traces_destination!r}, metrics={self.metrics_destination!r}, "
            f"logs={self.logs_destination!r})"
        )

    def force_flush(self, timeout_s: float = 5.0) -> bool:
        """Export what is buffered now; True when the flush finished within ``timeout_s``.

        Never blocks longer than ``timeout_s``, even with an exporter that hangs. A
        destination that failed lately is tried again (after a reachability probe) rather than
        skipped until its backoff window ends.
        """
        for guard in self._guards:
            guard.retry_now()
        milliseconds = int(timeout_s * 1000)
        steps: list[Callable[[], object]] = []
        for provider in (self.tracer_provider, self.logger_provider, self.meter_provider):
            flush = getattr(provider, "force_flush", None)
            if flush is not None:
                steps.append(partial(flush, milliseconds))
        return run_bounded(steps, timeout_s, "flush")

    def shutdown(self, timeout_s: float = 5.0) -> bool:
        """Flush and stop the providers hookscope built; later calls do nothing.

        Never blocks longer than ``timeout_s``: what an unreachable or hanging exporter has
        not sent by then is dropped (logged once).

        Returns:
            True when shutdown finished in time. Exports that failed are logged and counted,
            not reported here.
        """
        with self._lock:
            if self._closed:
                return True
            self._closed = True
        atexit.unregister(self._at_exit)
        for guard in self._guards:  # the last batches get a try, as with force_flush
            guard.retry_now()
        milliseconds = int(timeout_s * 1000)
        steps: list[Callable[[], object]] = [
            partial(provider.shutdown, timeout_millis=milliseconds)
            if isinstance(provider, MeterProvider)
            else provider.shutdown
            for provider in self._owned
        ]
        finished = run_bounded(steps, timeout_s, "shutdown")
        for close in self._closers:
            close()
        if not finished:
            for guard in self._guards:
                guard.abandon()  # let the SDK's threads finish without waiting on the exporter
            logger.warning(
                "hookscope: telemetry did not flush within %.1fs (traces to %s, metrics to %s, "
                "logs to %s); what was not sent is dropped",
                timeout_s,
                self.traces_destination,
                self.metrics_destination,
                self.logs_destination,
            )
        return finished

    def _at_exit(self) -> None:
        self.shutdown()

    def __enter__(self) -> Telemetry:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.shutdown()
