"""The export guard: circuit breaker, reachability probe, counting (a fake clock, no sleeps)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    InMemoryMetricReader,
    MetricExporter,
    MetricExportResult,
    MetricsData,
)
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from hookscope.telemetry._endpoint import Target, probe_address
from hookscope.telemetry._guard import (
    INITIAL_BACKOFF_S,
    ExportHealth,
    GuardedMetricExporter,
    GuardedSpanExporter,
)
from hookscope.telemetry.semconv import (
    METRIC_EXPORT_DROPPED,
    METRIC_EXPORT_FAILURES,
    TELEMETRY_SIGNAL,
)

from .otlp_receivers import OtlpHttpReceiver, free_port

# --- the guard: circuit breaker and reachability probe (a fake clock, no sleeps) ----------


class FakeClock:
    """Monotonic seconds that move only when a test moves them."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class ScriptedSpanExporter(SpanExporter):
    """Answers each export with the next scripted result (the last one repeats), and records
    when it was called and how many spans it got."""

    def __init__(self, clock: FakeClock, *results: SpanExportResult) -> None:
        self.clock = clock
        self.results = list(results)
        self.calls: list[tuple[float, int]] = []

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.calls.append((self.clock(), len(spans)))
        return self.results.pop(0) if len(self.results) > 1 else self.results[0]

    def shutdown(self) -> None:
        pass


OK, FAILED = SpanExportResult.SUCCESS, SpanExportResult.FAILURE
NO_PROBE = Target("traces", "the test's exporter", "Check the test")


def finished_spans(*names: str) -> list[ReadableSpan]:
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    for name in names:
        provider.get_tracer("t").start_span(name).end()
    return list(memory.get_finished_spans())


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def metric_reader() -> InMemoryMetricReader:
    return InMemoryMetricReader()


@pytest.fixture
def health(metric_reader: InMemoryMetricReader) -> ExportHealth:
    health = ExportHealth()
    health.bind(MeterProvider(metric_readers=[metric_reader]))
    return health


def counted(reader: InMemoryMetricReader) -> dict[str, dict[str, float]]:
    """Counter name → signal → value."""
    values: dict[str, dict[str, float]] = {}
    data = reader.get_metrics_data()
    for resource_metrics in data.resource_metrics if data else []:
        for scope_metrics in resource_metrics.scope_metrics:
            for metric in scope_metrics.metrics:
                for point in metric.data.data_points:
                    signal = str((point.attributes or {})[TELEMETRY_SIGNAL])
                    values.setdefault(metric.name, {})[signal] = point.value  # type: ignore[union-attr]
    return values


def test_after_a_failure_the_breaker_drops_batches_without_calling_the_exporter(
    clock: FakeClock, health: ExportHealth
) -> None:
    inner = ScriptedSpanExporter(clock, FAILED, OK)
    guarded = GuardedSpanExporter(inner, health, NO_PROBE, clock)

    first = guarded.export(finished_spans("a"))
    clock.now = INITIAL_BACKOFF_S - 0.001
    second = guarded.export(finished_spans("b"))

    assert (first, second) == (FAILED, FAILED)
    assert inner.calls == [(0.0, 1)]


def test_batches_the_breaker_drops_are_counted_as_failures_with_their_spans(
    clock: FakeClock, health: ExportHealth, metric_reader: InMemoryMetricReader
) -> None:
    guarded = GuardedSpanExporter(ScriptedSpanExporter(clock, FAILED), health, NO_PROBE, clock)
    guarded.export(finished_spans("a", "b"))
    guarded.export(finished_spans("c", "d", "e"))  # dropped by the open breaker
    assert counted(metric_reader) == {
        METRIC_EXPORT_FAILURES: {"traces": 2},
        METRIC_EXPORT_DROPPED: {"traces": 5},
    }


def test_the_breaker_half_opens_after_its_window_and_closes_on_success(
    clock: FakeClock, health: ExportHealth
) -> None:
    inner = ScriptedSpanExporter(clock, FAILED, OK)
    guarded = GuardedSpanExporter(inner, health, NO_PROBE, clock)
    guarded.export(finished_spans("lost"))

    clock.now = INITIAL_BACKOFF_S
    trial = guarded.export(finished_spans("trial"))
    after = guarded.export(finished_spans("after"))

    assert (trial, after) == (OK, OK)
    assert inner.calls == [(0.0, 1), (1.0, 1), (1.0, 1)]


def test_the_window_doubles_with_each_failure_up_to_30_s(
    clock: FakeClock, health: ExportHealth
) -> None:
    inner = ScriptedSpanExporter(clock, FAILED)
    guarded = GuardedSpanExporter(inner, health, NO_PROBE, clock)
    for tick in range(200):  # a batch every 0.5 s for 100 s
        clock.now = tick * 0.5
        guarded.export(finished_spans("s"))
    # windows of 1, 2, 4, 8, 16 s, then 30 s (not 32) from the failure at 31 s on
    assert [when for when, _ in inner.calls] == [0.0, 1.0, 3.0, 7.0, 15.0, 31.0, 61.0, 91.0]


def test_a_success_resets_the_window_to_its_first_length(
    clock: FakeClock, health: ExportHealth
) -> None:
    inner = ScriptedSpanExporter(clock, FAILED, FAILED, OK, FAILED)
    guarded = GuardedSpanExporter(inner, health, NO_PROBE, clock)
    for tick in range(10):
        clock.now = tick * 0.5
        guarded.export(finished_spans("s"))
    # windows: 1 s, 2 s, success at 3.0, then 1 s again (not 4 s)
    assert [when for when, _ in inner.calls] == [0.0, 1.0, 3.0, 3.5, 4.5]


def test_retry_now_ends_an_open_window(clock: FakeClock, health: ExportHealth) -> None:
    inner = ScriptedSpanExporter(clock, FAILED, OK)
    guarded = GuardedSpanExporter(inner, health, NO_PROBE, clock)
    guarded.export(finished_spans("lost"))
    guarded.guard.retry_now()  # what Telemetry.force_flush and shutdown do
    assert guarded.export(finished_spans("flushed")) == OK
    assert inner.calls == [(0.0, 1), (0.0, 1)]


def test_the_probe_fails_fast_against_a_closed_port_without_calling_the_exporter(
    clock: FakeClock, health: ExportHealth, caplog: pytest.LogCaptureFixture
) -> None:
    inner = ScriptedSpanExporter(clock, OK)
    url = f"http://127.0.0.1:{free_port()}/v1/traces"
    guarded = GuardedSpanExporter(inner, health, Target.otlp("traces", url, "http/protobuf"), clock)

    assert guarded.export(finished_spans("never encoded")) == FAILED
    assert inner.calls == []
    (record,) = [r for r in caplog.records if url in r.getMessage()]
    assert "failed (ConnectionRefusedError: " in record.getMessage()


def test_against_a_live_receiver_the_probe_passes_and_the_otlp_exporter_delivers(
    clock: FakeClock, health: ExportHealth
) -> None:
    with OtlpHttpReceiver() as receiver:
        url = f"{receiver.url}/v1/traces"
        guarded = GuardedSpanExporter(
            OTLPSpanExporter(endpoint=url),
            health,
            Target.otlp("traces", url, "http/protobuf"),
            clock,
        )
        result = guarded.export(finished_spans("delivered", "too"))
        guarded.shutdown()
    assert result == OK
    assert receiver.span_names() == ["delivered", "too"]


class FailingMetricExporter(MetricExporter):
    """Fails every export."""

    def export(
        self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: Any
    ) -> MetricExportResult:
        return MetricExportResult.FAILURE

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        return True

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        pass


def test_a_dropped_metrics_collection_counts_its_data_points(
    clock: FakeClock, health: ExportHealth, metric_reader: InMemoryMetricReader
) -> None:
    source = InMemoryMetricReader()
    counter = MeterProvider(metric_readers=[source]).get_meter("m").create_counter("c")
    for tool in ("a", "b", "c"):
        counter.add(1, {"tool": tool})
    collection = source.get_metrics_data()
    assert collection is not None
    target = Target("metrics", "the test's exporter", "Check the test")
    failing = GuardedMetricExporter(FailingMetricExporter(), health, target, clock)

    assert failing.export(collection) == MetricExportResult.FAILURE
    assert counted(metric_reader)[METRIC_EXPORT_DROPPED] == {"metrics": 3}


@pytest.mark.parametrize(
    ("url", "protocol", "address"),
    [
        ("http://collector:4318/v1/traces", "http/protobuf", ("collector", 4318)),
        ("http://collector/v1/traces", "http/protobuf", ("collector", 80)),
        ("https://collector/v1/traces", "http/protobuf", ("collector", 443)),
        ("collector:4317", "grpc", ("collector", 4317)),
        ("http://[::1]:4317", "grpc", ("::1", 4317)),
        ("collector", "grpc", None),  # gRPC's default port is the channel's business
        ("unix:///run/otlp.sock", "grpc", None),
    ],
)
def test_the_probe_address_is_the_endpoints_tcp_host_and_port(
    monkeypatch: pytest.MonkeyPatch, url: str, protocol: str, address: tuple[str, int] | None
) -> None:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    assert probe_address(url, protocol) == address


PROXY_VARIABLES = [
    case(name)
    for name in ("http_proxy", "https_proxy", "grpc_proxy", "no_proxy")
    for case in (str.lower, str.upper)
]


def test_a_destination_behind_a_proxy_is_not_probed(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("https_proxy", "http://proxy:3128")
    assert probe_address("https://collector:4318/v1/traces", "http/protobuf") is None
    monkeypatch.setenv("no_proxy", "collector")
    assert probe_address("https://collector:4318/v1/traces", "http/protobuf") == (
        "collector",
        4318,
    )
