"""Normalizers that turn exported spans and metrics into plain, comparable values."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from opentelemetry.sdk.metrics.export import HistogramDataPoint, MetricsData, NumberDataPoint
from opentelemetry.sdk.trace import ReadableSpan

# Attributes whose values differ run to run (or repeat on every span): left out of trees.
VOLATILE = frozenset({"session.id", "gen_ai.conversation.id"})


def span_tree(spans: Sequence[ReadableSpan]) -> list[dict[str, Any]]:
    """Spans as nested dicts (name, attributes, events, status, children), siblings in start order."""
    by_parent: dict[int | None, list[ReadableSpan]] = {}
    ids = {span.context.span_id for span in spans}
    for span in spans:
        parent = (
            span.parent.span_id if span.parent is not None and span.parent.span_id in ids else None
        )
        by_parent.setdefault(parent, []).append(span)

    def node(span: ReadableSpan) -> dict[str, Any]:
        children = sorted(by_parent.get(span.context.span_id, []), key=lambda s: s.start_time or 0)
        result: dict[str, Any] = {
            "name": span.name,
            "attributes": {k: v for k, v in (span.attributes or {}).items() if k not in VOLATILE},
            "events": [(e.name, dict(e.attributes or {})) for e in span.events],
            "status": span.status.status_code.name,
        }
        if children:
            result["children"] = [node(child) for child in children]
        return result

    roots = sorted(by_parent.get(None, []), key=lambda s: s.start_time or 0)
    return [node(root) for root in roots]


def metric_points(data: MetricsData | None, names: Iterable[str] | None = None) -> dict[str, Any]:
    """Metric name → {frozenset(attributes): value} (count and sum for histograms)."""
    wanted = set(names) if names is not None else None
    points: dict[str, Any] = {}
    if data is None:
        return points
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if wanted is not None and metric.name not in wanted:
                    continue
                series = points.setdefault(metric.name, {})
                for point in metric.data.data_points:
                    key = frozenset((point.attributes or {}).items())
                    if isinstance(point, HistogramDataPoint):
                        series[key] = point.count
                    elif isinstance(point, NumberDataPoint):
                        series[key] = point.value
    return points


def attrs(**values: Any) -> frozenset[tuple[str, Any]]:
    """Metric attributes written as keywords, with '__' standing for '.'."""
    return frozenset((k.replace("__", "."), v) for k, v in values.items())
