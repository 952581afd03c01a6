"""The embedded telemetry sink: OTLP/JSON lines under a directory, size-capped and rotated.

When no OTLP endpoint is configured, :func:`hookscope.telemetry.setup.configure` writes
telemetry here instead of dropping it: one file per signal (:data:`TRACES_FILE`,
:data:`METRICS_FILE`, :data:`LOGS_FILE`), one line per export batch. Each line is one OTLP
export request (``ExportTraceServiceRequest`` …) in the OTLP/JSON encoding, produced by the
OpenTelemetry project's own encoders (``opentelemetry-exporter-otlp-json-common``): the format
the Collector's ``otlpjsonfile`` receiver reads.

Files are bounded: before a line would take a file past ``max_file_bytes`` the file is
rotated (``traces.jsonl`` becomes ``traces.1.jsonl``, ``traces.1.jsonl`` becomes
``traces.2.jsonl`` …) and only ``keep_files`` rotated files are kept, so a signal never holds
more than ``(keep_files + 1) * max_file_bytes`` on disk (a single batch larger than the cap
is written alone to a fresh file rather than lost). The directory is created ``0700`` and
files ``0600``: telemetry can hold prompts and tool arguments.

Writes are append-only and line-atomic: a line is written whole under an exclusive file lock
(which also serialises rotation between processes sharing a directory), and a write that
fails half-way (disk full) is cut back. The readers (:mod:`hookscope.telemetry._reading`,
re-exported here) skip a trailing partial line.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final, final

from opentelemetry.exporter.otlp.json.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.json.common.metrics_encoder import encode_metrics
from opentelemetry.exporter.otlp.json.common.trace_encoder import encode_spans
from opentelemetry.sdk._logs import ReadableLogRecord
from opentelemetry.sdk._logs.export import LogRecordExporter, LogRecordExportResult
from opentelemetry.sdk.metrics.export import MetricExporter, MetricExportResult, MetricsData
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from hookscope.telemetry._reading import (
    LOGS_FILE,
    METRICS_FILE,
    TRACES_FILE,
    ReadProblems,
    TelemetryFileError,
    iter_spans,
    read_logs,
    read_metrics,
    read_spans,
    signal_files,
)

try:  # POSIX: an exclusive lock keeps lines whole when several processes share a directory.
    import fcntl
except ImportError:  # pragma: no cover - Windows: one writer per directory
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "DEFAULT_KEEP_FILES",
    "DEFAULT_MAX_FILE_BYTES",
    "LOGS_FILE",
    "METRICS_FILE",
    "TRACES_FILE",
    "JsonLinesLogExporter",
    "JsonLinesMetricExporter",
    "JsonLinesSpanExporter",
    "ReadProblems",
    "RotatingLineFile",
    "TelemetryFileError",
    "iter_spans",
    "make_directory",
    "read_logs",
    "read_metrics",
    "read_spans",
    "signal_files",
]

#: A file is rotated before it would grow past this size.
DEFAULT_MAX_FILE_BYTES: Final = 16 * 1024 * 1024
#: Rotated files kept per signal (the oldest is deleted when another is rotated out).
DEFAULT_KEEP_FILES: Final = 4

_DIRECTORY_MODE: Final = 0o700
_FILE_MODE: Final = 0o600


def make_directory(directory: str | os.PathLike[str]) -> Path:
    """Create ``directory`` (mode 0700) if missing; an existing one keeps its mode.

    Raises:
        OSError: it cannot be created.
    """
    path = Path(directory)
    path.mkdir(mode=_DIRECTORY_MODE, parents=True, exist_ok=True)
    return path


def _rotated(path: Path, index: int) -> Path:
    return path.with_name(f"{path.stem}.{index}{path.suffix}")


@final
class RotatingLineFile:
    """An append-only file that receives whole lines, rotated at a size cap.

    Args:
        path: The file; created (mode 0600) if missing. Its directory must exist.
        max_bytes: Rotate before a line would take the file past this size.
        keep: Rotated files to keep (``name.1.jsonl`` newest … ``name.<keep>.jsonl``).

    Raises:
        OSError: the file cannot be opened for appending.
    """

    __slots__ = ("_fd", "_keep", "_lock", "_max_bytes", "path")

    def __init__(self, path: Path, max_bytes: int, keep: int) -> None:
        self.path = path
        self._max_bytes = max_bytes
        self._keep = keep
        self._lock = threading.Lock()
        self._fd: int | None = self._open()

    def _open(self) -> int:
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(self.path, flags, _FILE_MODE)
        try:
            if os.fstat(fd).st_mode & 0o077:  # an older, wider file: tighten it
                os.fchmod(fd, _FILE_MODE)
        except OSError:  # someone else's file: leave its mode alone
            pass
        return fd

    def _lock_current(self, fd: int) -> int:
        """Lock ``fd``; if another process rotated the file meanwhile, the new one instead."""
        while True:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                same = os.stat(self.path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                return fd
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
            fd = self._fd = self._open()

    def _rotate(self) -> None:
        """Shift ``name.jsonl`` → ``name.1.jsonl`` → … and drop what falls past ``keep``."""
        oldest = _rotated(self.path, self._keep) if self._keep else self.path
        with contextlib.suppress(FileNotFoundError):
            oldest.unlink()
        for index in range(self._keep - 1, 0, -1):
            with contextlib.suppress(FileNotFoundError):
                os.replace(_rotated(self.path, index), _rotated(self.path, index + 1))
        if self._keep:
            os.replace(self.path, _rotated(self.path, 1))

    def append(self, line: bytes) -> None:
        """Append ``line`` (which must end with a newline) as one unit, rotating first if due.

        Raises:
            OSError: the write failed; the file is left as it was before the call.
            ValueError: the file is closed or ``line`` does not end with a newline.
        """
        if not line.endswith(b"\n"):
            raise ValueError("a line must end with a newline")
        with self._lock:
            if self._fd is None:
                raise ValueError(f"{self.path} is closed")
            fd = self._lock_current(self._fd)
            try:
                size = os.fstat(fd).st_size
                if size and size + len(line) > self._max_bytes:
                    self._rotate()  # under the old file's lock: others wait, then reopen
                    fd = self._lock_current(fd)
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


class _LinesSink:
    """The part every JSON-lines exporter shares: the file, and one line per batch."""

    def __init__(self, directory: str | os.PathLike[str], name: str, max_bytes: int, keep: int):
        self._file = RotatingLineFile(make_directory(directory) / name, max_bytes, keep)

    def write(self, encode: Callable[[], Any]) -> bool:
        try:
            self._file.append(
                json.dumps(encode().to_dict(), separators=(",", ":")).encode() + b"\n"
            )
        except (OSError, ValueError):
            return False
        return True

    def sync(self) -> bool:
        try:
            self._file.sync()
        except OSError:
            return False
        return True

    def close(self) -> None:
        self._file.close()


@final
class JsonLinesSpanExporter(SpanExporter):
    """Append each batch of spans to ``directory/traces.jsonl`` as one OTLP/JSON line.

    Args:
        directory: Where the file lives; created (0700) if missing.
        max_file_bytes: Rotate the file before it would grow past this size.
        keep_files: Rotated files to keep.

    Raises:
        OSError: the directory or file cannot be created or opened for appending.
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        keep_files: int = DEFAULT_KEEP_FILES,
    ) -> None:
        self._sink = _LinesSink(directory, TRACES_FILE, max_file_bytes, keep_files)

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Write one line; an I/O error is a failed export (the caller counts it)."""
        ok = self._sink.write(lambda: encode_spans(spans))
        return SpanExportResult.SUCCESS if ok else SpanExportResult.FAILURE

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Sync the file to disk."""
        return self._sink.sync()

    def shutdown(self) -> None:
        """Sync and close the file."""
        self._sink.close()


@final
class JsonLinesMetricExporter(MetricExporter):
    """Append each metrics collection to ``directory/metrics.jsonl`` as one OTLP/JSON line.

    Points are cumulative (the OTLP default), so the last line holds every series' totals.
    Arguments and errors as for :class:`JsonLinesSpanExporter`.
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        keep_files: int = DEFAULT_KEEP_FILES,
    ) -> None:
        super().__init__()
        self._sink = _LinesSink(directory, METRICS_FILE, max_file_bytes, keep_files)

    def export(
        self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: Any
    ) -> MetricExportResult:
        """Write one line; an I/O error is a failed export (the caller counts it)."""
        ok = self._sink.write(lambda: encode_metrics(metrics_data))
        return MetricExportResult.SUCCESS if ok else MetricExportResult.FAILURE

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        """Sync the file to disk."""
        return self._sink.sync()

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        """Sync and close the file."""
        self._sink.close()


@final
class JsonLinesLogExporter(LogRecordExporter):
    """Append each batch of log records to ``directory/logs.jsonl`` as one OTLP/JSON line.

    Arguments and errors as for :class:`JsonLinesSpanExporter`.
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        keep_files: int = DEFAULT_KEEP_FILES,
    ) -> None:
        self._sink = _LinesSink(directory, LOGS_FILE, max_file_bytes, keep_files)

    def export(self, batch: Sequence[ReadableLogRecord]) -> LogRecordExportResult:
        """Write one line; an I/O error is a failed export (the caller counts it)."""
        ok = self._sink.write(lambda: encode_logs(batch))
        return LogRecordExportResult.SUCCESS if ok else LogRecordExportResult.FAILURE

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Sync the file to disk."""
        return self._sink.sync()

    def shutdown(self) -> None:
        """Sync and close the file."""
        self._sink.close()
