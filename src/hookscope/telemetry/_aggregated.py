"""A histogram aggregated in process and handed to every metric reader when it collects.

Recording a value into an OpenTelemetry SDK histogram validates and hashes its attributes and
takes two locks (~7 µs on a small VM); a runner with a dozen hooks records two dozen hook
durations per tool call. :class:`BucketHistogram` instead counts each value into the
histogram's fixed buckets in process (one bisect and three additions under a lock) and, as a
*metric producer* (the OpenTelemetry specification's name for a source of pre-aggregated
metric data that a reader pulls at collection time), turns the counts into the same
``Metric`` the SDK would have built: same name, unit, description, instrumentation scope,
attributes, buckets, count, sum, min and max, cumulative or delta as each reader prefers.

The Python SDK (1.45) has no public hook for metric producers, so :func:`attach` wraps the
provider's collection callback: every reader of the provider (periodic exporters, the
Prometheus reader, in-memory readers, readers added later) gets the producers' metrics merged
into the scope they belong to. It attaches only where the result is exactly what the SDK would
report — an SDK ``MeterProvider`` whose views leave the instrument as it is, with no exemplar
filter that would sample span-less values — and otherwise declines, leaving the caller on
the SDK's own path. A producer that fails is logged once and left out of that collection: it
never breaks one.
"""

from __future__ import annotations

import logging
import sys
import threading
import weakref
from bisect import bisect_left
from collections.abc import Callable, Iterable, Sequence
from time import time_ns
from typing import Any, Final, Protocol, final

from opentelemetry.context import Context
from opentelemetry.metrics import MeterProvider
from opentelemetry.sdk.metrics import AlwaysOnExemplarFilter, Exemplar, ExemplarFilter
from opentelemetry.sdk.metrics import MeterProvider as SdkMeterProvider

# The SDK's own instrument class: readers key their temporality and aggregation by it.
from opentelemetry.sdk.metrics._internal.instrument import _Histogram
from opentelemetry.sdk.metrics.export import (
    AggregationTemporality,
    Histogram,
    HistogramDataPoint,
    Metric,
    MetricsData,
    ResourceMetrics,
    ScopeMetrics,
)
from opentelemetry.sdk.metrics.view import DefaultAggregation, DropAggregation
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import INVALID_SPAN, get_current_span

__all__ = ["BucketHistogram", "MetricProducer", "Series", "attach"]

logger = logging.getLogger("hookscope")

#: The attributes the SDK gives the one point that holds a metric's series past its limit.
_OVERFLOW: Final = {"otel.metric.overflow": True}
_DEFAULT_LIMIT: Final = 2000  # the SDK's default series per metric and reader
_UNLIMITED: Final = sys.maxsize  # OpenTelemetry 1.44: no limit


class MetricProducer(Protocol):
    """A source of pre-aggregated metrics that every reader of a provider collects."""

    scope: InstrumentationScope

    def produce(
        self,
        reader: object,
        temporality: AggregationTemporality,
        limit: int,
        readers: Iterable[object],
    ) -> Metric | None:
        """This producer's metric as ``reader`` should see it now, or ``None`` if empty.

        ``readers`` are all the provider's readers: what is new is kept for each of them.
        """
        ...


#: A value offered as its bucket's exemplar: the value, when it was measured, in what context.
Offer = tuple[float, int, Context]


@final
class Series:
    """One attribute set's buckets since the last collection (by any reader)."""

    __slots__ = ("attributes", "counts", "max", "min", "offers", "start_ns", "sum")

    def __init__(self, attributes: dict[str, Any], buckets: int) -> None:
        self.attributes = attributes
        self.counts = [0] * buckets
        self.sum = 0.0
        self.min = float("inf")
        self.max = float("-inf")
        self.start_ns = time_ns()
        #: Per bucket, the first value since the last collection the exemplar filter sampled.
        self.offers: list[Offer | None] = [None] * buckets


@final
class _Totals:
    """What one reader has not yet been shown (delta) or has seen in all (cumulative)."""

    __slots__ = ("counts", "max", "min", "offers", "start_ns", "sum")

    def __init__(self, buckets: int, start_ns: int) -> None:
        self.counts = [0] * buckets
        self.sum = 0.0
        self.min = float("inf")
        self.max = float("-inf")
        self.start_ns = start_ns
        #: Per bucket, the exemplar to show at the next collection (shown once, like the SDK's).
        self.offers: list[Offer | None] = [None] * buckets

    def add(self, other: Series | _Totals) -> None:
        """Add ``other``'s values to these; a newer offer replaces an older one."""
        self.counts = [a + b for a, b in zip(self.counts, other.counts, strict=True)]
        self.sum += other.sum
        self.min = min(self.min, other.min)
        self.max = max(self.max, other.max)
        self.offers = [
            new if new is not None else old
            for old, new in zip(self.offers, other.offers, strict=True)
        ]


@final
class BucketHistogram:
    """An explicit-bucket histogram aggregated in process; a :class:`MetricProducer`.

    :meth:`series` hands back the :class:`Series` of an attribute set; :meth:`add` and
    :meth:`record` count a value into it. They are meant for the hot path: the caller keeps
    the series.

    Exemplars work as the SDK's do for an explicit-bucket histogram: a value measured in a
    context the provider's exemplar filter samples (by default: inside a sampled span) may
    become its bucket's exemplar, which a reader sees once, at its next collection. Per bucket
    and collection the first such value is kept (the SDK keeps the last one offered).
    """

    __slots__ = (
        "_buckets",
        "_lock",
        "_readers",
        "_series",
        "boundaries",
        "description",
        "exemplar_filter",
        "name",
        "scope",
        "unit",
    )

    def __init__(
        self,
        name: str,
        unit: str,
        description: str,
        boundaries: Sequence[float],
        scope: InstrumentationScope,
    ) -> None:
        self.name = name
        self.unit = unit
        self.description = description
        self.boundaries = tuple(float(b) for b in boundaries)
        self.scope = scope
        #: The provider's exemplar filter, set when attached; ``None``: no exemplars.
        self.exemplar_filter: ExemplarFilter | None = None
        self._buckets = len(self.boundaries) + 1
        self._lock = threading.Lock()
        # Insertion order is the order series first appeared: the SDK's order, and the order
        # its cardinality limit admits them in.
        self._series: dict[tuple[Any, ...], Series] = {}
        self._readers: weakref.WeakKeyDictionary[object, dict[Series, _Totals]] = (
            weakref.WeakKeyDictionary()
        )

    def series(self, key: tuple[Any, ...], attributes: Callable[[], dict[str, Any]]) -> Series:
        """The series of ``key``, created with ``attributes()`` on first use."""
        series = self._series.get(key)
        if series is None:
            with self._lock:
                series = self._series.get(key)
                if series is None:
                    series = self._series[key] = Series(attributes(), self._buckets)
        return series

    def add(self, series: Series, value: float) -> None:
        """Count ``value`` into ``series``'s bucket (a value on a boundary goes below it)."""
        with self._lock:
            series.counts[bisect_left(self.boundaries, value)] += 1
            series.sum += value
            if value < series.min:
                series.min = value
            if value > series.max:
                series.max = value

    def record(self, series: Series, value: float, context: Context | None) -> None:
        """:meth:`add`, measured in ``context``: its span may become the bucket's exemplar."""
        with self._lock:
            index = bisect_left(self.boundaries, value)
            series.counts[index] += 1
            series.sum += value
            if value < series.min:
                series.min = value
            if value > series.max:
                series.max = value
            if context is None or series.offers[index] is not None:
                return
        # The filter runs outside the lock (it reads the span); a value offered meanwhile by
        # another thread for the same bucket is as good an exemplar as this one.
        sampler = self.exemplar_filter
        now = time_ns()
        if sampler is not None and sampler.should_sample(value, now, series.attributes, context):
            series.offers[index] = (value, now, context)

    def produce(
        self,
        reader: object,
        temporality: AggregationTemporality,
        limit: int,
        readers: Iterable[object],
    ) -> Metric | None:
        with self._lock:
            now = time_ns()
            for known in (reader, *readers):
                if known not in self._readers:
                    self._readers[known] = {}
            self._fold(now)
            totals = self._readers[reader]
            points = self._points(totals, now, limit)
            if temporality is AggregationTemporality.DELTA:
                totals.clear()
        if not points:
            return None
        return Metric(
            name=self.name,
            description=self.description,
            unit=self.unit,
            data=Histogram(data_points=points, aggregation_temporality=temporality),
        )

    def _fold(self, now: int) -> None:
        """Move every series' new values into each reader's totals (lock held)."""
        empty: list[Offer | None] = [None] * self._buckets
        for series in self._series.values():
            if not any(series.counts):
                continue
            for totals in self._readers.values():
                mine = totals.get(series)
                if mine is None:
                    mine = totals[series] = _Totals(self._buckets, series.start_ns)
                mine.add(series)
            series.counts = [0] * self._buckets
            series.sum = 0.0
            series.min = float("inf")
            series.max = float("-inf")
            series.offers = list(empty)
            series.start_ns = now  # a delta reader's next interval starts here

    def _points(
        self, totals: dict[Series, _Totals], now: int, limit: int
    ) -> list[HistogramDataPoint]:
        points: list[HistogramDataPoint] = []
        overflow: _Totals | None = None
        for index, (series, total) in enumerate(totals.items()):
            if index >= limit:  # past the limit, like the SDK: one overflow point
                if overflow is None:
                    overflow = _Totals(self._buckets, total.start_ns)
                overflow.add(total)
                total.offers = [None] * self._buckets
                continue
            points.append(self._point(series.attributes, total, now))
        if overflow is not None:
            points.append(self._point(dict(_OVERFLOW), overflow, now))
        return points

    def _point(self, attributes: dict[str, Any], total: _Totals, now: int) -> HistogramDataPoint:
        exemplars = [_exemplar(offer) for offer in total.offers if offer is not None]
        total.offers = [None] * self._buckets  # an exemplar is shown once
        return HistogramDataPoint(
            attributes=attributes,
            start_time_unix_nano=total.start_ns,
            time_unix_nano=now,
            count=sum(total.counts),
            sum=total.sum,
            bucket_counts=tuple(total.counts),
            explicit_bounds=self.boundaries,
            min=total.min,
            max=total.max,
            exemplars=exemplars,
        )


def _exemplar(offer: Offer) -> Exemplar:
    value, time_unix_nano, context = offer
    span = get_current_span(context)
    span_id = trace_id = None
    if span is not INVALID_SPAN:
        span_context = span.get_span_context()
        span_id, trace_id = span_context.span_id, span_context.trace_id
    # The measurement's attributes are the point's: none is left to filter in.
    return Exemplar({}, value, time_unix_nano, span_id, trace_id)


# --- attaching producers to an SDK meter provider -------------------------------------------


@final
class _Attachment:
    """The producers of one SDK meter provider and the collection callback that adds them."""

    def __init__(self, provider: Any, collect: Callable[..., MetricsData | None]) -> None:
        self.provider = weakref.ref(provider)
        self.original = collect
        self.producers: list[tuple[MetricProducer, int | None]] = []
        self.failed: set[int] = set()

    def collect(self, reader: Any, timeout_millis: float = 10_000) -> MetricsData | None:
        data = self.original(reader, timeout_millis=timeout_millis)
        provider = self.provider()
        if provider is None:
            return data
        added: list[tuple[InstrumentationScope, Metric]] = []
        readers = tuple(provider._measurement_consumer._reader_storages)
        for producer, view_limit in self.producers:
            try:
                metric = _produce(producer, reader, readers, view_limit)
            except Exception:
                if id(producer) not in self.failed:
                    self.failed.add(id(producer))
                    logger.exception("hookscope: metric producer %r failed", producer)
                continue
            if metric is not None:
                added.append((producer.scope, metric))
        if not added:
            return data
        return _merge(data, provider._sdk_config.resource, added)


def _produce(
    producer: MetricProducer, reader: Any, readers: Iterable[object], view_limit: int | None
) -> Metric | None:
    if isinstance(reader._instrument_class_aggregation.get(_Histogram), DropAggregation):
        return None
    temporality = reader._instrument_class_temporality.get(
        _Histogram, AggregationTemporality.CUMULATIVE
    )
    # OpenTelemetry 1.44 (hookscope's floor, google-adk's pin) has no cardinality limits.
    limits = getattr(reader, "_instrument_class_cardinality_limit", None)
    default = _DEFAULT_LIMIT if limits is not None else _UNLIMITED
    limit = view_limit or (limits or {}).get(_Histogram, default)
    return producer.produce(reader, temporality, limit, readers)


def _merge(
    data: MetricsData | None, resource: Any, added: list[tuple[InstrumentationScope, Metric]]
) -> MetricsData:
    """``data`` with each metric appended to its scope's metrics (the scope added if new)."""
    if data is None or not data.resource_metrics:
        resource_metrics = [ResourceMetrics(resource, [], resource.schema_url)]
    else:
        resource_metrics = list(data.resource_metrics)
    first = resource_metrics[0]
    scopes = list(first.scope_metrics)
    for scope, metric in added:
        index = next((i for i, s in enumerate(scopes) if s.scope == scope), None)
        if index is None:
            scopes.append(ScopeMetrics(scope, [metric], scope.schema_url or ""))
        else:
            found = scopes[index]
            scopes[index] = ScopeMetrics(found.scope, [*found.metrics, metric], found.schema_url)
    resource_metrics[0] = ResourceMetrics(first.resource, scopes, first.schema_url)
    return MetricsData(resource_metrics)


_ATTACHED: weakref.WeakKeyDictionary[Any, _Attachment] = weakref.WeakKeyDictionary()
_ATTACH_LOCK = threading.Lock()


def attach(meter_provider: MeterProvider, producer: MetricProducer, instrument: object) -> bool:
    """Have every reader of ``meter_provider`` collect ``producer``'s metric from now on.

    ``instrument`` is the SDK instrument the producer stands in for (created, never recorded
    into): the provider's views are matched against it. Returns ``False``, attaching nothing,
    when the result could differ from what the SDK would report for that instrument: not an
    SDK provider, a view that renames, redescribes, filters or re-aggregates it (or two views
    that would both report it), an exemplar filter that samples values outside spans, or SDK
    internals other than expected. The caller then records into the instrument itself.
    """
    if not isinstance(meter_provider, SdkMeterProvider) or not isinstance(instrument, _Histogram):
        return False
    try:
        config = meter_provider._sdk_config
        # The SDK's internals, typed loosely: their shapes are checked by use (AttributeError).
        consumer: Any = meter_provider._measurement_consumer
        if isinstance(config.exemplar_filter, AlwaysOnExemplarFilter):
            return False  # the SDK would attach (span-less) exemplars
        matching = [view for view in config.views if view._match(instrument)]
        if len(matching) > 1:
            return False
        view_limit: int | None = None
        for view in matching:
            if (
                view._name is not None
                or view._description is not None
                or view._attribute_keys is not None
                or not isinstance(view._aggregation, DefaultAggregation)
            ):
                return False
            # OpenTelemetry 1.45 added the per-view limit; 1.44 (hookscope's floor) has none.
            view_limit = getattr(view, "_aggregation_cardinality_limit", None)
        for reader in consumer._reader_storages:
            preferred = reader._instrument_class_aggregation.get(_Histogram)
            if not isinstance(preferred, DefaultAggregation):
                return False
        with _ATTACH_LOCK, meter_provider._all_metric_readers_lock:
            attachment = _ATTACHED.get(meter_provider)
            if attachment is None:
                attachment = _Attachment(meter_provider, consumer.collect)
                # Readers added later are given the consumer's collect: ours, from now on.
                consumer.collect = attachment.collect
                for reader in consumer._reader_storages:
                    reader._set_collect_callback(attachment.collect)
                _ATTACHED[meter_provider] = attachment
            attachment.producers.append((producer, view_limit))
        if isinstance(producer, BucketHistogram):
            producer.exemplar_filter = config.exemplar_filter
        return True
    except AttributeError:  # an SDK whose internals moved: stay on its public path
        logger.debug("hookscope: cannot attach a metric producer to %r", meter_provider)
        return False
