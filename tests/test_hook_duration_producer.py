"""``hookscope.hook.duration`` counted in process and handed to every reader at collection.

The in-process histogram must read exactly as the SDK's own histogram would: same points
(attributes, buckets, count, sum, min, max, no exemplars), same Prometheus series, for every
reader of a provider (periodic exporters, Prometheus, in-memory; cumulative or delta).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Sequence
from typing import Any

import pytest
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics import AlwaysOnExemplarFilter, Histogram, MeterProvider
from opentelemetry.sdk.metrics.export import (
    AggregationTemporality,
    HistogramDataPoint,
    InMemoryMetricReader,
    MetricExporter,
    MetricExportResult,
    MetricsData,
    PeriodicExportingMetricReader,
)
from opentelemetry.sdk.metrics.view import ExplicitBucketHistogramAggregation, View
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from prometheus_client import CollectorRegistry, generate_latest

from hookscope import Hook, OperationContext, ToolCall, ToolResult
from hookscope.runner import HookRunner
from hookscope.telemetry import OTelHook
from hookscope.telemetry import semconv as sc
from hookscope.telemetry._aggregated import BucketHistogram, attach
from hookscope.telemetry.instruments import Instruments

NAME = sc.METRIC_HOOK_DURATION
PROMETHEUS_NAME = "hookscope_hook_duration_seconds"
#: Values on, between and beyond the bucket boundaries (a value on a boundary counts below it).
VALUES = (0.0, 1e-7, 2.5e-6, 0.00005, 0.0001, 0.003, 0.25, 1.0, 42.0)
RUNS = (
    ("agent-a", "audit", "pre_tool_call"),
    ("agent-a", "audit", "post_tool_call"),
    ("agent-a", "policy", "pre_tool_call"),
    ("agent-b", "audit", "pre_tool_call"),
)


def _reference_view() -> View:
    """A view that changes nothing but makes hookscope stay on the SDK's own histogram."""
    return View(
        instrument_name=NAME,
        aggregation=ExplicitBucketHistogramAggregation(sc.HOOK_DURATION_BUCKETS_S),
    )


def _record(instruments: Instruments) -> None:
    for i, value in enumerate(VALUES * 3):
        agent, hook, event = RUNS[i % len(RUNS)]
        instruments.hook_ran(agent, hook, event, value)
    instruments.flush()


def _points(data: MetricsData | None) -> list[HistogramDataPoint]:
    assert data is not None
    found = [
        (scope.scope, metric)
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
        if metric.name == NAME
    ]
    assert len(found) == 1, found
    scope, metric = found[0]
    assert (scope.name, scope.schema_url) == (sc.INSTRUMENTATION_SCOPE, sc.SCHEMA_URL)
    assert metric.unit == "s"
    assert metric.description.startswith("Time each hook took per dispatch")
    return sorted(metric.data.data_points, key=lambda p: sorted(p.attributes.items()))


def _comparable(point: HistogramDataPoint) -> tuple[Any, ...]:
    return (
        dict(point.attributes),
        point.count,
        point.sum,
        tuple(point.bucket_counts),
        tuple(point.explicit_bounds),
        point.min,
        point.max,
        list(point.exemplars),
    )


class _Exporter(MetricExporter):
    """Keeps every exported batch (a periodic reader's exporter, in memory)."""

    def __init__(self, temporality: AggregationTemporality | None = None) -> None:
        super().__init__(
            preferred_temporality={Histogram: temporality} if temporality is not None else None
        )
        self.batches: list[MetricsData] = []

    def export(
        self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: Any
    ) -> MetricExportResult:
        self.batches.append(metrics_data)
        return MetricExportResult.SUCCESS

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        return True

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        return None


def test_the_aggregate_reads_exactly_as_the_sdk_histogram() -> None:
    fast_reader, slow_reader = InMemoryMetricReader(), InMemoryMetricReader()
    fast = MeterProvider(metric_readers=[fast_reader])
    slow = MeterProvider(metric_readers=[slow_reader], views=[_reference_view()])
    fast_instruments, slow_instruments = Instruments(fast), Instruments(slow)
    assert isinstance(fast_instruments._hook_buckets, BucketHistogram)
    assert slow_instruments._hook_buckets is None  # the reference stays on the SDK's path
    for _ in range(2):  # cumulative: the second collection holds both rounds
        _record(fast_instruments)
        _record(slow_instruments)
        mine = [_comparable(p) for p in _points(fast_reader.get_metrics_data())]
        theirs = [_comparable(p) for p in _points(slow_reader.get_metrics_data())]
        assert mine == theirs
    assert sum(p[1] for p in mine) == 2 * 3 * len(VALUES)
    fast.shutdown()
    slow.shutdown()


def _scrape(registry: CollectorRegistry) -> list[str]:
    text = generate_latest(registry).decode()
    return [line for line in text.splitlines() if "hookscope_hook_duration_seconds" in line]


def test_prometheus_scrapes_the_same_series() -> None:
    fast_registry, slow_registry = CollectorRegistry(), CollectorRegistry()
    fast = MeterProvider(metric_readers=[PrometheusMetricReader(registry=fast_registry)])
    slow = MeterProvider(
        metric_readers=[PrometheusMetricReader(registry=slow_registry)],
        views=[_reference_view()],
    )
    fast_instruments, slow_instruments = Instruments(fast), Instruments(slow)
    assert fast_instruments._hook_buckets is not None
    _record(fast_instruments)
    _record(slow_instruments)
    mine, theirs = _scrape(fast_registry), _scrape(slow_registry)
    assert mine == theirs
    # Every bucket line, then count and sum, per series; with the scope's labels.
    assert any(
        line.startswith("hookscope_hook_duration_seconds_bucket{")
        and 'hookscope_hook_name="policy"' in line
        and 'le="+Inf"' in line
        and 'otel_scope_name="hookscope"' in line
        for line in mine
    ), mine
    assert sum(line.startswith("hookscope_hook_duration_seconds_count{") for line in mine) == 4
    fast.shutdown()
    slow.shutdown()


class _Noop(Hook):
    def __init__(self, name: str) -> None:
        self.name = name

    async def pre_tool_call(self, context: OperationContext, call: ToolCall) -> None:
        return None

    async def post_tool_call(self, context: OperationContext, result: ToolResult) -> None:
        return None


def _tool(path: str) -> str:
    return "ok"


async def _session(runner: HookRunner, calls: int) -> None:
    async with runner.session(agent_name="bench") as session, session.turn("go") as turn:
        for i in range(calls):
            await turn.call_tool(ToolCall("read", {"path": f"f{i}"}, f"c{i}"), _tool)


def _counts(points: Sequence[HistogramDataPoint]) -> dict[tuple[str, str], int]:
    return {
        (str(p.attributes[sc.HOOK_NAME]), str(p.attributes[sc.HOOK_EVENT])): p.count for p in points
    }


def test_a_periodic_exporter_and_prometheus_both_see_every_hook_run() -> None:
    """The readers of one provider each get the producer's metric: cumulative and delta."""
    cumulative = _Exporter()
    delta = _Exporter(AggregationTemporality.DELTA)
    periodic = PeriodicExportingMetricReader(cumulative, export_interval_millis=3_600_000)
    periodic_delta = PeriodicExportingMetricReader(delta, export_interval_millis=3_600_000)
    registry = CollectorRegistry()
    provider = MeterProvider(
        metric_readers=[periodic, periodic_delta, PrometheusMetricReader(registry=registry)]
    )
    tracer_provider = TracerProvider()
    runner = HookRunner([OTelHook(tracer_provider, provider), _Noop("first"), _Noop("second")])
    try:
        asyncio.run(_session(runner, 3))
        periodic.force_flush()
        periodic_delta.force_flush()
        expected = {
            (name, event): 3
            for name in ("first", "second")
            for event in ("pre_tool_call", "post_tool_call")
        }
        assert _counts(_points(cumulative.batches[-1])) == expected
        assert _counts(_points(delta.batches[-1])) == expected
        scraped = _scrape(registry)
        counts = [line for line in scraped if line.startswith(f"{PROMETHEUS_NAME}_count")]
        assert len(counts) == 4, scraped
        assert all(line.endswith(" 3.0") for line in counts), scraped

        asyncio.run(_session(runner, 2))  # a second interval
        periodic.force_flush()
        periodic_delta.force_flush()
        assert _counts(_points(cumulative.batches[-1])) == {k: 5 for k in expected}
        delta_points = _points(delta.batches[-1])
        assert _counts(delta_points) == {k: 2 for k in expected}
        assert all(p.start_time_unix_nano < p.time_unix_nano for p in delta_points)
        assert all(line.endswith(" 5.0") for line in _scrape(registry) if "_count{" in line)
    finally:
        provider.shutdown()
        tracer_provider.shutdown()


def test_a_reader_added_later_sees_the_producer() -> None:
    provider = MeterProvider()
    instruments = Instruments(provider)
    assert instruments._hook_buckets is not None
    reader = InMemoryMetricReader()
    provider.add_metric_reader(reader)
    instruments.hook_ran("a", "h", "pre_turn", 0.001)
    assert [p.count for p in _points(reader.get_metrics_data())] == [1]
    provider.shutdown()


def test_past_the_cardinality_limit_series_fold_as_the_sdk_folds_them() -> None:
    # OpenTelemetry 1.44 (hookscope's floor) has no limit to set: both then keep every series.
    capped: dict[str, Any] = (
        {"aggregation_cardinality_limit": 3}
        if "aggregation_cardinality_limit" in inspect.signature(View.__init__).parameters
        else {}
    )
    limit = [View(instrument_name="*", **capped)]
    fast_reader, slow_reader = InMemoryMetricReader(), InMemoryMetricReader()
    fast = MeterProvider(metric_readers=[fast_reader], views=limit)
    # The reference: the same limit, on the SDK's own histogram.
    slow = MeterProvider(
        metric_readers=[slow_reader],
        views=[
            View(
                instrument_name=NAME,
                aggregation=ExplicitBucketHistogramAggregation(sc.HOOK_DURATION_BUCKETS_S),
                **capped,
            )
        ],
    )
    fast_instruments, slow_instruments = Instruments(fast), Instruments(slow)
    assert fast_instruments._hook_buckets is not None
    for instruments in (fast_instruments, slow_instruments):
        for i in range(6):
            instruments.hook_ran("a", f"hook{i}", "pre_turn", 0.001 * (i + 1))
        instruments.flush()
    mine = [_comparable(p) for p in _points(fast_reader.get_metrics_data())]
    theirs = [_comparable(p) for p in _points(slow_reader.get_metrics_data())]
    assert mine == theirs
    overflowed = {"otel.metric.overflow": True} in [p[0] for p in mine]
    if capped:
        assert overflowed
    else:
        assert (overflowed, len(mine)) == (False, 6)
    fast.shutdown()
    slow.shutdown()


def test_an_exemplar_filter_that_samples_everything_keeps_the_sdk_path() -> None:
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader], exemplar_filter=AlwaysOnExemplarFilter())
    instruments = Instruments(provider)
    assert instruments._hook_buckets is None
    instruments.hook_ran("a", "h", "pre_turn", 0.001)
    instruments.flush()
    (point,) = _points(reader.get_metrics_data())
    assert point.count == 1
    provider.shutdown()


def test_a_failing_producer_is_logged_once_and_never_breaks_a_collection(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Broken:
        scope = InstrumentationScope("test")

        def produce(self, reader: object, temporality: Any, limit: int, readers: Any) -> Any:
            raise RuntimeError("boom")

    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    instruments = Instruments(provider)
    histogram = provider.get_meter("test").create_histogram("other")
    assert attach(provider, Broken(), histogram)
    instruments.hook_ran("a", "h", "pre_turn", 0.001)
    with caplog.at_level(logging.ERROR, logger="hookscope"):
        for _ in range(2):
            assert [p.count for p in _points(reader.get_metrics_data())] == [1]
    failures = [r for r in caplog.records if "metric producer" in r.getMessage()]
    assert len(failures) == 1
    provider.shutdown()


def test_exemplars_read_as_the_sdk_histogram_s() -> None:
    """A tool duration measured in its span links to it, as with the SDK's histogram."""
    from opentelemetry import trace
    from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

    sampled, unsampled = TracerProvider(), TracerProvider(sampler=ALWAYS_OFF)
    spans = [sampled.get_tracer("t").start_span(f"s{i}") for i in range(3)]
    dropped = unsampled.get_tracer("t").start_span("dropped")
    measured = [
        (0.0004, spans[0]),
        (0.0004, dropped),  # not sampled: never an exemplar
        (0.0004, spans[1]),
        (7.0, spans[2]),
    ]
    fast_reader, slow_reader = InMemoryMetricReader(), InMemoryMetricReader()
    fast = MeterProvider(metric_readers=[fast_reader])
    tool = sc.METRIC_TOOL_DURATION
    reference = View(
        instrument_name=tool,
        aggregation=ExplicitBucketHistogramAggregation(sc.DURATION_BUCKETS_S),
    )
    slow = MeterProvider(metric_readers=[slow_reader], views=[reference])
    found = []
    for provider, reader in ((fast, fast_reader), (slow, slow_reader)):
        instruments = Instruments(provider)
        assert (instruments.tool_duration.buckets is None) == (provider is slow)
        for value, span in measured:
            context = trace.set_span_in_context(span)
            instruments.tool_duration.record(value, ("a", "read", None, "succeeded"), context)
        instruments.flush()
        data = reader.get_metrics_data()
        assert data is not None
        (point,) = [
            p
            for r in data.resource_metrics
            for s in r.scope_metrics
            for m in s.metrics
            if m.name == tool
            for p in m.data.data_points
        ]
        found.append(
            (
                point.count,
                tuple(point.bucket_counts),
                [(e.value, e.span_id, e.trace_id, e.filtered_attributes) for e in point.exemplars],
            )
        )
        # Shown once: the next collection has the counts but no exemplar.
        again = reader.get_metrics_data()
        assert again is not None
        assert all(
            not p.exemplars
            for r in again.resource_metrics
            for s in r.scope_metrics
            for m in s.metrics
            if m.name == tool
            for p in m.data.data_points
        )
        provider.shutdown()
    assert found[0] == found[1]
    count, _, exemplars = found[0]
    assert count == 4
    linked = [spans[0].get_span_context().span_id, spans[2].get_span_context().span_id]
    assert [span_id for _, span_id, _, _ in exemplars] == linked


def test_a_sampled_value_after_an_unsampled_one_still_gives_its_bucket_an_exemplar() -> None:
    from opentelemetry import trace
    from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

    sampled, unsampled = TracerProvider(), TracerProvider(sampler=ALWAYS_OFF)
    span = sampled.get_tracer("t").start_span("kept")
    dropped = unsampled.get_tracer("t").start_span("dropped")
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    instruments = Instruments(provider)
    for value, measured_in in ((0.0004, dropped), (0.0005, span)):
        context = trace.set_span_in_context(measured_in)
        instruments.tool_duration.record(value, ("a", "read", None, "succeeded"), context)
    data = reader.get_metrics_data()
    assert data is not None
    (point,) = [
        p
        for r in data.resource_metrics
        for s in r.scope_metrics
        for m in s.metrics
        if m.name == sc.METRIC_TOOL_DURATION
        for p in m.data.data_points
    ]
    assert [(e.value, e.span_id) for e in point.exemplars] == [
        (0.0005, span.get_span_context().span_id)
    ]
    provider.shutdown()


def test_every_histogram_scrapes_as_the_sdk_s_own() -> None:
    """All five histograms, through the real Prometheus reader: the same lines, byte for byte."""
    buckets = {
        sc.METRIC_TOOL_DURATION: sc.DURATION_BUCKETS_S,
        sc.METRIC_TURN_DURATION: sc.TURN_DURATION_BUCKETS_S,
        sc.METRIC_TOKEN_USAGE: sc.TOKEN_BUCKETS,
        sc.METRIC_OPERATION_DURATION: sc.OPERATION_DURATION_BUCKETS_S,
        sc.METRIC_HOOK_DURATION: sc.HOOK_DURATION_BUCKETS_S,
    }
    reference = [
        View(instrument_name=name, aggregation=ExplicitBucketHistogramAggregation(bounds))
        for name, bounds in buckets.items()
    ]
    scraped = []
    for views in ([], reference):
        registry = CollectorRegistry()
        provider = MeterProvider(
            metric_readers=[PrometheusMetricReader(registry=registry)], views=views
        )
        instruments = Instruments(provider)
        on_sdk_path = [h.buckets is None for h in instruments._histograms]
        assert on_sdk_path == [bool(views)] * 5
        for i, value in enumerate(VALUES):
            instruments.tool_duration.record(value, ("a", "read", None, "succeeded"), None)
            instruments.turn_duration.record(value, ("a", "completed", None), None)
            instruments.token_usage.record(4**i, ("a", "chat", "openai", "input", "m"), None)
            instruments.operation_duration.record(value, ("a", "chat", "openai", "m", None), None)
            instruments.hook_ran("a", "audit", "pre_tool_call", value)
        instruments.flush()
        scraped.append(generate_latest(registry).decode().splitlines())
        provider.shutdown()
    assert scraped[0] == scraped[1]
    for name in ("gen_ai_execute_tool_duration_seconds", "gen_ai_client_token_usage"):
        assert any(line.startswith(f"{name}_count") for line in scraped[0]), name
