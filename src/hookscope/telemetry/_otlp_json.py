"""OTLP over ``http/json``: upstream's JSON encoding, posted with the standard library.

``OTEL_EXPORTER_OTLP_PROTOCOL=http/json`` is part of the OTLP specification. The requests are
encoded by ``opentelemetry-exporter-otlp-json-common`` (the OpenTelemetry project's own
OTLP/JSON encoders), so no OTLP/JSON is written by hand here. The upstream
``opentelemetry-exporter-otlp-json-http`` exporter would do the posting too, but its releases
pin ``opentelemetry-exporter-otlp-common`` to a version the protobuf exporters of the same SDK
release do not accept, so the two cannot be installed together; the posting is a few lines.

The exporters read the standard variables as the protobuf ones do: headers
(``OTEL_EXPORTER_OTLP_[<SIGNAL>_]HEADERS``, merged under those given), timeout
(``…_TIMEOUT``, seconds, default 10) and compression (``…_COMPRESSION``: ``gzip``,
``deflate`` or ``none``). They do not retry: the export guard's circuit breaker decides when
to try again (:mod:`hookscope.telemetry._guard`).
"""

from __future__ import annotations

import gzip
import importlib
import logging
import os
import urllib.error
import urllib.request
import zlib
from collections.abc import Mapping, Sequence
from typing import Any, Final, final

from opentelemetry.exporter.otlp.json.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.json.common.metrics_encoder import encode_metrics
from opentelemetry.exporter.otlp.json.common.trace_encoder import encode_spans
from opentelemetry.sdk._logs import ReadableLogRecord
from opentelemetry.sdk._logs.export import LogRecordExporter, LogRecordExportResult
from opentelemetry.sdk.metrics.export import MetricExporter, MetricExportResult, MetricsData
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.util.re import parse_env_headers

from hookscope._version import __version__
from hookscope.redaction import mask_url
from hookscope.telemetry._endpoint import HttpStatus, Signal
from hookscope.types import HookscopeError

__all__ = [
    "JsonLogExporter",
    "JsonMetricExporter",
    "JsonPoster",
    "JsonSpanExporter",
    "check_settings",
]

logger = logging.getLogger(__name__)

try:  # OpenTelemetry >= 1.45: the OTLP exporters share them in opentelemetry-exporter-otlp-common
    _aggregation: Any = importlib.import_module("opentelemetry.exporter.otlp.common._aggregation")
except ImportError:  # 1.44 (the release google-adk pins): the JSON encoders carry their own copy
    _aggregation = importlib.import_module("opentelemetry.exporter.otlp.json.common._internal")
#: The protobuf exporters' reading of the temporality and histogram variables.
_get_temporality = _aggregation._get_temporality
_get_aggregation = _aggregation._get_aggregation

_DEFAULT_TIMEOUT_S: Final = 10.0
_COMPRESSIONS: Final = ("none", "gzip", "deflate")


class _SettingError(HookscopeError, ValueError):
    """A variable holds a value the exporter cannot use (configure() reports it)."""


def _setting(signal: Signal, suffix: str) -> tuple[str, str] | None:
    for name in (f"OTEL_EXPORTER_OTLP_{signal.upper()}_{suffix}", f"OTEL_EXPORTER_OTLP_{suffix}"):
        value = os.environ.get(name, "").strip()
        if value:
            return name, value
    return None


def check_settings(signal: Signal) -> None:
    """Raise ``ValueError`` naming the variable when a timeout or compression is unusable."""
    timeout = _setting(signal, "TIMEOUT")
    if timeout is not None:
        try:
            seconds = float(timeout[1])
        except ValueError:
            seconds = -1.0
        if not seconds > 0:
            raise _SettingError(f"{timeout[0]}={timeout[1]!r} is not a positive number of seconds")
    compression = _setting(signal, "COMPRESSION")
    if compression is not None and compression[1].lower() not in _COMPRESSIONS:
        raise _SettingError(
            f"{compression[0]}={compression[1]!r} is not supported; use one of "
            + ", ".join(_COMPRESSIONS)
        )


@final
class JsonPoster:
    """POSTs one encoded OTLP/JSON request to ``url``; True when the receiver accepted it.

    Args:
        signal: Which signal's variables to read.
        url: The full signal URL (``…/v1/traces``).
        headers: Sent with every request, over ``OTEL_EXPORTER_OTLP_[<SIGNAL>_]HEADERS``.

    Raises:
        ValueError: a timeout or compression variable holds an unusable value.
    """

    __slots__ = ("_compression", "_headers", "_timeout_s", "status", "url")

    def __init__(
        self,
        signal: Signal,
        url: str,
        headers: Mapping[str, str] | None,
        status: HttpStatus | None = None,
    ) -> None:
        check_settings(signal)
        self.url = url
        #: The latest response's HTTP status, for the guard's failure message.
        self.status = status or HttpStatus()
        raw = _setting(signal, "HEADERS")
        merged = dict(parse_env_headers(raw[1] if raw else "", liberal=True))
        merged.update({key.lower(): value for key, value in (headers or {}).items()})
        merged["content-type"] = "application/json"
        merged.setdefault("user-agent", f"hookscope/{__version__}")
        timeout = _setting(signal, "TIMEOUT")
        self._timeout_s = float(timeout[1]) if timeout else _DEFAULT_TIMEOUT_S
        compression = _setting(signal, "COMPRESSION")
        self._compression = compression[1].lower() if compression else "none"
        if self._compression != "none":
            merged["content-encoding"] = self._compression
        self._headers = merged

    def post(self, payload: str) -> bool:
        """Send ``payload``; a refusal or an error is logged (with the URL masked)."""
        body = payload.encode()
        if self._compression == "gzip":
            body = gzip.compress(body)
        elif self._compression == "deflate":
            body = zlib.compress(body)
        request = urllib.request.Request(self.url, body, self._headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self._timeout_s) as response:
                response.read()
                self.status.code = response.status
        except urllib.error.HTTPError as error:
            self.status.code = error.code
            logger.error("OTLP/JSON export to %s refused: HTTP %d", mask_url(self.url), error.code)
            return False
        except OSError as error:  # refused, timed out, TLS
            logger.error("OTLP/JSON export to %s failed: %s", mask_url(self.url), error)
            return False
        return True


@final
class JsonSpanExporter(SpanExporter):
    """Exports spans as OTLP/JSON over HTTP."""

    def __init__(
        self, url: str, headers: Mapping[str, str] | None = None, status: HttpStatus | None = None
    ) -> None:
        self._poster = JsonPoster("traces", url, headers, status)

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        ok = self._poster.post(encode_spans(spans).to_json())
        return SpanExportResult.SUCCESS if ok else SpanExportResult.FAILURE

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True  # nothing is buffered here

    def shutdown(self) -> None:
        return None


@final
class JsonMetricExporter(MetricExporter):
    """Exports metrics as OTLP/JSON over HTTP, with the OTLP exporters' preferences.

    Temporality and histogram aggregation follow
    ``OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE`` and
    ``OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION``, read by the same upstream
    functions the protobuf exporters use.
    """

    def __init__(
        self, url: str, headers: Mapping[str, str] | None = None, status: HttpStatus | None = None
    ) -> None:
        super().__init__(
            preferred_temporality=_get_temporality(None),
            preferred_aggregation=_get_aggregation(None),
        )
        self._poster = JsonPoster("metrics", url, headers, status)

    def export(
        self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: Any
    ) -> MetricExportResult:
        ok = self._poster.post(encode_metrics(metrics_data).to_json())
        return MetricExportResult.SUCCESS if ok else MetricExportResult.FAILURE

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        return True

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        return None


@final
class JsonLogExporter(LogRecordExporter):
    """Exports log records as OTLP/JSON over HTTP."""

    def __init__(
        self, url: str, headers: Mapping[str, str] | None = None, status: HttpStatus | None = None
    ) -> None:
        self._poster = JsonPoster("logs", url, headers, status)

    def export(self, batch: Sequence[ReadableLogRecord]) -> LogRecordExportResult:
        ok = self._poster.post(encode_logs(batch).to_json())
        return LogRecordExportResult.SUCCESS if ok else LogRecordExportResult.FAILURE

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True

    def shutdown(self) -> None:
        return None
