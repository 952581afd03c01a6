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

Telemetry never slows or breaks the agent: spans and metrics leave through background threads,
and every exporter is guarded (see :mod:`hookscope.telemetry._export`): failures are logged
once and counted (``hookscope.telemetry.export.failures``, ``hookscope.telemetry.export.dropped``),
and a circuit breaker with a reachability probe keeps a collector that is down from costing
the agent anything. For the components it builds, hookscope also turns on the SDK's self-metrics
unless ``OTEL_PYTHON_SDK_INTERNAL_METRICS_ENABLED`` is set: spans dropped from a full queue
appear as ``otel.sdk.processor.span.processed`` with ``error.type=queue_full``, and spans an
exporter failed to send as ``otel.sdk.exporter.span.exported`` with ``error.type``.
"""

from __future__ import annotations

import atexit
import logging
import math
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import Final, Literal, final
from urllib.parse import urlparse

from opentelemetry import metrics, trace
from opentelemetry.metrics import NoOpMeterProvider
from opentelemetry.metrics._internal import _ProxyMeterProvider
from opentelemetry.sdk.environment_variables import (
    OTEL_EXPORTER_OTLP_ENDPOINT,
    OTEL_EXPORTER_OTLP_METRICS_ENDPOINT,
    OTEL_EXPORTER_OTLP_METRICS_PROTOCOL,
    OTEL_EXPORTER_OTLP_PROTOCOL,
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
    OTEL_EXPORTER_OTLP_TRACES_PROTOCOL,
    OTEL_SDK_DISABLED,
)
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricExporter, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.trace import NoOpTracerProvider, ProxyTracerProvider

from hookscope.telemetry._export import (
    ExportGuard,
    ExportHealth,
    GuardedMetricExporter,
    GuardedSpanExporter,
    Signal,
    Target,
    install_quiet_filter,
    otlp_metric_exporter,
    otlp_span_exporter,
    run_bounded,
    sdk_self_metrics,
)
from hookscope.telemetry.files import (
    METRICS_FILE,
    TRACES_FILE,
    JsonLinesMetricExporter,
    JsonLinesSpanExporter,
)

__all__ = [
    "OtlpProtocol",
    "Telemetry",
    "TelemetryConfigError",
    "configure",
]

logger = logging.getLogger(__name__)

OtlpProtocol = Literal["http/protobuf", "grpc"]

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


class TelemetryConfigError(ValueError):
    """``configure()`` was given (or found in the environment) settings it cannot use."""


# --- where each signal goes ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Route:
    """One signal's destination: an OTLP endpoint, or the embedded files when ``url`` is None."""

    signal: Signal
    protocol: OtlpProtocol
    url: str | None


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


def _target(route: _Route, directory: Path) -> Target:
    if route.url is None:
        name = TRACES_FILE if route.signal == "traces" else METRICS_FILE
        return Target.file(route.signal, str(directory / name))
    return Target.otlp(route.signal, route.url, route.protocol)


# --- the result ---------------------------------------------------------------------------


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
        guards: Sequence[ExportGuard] = (),
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

        Never blocks longer than ``timeout_s``, even with an exporter that hangs. A
        destination that failed lately is tried again (after a reachability probe) rather than
        skipped until its backoff window ends.
        """
        for guard in self._guards:
            guard.retry_now()
        milliseconds = int(timeout_s * 1000)
        steps: list[Callable[[], object]] = []
        for provider in (self.tracer_provider, self.meter_provider):
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
        steps: list[Callable[[], object]] = []
        tracer, meter = self._owned_tracer, self._owned_meter
        if tracer is not None:
            steps.append(tracer.shutdown)
        if meter is not None:  # after the tracer: its last export's self-metrics go out too
            steps.append(partial(meter.shutdown, timeout_millis=milliseconds))
        finished = run_bounded(steps, timeout_s, "shutdown")
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
    found = {"TracerProvider": installed_tracer, "MeterProvider": installed_meter}
    borrowed = [name for name, provider in found.items() if provider is not None]
    if borrowed:
        logger.info(
            "hookscope: using the %s the application installed; configure() does not replace it",
            " and ".join(borrowed),
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
        install_quiet_filter()

    resource = Resource.create({SERVICE_NAME: service_name} if service_name else None)
    health = ExportHealth()
    guards: list[ExportGuard] = []

    meter_provider: metrics.MeterProvider
    owned_meter: MeterProvider | None = None
    if installed_meter is None:
        inner = metric_sink or otlp_metric_exporter(
            metric_route.protocol, metric_route.url, headers
        )
        metric_exporter = GuardedMetricExporter(inner, health, _target(metric_route, folder))
        guards.append(metric_exporter.guard)
        reader = PeriodicExportingMetricReader(metric_exporter, export_interval_millis=interval_ms)
        meter_provider = owned_meter = MeterProvider(
            metric_readers=[reader], resource=resource, shutdown_on_exit=False
        )
        metrics_destination = metric_exporter.guard.target.text
    else:
        meter_provider, metrics_destination = installed_meter, "existing provider"
    health.bind(meter_provider)

    tracer_provider: trace.TracerProvider
    owned_tracer: TracerProvider | None = None
    if installed_tracer is None:
        with sdk_self_metrics():
            span_inner = span_sink or otlp_span_exporter(
                trace_route.protocol, trace_route.url, headers, meter_provider
            )
            span_exporter = GuardedSpanExporter(span_inner, health, _target(trace_route, folder))
            processor = BatchSpanProcessor(span_exporter, meter_provider=meter_provider)
        guards.append(span_exporter.guard)
        tracer_provider = owned_tracer = TracerProvider(
            resource=resource, shutdown_on_exit=False, meter_provider=meter_provider
        )
        owned_tracer.add_span_processor(processor)
        traces_destination = span_exporter.guard.target.text
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
