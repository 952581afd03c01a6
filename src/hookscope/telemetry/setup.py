"""``configure()``: OpenTelemetry providers for hookscope, from the standard ``OTEL_*`` variables.

One call gives an agent somewhere to send its telemetry::

    telemetry = hookscope.configure(service_name="coder")
    runner = HookRunner([OTelHook(), ...])      # uses the global providers configure() set
    ...
    telemetry.shutdown()                        # flushes; also runs at exit

Where each signal goes, decided per signal (traces, metrics):

* ``OTEL_SDK_DISABLED=true``: nowhere. Both providers are no-ops and nothing is installed.
* The application already installed a global provider for the signal (with ``set_global``):
  that provider, untouched. hookscope never replaces what an application set up.
* An OTLP endpoint (``endpoint=``, ``OTEL_EXPORTER_OTLP_<SIGNAL>_ENDPOINT`` or
  ``OTEL_EXPORTER_OTLP_ENDPOINT``): OTLP over ``http/protobuf`` (default) or ``grpc``
  (``protocol=`` or ``OTEL_EXPORTER_OTLP_[<SIGNAL>_]PROTOCOL``), through a
  ``BatchSpanProcessor`` and a ``PeriodicExportingMetricReader``.
* Otherwise: OTLP/JSON lines under ``directory`` (``traces.jsonl``, ``metrics.jsonl``; see
  :mod:`hookscope.telemetry.files`), which ``hookscope view`` reads.

Globals: with ``set_global=True`` (the default) ``configure()`` installs each provider it builds
as the global one, but only where none was installed yet: the OpenTelemetry API allows setting
a global once per process, so the first configuration wins and a later ``configure()`` returns
a :class:`Telemetry` that borrows the installed providers. With ``set_global=False`` globals are
neither read nor written: pass ``telemetry.tracer_provider`` and ``telemetry.meter_provider``
to ``OTelHook`` yourself.

Telemetry never slows or breaks the agent: spans and metrics leave through background threads.
An exporter that fails (endpoint refusing, hanging, disk full) is logged once — its first
failure, with the exporter's own messages; repeats are silenced until it recovers, which is
logged too — and every failed export is counted in ``hookscope.telemetry.export.failures``
(attribute ``hookscope.telemetry.signal``). For the components it builds, hookscope also turns
on the SDK's self-metrics unless ``OTEL_PYTHON_SDK_INTERNAL_METRICS_ENABLED`` is set: spans
dropped from a full queue appear as ``otel.sdk.processor.span.processed`` with
``error.type=queue_full``, and spans an exporter failed to send as
``otel.sdk.exporter.span.exported`` with ``error.type``.
"""

from __future__ import annotations

import atexit
import logging
import math
import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from time import monotonic
from types import TracebackType
from typing import Any, Final, Literal, final
from urllib.parse import urlparse

from opentelemetry import metrics, trace
from opentelemetry.metrics import Counter, NoOpMeterProvider
from opentelemetry.metrics._internal import _ProxyMeterProvider
from opentelemetry.sdk.environment_variables import (
    OTEL_EXPORTER_OTLP_ENDPOINT,
    OTEL_EXPORTER_OTLP_METRICS_ENDPOINT,
    OTEL_EXPORTER_OTLP_METRICS_PROTOCOL,
    OTEL_EXPORTER_OTLP_PROTOCOL,
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
    OTEL_EXPORTER_OTLP_TRACES_PROTOCOL,
    OTEL_PYTHON_SDK_INTERNAL_METRICS_ENABLED,
    OTEL_SDK_DISABLED,
)
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    MetricExporter,
    MetricExportResult,
    MetricsData,
    PeriodicExportingMetricReader,
)
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import NoOpTracerProvider, ProxyTracerProvider

from hookscope._version import __version__
from hookscope.telemetry.files import (
    METRICS_FILE,
    TRACES_FILE,
    JsonLinesMetricExporter,
    JsonLinesSpanExporter,
)

__all__ = [
    "METRIC_EXPORT_FAILURES",
    "TELEMETRY_SIGNAL",
    "OtlpProtocol",
    "Telemetry",
    "TelemetryConfigError",
    "configure",
]

logger = logging.getLogger(__name__)

OtlpProtocol = Literal["http/protobuf", "grpc"]
Signal = Literal["traces", "metrics"]

#: Counter of failed export calls (one per batch), by ``hookscope.telemetry.signal``.
METRIC_EXPORT_FAILURES: Final = "hookscope.telemetry.export.failures"
#: The signal an export carried: ``traces`` or ``metrics``.
TELEMETRY_SIGNAL: Final = "hookscope.telemetry.signal"

_PROTOCOLS: Final[tuple[OtlpProtocol, ...]] = ("http/protobuf", "grpc")
_HTTP_PATHS: Final[dict[Signal, str]] = {"traces": "/v1/traces", "metrics": "/v1/metrics"}
_ENDPOINT_ENV: Final[dict[Signal, str]] = {
    "traces": OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
    "metrics": OTEL_EXPORTER_OTLP_METRICS_ENDPOINT,
}
_PROTOCOL_ENV: Final[dict[Signal, str]] = {
    "traces": OTEL_EXPORTER_OTLP_TRACES_PROTOCOL,
    "metrics": OTEL_EXPORTER_OTLP_METRICS_PROTOCOL,
}
# The loggers the OTLP exporters report through; see _QuietRepeats.
_EXPORTER_LOGGERS: Final = (
    "opentelemetry.exporter.otlp.proto.http.trace_exporter",
    "opentelemetry.exporter.otlp.proto.http.metric_exporter",
    "opentelemetry.exporter.otlp.common.http",
    "opentelemetry.exporter.otlp.proto.grpc.exporter",
)


class TelemetryConfigError(ValueError):
    """``configure()`` was given (or found in the environment) settings it cannot use."""


# --- where each signal goes ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Route:
    """One signal's destination: an OTLP endpoint, or the embedded files when ``url`` is None."""

    signal: Signal
    protocol: OtlpProtocol
    url: str | None


@dataclass(frozen=True, slots=True)
class _Target:
    """Where one signal is exported, as log messages name it, and what to check if it fails."""

    signal: Signal
    text: str
    hint: str


def _protocol(signal: Signal, given: str | None) -> OtlpProtocol:
    source, raw = "protocol", given
    if raw is None:
        for name in (_PROTOCOL_ENV[signal], OTEL_EXPORTER_OTLP_PROTOCOL):
            if os.environ.get(name, "").strip():
                source, raw = name, os.environ[name]
                break
        else:
            return "http/protobuf"
    value = raw.strip().lower()
    for protocol in _PROTOCOLS:
        if value == protocol:
            return protocol
    raise TelemetryConfigError(
        f"{source}={raw!r} is not supported; use 'http/protobuf' (the default) or 'grpc'"
        + (" (hookscope does not export OTLP http/json)" if value == "http/json" else "")
    )


def _checked_url(url: str, source: str, protocol: OtlpProtocol, base: bool) -> str:
    parsed = urlparse(url)
    if protocol == "grpc":
        return url  # host:port or scheme://host:port; the gRPC exporter accepts both
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise TelemetryConfigError(
            f"{source}={url!r} is not an http(s) URL; give one such as http://localhost:4318"
        )
    if base and parsed.path.rstrip("/").endswith(tuple(_HTTP_PATHS.values())):
        raise TelemetryConfigError(
            f"{source}={url!r} names a signal path; give the base URL "
            f"(e.g. {parsed.scheme}://{parsed.netloc}): hookscope adds /v1/traces and /v1/metrics"
        )
    return url


def _route(signal: Signal, endpoint: str | None, protocol: str | None) -> _Route:
    chosen = _protocol(signal, protocol)
    if endpoint is not None:
        source, url, base = "endpoint", endpoint.strip(), True
    elif os.environ.get(_ENDPOINT_ENV[signal], "").strip():  # a full URL, used as is
        source, base = _ENDPOINT_ENV[signal], False
        url = os.environ[source].strip()
    elif os.environ.get(OTEL_EXPORTER_OTLP_ENDPOINT, "").strip():
        source, base = OTEL_EXPORTER_OTLP_ENDPOINT, True
        url = os.environ[source].strip()
    else:
        return _Route(signal, chosen, None)
    if not url:
        raise TelemetryConfigError(f"{source} is empty; give a URL or leave it unset")
    url = _checked_url(url, source, chosen, base)
    if chosen == "http/protobuf" and base:  # a base URL: the signal's path goes after it
        url = url.rstrip("/") + _HTTP_PATHS[signal]
    return _Route(signal, chosen, url)


def _sdk_disabled() -> bool:
    raw = os.environ.get(OTEL_SDK_DISABLED, "").strip().lower()
    if raw not in ("", "true", "false"):
        # The OpenTelemetry spec: anything but "true" is false, with a warning.
        logger.warning(
            "%s=%r is not 'true' or 'false'; telemetry stays enabled", OTEL_SDK_DISABLED, raw
        )
    return raw == "true"


_ENV_LOCK: Final = threading.Lock()


@contextmanager
def _sdk_self_metrics() -> Iterator[None]:
    """Build SDK components with their self-metrics on, unless the user chose otherwise.

    The SDK reads ``OTEL_PYTHON_SDK_INTERNAL_METRICS_ENABLED`` only when a processor or
    exporter is constructed; there is no argument for it. The override lasts for those
    constructions only.
    """
    with _ENV_LOCK:
        if OTEL_PYTHON_SDK_INTERNAL_METRICS_ENABLED in os.environ:
            yield
            return
        os.environ[OTEL_PYTHON_SDK_INTERNAL_METRICS_ENABLED] = "true"
        try:
            yield
        finally:
            os.environ.pop(OTEL_PYTHON_SDK_INTERNAL_METRICS_ENABLED, None)


# --- exporter failures: logged once, counted ----------------------------------------------

_QUIET: Final = threading.local()


class _QuietRepeats(logging.Filter):
    """Drops OTLP exporter log records while a guarded export already reported its failure.

    The exporters log every failed batch and every retry; after hookscope has logged a
    destination's first failure those repeats say nothing new. The flag is per thread and set
    only around a guarded export call, so other exporters in the process log as usual.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return not getattr(_QUIET, "active", False)


_QUIET_FILTER: Final = _QuietRepeats()


def _install_quiet_filter() -> None:
    for name in _EXPORTER_LOGGERS:
        exporter_logger = logging.getLogger(name)
        if _QUIET_FILTER not in exporter_logger.filters:
            exporter_logger.addFilter(_QUIET_FILTER)


@final
class _ExportHealth:
    """Per-signal failure state shared by the guarded exporters of one configuration."""

    __slots__ = ("_counter", "_failures", "_lock")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._failures: dict[str, int] = {}
        self._counter: Counter | None = None

    def bind(self, meter_provider: metrics.MeterProvider) -> None:
        meter = meter_provider.get_meter("hookscope", __version__)
        self._counter = meter.create_counter(
            METRIC_EXPORT_FAILURES,
            unit="{batch}",
            description="Telemetry export calls that failed (the batch was dropped)",
        )

    def reported(self, signal: Signal) -> bool:
        return self._failures.get(signal, 0) > 0

    def record(self, target: _Target, ok: bool, error: Exception | None) -> None:
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
        if self._counter is not None:
            self._counter.add(1, {TELEMETRY_SIGNAL: signal})
        if failures == 0:
            logger.warning(
                "hookscope: exporting %s to %s failed%s; the agent is unaffected but %s are "
                "dropped until it recovers. %s. Further failures are counted in %s, not logged.",
                signal,
                target.text,
                f" ({type(error).__name__}: {error})" if error is not None else "",
                signal,
                target.hint,
                METRIC_EXPORT_FAILURES,
            )


def _guarded(health: _ExportHealth, target: _Target, export: Callable[[], bool]) -> bool:
    _QUIET.active = health.reported(target.signal)
    error: Exception | None = None
    try:
        ok = export()
    except Exception as caught:  # an exporter bug must not kill the SDK's worker thread
        ok, error = False, caught
    finally:
        _QUIET.active = False
    health.record(target, ok, error)
    return ok


@final
class _GuardedSpanExporter(SpanExporter):
    """Wraps a span exporter: failures are logged once and counted, never raised."""

    def __init__(self, inner: SpanExporter, health: _ExportHealth, target: _Target) -> None:
        self._inner = inner
        self._health = health
        self._target = target
        self._abandoned = False

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if self._abandoned:
            return SpanExportResult.FAILURE
        ok = _guarded(
            self._health,
            self._target,
            lambda: self._inner.export(spans) is SpanExportResult.SUCCESS,
        )
        return SpanExportResult.SUCCESS if ok else SpanExportResult.FAILURE

    def abandon(self) -> None:
        """Drop every later batch at once: shutdown ran out of time."""
        self._abandoned = True

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self._inner.force_flush(timeout_millis)

    def shutdown(self) -> None:
        self._inner.shutdown()


@final
class _GuardedMetricExporter(MetricExporter):
    """Wraps a metric exporter: failures are logged once and counted, never raised."""

    def __init__(self, inner: MetricExporter, health: _ExportHealth, target: _Target) -> None:
        # The reader takes temporality and aggregation preferences from the exporter it is
        # given; keep the inner exporter's (OTLP ones read them from the environment).
        super().__init__(
            preferred_temporality=inner._preferred_temporality,
            preferred_aggregation=inner._preferred_aggregation,
        )
        self._inner = inner
        self._health = health
        self._target = target
        self._abandoned = False

    def export(
        self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: Any
    ) -> MetricExportResult:
        if self._abandoned:
            return MetricExportResult.FAILURE
        ok = _guarded(
            self._health,
            self._target,
            lambda: (
                self._inner.export(metrics_data, timeout_millis=timeout_millis)
                is MetricExportResult.SUCCESS
            ),
        )
        return MetricExportResult.SUCCESS if ok else MetricExportResult.FAILURE

    def abandon(self) -> None:
        """Drop every later collection at once: shutdown ran out of time."""
        self._abandoned = True

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        return self._inner.force_flush(timeout_millis)

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        self._inner.shutdown(timeout_millis=timeout_millis)


def _otlp_span_exporter(
    route: _Route, headers: Mapping[str, str] | None, meter_provider: metrics.MeterProvider
) -> SpanExporter:
    if route.protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
            OTLPSpanExporter as GrpcSpanExporter,
        )

        return GrpcSpanExporter(
            endpoint=route.url,
            headers=dict(headers) if headers else None,
            meter_provider=meter_provider,
        )
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter(endpoint=route.url, headers=headers, meter_provider=meter_provider)


def _otlp_metric_exporter(route: _Route, headers: Mapping[str, str] | None) -> MetricExporter:
    if route.protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import (
            OTLPMetricExporter as GrpcMetricExporter,
        )

        return GrpcMetricExporter(endpoint=route.url, headers=dict(headers) if headers else None)
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

    return OTLPMetricExporter(endpoint=route.url, headers=headers)


def _target(route: _Route, directory: Path) -> _Target:
    if route.url is None:
        name = TRACES_FILE if route.signal == "traces" else METRICS_FILE
        return _Target(
            route.signal, str(directory / name), "Check the disk: free space and permissions"
        )
    return _Target(
        route.signal,
        f"{route.url} (OTLP {route.protocol})",
        "Check that the endpoint is up and reachable (OTEL_EXPORTER_OTLP_ENDPOINT)",
    )


# --- the result ---------------------------------------------------------------------------


def _run_bounded(steps: Sequence[Callable[[], object]], timeout_s: float, what: str) -> bool:
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
        traces_destination: Where spans end up, for people: a file, an OTLP URL,
            ``"existing provider"`` or ``"disabled"``.
        metrics_destination: The same for metrics.
    """

    __slots__ = (
        "_closed",
        "_guards",
        "_lock",
        "_owned_meter",
        "_owned_tracer",
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
        owned_tracer: TracerProvider | None = None,
        owned_meter: MeterProvider | None = None,
        guards: Sequence[_GuardedSpanExporter | _GuardedMetricExporter] = (),
    ) -> None:
        self.tracer_provider = tracer_provider
        self.meter_provider = meter_provider
        self.traces_destination = traces_destination
        self.metrics_destination = metrics_destination
        self._owned_tracer = owned_tracer
        self._owned_meter = owned_meter
        self._guards = tuple(guards)
        self._lock = threading.Lock()
        self._closed = owned_tracer is None and owned_meter is None
        if not self._closed:
            atexit.register(self._at_exit)

    def __repr__(self) -> str:
        return (
            f"Telemetry(traces={self.traces_destination!r}, metrics={self.metrics_destination!r})"
        )

    def force_flush(self, timeout_s: float = 5.0) -> bool:
        """Export what is buffered now; True when the flush finished within ``timeout_s``.

        Never blocks longer than ``timeout_s``, even with an exporter that hangs.
        """
        milliseconds = int(timeout_s * 1000)
        steps: list[Callable[[], object]] = []
        for provider in (self.tracer_provider, self.meter_provider):
            flush = getattr(provider, "force_flush", None)
            if flush is not None:
                steps.append(partial(flush, milliseconds))
        return _run_bounded(steps, timeout_s, "flush")

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
        milliseconds = int(timeout_s * 1000)
        steps: list[Callable[[], object]] = []
        tracer, meter = self._owned_tracer, self._owned_meter
        if tracer is not None:
            steps.append(tracer.shutdown)
        if meter is not None:  # after the tracer: its last export's self-metrics go out too
            steps.append(partial(meter.shutdown, timeout_millis=milliseconds))
        finished = _run_bounded(steps, timeout_s, "shutdown")
        if not finished:
            for guard in self._guards:
                guard.abandon()  # let the SDK's threads finish without waiting on the exporter
            logger.warning(
                "hookscope: telemetry did not flush within %.1fs (traces to %s, metrics to %s); "
                "what was not sent is dropped",
                timeout_s,
                self.traces_destination,
                self.metrics_destination,
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


# --- configure() --------------------------------------------------------------------------


def _installed_tracer_provider() -> trace.TracerProvider | None:
    provider = trace.get_tracer_provider()
    return None if isinstance(provider, ProxyTracerProvider) else provider


def _installed_meter_provider() -> metrics.MeterProvider | None:
    provider = metrics.get_meter_provider()
    return None if isinstance(provider, _ProxyMeterProvider) else provider


def _interval_ms(metric_interval_s: float | None) -> float | None:
    if metric_interval_s is None:
        return None  # the SDK reads OTEL_METRIC_EXPORT_INTERVAL (default 60 s)
    if (
        isinstance(metric_interval_s, bool)
        or not isinstance(metric_interval_s, (int, float))
        or not math.isfinite(metric_interval_s)
        or metric_interval_s <= 0
    ):
        raise TelemetryConfigError(
            f"metric_interval_s must be a positive number of seconds, got {metric_interval_s!r}"
        )
    return float(metric_interval_s) * 1000


def _file_error(directory: Path, error: OSError) -> TelemetryConfigError:
    reason = error.strerror or str(error)
    return TelemetryConfigError(
        f"cannot write telemetry files under {str(directory)!r}: {reason}. Pass directory= a "
        "writable folder, or set OTEL_EXPORTER_OTLP_ENDPOINT to export over OTLP instead"
    )


def configure(
    service_name: str | None = None,
    endpoint: str | None = None,
    protocol: str | None = None,
    headers: Mapping[str, str] | None = None,
    directory: str | os.PathLike[str] = ".hookscope",
    metric_interval_s: float | None = None,
    *,
    set_global: bool = True,
) -> Telemetry:
    """Build (or find) the tracer and meter providers hookscope's telemetry goes to.

    Arguments win over the environment; anything not given is read from the standard
    ``OTEL_*`` variables (``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES``,
    ``OTEL_EXPORTER_OTLP_[TRACES_|METRICS_]ENDPOINT`` / ``_PROTOCOL`` / ``_HEADERS`` /
    ``_TIMEOUT``, ``OTEL_TRACES_SAMPLER``, ``OTEL_BSP_*``, ``OTEL_METRIC_EXPORT_INTERVAL``,
    ``OTEL_SDK_DISABLED``). See the module documentation for where each signal goes.

    Args:
        service_name: ``service.name`` of the resource (else ``OTEL_SERVICE_NAME``).
        endpoint: Base URL of an OTLP receiver, as ``OTEL_EXPORTER_OTLP_ENDPOINT``
            (``http://host:4318``; hookscope adds ``/v1/traces`` and ``/v1/metrics``), or
            ``host:4317`` for gRPC.
        protocol: ``"http/protobuf"`` (default) or ``"grpc"``.
        headers: Headers sent with every OTLP request (merged over ``OTEL_EXPORTER_OTLP_HEADERS``).
        directory: Where the embedded default writes ``traces.jsonl`` and ``metrics.jsonl``
            when no endpoint is set; created if missing.
        metric_interval_s: Seconds between metric exports (else
            ``OTEL_METRIC_EXPORT_INTERVAL``, default 60).
        set_global: Install the providers built as the global ones where none is installed
            yet, and use installed ones instead of building; ``False`` leaves globals alone.

    Returns:
        The providers and a way to flush and shut them down.

    Raises:
        TelemetryConfigError: (a ``ValueError``) an unsupported protocol, a malformed
            endpoint, a bad ``metric_interval_s``, or a directory that cannot be written.
    """
    if _sdk_disabled():
        logger.info("hookscope: %s=true, telemetry is off", OTEL_SDK_DISABLED)
        return Telemetry(NoOpTracerProvider(), NoOpMeterProvider(), "disabled", "disabled")
    trace_route = _route("traces", endpoint, protocol)
    metric_route = _route("metrics", endpoint, protocol)
    interval_ms = _interval_ms(metric_interval_s)
    folder = Path(directory).absolute()

    installed_tracer = _installed_tracer_provider() if set_global else None
    installed_meter = _installed_meter_provider() if set_global else None
    if installed_tracer is not None or installed_meter is not None:
        logger.info(
            "hookscope: using the %s the application installed; configure() does not replace it",
            " and ".join(
                name
                for name, found in (
                    ("TracerProvider", installed_tracer),
                    ("MeterProvider", installed_meter),
                )
                if found is not None
            ),
        )
    if installed_tracer is not None and installed_meter is not None:
        return Telemetry(
            installed_tracer, installed_meter, "existing provider", "existing provider"
        )

    # Open the files first: a directory that cannot be written is an error now, not later.
    metric_sink: MetricExporter | None = None
    span_sink: SpanExporter | None = None
    try:
        if installed_meter is None and metric_route.url is None:
            metric_sink = JsonLinesMetricExporter(folder)
        if installed_tracer is None and trace_route.url is None:
            span_sink = JsonLinesSpanExporter(folder)
    except OSError as error:
        if metric_sink is not None:
            metric_sink.shutdown()
        raise _file_error(folder, error) from error
    if trace_route.url is not None or metric_route.url is not None:
        _install_quiet_filter()

    resource = Resource.create({SERVICE_NAME: service_name} if service_name else None)
    health = _ExportHealth()
    guards: list[_GuardedSpanExporter | _GuardedMetricExporter] = []

    meter_provider: metrics.MeterProvider
    owned_meter: MeterProvider | None = None
    if installed_meter is None:
        inner = metric_sink or _otlp_metric_exporter(metric_route, headers)
        metric_target = _target(metric_route, folder)
        metric_guard = _GuardedMetricExporter(inner, health, metric_target)
        guards.append(metric_guard)
        reader = PeriodicExportingMetricReader(metric_guard, export_interval_millis=interval_ms)
        meter_provider = owned_meter = MeterProvider(
            metric_readers=[reader], resource=resource, shutdown_on_exit=False
        )
        metrics_destination = metric_target.text
    else:
        meter_provider, metrics_destination = installed_meter, "existing provider"
    health.bind(meter_provider)

    tracer_provider: trace.TracerProvider
    owned_tracer: TracerProvider | None = None
    if installed_tracer is None:
        with _sdk_self_metrics():
            span_inner = span_sink or _otlp_span_exporter(trace_route, headers, meter_provider)
            span_target = _target(trace_route, folder)
            span_guard = _GuardedSpanExporter(span_inner, health, span_target)
            processor = BatchSpanProcessor(span_guard, meter_provider=meter_provider)
        guards.append(span_guard)
        tracer_provider = owned_tracer = TracerProvider(
            resource=resource, shutdown_on_exit=False, meter_provider=meter_provider
        )
        owned_tracer.add_span_processor(processor)
        traces_destination = span_target.text
    else:
        tracer_provider, traces_destination = installed_tracer, "existing provider"

    if set_global:
        if owned_tracer is not None:
            trace.set_tracer_provider(owned_tracer)
        if owned_meter is not None:
            metrics.set_meter_provider(owned_meter)
    logger.info("hookscope: traces to %s, metrics to %s", traces_destination, metrics_destination)
    return Telemetry(
        tracer_provider,
        meter_provider,
        traces_destination,
        metrics_destination,
        owned_tracer=owned_tracer,
        owned_meter=owned_meter,
        guards=guards,
    )
