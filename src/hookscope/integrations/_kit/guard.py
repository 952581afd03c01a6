"""Fail closed where hookscope decides, never break the SDK where it only observes.

An SDK that calls back into hookscope may treat an exception as "no opinion" (the Claude Agent
SDK lets a tool run when a PreToolUse hook raises, unless ``on_failure="block"``), so an adapter
must never let one escape a decide path: :meth:`Guard.decide` turns it into a denial naming the
failure. Observe-only callbacks go through :meth:`Guard.observe`: logged once, then quiet.
Cancellation and ``KeyboardInterrupt`` always pass through.
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, cast, final

__all__ = ["Guard"]

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])


@final
class Guard:
    """Exception policy of one adapter.

    Args:
        sdk: The SDK's name, for log lines and denial messages ("claude-agent-sdk").
        logger: Where failures are logged (``hookscope.integrations`` by default).
    """

    __slots__ = ("_logged", "logger", "sdk")

    def __init__(self, sdk: str, logger: logging.Logger | None = None) -> None:
        self.sdk = sdk
        self.logger = logger or logging.getLogger("hookscope.integrations")
        self._logged: set[str] = set()

    def failed(self, where: str, error: BaseException) -> str:
        """Log ``error`` (once per ``where``) and return the message a denial carries."""
        if where not in self._logged:
            self._logged.add(where)
            self.logger.error(
                "hookscope's %s adapter failed in %s; failing closed (further failures there "
                "log at DEBUG)",
                self.sdk,
                where,
                exc_info=error,
            )
        else:
            self.logger.debug("hookscope's %s adapter failed again in %s", self.sdk, where)
        # The exception's text may quote arguments (secrets): only its type reaches the model.
        return f"hookscope denied this call: its {self.sdk} adapter failed ({type(error).__name__})"

    async def decide(self, work: Awaitable[T], deny: Callable[[str], T], where: str = "") -> T:
        """Await ``work``; any exception becomes ``deny(message)`` (fail closed)."""
        try:
            return await work
        except Exception as error:
            return deny(self.failed(where or _name(work), error))

    def decide_sync(self, work: Callable[[], T], deny: Callable[[str], T], where: str = "") -> T:
        """Call ``work()``; any exception becomes ``deny(message)`` (fail closed)."""
        try:
            return work()
        except Exception as error:
            return deny(self.failed(where or _name(work), error))

    async def report(self, work: Awaitable[T], default: T, where: str = "") -> T:
        """Await observe-only ``work``; an exception is logged once and ``default`` returned."""
        try:
            return await work
        except Exception as error:
            self._quiet(where or _name(work), error)
            return default

    def observe(self, fn: F) -> F:
        """Wrap an observe-only callback (sync or async): exceptions logged once, ``None`` back."""
        where = getattr(fn, "__qualname__", repr(fn))
        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def guarded_async(*args: Any, **kwargs: Any) -> Any:
                try:
                    return await fn(*args, **kwargs)
                except Exception as error:
                    self._quiet(where, error)
                    return None

            return cast(F, guarded_async)

        @functools.wraps(fn)
        def guarded(*args: Any, **kwargs: Any) -> Any:
            try:
                return fn(*args, **kwargs)
            except Exception as error:
                self._quiet(where, error)
                return None

        return cast(F, guarded)

    def _quiet(self, where: str, error: BaseException) -> None:
        if where not in self._logged:
            self._logged.add(where)
            self.logger.warning(
                "hookscope's %s adapter failed in %s (telemetry only; the agent goes on); "
                "further failures there log at DEBUG",
                self.sdk,
                where,
                exc_info=error,
            )
        else:
            self.logger.debug("hookscope's %s adapter failed again in %s", self.sdk, where)


def _name(work: object) -> str:
    code = getattr(work, "cr_code", None) or getattr(work, "__code__", None)
    return getattr(code, "co_qualname", None) or getattr(work, "__qualname__", None) or repr(work)
