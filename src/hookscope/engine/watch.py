"""Hot reload: keep a runner's configured hooks in step with their file.

:func:`watch` loads the file, registers its hooks, then polls the file in a background thread.
Each check reads the file once (its bytes and their size and mtime together); a change is
acted on only once the file has stayed the same for one more check, so a file still being
written is never applied half-way. A changed file that validates replaces the hooks it loaded
before in one step (``runner.replace``: a dispatch in flight finishes with the table it started
with), wherever they stand in the runner's table *now* — hooks registered meanwhile stay, and
hooks of the file that were unregistered are not an error: the new ones go last. The replaced
hooks are closed (``close()``, e.g. an ``AuditLog``'s file), as are the hooks of a file that
fails validation (or disappears), which keeps the old hooks running and logs why at WARNING.
Every reload is counted as ``hookscope.engine.reloads`` with ``hookscope.engine.reload.outcome``
= ``applied`` or ``rejected``, through the OpenTelemetry API only.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Final, final

from opentelemetry import metrics

from hookscope._reader import MAX_BYTES
from hookscope.engine.config import ConfigError, HookTable, load
from hookscope.runner import HookRunner

__all__ = ["RELOADS", "RELOAD_OUTCOME", "Watch", "watch"]

logger = logging.getLogger("hookscope.engine")

#: The reload counter's name, and its one attribute.
RELOADS: Final = "hookscope.engine.reloads"
RELOAD_OUTCOME: Final = "hookscope.engine.reload.outcome"
_APPLIED: Final = {RELOAD_OUTCOME: "applied"}
_REJECTED: Final = {RELOAD_OUTCOME: "rejected"}


_Snapshot = tuple[tuple[int, int, int] | None, bytes | None]


def _snapshot(path: Path) -> _Snapshot:
    """The file's (size, mtime, inode) and bytes, from one open; ``(None, None)`` when it
    cannot be read."""
    try:
        with path.open("rb") as file:
            status = os.fstat(file.fileno())
            content = file.read(MAX_BYTES + 1)
    except OSError:
        return None, None
    return (status.st_size, status.st_mtime_ns, status.st_ino), content


@final
class Watch:
    """A running watch; :meth:`stop` ends the polling (the hooks stay registered).

    Attributes:
        table: The hooks currently applied from the file.
        last_error: Why the latest reload was rejected; ``None`` after an applied one.
    """

    def __init__(
        self,
        runner: HookRunner,
        path: Path,
        interval: float,
        tool_aliases: Mapping[str, str] | None,
        meter_provider: metrics.MeterProvider | None,
    ) -> None:
        self.runner = runner
        self.path = path
        self.interval = interval
        self._aliases = dict(tool_aliases or {})
        content = _snapshot(path)[1]
        self._seen = content
        self._pending: _Snapshot | None = None  # a change waiting to be seen stable
        self._checking = threading.Lock()  # the thread and a caller never check at once
        self.table: HookTable = load(path, tool_aliases=self._aliases, content=content)
        self.last_error: ConfigError | None = None
        meter = metrics.get_meter("hookscope.engine", meter_provider=meter_provider)
        self._reloads = meter.create_counter(
            RELOADS, unit="{reload}", description="Hook configuration reloads, by outcome"
        )
        for hook in self.table:
            runner.register(hook)
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._poll, name=f"hookscope-watch:{path.name}", daemon=True
        )
        self._thread.start()

    def _poll(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.check()
            except Exception:  # the watch must outlive anything one reload does
                logger.exception(
                    "hook configuration watch on %s failed; it keeps polling", self.path
                )

    def check(self) -> bool:
        """Reload if the file changed and has stayed the same since the previous check;
        return whether it reloaded (applied or rejected).

        The background thread calls this every ``interval`` seconds, so a change is applied
        one to two intervals after the file stops changing.
        """
        with self._checking:
            return self._check()

    def _check(self) -> bool:
        snapshot = _snapshot(self.path)
        content = snapshot[1]
        if content == self._seen:
            self._pending = None
            return False
        if snapshot != self._pending:  # new, or still changing: wait for one quiet interval
            self._pending = snapshot
            return False
        self._pending, self._seen = None, content
        try:
            if content is None:
                raise ConfigError(str(self.path), ["file not found; the old hooks stay"])
            table = load(self.path, tool_aliases=self._aliases, content=content)
        except ConfigError as error:
            self.last_error = error
            self._reloads.add(1, _REJECTED)
            logger.warning("hook configuration not reloaded, the old hooks stay: %s", error)
            return True
        try:
            # Where the file's hooks stand now: register() or unregister() since are kept.
            self.runner.replace(self.table, table, missing_ok=True)
        except Exception:
            table.close()
            raise
        replaced, self.table, self.last_error = self.table, table, None
        replaced.close()
        self._reloads.add(1, _APPLIED)
        logger.info("hook configuration reloaded from %s (%d hooks)", self.path, len(table))
        return True

    def stop(self) -> None:
        """Stop polling and wait for the thread to end; the hooks stay registered."""
        self._stop.set()
        if self._thread is not threading.current_thread():
            self._thread.join()

    def __enter__(self) -> Watch:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()


def watch(
    runner: HookRunner,
    path: str | os.PathLike[str],
    interval: float = 1.0,
    *,
    tool_aliases: Mapping[str, str] | None = None,
    meter_provider: metrics.MeterProvider | None = None,
) -> Watch:
    """Load ``path``, register its hooks on ``runner``, and reload them when it changes.

    Works with or without a running event loop (the polling is a thread).

    Args:
        runner: The runner to keep in step.
        path: The configuration file (see :func:`hookscope.engine.load`).
        interval: Seconds between checks.
        tool_aliases: Passed to :func:`~hookscope.engine.load`.
        meter_provider: Where the reload counter goes; the global one when ``None``.

    Returns:
        The running :class:`Watch`; call ``stop()`` to end it.

    Raises:
        ConfigError: the file is invalid at start (nothing is registered).
        ValueError: ``interval`` is not a positive number.
    """
    if isinstance(interval, bool) or not isinstance(interval, (int, float)) or not interval > 0:
        raise ValueError(f"interval must be a positive number of seconds, got {interval!r}")
    return Watch(runner, Path(path), float(interval), tool_aliases, meter_provider)
