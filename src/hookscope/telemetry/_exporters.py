"""The exporter factory: the SDK's (or upstream's) exporter for each signal and destination.

``configure()`` decides where each signal goes; this module builds the exporter that sends it
there: OTLP over ``http/protobuf`` or ``grpc`` (the SDK's exporters), OTLP over ``http/json``
(:mod:`hookscope.telemetry._otlp_json`), or the console (the SDK's console exporters).
Every exporter is then wrapped in an export guard (:mod:`hookscope.telemetry._guard`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Final, Literal, TypeVar

from opentelemetry import metrics
from opentelemetry.sdk._logs.export import ConsoleLogRecordExporter, LogRecordExporter
from opentelemetry.sdk.environment_variables import (
    OTEL_EXPORTER_OTLP_HEADERS,
    OTEL_EXPORTER_OTLP_LOGS_HEADERS,
    OTEL_EXPORTER_OTLP_METRICS_HEADERS,
    OTEL_EXPORTER_OTLP_TRACES_HEADERS,
    OTEL_PYTHON_SDK_INTERNAL_METRICS_ENABLED,
)
from opentelemetry.sdk.metrics.export import ConsoleMetricExporter, MetricExporter
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SpanExporter

from hookscope.telemetry._endpoint import HttpStatus, watch_status

__all__ = [
    "OtlpProtocol",
    "console_log_exporter",
    "console_metric_exporter",
    "console_span_exporter",
    "otlp_log_exporter",
    "otlp_metric_exporter",
    "otlp_span_exporter",
    "sdk_self_metrics",
]

OtlpProtocol = Literal["http/protobuf", "http/json", "grpc"]

_ENV_LOCK: Final = threading.Lock()


@contextmanager
def sdk_self_metrics() -> Iterator[None]:
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


def _grpc_headers(headers: Mapping[str, str] | None, signal_variable: str) -> dict[str, str] | None:
    # The HTTP exporters merge given headers over the environment's; the gRPC ones replace
    # them, which would drop an auth header set in OTEL_EXPORTER_OTLP_HEADERS. Merge here.
    if not headers:
        return None  # the gRPC exporter reads the environment itself
    from opentelemetry.util.re import parse_env_headers

    raw = os.environ.get(signal_variable) or os.environ.get(OTEL_EXPORTER_OTLP_HEADERS, "")
    merged = dict(parse_env_headers(raw, liberal=True))
    merged.update({key.lower(): value for key, value in headers.items()})
    return merged


_E = TypeVar("_E")


def _watched(exporter: _E, status: HttpStatus) -> _E:
    watch_status(exporter, status)
    return exporter


def _session(status: HttpStatus) -> Any:
    """A ``requests`` session that notes every response's status in ``status``: so a failed
    export can say "this endpoint takes no metrics" rather than "the endpoint is down"."""
    import requests  # the OTLP/HTTP exporters' own dependency

    session = requests.Session()
    session.hooks["response"].append(status.record)
    return session


def otlp_span_exporter(
    protocol: OtlpProtocol,
    url: str | None,
    headers: Mapping[str, str] | None,
    meter_provider: metrics.MeterProvider,
) -> SpanExporter:
    """An OTLP span exporter for ``protocol`` sending to ``url`` (the full signal URL)."""
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
            OTLPSpanExporter as GrpcSpanExporter,
        )

        return GrpcSpanExporter(
            endpoint=url,
            headers=_grpc_headers(headers, OTEL_EXPORTER_OTLP_TRACES_HEADERS),
            meter_provider=meter_provider,
        )
    if protocol == "http/json":
        from hookscope.telemetry._otlp_json import JsonSpanExporter

        assert url is not None  # configure() always resolves the URL for http/json
        return _watched(JsonSpanExporter(url, headers, status := HttpStatus()), status)
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    status = HttpStatus()
    return _watched(
        OTLPSpanExporter(
            endpoint=url,
            headers=_dict(headers),
            meter_provider=meter_provider,
            session=_session(status),
        ),
        status,
    )


def otlp_metric_exporter(
    protocol: OtlpProtocol, url: str | None, headers: Mapping[str, str] | None
) -> MetricExporter:
    """An OTLP metric exporter for ``protocol`` sending to ``url`` (the full signal URL)."""
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import (
            OTLPMetricExporter as GrpcMetricExporter,
        )

        return GrpcMetricExporter(
            endpoint=url, headers=_grpc_headers(headers, OTEL_EXPORTER_OTLP_METRICS_HEADERS)
        )
    if protocol == "http/json":
        from hookscope.telemetry._otlp_json import JsonMetricExporter

        assert url is not None
        return _watched(JsonMetricExporter(url, headers, status := HttpStatus()), status)
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

    status = HttpStatus()
    return _watched(
        OTLPMetricExporter(endpoint=url, headers=_dict(headers), session=_session(status)), status
    )


def otlp_log_exporter(
    protocol: OtlpProtocol, url: str | None, headers: Mapping[str, str] | None
) -> LogRecordExporter:
    """An OTLP log record exporter for ``protocol`` sending to ``url`` (the full signal URL)."""
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc._log_exporter import (
            OTLPLogExporter as GrpcLogExporter,
        )

        return GrpcLogExporter(
            endpoint=url, headers=_grpc_headers(headers, OTEL_EXPORTER_OTLP_LOGS_HEADERS)
        )
    if protocol == "http/json":
        from hookscope.telemetry._otlp_json import JsonLogExporter

        assert url is not None
        return _watched(JsonLogExporter(url, headers, status := HttpStatus()), status)
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter

    status = HttpStatus()
    return _watched(
        OTLPLogExporter(endpoint=url, headers=_dict(headers), session=_session(status)), status
    )


def console_span_exporter() -> SpanExporter:
    """The SDK's console span exporter (one JSON document per span on standard output)."""
    return ConsoleSpanExporter()


def console_metric_exporter() -> MetricExporter:
    """The SDK's console metric exporter."""
    return ConsoleMetricExporter()


def console_log_exporter() -> LogRecordExporter:
    """The SDK's console log record exporter."""
    return ConsoleLogRecordExporter()


def _dict(headers: Mapping[str, str] | None) -> dict[str, str] | None:
    # OpenTelemetry 1.44's exporters are typed for a dict (1.45 takes any mapping).
    return None if headers is None else dict(headers)
