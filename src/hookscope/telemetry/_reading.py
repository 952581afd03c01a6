"""Reading the embedded default's files back: streamed, bounded, and tolerant when asked.

:func:`iter_spans` reads a signal's files line by line, oldest rotated file first, so memory
stays bounded by the largest record (:data:`MAX_RECORD_BYTES`), whatever the directory's
size. A line that is not JSON, a record that is valid JSON but not the OTLP shape expected
(a string where an object belongs, an unknown span kind …), or a line longer than the limit
is a *problem*: with a :class:`ReadProblems` given it is counted and skipped; without one it
raises :class:`TelemetryFileError`. A trailing partial line (a write in progress, or cut by a
killed writer) is not telemetry yet and is skipped silently.
"""

from __future__ import annotations

import base64
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Final, final

from hookscope._reader import InputError, read_json
from hookscope.types import HookscopeError

__all__ = [
    "LOGS_FILE",
    "MAX_RECORD_BYTES",
    "METRICS_FILE",
    "TRACES_FILE",
    "ReadProblems",
    "TelemetryFileError",
    "iter_logs",
    "iter_metrics",
    "iter_spans",
    "read_logs",
    "read_metrics",
    "read_spans",
    "signal_files",
]

TRACES_FILE: Final = "traces.jsonl"
METRICS_FILE: Final = "metrics.jsonl"
LOGS_FILE: Final = "logs.jsonl"

#: The longest line read; longer ones are problems (skipped without being held in memory).
MAX_RECORD_BYTES: Final = 32 * 1024 * 1024

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
# What a record can hold that is not the expected shape: every decoding error of valid JSON.
_SHAPE_ERRORS: Final = (AttributeError, KeyError, TypeError, ValueError, IndexError)


class TelemetryFileError(HookscopeError, ValueError):
    """A telemetry file holds a line that is not an OTLP/JSON export request."""


@final
@dataclass(slots=True)
class ReadProblems:
    """Counts what a read skipped; :attr:`examples` keeps the first few, for the message.

    Attributes:
        malformed: Lines that are not JSON, or longer than :data:`MAX_RECORD_BYTES`.
        unexpected: Records (a request, a span, a data point) that are valid JSON but not
            the OTLP/JSON shape expected.
    """

    malformed: int = 0
    unexpected: int = 0
    examples: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.malformed or self.unexpected)

    def note(self, kind: str, where: str, error: object) -> None:
        """Count one problem of ``kind`` (``"malformed"`` or ``"unexpected"``) at ``where``."""
        if kind == "malformed":
            self.malformed += 1
        else:
            self.unexpected += 1
        if len(self.examples) < 3:
            self.examples.append(f"{where}: {error}")

    def summary(self) -> str:
        """One line for people: what was skipped, with the first example."""
        parts = []
        if self.malformed:
            parts.append(f"{self.malformed} malformed line(s)")
        if self.unexpected:
            parts.append(f"{self.unexpected} unexpected record(s)")
        first = f" (first: {self.examples[0]})" if self.examples else ""
        return f"skipped {' and '.join(parts)}{first}"


def _problem(problems: ReadProblems | None, kind: str, where: str, error: object) -> None:
    if problems is None:
        raise TelemetryFileError(f"{where}: {error}; move the file away to start afresh")
    problems.note(kind, where, error)


def signal_files(directory: str | os.PathLike[str], name: str) -> list[Path]:
    """``name``'s files in ``directory``, oldest first: rotated ones by number, then current."""
    base = Path(directory) / name
    pattern = re.compile(rf"{re.escape(base.stem)}\.(\d+){re.escape(base.suffix)}")
    rotated = []
    for path in base.parent.glob(f"{base.stem}.*{base.suffix}"):
        match = pattern.fullmatch(path.name)
        if match:
            rotated.append((int(match.group(1)), path))
    files = [path for _, path in sorted(rotated, reverse=True)]
    return [*files, base] if base.exists() else files


def _skip_rest_of_line(stream: IO[bytes]) -> bool:
    """Read past the current line; False when the file ended first."""
    while True:
        chunk = stream.readline(1024 * 1024)
        if not chunk:
            return False
        if chunk.endswith(b"\n"):
            return True


def _lines(path: Path, problems: ReadProblems | None) -> Iterator[tuple[str, bytes]]:
    try:
        stream = path.open("rb")
    except FileNotFoundError:  # rotated away between listing and opening
        return
    with stream:
        number = 0
        while True:
            line = stream.readline(MAX_RECORD_BYTES + 1)
            if not line:
                return
            number += 1
            if not line.endswith(b"\n"):
                if len(line) <= MAX_RECORD_BYTES:
                    return  # a line still being written (or cut by a killed writer)
                if _skip_rest_of_line(stream):
                    _problem(problems, "malformed", f"{path}:{number}", "line too long")
                return
            if line.strip():
                yield f"{path}:{number}", line


def _requests(
    directory: Path, name: str, problems: ReadProblems | None
) -> Iterator[tuple[str, dict[str, Any]]]:
    for path in signal_files(directory, name):
        for where, line in _lines(path, problems):
            try:
                request = read_json(line, where, max_bytes=MAX_RECORD_BYTES)
            except InputError as error:
                _problem(problems, "malformed", where, f"not JSON ({error.detail})")
                continue
            if not isinstance(request, dict):
                _problem(problems, "unexpected", where, "not a JSON object")
                continue
            yield where, request


def _items(value: Any, key: str) -> list[Any]:
    items = value.get(key, [])
    if not isinstance(items, list):
        raise TypeError(f"{key} is not a list")
    return items


def _value(any_value: Mapping[str, Any]) -> Any:
    """Decode an OTLP/JSON ``AnyValue``."""
    if "stringValue" in any_value:
        return str(any_value["stringValue"])
    if "boolValue" in any_value:
        return bool(any_value["boolValue"])
    if "intValue" in any_value:
        return int(any_value["intValue"])
    if "doubleValue" in any_value:
        return float(any_value["doubleValue"])
    if "arrayValue" in any_value:
        return [_value(item) for item in _items(any_value["arrayValue"], "values")]
    if "kvlistValue" in any_value:
        return _attributes(_items(any_value["kvlistValue"], "values"))
    if "bytesValue" in any_value:
        return base64.b64decode(any_value["bytesValue"])
    return None


def _attributes(key_values: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    return {str(kv["key"]): _value(kv.get("value", {})) for kv in key_values}


def _scope(scope: Mapping[str, Any]) -> dict[str, str]:
    return {"name": str(scope.get("name", "")), "version": str(scope.get("version", ""))}


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


def _enum(names: Sequence[str], value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < len(names):
        raise ValueError(f"unknown enum value {value!r}")
    return names[value]


def _span(span: Mapping[str, Any], resource: Any, scope: Any) -> dict[str, Any]:
    status = span.get("status", {})
    return {
        "trace_id": str(span.get("traceId", "")),
        "span_id": str(span.get("spanId", "")),
        "parent_span_id": str(span["parentSpanId"]) if span.get("parentSpanId") else None,
        "name": str(span.get("name", "")),
        "kind": _enum(_SPAN_KINDS, span.get("kind", 0)),
        "start_time_unix_nano": _nanos(span.get("startTimeUnixNano")),
        "end_time_unix_nano": _nanos(span.get("endTimeUnixNano")),
        "attributes": _attributes(_items(span, "attributes")),
        "events": [
            {
                "name": str(event.get("name", "")),
                "time_unix_nano": _nanos(event.get("timeUnixNano")),
                "attributes": _attributes(_items(event, "attributes")),
            }
            for event in _items(span, "events")
        ],
        "links": [
            {
                "trace_id": str(link.get("traceId", "")),
                "span_id": str(link.get("spanId", "")),
                "attributes": _attributes(_items(link, "attributes")),
            }
            for link in _items(span, "links")
        ],
        "status": {
            "code": _enum(_STATUS_CODES, status.get("code", 0)),
            "message": str(status.get("message", "")),
        },
        "resource": resource,
        "scope": scope,
    }


def _walk(
    directory: str | os.PathLike[str],
    name: str,
    keys: tuple[str, str, str],
    decode: Callable[[Mapping[str, Any], Any, Any], Iterator[dict[str, Any]]],
    problems: ReadProblems | None,
) -> Iterator[dict[str, Any]]:
    """Every record of one signal: request → resource → scope → item, each level guarded."""
    resource_key, scope_key, item_key = keys
    for where, request in _requests(_directory(directory), name, problems):
        try:
            resources = _items(request, resource_key)
        except _SHAPE_ERRORS as error:
            _problem(problems, "unexpected", where, error)
            continue
        for resource_block in resources:
            try:
                resource = _attributes(_items(resource_block.get("resource", {}), "attributes"))
                scopes = _items(resource_block, scope_key)
            except _SHAPE_ERRORS as error:
                _problem(problems, "unexpected", where, error)
                continue
            for scope_block in scopes:
                try:
                    scope = _scope(scope_block.get("scope", {}))
                    items = _items(scope_block, item_key)
                except _SHAPE_ERRORS as error:
                    _problem(problems, "unexpected", where, error)
                    continue
                for item in items:
                    try:
                        records = list(decode(item, resource, scope))
                    except _SHAPE_ERRORS as error:
                        _problem(problems, "unexpected", where, f"{type(error).__name__}: {error}")
                        continue
                    yield from records


def iter_spans(
    directory: str | os.PathLike[str], problems: ReadProblems | None = None
) -> Iterator[dict[str, Any]]:
    """Stream the spans written under ``directory``, in the order they were exported.

    Each span is a flat dict: ``trace_id``, ``span_id``, ``parent_span_id`` (hex, ``None``
    for a root), ``name``, ``kind`` (``"INTERNAL"`` …), ``start_time_unix_nano``,
    ``end_time_unix_nano``, ``attributes``, ``events`` (``name``, ``time_unix_nano``,
    ``attributes``), ``links`` (``trace_id``, ``span_id``, ``attributes``), ``status``
    (``code`` ``"UNSET"``/``"OK"``/``"ERROR"``, ``message``), ``resource`` (its attributes)
    and ``scope`` (``name``, ``version``).

    Args:
        directory: What ``configure()`` wrote to.
        problems: Count and skip malformed or unexpected records here; when None they raise.

    Raises:
        FileNotFoundError: ``directory`` does not exist.
        TelemetryFileError: a problem was found and ``problems`` is None.
    """
    return _walk(
        directory,
        TRACES_FILE,
        ("resourceSpans", "scopeSpans", "spans"),
        lambda span, resource, scope: iter((_span(span, resource, scope),)),
        problems,
    )


def read_spans(
    directory: str | os.PathLike[str], problems: ReadProblems | None = None
) -> list[dict[str, Any]]:
    """Every span written under ``directory``, as :func:`iter_spans` streams them."""
    return list(iter_spans(directory, problems))


def _number(point: Mapping[str, Any]) -> int | float:
    if "asInt" in point:
        return int(point["asInt"])
    return float(point.get("asDouble", 0.0))


def _histogram(point: Mapping[str, Any]) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "count": int(point.get("count", 0)),
        "sum": float(point.get("sum", 0.0)),
        "bucket_counts": [int(count) for count in _items(point, "bucketCounts")],
        "explicit_bounds": [float(bound) for bound in _items(point, "explicitBounds")],
    }
    for key in ("min", "max"):
        if key in point:
            fields[key] = float(point[key])
    return fields


def _raw(point: Mapping[str, Any]) -> dict[str, Any]:
    # Exponential histograms and summaries are kept in their OTLP/JSON form.
    return {key: value for key, value in point.items() if key != "attributes"}


_POINT_FIELDS: Final[dict[str, Callable[[Mapping[str, Any]], dict[str, Any]]]] = {
    "sum": lambda point: {"value": _number(point)},
    "gauge": lambda point: {"value": _number(point)},
    "histogram": _histogram,
    "exponential_histogram": _raw,
    "summary": _raw,
}


def _metric_points(
    metric: Mapping[str, Any], resource: Any, scope: Any
) -> Iterator[dict[str, Any]]:
    for key, kind in _METRIC_TYPES.items():
        data = metric.get(key)
        if data is None:
            continue
        common: dict[str, Any] = {
            "name": str(metric.get("name", "")),
            "description": str(metric.get("description", "")),
            "unit": str(metric.get("unit", "")),
            "type": kind,
        }
        if kind == "sum":
            common["is_monotonic"] = bool(data.get("isMonotonic", False))
        if kind in ("sum", "histogram", "exponential_histogram"):
            common["temporality"] = _enum(_TEMPORALITIES, data.get("aggregationTemporality", 0))
        for point in _items(data, "dataPoints"):
            yield {
                **common,
                "attributes": _attributes(_items(point, "attributes")),
                "start_time_unix_nano": _nanos(point.get("startTimeUnixNano")),
                "time_unix_nano": _nanos(point.get("timeUnixNano")),
                **_POINT_FIELDS[kind](point),
                "resource": resource,
                "scope": scope,
            }


def iter_metrics(
    directory: str | os.PathLike[str], problems: ReadProblems | None = None
) -> Iterator[dict[str, Any]]:
    """Stream the metric points written under ``directory`` (see :func:`read_metrics`)."""
    return _walk(
        directory,
        METRICS_FILE,
        ("resourceMetrics", "scopeMetrics", "metrics"),
        _metric_points,
        problems,
    )


def read_metrics(
    directory: str | os.PathLike[str], problems: ReadProblems | None = None
) -> list[dict[str, Any]]:
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
        TelemetryFileError: a problem was found and ``problems`` is None.
    """
    return list(iter_metrics(directory, problems))


def _log_record(record: Mapping[str, Any], resource: Any, scope: Any) -> Iterator[dict[str, Any]]:
    body = record.get("body")
    yield {
        "time_unix_nano": _nanos(record.get("timeUnixNano")),
        "observed_time_unix_nano": _nanos(record.get("observedTimeUnixNano")),
        "severity_number": int(record.get("severityNumber", 0)),
        "severity_text": str(record.get("severityText", "")),
        "event_name": str(record.get("eventName", "")),
        "body": _value(body) if isinstance(body, dict) else None,
        "attributes": _attributes(_items(record, "attributes")),
        "trace_id": str(record.get("traceId", "")),
        "span_id": str(record.get("spanId", "")),
        "resource": resource,
        "scope": scope,
    }


def iter_logs(
    directory: str | os.PathLike[str], problems: ReadProblems | None = None
) -> Iterator[dict[str, Any]]:
    """Stream the log records written under ``directory`` (see :func:`read_logs`)."""
    return _walk(
        directory, LOGS_FILE, ("resourceLogs", "scopeLogs", "logRecords"), _log_record, problems
    )


def read_logs(
    directory: str | os.PathLike[str], problems: ReadProblems | None = None
) -> list[dict[str, Any]]:
    """Every log record (e.g. GenAI events) written under ``directory``, in export order.

    Each record is a flat dict: ``time_unix_nano``, ``observed_time_unix_nano``,
    ``severity_number``, ``severity_text``, ``event_name``, ``body`` (decoded), ``attributes``,
    ``trace_id``, ``span_id`` (hex, empty outside a span), ``resource`` and ``scope``.

    Raises:
        FileNotFoundError: ``directory`` does not exist.
        TelemetryFileError: a problem was found and ``problems`` is None.
    """
    return list(iter_logs(directory, problems))
