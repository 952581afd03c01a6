"""The pieces of the core interface (BRIEF) the builtins use before they land on ``main``.

Temporary: once the ``core:`` commits are merged, import these names directly and delete this
module.
"""

from __future__ import annotations

from typing import Final

from hookscope.types import HookResult

try:
    from hookscope.matching import TIERS_KEY  # type: ignore[import-not-found, unused-ignore]
except ImportError:  # pragma: no cover - until the core's matchers land
    TIERS_KEY: Final = "hookscope.tool_tiers"  # type: ignore[misc, unused-ignore]

try:
    from hookscope.types import HookscopeError  # type: ignore[attr-defined, unused-ignore]
except ImportError:  # pragma: no cover - until the core's error base lands

    class HookscopeError(Exception):  # type: ignore[no-redef]
        """Stand-in for :class:`hookscope.HookscopeError`."""


def ask(message: str) -> HookResult:
    """``HookResult.ask(message)``; a plain denial until the core supports asking."""
    build = getattr(HookResult, "ask", None)
    if build is None:  # pragma: no cover - until HookResult.ask lands
        return HookResult.deny(message)
    result: HookResult = build(message)
    return result


__all__ = ["TIERS_KEY", "HookscopeError", "ask"]
