"""One test-only helper; the span and metric helpers live in :mod:`hookscope.testing`."""

from __future__ import annotations

from typing import Any

__all__ = ["attrs"]


def attrs(**values: Any) -> frozenset[tuple[str, Any]]:
    """Metric attributes written as keywords, with '__' standing for '.'."""
    return frozenset((k.replace("__", "."), v) for k, v in values.items())
