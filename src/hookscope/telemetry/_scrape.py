"""A Prometheus scrape endpoint whose histogram buckets carry exemplars.

``opentelemetry-exporter-prometheus`` renders histograms without the exemplars the SDK keeps
with each bucket, so a latency panel has nothing to link to its traces. hookscope records
every ``gen_ai.*`` duration in the context of the span it measured (the SDK's default,
trace-based exemplar filter keeps one per bucket), and :class:`ExemplarPrometheusReader` puts
them back: each bucket sample gets an OpenMetrics exemplar labelled ``trace_id`` and
``span_id`` (32 and 16 lower-case hex digits, as Grafana's ``exemplarTraceIdDestinations``
and Prometheus's exemplar storage read them).

Exemplars exist only in the OpenMetrics exposition: ``prometheus_client`` serves it when the
scraper asks for ``application/openmetrics-text`` (Prometheus does with
``--enable-feature=exemplar-storage``); the classic text format leaves them out.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from json import dumps
from typing import Any, Final

from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.exporter.prometheus._mapping import sanitize_attribute, sanitize_full_name
from opentelemetry.sdk.metrics.export import Histogram, MetricsData
from prometheus_client import REGISTRY, CollectorRegistry
from prometheus_client.core import Metric
from prometheus_client.samples import Exemplar

__all__ = ["ExemplarPrometheusReader"]

#: Labels the exporter adds besides the data point's attributes.
_SCOPE_PREFIX: Final = "otel_scope_"

#: Metric name → a data point's labels → bucket upper bound → the exemplar in that bucket.
_Index = dict[str, dict[frozenset[tuple[str, str]], dict[float, Exemplar]]]


def _label(value: Any) -> str:
    # As the exporter renders label values: strings as they are, anything else as JSON.
    return value if isinstance(value, str) else dumps(value, default=str)


def _index(metrics_data: MetricsData, index: _Index) -> None:
    """Add ``metrics_data``'s exemplars to ``index``, each replacing its bucket's last one.

    The SDK hands an exemplar over once, at the collection after its measurement (any
    reader's collection: a flush too), so buckets keep theirs until a newer one arrives.
    """
    for resource in metrics_data.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if not isinstance(metric.data, Histogram):
                    continue
                name = sanitize_full_name(metric.name)
                for point in metric.data.data_points:
                    if not point.exemplars:
                        continue
                    labels = frozenset(
                        (sanitize_attribute(k), _label(v))
                        for k, v in (point.attributes or {}).items()
                        if _label(v) != ""
                    )
                    bounds = tuple(point.explicit_bounds)
                    buckets = index.setdefault(name, {}).setdefault(labels, {})
                    for exemplar in point.exemplars:
                        if not exemplar.trace_id or not exemplar.span_id:
                            continue  # measured outside a sampled span: nothing to link to
                        upper = next((b for b in bounds if exemplar.value <= b), math.inf)
                        buckets[upper] = Exemplar(
                            {
                                "trace_id": format(exemplar.trace_id, "032x"),
                                "span_id": format(exemplar.span_id, "016x"),
                            },
                            exemplar.value,
                            exemplar.time_unix_nano / 1e9,
                        )


def _with_exemplars(family: Metric, index: _Index) -> Metric:
    # The family's name may carry the unit the exporter appended ("_seconds").
    points = index.get(family.name) or index.get(family.name.removesuffix(f"_{family.unit}"))
    if not points:
        return family
    samples = []
    for sample in family.samples:
        if sample.name.endswith("_bucket") and "le" in sample.labels:
            labels = frozenset(
                (k, v)
                for k, v in sample.labels.items()
                if k != "le" and not k.startswith(_SCOPE_PREFIX) and v != ""
            )
            exemplar = points.get(labels, {}).get(float(sample.labels["le"]))
            if exemplar is not None:
                sample = sample._replace(exemplar=exemplar)
        samples.append(sample)
    family.samples = samples
    return family


class _ExemplarCollector:
    """Collects what the exporter's own collector renders, adding exemplars to buckets."""

    def __init__(self, reader: ExemplarPrometheusReader, inner: CollectorRegistry) -> None:
        self._reader = reader
        self._inner = inner

    def collect(self) -> Iterator[Metric]:
        families = list(self._inner.collect())  # collecting updates the reader's index
        index = self._reader.exemplars
        for family in families:
            yield _with_exemplars(family, index) if family.type == "histogram" else family


class ExemplarPrometheusReader(PrometheusMetricReader):
    """``PrometheusMetricReader`` whose histogram buckets carry trace exemplars.

    Args:
        registry: Where the scrape endpoint collects from (``prometheus_client``'s global
            registry by default, as the upstream reader).
        options: Passed to ``PrometheusMetricReader``.
    """

    def __init__(self, registry: CollectorRegistry = REGISTRY, **options: Any) -> None:
        # The upstream collector registers in a registry of its own; ours, wrapping it, in
        # the one that is served.
        inner = CollectorRegistry(auto_describe=False)
        self.exemplars: _Index = {}
        super().__init__(registry=inner, **options)
        self._served = registry
        self._wrapper = _ExemplarCollector(self, inner)
        registry.register(self._wrapper)

    def _receive_metrics(
        self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: Any
    ) -> None:
        if metrics_data is not None:
            _index(metrics_data, self.exemplars)
        super()._receive_metrics(metrics_data, timeout_millis, **kwargs)

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        self._served.unregister(self._wrapper)
        super().shutdown(timeout_millis, **kwargs)
