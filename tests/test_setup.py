"""configure(): providers from the OTEL_* variables, destinations, globals, failure handling.

Most tests pass ``set_global=False``: the OpenTelemetry API lets a process set its global
providers once, so the tests about globals run in a subprocess each.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from time import monotonic, sleep
from typing import Any

import grpc
import pytest
from opentelemetry import metrics, trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.metrics.v1 import (
    metrics_service_pb2,
    metrics_service_pb2_grpc,
)
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
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
from opentelemetry.trace import NoOpTracerProvider

from hookscope.runner import HookRunner
from hookscope.telemetry import OTelHook
from hookscope.telemetry._export import (
    INITIAL_BACKOFF_S,
    ExportHealth,
    GuardedMetricExporter,
    GuardedSpanExporter,
    Target,
    probe_address,
)
from hookscope.telemetry.files import METRICS_FILE, TRACES_FILE, read_metrics, read_spans
from hookscope.telemetry.semconv import (
    METRIC_EXPORT_DROPPED,
    METRIC_EXPORT_FAILURES,
    TELEMETRY_SIGNAL,
)
from hookscope.telemetry.setup import Telemetry, TelemetryConfigError, configure
from hookscope.types import ToolCall

SESSION_SPANS = ["execute_tool echo", "execute_tool echo", "invoke_agent a", "session a"]


@pytest.fixture(autouse=True)
def clean_otel_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("OTEL_"):
            monkeypatch.delenv(name)


async def run_session(telemetry: Telemetry, calls: int = 2) -> list[Any]:
    runner = HookRunner([OTelHook(telemetry.tracer_provider, telemetry.meter_provider)])
    values = []
    async with (
        runner.session(agent_name="a", session_id="s") as session,
        session.turn("go") as turn,
    ):
        for n in range(calls):
            outcome = await turn.call_tool(ToolCall("echo", {"n": n}, id=f"c{n}"), lambda n: n * 2)
            values.append(outcome.value)
    return values


def free_port() -> int:
    """A loopback port nothing listens on (a closed endpoint)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def file_names(directory: Path) -> list[str]:
    return sorted(path.name for path in directory.iterdir())


# --- receivers ----------------------------------------------------------------------------


class OtlpHttpReceiver:
    """An OTLP/HTTP endpoint on a loopback port that records every request."""

    def __init__(self, port: int = 0, delay_s: float = 0.0, status: int = 200) -> None:
        self.requests: list[tuple[str, dict[str, str], bytes]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                headers = {key.lower(): value for key, value in self.headers.items()}
                receiver.requests.append((self.path, headers, body))
                sleep(delay_s)  # a slow collector
                self.send_response(status)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> OtlpHttpReceiver:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def span_names(self) -> list[str]:
        names: list[str] = []
        for path, _, body in self.requests:
            if not path.endswith("/v1/metrics"):
                request = trace_service_pb2.ExportTraceServiceRequest.FromString(body)
                for resource_spans in request.resource_spans:
                    for scope_spans in resource_spans.scope_spans:
                        names.extend(span.name for span in scope_spans.spans)
        return sorted(names)


@contextmanager
def hanging_endpoint() -> Iterator[str]:
    """A port that accepts connections (the kernel does) and never answers."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"


class GrpcSink(
    trace_service_pb2_grpc.TraceServiceServicer, metrics_service_pb2_grpc.MetricsServiceServicer
):  # type: ignore[misc]
    def __init__(self) -> None:
        self.spans: list[str] = []
        self.metrics: list[str] = []

    def Export(self, request: Any, context: Any) -> Any:
        if isinstance(request, trace_service_pb2.ExportTraceServiceRequest):
            for resource_spans in request.resource_spans:
                for scope_spans in resource_spans.scope_spans:
                    self.spans.extend(span.name for span in scope_spans.spans)
            return trace_service_pb2.ExportTraceServiceResponse()
        for resource_metrics in request.resource_metrics:
            for scope_metrics in resource_metrics.scope_metrics:
                self.metrics.extend(metric.name for metric in scope_metrics.metrics)
        return metrics_service_pb2.ExportMetricsServiceResponse()


# --- configuration errors -----------------------------------------------------------------


def test_http_json_protocol_is_rejected_naming_what_is_supported(tmp_path: Path) -> None:
    with pytest.raises(TelemetryConfigError) as raised:
        configure(protocol="http/json", directory=tmp_path, set_global=False)
    assert str(raised.value) == (
        "protocol='http/json' is not supported; use 'http/protobuf' (the default) or 'grpc' "
        "(hookscope does not export OTLP http/json)"
    )
    assert isinstance(raised.value, ValueError)


def test_an_unsupported_protocol_variable_is_rejected_naming_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "thrift")
    with pytest.raises(
        TelemetryConfigError, match=r"^OTEL_EXPORTER_OTLP_TRACES_PROTOCOL='thrift' is not supported"
    ):
        configure(directory=tmp_path, set_global=False)


def test_an_endpoint_with_a_signal_path_is_rejected_asking_for_the_base_url(
    tmp_path: Path,
) -> None:
    with pytest.raises(TelemetryConfigError) as raised:
        configure(endpoint="http://collector:4318/v1/traces", directory=tmp_path, set_global=False)
    assert str(raised.value) == (
        "endpoint='http://collector:4318/v1/traces' names a signal path; give the base URL "
        "(e.g. http://collector:4318): hookscope adds /v1/traces and /v1/metrics"
    )


def test_an_http_endpoint_without_a_scheme_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(TelemetryConfigError, match=r"^endpoint='collector:4318' is not an http"):
        configure(endpoint="collector:4318", directory=tmp_path, set_global=False)


@pytest.mark.parametrize("interval", [0, -1.0, float("nan")])
def test_metric_interval_must_be_a_positive_number(tmp_path: Path, interval: float) -> None:
    with pytest.raises(TelemetryConfigError, match="metric_interval_s must be a positive number"):
        configure(metric_interval_s=interval, directory=tmp_path, set_global=False)


def test_a_directory_that_cannot_be_written_fails_at_configure(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(TelemetryConfigError) as raised:
        configure(directory=blocker / "telemetry", set_global=False)
    assert str(raised.value) == (
        f"cannot write telemetry files under '{blocker / 'telemetry'}': Not a directory. "
        "Pass directory= a writable folder, or set OTEL_EXPORTER_OTLP_ENDPOINT to export "
        "over OTLP instead"
    )


# --- what configure() builds --------------------------------------------------------------


def test_sdk_disabled_gives_no_op_providers_and_installs_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    before = (trace.get_tracer_provider(), metrics.get_meter_provider())
    telemetry = configure(directory=tmp_path / "telemetry")  # set_global=True, deliberately
    assert isinstance(telemetry.tracer_provider, NoOpTracerProvider)
    assert isinstance(telemetry.meter_provider, metrics.NoOpMeterProvider)
    assert (telemetry.traces_destination, telemetry.metrics_destination) == ("disabled", "disabled")
    assert (trace.get_tracer_provider(), metrics.get_meter_provider()) == before
    assert not (tmp_path / "telemetry").exists()
    assert telemetry.shutdown()


def test_sdk_disabled_with_a_value_other_than_true_or_false_warns_and_stays_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("OTEL_SDK_DISABLED", "yes")
    telemetry = configure(directory=tmp_path, set_global=False)
    telemetry.shutdown()
    assert telemetry.traces_destination == str(tmp_path / TRACES_FILE)
    assert (
        "OTEL_SDK_DISABLED='yes' is not 'true' or 'false'; telemetry stays enabled" in caplog.text
    )


def test_without_an_endpoint_each_signal_goes_to_its_file(tmp_path: Path) -> None:
    telemetry = configure(directory=tmp_path, set_global=False)
    telemetry.shutdown()
    assert telemetry.traces_destination == str(tmp_path / TRACES_FILE)
    assert telemetry.metrics_destination == str(tmp_path / METRICS_FILE)


def test_service_name_argument_wins_over_otel_service_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_SERVICE_NAME", "from-env")
    telemetry = configure(service_name="from-argument", directory=tmp_path, set_global=False)
    telemetry.shutdown()
    assert telemetry.tracer_provider.resource.attributes["service.name"] == "from-argument"  # type: ignore[attr-defined]


def test_resource_comes_from_otel_service_name_and_resource_attributes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_SERVICE_NAME", "coder")
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=ci,service.name=other")
    telemetry = configure(directory=tmp_path, set_global=False)
    telemetry.shutdown()
    attributes = telemetry.tracer_provider.resource.attributes  # type: ignore[attr-defined]
    assert (attributes["service.name"], attributes["deployment.environment"]) == ("coder", "ci")
    assert telemetry.meter_provider._sdk_config.resource is telemetry.tracer_provider.resource  # type: ignore[attr-defined]


def test_the_sampler_comes_from_otel_traces_sampler(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_TRACES_SAMPLER", "always_off")
    telemetry = configure(directory=tmp_path, set_global=False)
    span = telemetry.tracer_provider.get_tracer("t").start_span("never sampled")
    span.end()
    telemetry.shutdown()
    assert not span.get_span_context().trace_flags.sampled
    assert read_spans(tmp_path) == []


async def test_an_endpoint_sends_traces_and_metrics_over_otlp_http_with_headers(
    tmp_path: Path,
) -> None:
    with OtlpHttpReceiver() as receiver:
        telemetry = configure(
            endpoint=receiver.url,
            headers={"x-team": "agents"},
            directory=tmp_path,
            set_global=False,
        )
        await run_session(telemetry)
        assert telemetry.shutdown()
    assert telemetry.traces_destination == f"{receiver.url}/v1/traces (OTLP http/protobuf)"
    assert sorted({path for path, _, _ in receiver.requests}) == ["/v1/metrics", "/v1/traces"]
    assert {(h["x-team"], h["content-type"]) for _, h, _ in receiver.requests} == {
        ("agents", "application/x-protobuf")
    }
    assert receiver.span_names() == SESSION_SPANS
    assert file_names(tmp_path) == []


async def test_a_signal_endpoint_variable_is_used_as_is_and_the_other_signal_goes_to_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with OtlpHttpReceiver() as receiver:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", f"{receiver.url}/custom/spans")
        telemetry = configure(directory=tmp_path, set_global=False)
        await run_session(telemetry)
        assert telemetry.shutdown()
    assert {path for path, _, _ in receiver.requests} == {"/custom/spans"}
    assert receiver.span_names() == SESSION_SPANS
    assert file_names(tmp_path) == [METRICS_FILE]
    assert "hookscope.tool.calls" in {point["name"] for point in read_metrics(tmp_path)}


async def test_grpc_protocol_from_the_environment_exports_to_a_grpc_receiver(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sink = GrpcSink()
    server = grpc.server(ThreadPoolExecutor(max_workers=2))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(sink, server)
    metrics_service_pb2_grpc.add_MetricsServiceServicer_to_server(sink, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{port}")
        telemetry = configure(directory=tmp_path, set_global=False)
        await run_session(telemetry)
        assert telemetry.shutdown()
    finally:
        server.stop(grace=None)
    assert telemetry.traces_destination == f"http://127.0.0.1:{port} (OTLP grpc)"
    assert sorted(sink.spans) == SESSION_SPANS
    assert "hookscope.tool.calls" in sink.metrics


async def test_the_context_manager_flushes_on_exit(tmp_path: Path) -> None:
    with configure(directory=tmp_path, set_global=False) as telemetry:
        await run_session(telemetry)
        assert read_spans(tmp_path) == []  # still batched
    assert sorted(span["name"] for span in read_spans(tmp_path)) == SESSION_SPANS


def test_shutdown_twice_is_harmless(tmp_path: Path) -> None:
    telemetry = configure(directory=tmp_path, set_global=False)
    assert (telemetry.shutdown(), telemetry.shutdown()) == (True, True)


# --- telemetry failing never reaches the agent --------------------------------------------


async def test_with_the_exporter_down_every_tool_result_arrives_and_every_span_ends(
    tmp_path: Path,
) -> None:
    closed = f"http://127.0.0.1:{free_port()}"
    telemetry = configure(endpoint=closed, directory=tmp_path, set_global=False)
    ended = InMemorySpanExporter()
    telemetry.tracer_provider.add_span_processor(SimpleSpanProcessor(ended))  # type: ignore[attr-defined]

    values = await run_session(telemetry, calls=1000)

    assert values == [n * 2 for n in range(1000)]
    spans = ended.get_finished_spans()
    assert len(spans) == 1002
    assert sum(span.name == "execute_tool echo" for span in spans) == 1000
    assert all(span.end_time is not None for span in spans)
    telemetry.shutdown(timeout_s=1.0)


def last_values(directory: Path, *names: str) -> dict[str, tuple[dict[str, Any], float]]:
    """Metric name → (attributes, value) of its last point in the metrics file."""
    return {
        p["name"]: (p["attributes"], p["value"])
        for p in read_metrics(directory)
        if p["name"] in names
    }


def test_failed_exports_are_logged_once_and_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    with OtlpHttpReceiver(status=400) as receiver:  # reachable, rejects every batch
        url = f"{receiver.url}/v1/traces"
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", url)
        caplog.set_level(logging.WARNING)
        telemetry = configure(directory=tmp_path, set_global=False)
        tracer = telemetry.tracer_provider.get_tracer("t")
        for _ in range(3):
            tracer.start_span("lost").end()
            telemetry.force_flush()  # exports in a hookscope-telemetry-flush thread
        assert telemetry.shutdown()

    assert len(receiver.requests) == 3  # each flush tried again: the breaker does not skip them
    signal = {"hookscope.telemetry.signal": "traces"}
    assert last_values(tmp_path, METRIC_EXPORT_FAILURES, METRIC_EXPORT_DROPPED) == {
        METRIC_EXPORT_FAILURES: (signal, 3),
        METRIC_EXPORT_DROPPED: (signal, 3),
    }
    # Exporters of earlier tests may still be retrying in their own threads: count only this
    # configuration's records.
    ours = [r.getMessage() for r in caplog.records if url in r.getMessage()]
    assert len(ours) == 1
    assert ours[0].startswith(f"hookscope: exporting traces to {url} (OTLP http/protobuf) failed;")
    sdk = [
        r.getMessage()
        for r in caplog.records
        if r.name.startswith("opentelemetry.exporter")
        and (r.threadName or "").startswith("hookscope")
    ]
    assert sdk == ["Failed to export spans batch code: 400, reason: Bad Request"]


def test_a_refused_endpoint_fails_at_the_probe_and_the_exporter_never_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1/traces"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", url)
    caplog.set_level(logging.WARNING)
    telemetry = configure(directory=tmp_path, set_global=False)
    telemetry.tracer_provider.get_tracer("t").start_span("lost").end()
    telemetry.force_flush()
    assert telemetry.shutdown()

    ours = [r.getMessage() for r in caplog.records if url in r.getMessage()]
    assert len(ours) == 1
    assert ours[0].startswith(
        f"hookscope: exporting traces to {url} (OTLP http/protobuf) failed (ConnectionRefusedError:"
    )
    sdk = [
        r.getMessage()
        for r in caplog.records
        if r.name.startswith("opentelemetry.exporter")
        and (r.threadName or "").startswith("hookscope")
    ]
    assert sdk == []


def test_an_exporter_that_recovers_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    port = free_port()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", f"http://127.0.0.1:{port}/v1/traces")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "0.5")
    caplog.set_level(logging.INFO, logger="hookscope")
    telemetry = configure(directory=tmp_path, set_global=False)
    tracer = telemetry.tracer_provider.get_tracer("t")
    tracer.start_span("lost").end()
    telemetry.force_flush()
    with OtlpHttpReceiver(port=port) as receiver:
        tracer.start_span("delivered").end()
        telemetry.force_flush()
        assert telemetry.shutdown()
    assert receiver.span_names() == ["delivered"]
    assert (
        f"hookscope: exporting traces to http://127.0.0.1:{port}/v1/traces (OTLP http/protobuf) "
        "works again after 1 failed export(s)"
    ) in caplog.text


async def test_spans_dropped_from_a_full_queue_are_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_BSP_MAX_QUEUE_SIZE", "4")
    monkeypatch.setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "4")
    with OtlpHttpReceiver(delay_s=0.2) as receiver:  # slower than the spans come
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", f"{receiver.url}/v1/traces")
        telemetry = configure(directory=tmp_path, set_global=False)
        tracer = telemetry.tracer_provider.get_tracer("t")
        for n in range(50):
            tracer.start_span(f"s{n}").end()
        assert telemetry.shutdown(timeout_s=10.0)

    processed: dict[str | None, int] = {}
    for point in read_metrics(tmp_path):
        if point["name"] == "otel.sdk.processor.span.processed":
            processed[point["attributes"].get("error.type")] = point["value"]
    delivered = len(receiver.span_names())
    assert processed[None] == delivered
    # Every span lost is counted. The SDK checks for a full queue before it appends, so a
    # batch taken meanwhile can make it count a drop that did not happen: >=, not ==.
    assert processed["queue_full"] >= 50 - delivered > 0


def test_shutdown_returns_within_its_timeout_when_the_endpoint_hangs(tmp_path: Path) -> None:
    with hanging_endpoint() as url:
        telemetry = configure(endpoint=url, directory=tmp_path, set_global=False)
        telemetry.tracer_provider.get_tracer("t").start_span("stuck").end()
        started = monotonic()
        finished = telemetry.shutdown(timeout_s=0.5)
        elapsed = monotonic() - started
    assert finished is False
    assert elapsed < 1.5  # the exporter alone would wait for its 10 s request timeout


def test_force_flush_returns_within_its_timeout_when_the_endpoint_hangs(tmp_path: Path) -> None:
    with hanging_endpoint() as url:
        telemetry = configure(endpoint=url, directory=tmp_path, set_global=False)
        telemetry.tracer_provider.get_tracer("t").start_span("stuck").end()
        started = monotonic()
        flushed = telemetry.force_flush(timeout_s=0.5)
        elapsed = monotonic() - started
        telemetry.shutdown(timeout_s=0.1)
    assert flushed is False
    assert elapsed < 1.5


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


# --- globals (each in a fresh interpreter: the API sets them once per process) ------------


def run_python(code: str, directory: Path) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), str(directory)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    result["log"] = done.stderr
    return result


def test_configure_installs_its_providers_as_globals_when_none_were_set(tmp_path: Path) -> None:
    result = run_python(
        """
        import json, logging, sys
        logging.basicConfig(level=logging.INFO)
        from opentelemetry import metrics, trace
        from hookscope.telemetry.setup import configure

        first = configure(directory=sys.argv[1])
        second = configure(directory=sys.argv[1])
        print(json.dumps({
            "global_tracer_is_ours": trace.get_tracer_provider() is first.tracer_provider,
            "global_meter_is_ours": metrics.get_meter_provider() is first.meter_provider,
            "second_borrows": [
                second.tracer_provider is first.tracer_provider,
                second.meter_provider is first.meter_provider,
            ],
            "second_destinations": [second.traces_destination, second.metrics_destination],
        }))
        first.shutdown()
        """,
        tmp_path,
    )
    assert result["global_tracer_is_ours"] is True
    assert result["global_meter_is_ours"] is True
    assert result["second_borrows"] == [True, True]
    assert result["second_destinations"] == ["existing provider", "existing provider"]
    assert "Overriding" not in result["log"]


def test_configure_keeps_a_provider_the_application_installed(tmp_path: Path) -> None:
    result = run_python(
        """
        import json, logging, sys
        logging.basicConfig(level=logging.INFO)
        from opentelemetry import metrics, trace
        from opentelemetry.sdk.trace import TracerProvider
        from hookscope.telemetry.setup import configure

        app = TracerProvider()
        trace.set_tracer_provider(app)
        telemetry = configure(directory=sys.argv[1])
        print(json.dumps({
            "uses_app_tracer": telemetry.tracer_provider is app,
            "global_tracer_is_app": trace.get_tracer_provider() is app,
            "global_meter_is_ours": metrics.get_meter_provider() is telemetry.meter_provider,
            "destinations": [telemetry.traces_destination, telemetry.metrics_destination],
        }))
        telemetry.shutdown()
        """,
        tmp_path,
    )
    assert result["uses_app_tracer"] is True
    assert result["global_tracer_is_app"] is True
    assert result["global_meter_is_ours"] is True
    assert result["destinations"] == ["existing provider", str(tmp_path / METRICS_FILE)]
    assert (
        "hookscope: using the TracerProvider the application installed; "
        "configure() does not replace it"
    ) in result["log"]
    assert not (tmp_path / TRACES_FILE).exists()


def test_telemetry_not_shut_down_is_flushed_at_exit(tmp_path: Path) -> None:
    run_python(
        """
        import json, sys
        from hookscope.telemetry.setup import configure

        telemetry = configure(directory=sys.argv[1], set_global=False)
        telemetry.tracer_provider.get_tracer("t").start_span("last words").end()
        print("{}")
        """,
        tmp_path,
    )
    assert [span["name"] for span in read_spans(tmp_path)] == ["last words"]


def test_grpc_headers_merge_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from hookscope.telemetry._export import otlp_metric_exporter, otlp_span_exporter

    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20env,x-team=core")
    spans = otlp_span_exporter(
        "grpc", "localhost:4317", {"X-Tenant": "t1"}, metrics.NoOpMeterProvider()
    )
    metrics_ = otlp_metric_exporter("grpc", "localhost:4317", {"x-team": "agents"})
    assert dict(spans._headers) == {
        "authorization": "Bearer env",
        "x-team": "core",
        "x-tenant": "t1",
    }  # type: ignore[attr-defined]
    assert dict(metrics_._headers) == {"authorization": "Bearer env", "x-team": "agents"}  # type: ignore[attr-defined]
    spans.shutdown()
    metrics_.shutdown()
