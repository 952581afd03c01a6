"""An audit trail of tool calls: one JSON line per call, rotated by size (seed 000's audit)."""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import re
import threading
import time
from collections.abc import Callable
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from pathlib import Path
from time import perf_counter
from typing import Any, Final, final

from hookscope.builtins._options import positive_int, state_key
from hookscope.context import HookContext, OperationContext
from hookscope.hooks import HookEvent
from hookscope.redaction import redact_json
from hookscope.runner import DispatchObserver
from hookscope.types import HookResult, HookscopeError, Recovery, ToolCall

__all__ = ["DEFAULT_MAX_BYTES", "AuditLog", "AuditLogError"]

logger = logging.getLogger("hookscope.builtins")

#: Size from which the audit file is rotated (16 MiB, as the telemetry files).
DEFAULT_MAX_BYTES: Final = 16 * 1024 * 1024
_TOOL_EVENTS: Final = frozenset({"pre_tool_call", "post_tool_call", "on_tool_error"})


class AuditLogError(HookscopeError, OSError):
    """The audit file cannot be opened for appending (raised when the AuditLog is built)."""

    __module__ = "hookscope.builtins"


@final
class _Lines:
    """An append-only file of whole lines, rotated by size; thread-safe.

    Each line is one ``os.write`` to a file opened with ``O_APPEND`` (no user-space buffer: a
    line is in the kernel once ``write`` returns). Before a line would take the file past
    ``max_bytes`` the file is renamed to the next free ``<name>.<n>`` (1, 2, … in the order
    written; never overwritten, never deleted) and a fresh file opened: a line never spans two
    files. A write that fails half-way is cut back off, so no file holds a torn line.
    """

    __slots__ = ("_fd", "_lock", "_next", "_rotation_failed", "_size", "max_bytes", "path")

    def __init__(self, path: Path, max_bytes: int) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._rotation_failed = False
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._fd = self._open()
        self._size = os.fstat(self._fd).st_size
        pattern = re.compile(re.escape(path.name) + r"\.(\d+)")
        taken = [
            int(match.group(1))
            for entry in os.listdir(path.parent)
            if (match := pattern.fullmatch(entry)) is not None
        ]
        self._next = max(taken, default=0) + 1

    def _open(self) -> int:
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
        return os.open(self.path, flags, 0o600)

    def write(self, line: bytes) -> None:
        """Append ``line`` (ending in a newline), rotating first when it would not fit.

        Raises:
            OSError: the line could not be written (nothing of it stays in the file).
        """
        with self._lock:
            if self._size and self._size + len(line) > self.max_bytes:
                try:
                    self._rotate()
                except OSError as error:
                    # Keep the line rather than lose it: the file grows past max_bytes.
                    if not self._rotation_failed:
                        self._rotation_failed = True
                        logger.warning(
                            "AuditLog cannot rotate %s (%s); writing on past max_bytes",
                            self.path,
                            error,
                        )
            view, written = memoryview(line), 0
            try:
                while written < len(line):
                    written += os.write(self._fd, view[written:])
            except OSError:
                if written:  # never leave a torn line behind
                    self._cut_torn(written)
                raise
            self._size += written

    def _cut_torn(self, written: int) -> None:
        """Cut off the ``written`` bytes of a line that failed half-way — only they: another
        writer (a second AuditLog on this path) may have appended complete lines, which
        the size this log knows does not count."""
        with contextlib.suppress(OSError):
            end = os.lseek(self._fd, 0, os.SEEK_CUR)  # O_APPEND: just past our bytes
            if os.fstat(self._fd).st_size == end:  # nothing appended after them
                os.ftruncate(self._fd, end - written)

    def _rotate(self) -> None:
        while True:
            target = self.path.with_name(f"{self.path.name}.{self._next}")
            self._next += 1
            try:
                # link + unlink instead of rename: link never replaces an existing file.
                os.link(self.path, target)
            except FileExistsError:
                continue
            except OSError as error:
                if error.errno not in (errno.EPERM, errno.ENOTSUP, errno.EXDEV):
                    raise
                if target.exists():
                    continue
                os.rename(self.path, target)  # no hard links here: rename, checked above
            else:
                os.unlink(self.path)
            break
        fd = self._open()
        os.close(self._fd)
        self._fd, self._size = fd, 0

    def close(self) -> None:
        """Close the file; later writes fail."""
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1


def _json_encoder() -> Callable[[dict[str, Any]], str]:
    """A JSON encoder built once (``json.dumps`` builds a new C encoder on every call)."""

    def unknown(value: object) -> str:  # redact_json() leaves none; never a repr, just in case
        return f"<{type(value).__name__}>"

    if c_make_encoder is None:  # pragma: no cover - interpreters without the C accelerator
        encoder = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=unknown)
        return encoder.encode
    # No circular-reference markers: redact_json() returns fresh, acyclic, depth-bounded data.
    encode = c_make_encoder(None, unknown, encode_basestring, None, ":", ",", False, False, True)
    return lambda entry: "".join(encode(entry, 0))


_encode: Final = _json_encoder()


@final
class _Clock:
    """UTC timestamps in ISO 8601, formatting the seconds part once per second."""

    __slots__ = ("_prefix", "_second")

    def __init__(self) -> None:
        self._second = -1
        self._prefix = ""

    def now(self) -> str:
        now = time.time()
        second = int(now)
        if second != self._second:  # racing threads both format it: same result, no harm
            self._prefix = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
            self._second = second
        return f"{self._prefix}.{int((now - second) * 1e6):06d}+00:00"


@final
class _Call:
    """What one tool call's dispatches told the audit log so far."""

    __slots__ = (
        "call",
        "decided_by",
        "error",
        "recovered_by",
        "recovery",
        "returned",
        "started",
        "verdict",
    )

    def __init__(self, started: float) -> None:
        self.started = started
        self.call: ToolCall | None = None
        self.verdict: HookResult | None = None
        self.decided_by: str | None = None
        self.error: BaseException | None = None
        self.recovery: Recovery | None = None
        self.recovered_by: str | None = None
        self.returned = False


class AuditLog(DispatchObserver):
    """Writes one JSON line per tool call: who called what, what became of it, how long.

    An observer: register it like a hook (``HookRunner([AuditLog(path), ...])``); it sees the
    final verdict wherever it stands. Each line holds ``time`` (UTC, ISO 8601),
    ``session_id``, ``agent_name``, ``turn_index``, ``call_id``, ``tool``, ``server``,
    ``outcome`` (``succeeded``, ``failed``, ``recovered``, ``denied``, ``cancelled``),
    ``decided_by`` (the hook that denied the call, or asked the user about it), the policy's
    ``decision``, ``rule`` and ``bucket`` when one decided, ``asked_user``/``user_approved``
    for confirmations, ``recovered_by`` (the hook that recovered a failed call), ``message``
    (the denial, confirmation or recovery note), ``error_type``, ``duration_s`` (the whole call,
    hooks included) and ``args`` (the effective arguments; values under secret-looking keys
    such as ``token``, ``password`` or ``apiKey`` are ``[REDACTED]``, by the project's rules in
    :mod:`hookscope.redaction`; other objects show only their type).

    Lines are written and handed to the OS one by one. Past ``max_bytes`` the file is renamed
    ``<path>.1``, ``<path>.2`` … (never deleted, never overwritten) and a new one started; a
    line is never split or lost in rotation. A write that fails during a run (a full disk) is
    counted in :attr:`failed_lines` and logged, never raised into the agent.

    One ``AuditLog`` serves any number of sessions and threads of a process; give each
    process its own file (rotation counts the bytes this process wrote).

    Calls are recorded through the scoped API (``turn.call_tool``) and adapters that report
    operation scopes; bare ``dispatch_*`` calls open no scope and are not recorded.

    Args:
        path: The audit file; missing directories are created (mode 0700, file 0600).
        max_bytes: Size from which the file is rotated.
        include_args: Record the (redacted) arguments.
        redact_values: Also search every argument string for secrets whatever its key (token
            formats, ``Bearer`` headers, passwords in URLs, private keys — the rules of
            :mod:`hookscope.redaction`). Off by default: it costs tens of
            microseconds per call; values under secret-looking keys are always redacted.

    Raises:
        AuditLogError: ``path`` cannot be opened for appending.

    Example::

        audit = AuditLog(".hookscope/audit.jsonl", max_bytes=8 * 1024 * 1024)
        runner = HookRunner([audit, policy.enforce([...])])
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        include_args: bool = True,
        redact_values: bool = False,
    ) -> None:
        if not isinstance(path, (str, os.PathLike)) or not str(path):
            raise ValueError(f"AuditLog: path must be a file path, got {path!r}")
        max_bytes = positive_int("AuditLog", "max_bytes", max_bytes, "size that rotates the file")
        if not isinstance(include_args, bool):
            raise ValueError(f"AuditLog: include_args must be True or False, got {include_args!r}")
        if not isinstance(redact_values, bool):
            raise ValueError(
                f"AuditLog: redact_values must be True or False, got {redact_values!r}"
            )
        self.redact_values = redact_values
        self.path = Path(path)
        self.include_args = include_args
        try:
            self._lines = _Lines(self.path, max_bytes)
        except OSError as error:
            raise AuditLogError(
                f"AuditLog cannot append to {str(self.path)!r} ({error.strerror or error}); "
                "pass a file path in a writable directory (missing directories are created)"
            ) from error
        self._key = state_key(self)
        self._failed_lines = 0
        self._count_lock = threading.Lock()
        self._clock = _Clock()

    @property
    def failed_lines(self) -> int:
        """Lines that could not be written (a full disk, a closed log)."""
        return self._failed_lines

    def close(self) -> None:
        """Close the file. Lines of calls still running are counted as failed."""
        self._lines.close()

    # --- observer ---

    def scope_started(self, context: HookContext) -> None:
        """Start timing a tool call."""
        if isinstance(context, OperationContext) and context.kind == "tool":
            context.set(self._key, _Call(perf_counter()))

    def dispatch_finished(
        self,
        event: HookEvent,
        context: HookContext,
        data: Any,
        result: Any,
        decided_by: str | None,
    ) -> None:
        """Note the verdict, the error and its recovery, or that the tool returned."""
        if event not in _TOOL_EVENTS:
            return
        record = context.get(self._key)
        if not isinstance(record, _Call):
            return
        if event == "pre_tool_call":
            record.call, record.verdict, record.decided_by = data, result, decided_by
        elif event == "post_tool_call":
            record.returned = True
        else:
            record.error, record.recovery, record.recovered_by = data, result, decided_by

    def scope_ended(self, context: HookContext, error: BaseException | None) -> None:
        """Write the call's line."""
        if not isinstance(context, OperationContext) or context.kind != "tool":
            return
        record = context.get(self._key)
        if not isinstance(record, _Call):
            return
        try:
            line = self._line(context, record, error)
        except Exception:  # never into the agent; a bug here must still be seen
            logger.exception("AuditLog could not build the line of call %r", context.call_id)
            self._failed(None)
            return
        try:
            self._lines.write(line)
        except OSError as write_error:
            self._failed(write_error)

    def _failed(self, error: OSError | None) -> None:
        with self._count_lock:  # sessions in several threads may fail at once
            self._failed_lines += 1
            first = self._failed_lines == 1
        if first:
            logger.error(
                "AuditLog could not write to %s (%s); the agent goes on, failed lines are "
                "counted in AuditLog.failed_lines and logged at DEBUG from now on",
                self.path,
                error,
            )
        else:
            logger.debug("AuditLog: line %d not written: %s", self._failed_lines, error)

    def _line(self, context: OperationContext, record: _Call, error: BaseException | None) -> bytes:
        call = record.call or context.call
        verdict = record.verdict
        entry: dict[str, Any] = {
            "time": self._clock.now(),
            "session_id": context.session_id,
            "agent_name": context.agent_name,
            "turn_index": context.turn_index,
            "call_id": context.call_id,
            "tool": None if call is None else call.name,
            "server": None if call is None else call.server,
            "outcome": _outcome(record, error),
            "decided_by": None,
            "message": None,
        }
        decision = None if verdict is None else verdict.decision
        if decision is not None:
            entry["decision"] = str(decision.decision)
            entry["rule"] = decision.rule
            entry["bucket"] = decision.bucket
            if decision.asked_user:
                entry["asked_user"] = True
                entry["user_approved"] = decision.user_approved
        if verdict is not None and (not verdict.allow or record.decided_by is not None):
            # Denied, or allowed once the user confirmed: the deciding (asking) hook and why.
            entry["decided_by"] = record.decided_by
            entry["message"] = verdict.message
        if record.recovery is not None:
            entry["recovered_by"] = record.recovered_by
            entry["message"] = record.recovery.message
        failure = record.error if record.error is not None else error
        if failure is not None:
            entry["error_type"] = type(failure).__name__
        entry["duration_s"] = round(perf_counter() - record.started, 6)
        if self.include_args and call is not None:
            entry["args"] = redact_json(call.args, values=self.redact_values)
        # A lone surrogate in an argument (model output) stands inside a JSON string, where
        # backslashreplace writes the JSON escape: the line is valid JSON and never dropped.
        return (_encode(entry) + "\n").encode("utf-8", "backslashreplace")


def _outcome(record: _Call, error: BaseException | None) -> str:
    verdict = record.verdict
    if verdict is not None and not verdict.allow:
        return "denied"
    if record.recovery is not None:
        return "recovered"
    if record.returned:
        return "succeeded"
    if record.error is not None or (error is not None and isinstance(error, Exception)):
        return "failed"
    return "cancelled"
