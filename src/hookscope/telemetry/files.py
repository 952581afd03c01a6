"""The embedded telemetry sink: OTLP-JSON lines under a directory, and their readers.

When no OTLP endpoint is configured, :func:`hookscope.telemetry.setup.configure` writes
telemetry here instead of dropping it: one file per signal (:data:`TRACES_FILE`,
:data:`METRICS_FILE`), one line per export batch. Each line is one OTLP export request
(``ExportTraceServiceRequest`` / ``ExportMetricsServiceRequest``) in the OTLP/JSON encoding:
lowerCamelCase keys, trace and span ids as hex strings, enums as integers, 64-bit integers as
strings. The OpenTelemetry Collector's ``otlpjsonfile`` receiver reads the same format.

Writes are append-only and line-atomic: a line is written whole under an exclusive file lock,
and a write that fails half-way (disk full) is cut back, so a file never holds half a line
except while a writer is killed in the middle of a ``write``. The readers skip such a trailing
partial line.

:func:`read_spans` and :func:`read_metrics` turn the files back into flat Python records
(snake_case keys, decoded attribute values) for ``hookscope view`` and tests.
"""

from __future__ import annotations

import base64
import json
import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, final

from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common.metrics_encoder import encode_metrics
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.metrics.export import (
    MetricExporter,
    MetricExportResult,
    MetricsData,
)
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

try:  # POSIX: an exclusive lock keeps lines whole when several processes share a directory.
    import fcntl
except ImportError:  # pragma: no cover - Windows: one writer per directory
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "METRICS_FILE",
    "TRACES_FILE",
    "JsonLinesMetricExporter",
    "JsonLinesSpanExporter",
    "TelemetryFileError",
    "read_metrics",
    "read_spans",
]

TRACES_FILE: Final = "traces.jsonl"
METRICS_FILE: Final = "metrics.jsonl"

_ID_KEYS: Final = frozenset({"traceId", "spanId", "parentSpanId"})
_SPAN_KINDS: Final = ("UNSPECIFIED", "INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER")
_STATUS_CODES: Final = ("UNSET", "OK", "ERROR")
_TEMPORALITIES: Final = ("unspecified", "delta", "cumulative")
_METRIC_TYPES: Final = {
    "sum": "sum",
    "gauge": "gauge",
    "histogram": "histogram",
    "exponentialHistogram": "exponential_histogram",
    "summary": "summary",
}


class TelemetryFileError(ValueError):
    """A telemetry file holds a line that is not an OTLP/JSON export request."""


# --- writing ------------------------------------------------------------------------------


@final
class _LineFile:
    """An append-only file that receives whole lines or nothing.

    Args:
        path: The file; created (mode 0644) if missing. Its directory must exist.

    Raises:
        OSError: the file cannot be opened for appending.
    """

    __slots__ = ("_fd", "_lock", "path")

    def __init__(self, path: Path) -> None:
        self.path = path
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
        self._fd: int | None = os.open(path, flags, 0o644)
        self._lock = threading.Lock()

    def append(self, line: bytes) -> None:
        """Append ``line`` (which must end with a newline) as one unit.

        Raises:
            OSError: the write failed; the file is left as it was before the call.
            ValueError: the file is closed or ``line`` does not end with a newline.
        """
        if not line.endswith(b"\n"):
            raise ValueError("a line must end with a newline")
        with self._lock:
            fd = self._fd
            if fd is None:
                raise ValueError(f"{self.path} is closed")
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                size = os.fstat(fd).st_size
                try:
                    view = memoryview(line)
                    while view:  # os.write may write less than asked (signals, full disk)
                        view = view[os.write(fd, view) :]
                except OSError:
                    os.ftruncate(fd, size)  # never leave half a line behind
                    raise
            finally:
                if fcntl is not None:
                    fcntl.flock(fd, fcntl.LOCK_UN)

    def sync(self) -> None:
        """Ask the OS to put what was written on disk (``fsync``)."""
        with self._lock:
            if self._fd is not None:
                os.fsync(self._fd)

    def close(self) -> None:
        """Sync and close the file; later appends raise ``ValueError``."""
        with self._lock:
            fd, self._fd = self._fd, None
        if fd is not None:
            try:
                os.fsync(fd)
            finally:
                os.close(fd)


def _hex_ids(value: Any) -> Any:
    """Rewrite base64 trace/span ids (ProtoJSON's ``bytes``) as hex, as OTLP/JSON requires."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key in _ID_KEYS and isinstance(item, str):
                value[key] = base64.b64decode(item).hex()
            else:
                _hex_ids(item)
    elif isinstance(value, list):
        for item in value:
            _hex_ids(item)
    return value


def _to_otlp_json(
    request: ExportTraceServiceRequest | ExportMetricsServiceRequest,
) -> dict[str, Any]:
    """An OTLP export request as the OTLP/JSON mapping of it (hex ids, integer enums)."""
    as_dict = json_format.MessageToDict(request, use_integers_for_enums=True)
    return _hex_ids(as_dict)  # type: ignore[no-any-return]


def _line(request: ExportTraceServiceRequest | ExportMetricsServiceRequest) -> bytes:
    return json.dumps(_to_otlp_json(request), separators=(",", ":")).encode() + b"\n"


@final
class JsonLinesSpanExporter(SpanExporter):
    """Append each batch of spans to ``directory/traces.jsonl`` as one OTLP/JSON line.

    Args:
        directory: Where the file lives; created if missing.

    Raises:
        OSError: the directory or file cannot be created or opened for appending.
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        path = Path(directory)
        path.mkdir(parents=True, exist_ok=True)
        self._file = _LineFile(path / TRACES_FILE)

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Write one line; an I/O error is a failed export (the caller counts it)."""
        try:
            self._file.append(_line(encode_spans(spans)))
        except (OSError, ValueError):
            return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Sync the file to disk."""
        try:
            self._file.sync()
        except OSError:
            return False
        return True

    def shutdown(self) -> None:
        """Sync and close the file."""
        self._file.close()


@final
class JsonLinesMetricExporter(MetricExporter):
    """Append each metrics collection to ``directory/metrics.jsonl`` as one OTLP/JSON line.

    Points are cumulative (the OTLP default), so the last line holds every series' totals.

    Args:
        directory: Where the file lives; created if missing.

    Raises:
        OSError: the directory or file cannot be created or opened for appending.
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        super().__init__()
        path = Path(directory)
        path.mkdir(parents=True, exist_ok=True)
        self._file = _LineFile(path / METRICS_FILE)

    def export(
        self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: Any
    ) -> MetricExportResult:
        """Write one line; an I/O error is a failed export (the caller counts it)."""
        try:
            self._file.append(_line(encode_metrics(metrics_data)))
        except (OSError, ValueError):
            return MetricExportResult.FAILURE
        return MetricExportResult.SUCCESS

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        """Sync the file to disk."""
        try:
            self._file.sync()
        except OSError:
            return False
        return True

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        """Sync and close the file."""
        self._file.close()


# --- reading ------------------------------------------------------------------------------


def _requests(path: Path) -> Iterator[dict[str, Any]]:
    """The export requests in ``path``, in write order; a trailing partial line is skipped."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return
    lines = data.split(b"\n")
    # The last element is b"" after a complete last line; anything else is a line still being
    # written (or cut by a killed writer): not telemetry yet.
    for number, line in enumerate(lines[:-1], start=1):
        if not line.strip():
            continue
        try:
            request = json.loads(line)
        except ValueError as error:
            raise TelemetryFileError(
                f"{path}:{number}: not an OTLP/JSON line ({error}); "
                "move the file away to start afresh"
            ) from None
        if not isinstance(request, dict):
            raise TelemetryFileError(f"{path}:{number}: expected a JSON object")
        yield request


def _value(any_value: Mapping[str, Any]) -> Any:
    """Decode an OTLP/JSON ``AnyValue``."""
    if "stringValue" in any_value:
        return any_value["stringValue"]
    if "boolValue" in any_value:
        return bool(any_value["boolValue"])
    if "intValue" in any_value:
        return int(any_value["intValue"])
    if "doubleValue" in any_value:
        return float(any_value["doubleValue"])
    if "arrayValue" in any_value:
        return [_value(item) for item in any_value["arrayValue"].get("values", [])]
    if "kvlistValue" in any_value:
        return _attributes(any_value["kvlistValue"].get("values", []))
    if "bytesValue" in any_value:
        return base64.b64decode(any_value["bytesValue"])
    return None


def _attributes(key_values: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    return {kv["key"]: _value(kv.get("value", {})) for kv in key_values}


def _scope(scope: Mapping[str, Any]) -> dict[str, str]:
    return {"name": scope.get("name", ""), "version": scope.get("version", "")}


def _directory(directory: str | os.PathLike[str]) -> Path:
    path = Path(directory)
    if not path.is_dir():
        raise FileNotFoundError(
            f"no telemetry directory {str(path)!r}: hookscope.configure() writes one when no "
            "OTLP endpoint is set; pass the directory it was given"
        )
    return path


def _nanos(value: Any) -> int:
    return int(value) if value is not None else 0


def _span(
    span: Mapping[str, Any], resource: dict[str, Any], scope: dict[str, str]
) -> dict[str, Any]:
    status = span.get("status", {})
    return {
        "trace_id": span.get("traceId", ""),
        "span_id": span.get("spanId", ""),
        "parent_span_id": span.get("parentSpanId") or None,
        "name": span.get("name", ""),
        "kind": _SPAN_KINDS[span.get("kind", 0)],
        "start_time_unix_nano": _nanos(span.get("startTimeUnixNano")),
        "end_time_unix_nano": _nanos(span.get("endTimeUnixNano")),
        "attributes": _attributes(span.get("attributes", [])),
        "events": [
            {
                "name": event.get("name", ""),
                "time_unix_nano": _nanos(event.get("timeUnixNano")),
                "attributes": _attributes(event.get("attributes", [])),
            }
            for event in span.get("events", [])
        ],
        "links": [
            {
                "trace_id": link.get("traceId", ""),
                "span_id": link.get("spanId", ""),
                "attributes": _attributes(link.get("attributes", [])),
            }
            for link in span.get("links", [])
        ],
        "status": {
            "code": _STATUS_CODES[status.get("code", 0)],
            "message": status.get("message", ""),
        },
        "resource": resource,
        "scope": scope,
    }


def read_spans(directory: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every span written under ``directory``, in the order they were exported.

    Each span is a flat dict: ``trace_id``, ``span_id``, ``parent_span_id`` (hex, ``None``
    for a root), ``name``, ``kind`` (``"INTERNAL"`` …), ``start_time_unix_nano``,
    ``end_time_unix_nano``, ``attributes``, ``events`` (``name``, ``time_unix_nano``,
    ``attributes``), ``links`` (``trace_id``, ``span_id``, ``attributes``), ``status``
    (``code`` ``"UNSET"``/``"OK"``/``"ERROR"``, ``message``), ``resource`` (its attributes)
    and ``scope`` (``name``, ``version``).

    Raises:
        FileNotFoundError: ``directory`` does not exist.
        TelemetryFileError: a complete line is not OTLP/JSON.
    """
    spans: list[dict[str, Any]] = []
    for request in _requests(_directory(directory) / TRACES_FILE):
        for resource_spans in request.get("resourceSpans", []):
            resource = _attributes(resource_spans.get("resource", {}).get("attributes", []))
            for scope_spans in resource_spans.get("scopeSpans", []):
                scope = _scope(scope_spans.get("scope", {}))
                spans.extend(_span(s, resource, scope) for s in scope_spans.get("spans", []))
    return spans


def _number(point: Mapping[str, Any]) -> int | float:
    if "asInt" in point:
        return int(point["asInt"])
    return float(point.get("asDouble", 0.0))


def _histogram(point: Mapping[str, Any]) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "count": int(point.get("count", 0)),
        "sum": float(point.get("sum", 0.0)),
        "bucket_counts": [int(count) for count in point.get("bucketCounts", [])],
        "explicit_bounds": [float(bound) for bound in point.get("explicitBounds", [])],
    }
    for key in ("min", "max"):
        if key in point:
            fields[key] = float(point[key])
    return fields


def _raw(point: Mapping[str, Any]) -> dict[str, Any]:
    # Exponential histograms and summaries are kept in their OTLP/JSON form.
    return {key: value for key, value in point.items() if key not in ("attributes",)}


_POINT_FIELDS: Final[dict[str, Callable[[Mapping[str, Any]], dict[str, Any]]]] = {
    "sum": lambda point: {"value": _number(point)},
    "gauge": lambda point: {"value": _number(point)},
    "histogram": _histogram,
    "exponential_histogram": _raw,
    "summary": _raw,
}


def read_metrics(directory: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every metric point written under ``directory``, in the order they were exported.

    Each collection writes every series again (cumulative temporality), so the last point of
    a series holds its current total. Each point is a flat dict: ``name``, ``description``,
    ``unit``, ``type`` (``"sum"``, ``"gauge"``, ``"histogram"``, ``"exponential_histogram"``,
    ``"summary"``), ``attributes``, ``start_time_unix_nano``, ``time_unix_nano``,
    ``resource`` and ``scope``; sums also ``is_monotonic`` and ``temporality``
    (``"cumulative"``/``"delta"``); sums and gauges ``value``; histograms ``count``, ``sum``,
    ``bucket_counts``, ``explicit_bounds`` and, when recorded, ``min`` and ``max``.

    Raises:
        FileNotFoundError: ``directory`` does not exist.
        TelemetryFileError: a complete line is not OTLP/JSON.
    """
    points: list[dict[str, Any]] = []
    for request in _requests(_directory(directory) / METRICS_FILE):
        for resource_metrics in request.get("resourceMetrics", []):
            resource = _attributes(resource_metrics.get("resource", {}).get("attributes", []))
            for scope_metrics in resource_metrics.get("scopeMetrics", []):
                scope = _scope(scope_metrics.get("scope", {}))
                for metric in scope_metrics.get("metrics", []):
                    points.extend(_metric_points(metric, resource, scope))
    return points


def _metric_points(
    metric: Mapping[str, Any], resource: dict[str, Any], scope: dict[str, str]
) -> Iterator[dict[str, Any]]:
    for key, kind in _METRIC_TYPES.items():
        data = metric.get(key)
        if data is None:
            continue
        common: dict[str, Any] = {
            "name": metric.get("name", ""),
            "description": metric.get("description", ""),
            "unit": metric.get("unit", ""),
            "type": kind,
        }
        if kind == "sum":
            common["is_monotonic"] = bool(data.get("isMonotonic", False))
        if kind in ("sum", "histogram", "exponential_histogram"):
            common["temporality"] = _TEMPORALITIES[data.get("aggregationTemporality", 0)]
        for point in data.get("dataPoints", []):
            yield {
                **common,
                "attributes": _attributes(point.get("attributes", [])),
                "start_time_unix_nano": _nanos(point.get("startTimeUnixNano")),
                "time_unix_nano": _nanos(point.get("timeUnixNano")),
                **_POINT_FIELDS[kind](point),
                "resource": resource,
                "scope": scope,
            }
