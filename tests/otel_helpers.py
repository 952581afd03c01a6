"""Kept for tests not yet moved to :mod:`hookscope.testing`, which now holds these helpers."""

from __future__ import annotations

from typing import Any

from hookscope.testing import VOLATILE, metric_points, span_tree

__all__ = ["VOLATILE", "attrs", "metric_points", "span_tree"]


def attrs(**values: Any) -> frozenset[tuple[str, Any]]:
    """Metric attributes written as keywords, with '__' standing for '.'."""
    return frozenset((k.replace("__", "."), v) for k, v in values.items())
