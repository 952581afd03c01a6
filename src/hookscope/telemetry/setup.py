"""``configure()``: OpenTelemetry providers for hookscope, from the standard ``OTEL_*`` variables.

One call gives an agent somewhere to send its telemetry::

    telemetry = hookscope.configure(service_name="coder")
    runner = HookRunner([OTelHook(), ...])      # uses the global providers configure() set
    ...
    telemetry.shutdown()                        # flushes; also runs at exit

Where each signal (traces, metrics, logs) goes, decided per signal:

* ``OTEL_SDK_DISABLED=true``: nowhere. Every provider is a no-op and nothing is installed.
* The application already installed a global provider for the signal (with ``set_global``):
  that provider, untouched. hookscope never replaces what an application set up.
* Otherwise the exporters ``OTEL_<SIGNAL>_EXPORTER`` names (``otlp``, ``console``, ``files``,
  ``prometheus`` for metrics, ``none``; see :mod:`hookscope.telemetry._settings`). Unset:
  OTLP when an endpoint is configured (``endpoint=``,
  ``OTEL_EXPORTER_OTLP_[<SIGNAL>_]ENDPOINT``), over ``http/protobuf`` (default),
  ``http/json`` or ``grpc``; else the embedded default:
  OTLP/JSON lines under ``directory`` (``traces.jsonl``, ``metrics.jsonl``, ``logs.jsonl``,
  rotated at ``max_file_bytes``; see :mod:`hookscope.telemetry.files`), which
  ``hookscope view`` reads.

Spans go through a ``BatchSpanProcessor``, metrics through a ``PeriodicExportingMetricReader``
(with a cardinality limit per stream, through an SDK view: series past it are reported as one
point with ``otel.metric.overflow=true``), log records (the GenAI events) through a
``BatchLogRecordProcessor``.

Globals: with ``set_global=True`` (the default) ``configure()`` installs each provider it builds
as the global one, but only where none was installed yet: the OpenTelemetry API allows setting
a global once per process, so the first configuration wins and a later ``configure()`` returns
a :class:`Telemetry` that borrows the installed providers. With ``set_global=False`` globals are
neither read nor written: pass ``telemetry.tracer_provider`` and ``telemetry.meter_provider``
to ``OTelHook`` yourself.

Telemetry never slows or breaks the agent: spans, metrics and logs leave through background
threads, and every exporter is guarded (see :mod:`hookscope.telemetry._guard`): failures are
logged once and counted (``hookscope.telemetry.export.failures``,
``hookscope.telemetry.export.dropped``), and a circuit breaker with a reachability probe keeps
a collector that is down from costing the agent anything. For the components it builds,
hookscope also turns on the SDK's self-metrics unless
``OTEL_PYTHON_SDK_INTERNAL_METRICS_ENABLED`` is set.
"""

from __future__ import annotations

import inspect
import logging
import math
import os
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from opentelemetry import _logs, metrics, trace
from opentelemetry._logs import NoOpLoggerProvider
from opentelemetry._logs._internal import ProxyLoggerProvider
from opentelemetry.metrics import NoOpMeterProvider
from opentelemetry.metrics._internal import _ProxyMeterProvider
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor, LogRecordExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    MetricExporter,
    MetricReader,
    PeriodicExportingMetricReader,
)
from opentelemetry.sdk.metrics.view import View
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.trace import NoOpTracerProvider, ProxyTracerProvider

from hookscope.pricing import install_prices
from hookscope.telemetry import _exporters
from hookscope.telemetry._endpoint import Signal, Target
from hookscope.telemetry._exporters import OtlpProtocol, sdk_self_metrics
from hookscope.telemetry._guard import (
    ExportGuard,
    ExportHealth,
    GuardedLogExporter,
    GuardedMetricExporter,
    GuardedSpanExporter,
)
from hookscope.telemetry._settings import (
    SIGNALS,
    FileLimits,
    Route,
    TelemetryConfigError,
    cardinality_limit,
    check_batch_variables,
    file_limits,
    prometheus_address,
    routes,
    sdk_disabled,
)
from hookscope.telemetry._telemetry import Telemetry
from hookscope.telemetry.files import (
    LOGS_FILE,
    METRICS_FILE,
    TRACES_FILE,
    JsonLinesLogExporter,
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

_FILES = {"traces": TRACES_FILE, "metrics": METRICS_FILE, "logs": LOGS_FILE}
_EXISTING = "existing provider"


# --- configure() --------------------------------------------------------------------------


def _installed(signal: Signal) -> Any:
    """The global provider the application installed for ``signal``, or None."""
    if signal == "traces":
        tracer_provider = trace.get_tracer_provider()
        return None if isinstance(tracer_provider, ProxyTracerProvider) else tracer_provider
    if signal == "metrics":
        meter_provider = metrics.get_meter_provider()
        return None if isinstance(meter_provider, _ProxyMeterProvider) else meter_provider
    logger_provider = _logs.get_logger_provider()
    return None if isinstance(logger_provider, ProxyLoggerProvider) else logger_provider


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


class _Builder:
    """Builds exporters and remembers every component, so a failure can undo them all."""

    def __init__(
        self,
        folder: Path,
        limits: FileLimits,
        headers: Mapping[str, str] | None,
        health: ExportHealth,
    ) -> None:
        self.folder = folder
        self.limits = limits
        self.headers = headers
        self.health = health
        self.guards: list[ExportGuard] = []
        self.cleanups: list[Callable[[], object]] = []
        self.closers: list[Callable[[], object]] = []  # stopped by Telemetry.shutdown
        self.scrape_url = ""

    def target(self, route: Route) -> Target:
        if route.kind == "files":
            return Target.file(route.signal, str(self.folder / _FILES[route.signal]))
        if route.kind == "console":
            return Target.console(route.signal)
        if route.kind == "prometheus":
            return Target(route.signal, self.scrape_url, "Check the scrape endpoint")
        assert route.url is not None
        return Target.otlp(route.signal, route.url, route.protocol)

    def files_kwargs(self) -> dict[str, Any]:
        return {
            "directory": self.folder,
            "max_file_bytes": self.limits.max_file_bytes,
            "keep_files": self.limits.keep_files,
        }

    def span_exporter(self, route: Route, meter_provider: metrics.MeterProvider) -> SpanExporter:
        inner: SpanExporter
        if route.kind == "files":
            inner = JsonLinesSpanExporter(**self.files_kwargs())
        elif route.kind == "console":
            inner = _exporters.console_span_exporter()
        else:
            inner = _exporters.otlp_span_exporter(
                route.protocol, route.url, self.headers, meter_provider
            )
        self.cleanups.append(inner.shutdown)
        guarded = GuardedSpanExporter(inner, self.health, self.target(route))
        self.guards.append(guarded.guard)
        return guarded

    def metric_exporter(self, route: Route) -> MetricExporter:
        inner: MetricExporter
        if route.kind == "files":
            inner = JsonLinesMetricExporter(**self.files_kwargs())
        elif route.kind == "console":
            inner = _exporters.console_metric_exporter()
        else:
            inner = _exporters.otlp_metric_exporter(route.protocol, route.url, self.headers)
        self.cleanups.append(inner.shutdown)
        guarded = GuardedMetricExporter(inner, self.health, self.target(route))
        self.guards.append(guarded.guard)
        return guarded

    def log_exporter(self, route: Route) -> LogRecordExporter:
        inner: LogRecordExporter
        if route.kind == "files":
            inner = JsonLinesLogExporter(**self.files_kwargs())
        elif route.kind == "console":
            inner = _exporters.console_log_exporter()
        else:
            inner = _exporters.otlp_log_exporter(route.protocol, route.url, self.headers)
        self.cleanups.append(inner.shutdown)
        guarded = GuardedLogExporter(inner, self.health, self.target(route))
        self.guards.append(guarded.guard)
        return guarded

    def prometheus_reader(self) -> MetricReader:
        """A scrape endpoint (``OTEL_METRICS_EXPORTER=prometheus``), with its own registry."""
        host, port = prometheus_address()
        try:
            from prometheus_client import CollectorRegistry, start_http_server

            from hookscope.telemetry._scrape import ExemplarPrometheusReader
        except ImportError:
            raise TelemetryConfigError(
                "OTEL_METRICS_EXPORTER=prometheus needs the 'prometheus' extra: "
                "pip install 'hookscope[prometheus]'"
            ) from None
        registry = CollectorRegistry()  # per configuration: no clash with other registries
        try:
            server, _ = start_http_server(port, addr=host, registry=registry)
        except OSError as error:
            raise TelemetryConfigError(
                f"cannot serve Prometheus metrics on {host}:{port} ({error.strerror or error}); "
                "set OTEL_EXPORTER_PROMETHEUS_PORT to a free port"
            ) from None
        self.closers.append(server.shutdown)
        self.closers.append(server.server_close)
        self.cleanups.extend((server.shutdown, server.server_close))
        self.scrape_url = f"http://{host}:{server.server_port}/metrics (Prometheus scrape)"
        return ExemplarPrometheusReader(registry=registry)

    def undo(self) -> None:
        """Stop whatever was built (in reverse), quietly: configure() is failing anyway."""
        for cleanup in reversed(self.cleanups):
            try:
                cleanup()
            except Exception:  # the original error is what the caller needs
                logger.debug("hookscope: cleanup after a failed configure()", exc_info=True)


def _destination(builder: _Builder, chosen: Sequence[Route]) -> str:
    return ", ".join(builder.target(route).text for route in chosen) or "none"


def configure(
    service_name: str | None = None,
    endpoint: str | None = None,
    protocol: str | None = None,
    headers: Mapping[str, str] | None = None,
    directory: str | os.PathLike[str] = ".hookscope",
    metric_interval_s: float | None = None,
    *,
    set_global: bool = True,
    max_file_bytes: int | None = None,
    keep_files: int | None = None,
    metric_cardinality_limit: int | None = None,
    prices: Mapping[str, Any] | None = None,
) -> Telemetry:
    """Build (or find) the tracer, meter and logger providers hookscope's telemetry goes to.

    Arguments win over the environment; anything not given is read from the standard
    ``OTEL_*`` variables (``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES``,
    ``OTEL_{TRACES,METRICS,LOGS}_EXPORTER``,
    ``OTEL_EXPORTER_OTLP_[TRACES_|METRICS_|LOGS_]ENDPOINT`` / ``_PROTOCOL`` / ``_HEADERS`` /
    ``_TIMEOUT``, ``OTEL_TRACES_SAMPLER``, ``OTEL_BSP_*``, ``OTEL_BLRP_*``,
    ``OTEL_METRIC_EXPORT_INTERVAL``, ``OTEL_SDK_DISABLED``) and hookscope's
    ``HOOKSCOPE_MAX_FILE_BYTES``, ``HOOKSCOPE_KEEP_FILES`` and
    ``HOOKSCOPE_METRIC_CARDINALITY_LIMIT``. See the module documentation for where each
    signal goes.

    Args:
        service_name: ``service.name`` of the resource (else ``OTEL_SERVICE_NAME``).
        endpoint: Base URL of an OTLP receiver, as ``OTEL_EXPORTER_OTLP_ENDPOINT``
            (``http://host:4318``; hookscope adds ``/v1/traces``, ``/v1/metrics`` and
            ``/v1/logs``), or ``host:4317`` for gRPC.
        protocol: ``"http/protobuf"`` (default), ``"http/json"`` or ``"grpc"``.
        headers: Headers sent with every OTLP request (merged over ``OTEL_EXPORTER_OTLP_HEADERS``).
        directory: Where the embedded default writes its files when no endpoint is set;
            created (mode 0700) if missing.
        metric_interval_s: Seconds between metric exports (else
            ``OTEL_METRIC_EXPORT_INTERVAL``, default 60).
        set_global: Install the providers built as the global ones where none is installed
            yet, and use installed ones instead of building; ``False`` leaves globals alone.
        max_file_bytes: Rotate an embedded-default file before it grows past this many bytes
            (at least 4096; default 16 MiB).
        keep_files: Rotated files kept per signal (default 4; 0 keeps none).
        metric_cardinality_limit: Distinct attribute sets per metric stream (default 2000);
            more are reported as one point with ``otel.metric.overflow=true``.
        prices: The process-wide price table for ``gen_ai.usage.cost``: model name → USD per
            million tokens (``{"input": 3.0, "output": 15.0}``, optional ``cache_read`` and
            ``cache_write``); it wins over genai-prices' data. A negative or non-numeric
            price is a ``ConfigError`` and nothing is configured.

    Returns:
        The providers and a way to flush and shut them down.

    Raises:
        TelemetryConfigError: (a ``HookscopeError`` and ``ValueError``) an unknown exporter or
            protocol, a malformed endpoint, a bad number, or a directory that cannot be
            written. Nothing is left running.
    """
    if prices is not None:
        install_prices(prices, "configure(prices=...)")
    disabled, warning = sdk_disabled()
    if warning:
        logger.warning("hookscope: %s", warning)
    if disabled:
        logger.info("hookscope: OTEL_SDK_DISABLED=true, telemetry is off")
        return Telemetry(
            NoOpTracerProvider(),
            NoOpMeterProvider(),
            "disabled",
            "disabled",
            logger_provider=NoOpLoggerProvider(),
            logs_destination="disabled",
        )
    # Everything is validated before anything is built.
    chosen = {signal: routes(signal, endpoint, protocol) for signal in SIGNALS}
    interval_ms = _interval_ms(metric_interval_s)
    limits = file_limits(max_file_bytes, keep_files)
    cardinality = cardinality_limit(metric_cardinality_limit)
    check_batch_variables()
    folder = Path(directory).absolute()

    installed = {signal: _installed(signal) if set_global else None for signal in SIGNALS}
    borrowed = [signal for signal, provider in installed.items() if provider is not None]
    if borrowed:
        logger.info(
            "hookscope: using the %s provider(s) the application installed; configure() does "
            "not replace them",
            ", ".join(borrowed),
        )
    builder = _Builder(folder, limits, headers, ExportHealth())
    try:
        return _build(
            builder, chosen, installed, service_name, interval_ms, cardinality, set_global
        )
    except OSError as error:
        builder.undo()
        raise _file_error(folder, error) from error
    except ValueError as error:  # an exporter refused a setting the checks above let through
        builder.undo()
        if isinstance(error, TelemetryConfigError):
            raise
        raise TelemetryConfigError(f"{error}; fix the setting or unset it") from None
    except BaseException:
        builder.undo()
        raise


def _build(
    builder: _Builder,
    chosen: Mapping[Signal, Sequence[Route]],
    installed: Mapping[Signal, Any],
    service_name: str | None,
    interval_ms: float | None,
    cardinality: int,
    set_global: bool,
) -> Telemetry:
    resource = Resource.create({SERVICE_NAME: service_name} if service_name else None)

    meter_provider: metrics.MeterProvider = installed["metrics"]
    owned_meter: MeterProvider | None = None
    metrics_destination = _EXISTING
    if meter_provider is None:
        readers: list[MetricReader] = [
            builder.prometheus_reader()
            if route.kind == "prometheus"
            else PeriodicExportingMetricReader(
                builder.metric_exporter(route), export_interval_millis=interval_ms
            )
            for route in chosen["metrics"]
        ]
        meter_provider = owned_meter = MeterProvider(
            metric_readers=readers,
            resource=resource,
            shutdown_on_exit=False,
            views=_cardinality_views(cardinality),
        )
        builder.cleanups.append(partial(owned_meter.shutdown, timeout_millis=1000))
        metrics_destination = _destination(builder, chosen["metrics"])
    builder.health.bind(meter_provider)

    tracer_provider: trace.TracerProvider = installed["traces"]
    owned_tracer: TracerProvider | None = None
    traces_destination = _EXISTING
    if tracer_provider is None:
        owned_tracer = TracerProvider(
            resource=resource, shutdown_on_exit=False, meter_provider=meter_provider
        )
        tracer_provider = owned_tracer
        builder.cleanups.append(owned_tracer.shutdown)
        with sdk_self_metrics():
            for route in chosen["traces"]:
                exporter = builder.span_exporter(route, meter_provider)
                owned_tracer.add_span_processor(
                    BatchSpanProcessor(exporter, meter_provider=meter_provider)
                )
        traces_destination = _destination(builder, chosen["traces"])

    logger_provider: _logs.LoggerProvider = installed["logs"]
    owned_logger: LoggerProvider | None = None
    logs_destination = _EXISTING
    if logger_provider is None:
        owned_logger = LoggerProvider(
            resource=resource, shutdown_on_exit=False, meter_provider=meter_provider
        )
        logger_provider = owned_logger
        builder.cleanups.append(owned_logger.shutdown)
        with sdk_self_metrics():
            for route in chosen["logs"]:
                owned_logger.add_log_record_processor(
                    BatchLogRecordProcessor(
                        builder.log_exporter(route), meter_provider=meter_provider
                    )
                )
        logs_destination = _destination(builder, chosen["logs"])

    if set_global:
        if owned_tracer is not None:
            trace.set_tracer_provider(owned_tracer)
        if owned_meter is not None:
            metrics.set_meter_provider(owned_meter)
        if owned_logger is not None:
            _logs.set_logger_provider(owned_logger)
    logger.info(
        "hookscope: traces to %s, metrics to %s, logs to %s",
        traces_destination,
        metrics_destination,
        logs_destination,
    )
    return Telemetry(
        tracer_provider,
        meter_provider,
        traces_destination,
        metrics_destination,
        logger_provider=logger_provider,
        logs_destination=logs_destination,
        owned=(owned_tracer, owned_logger, owned_meter),
        guards=builder.guards,
        closers=builder.closers,
    )


def _cardinality_views(cardinality: int) -> list[View]:
    """The view that caps every instrument's attribute sets at ``cardinality``.

    OpenTelemetry SDK 1.45 added the per-view limit; on 1.44 (the release google-adk pins, and
    hookscope's floor) there is none, and the instruments' own guard
    (:class:`~hookscope.telemetry.instruments.CardinalityGuard`) is what keeps series bounded.
    """
    if "aggregation_cardinality_limit" not in inspect.signature(View.__init__).parameters:
        return []
    limit: dict[str, Any] = {"aggregation_cardinality_limit": cardinality}
    return [View(instrument_name="*", **limit)]
