"""configure(): providers from the OTEL_* variables, destinations, globals, failure handling.

Most tests pass ``set_global=False``: the OpenTelemetry API lets a process set its global
providers once, so the tests about globals run in a subprocess each.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from time import monotonic
from typing import Any

import grpc
import pytest
from opentelemetry import metrics, trace
from opentelemetry.proto.collector.metrics.v1 import (
    metrics_service_pb2_grpc,
)
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NoOpTracerProvider

from hookscope.runner import HookRunner
from hookscope.telemetry import OTelHook
from hookscope.telemetry.files import LOGS_FILE, METRICS_FILE, TRACES_FILE, read_metrics, read_spans
from hookscope.telemetry.semconv import (
    METRIC_EXPORT_DROPPED,
    METRIC_EXPORT_FAILURES,
)
from hookscope.telemetry.setup import Telemetry, TelemetryConfigError, configure
from hookscope.types import ToolCall

from .otlp_receivers import (
    GrpcSink,
    OtlpHttpReceiver,
    file_names,
    free_port,
    hanging_endpoint,
    wait_for_telemetry_threads,
)

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


# --- configuration errors -----------------------------------------------------------------


def test_an_unknown_protocol_is_rejected_naming_the_supported_ones(tmp_path: Path) -> None:
    with pytest.raises(TelemetryConfigError) as raised:
        configure(protocol="http/xml", directory=tmp_path, set_global=False)
    assert str(raised.value) == (
        "protocol='http/xml' is not supported; use 'http/protobuf' (the default), 'http/json' "
        "or 'grpc'"
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
        "(e.g. http://collector:4318): hookscope adds /v1/traces, /v1/metrics and /v1/logs"
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
    assert file_names(tmp_path) == [LOGS_FILE, METRICS_FILE]
    assert "hookscope.tool.calls" in {point["name"] for point in read_metrics(tmp_path)}


async def test_grpc_protocol_from_the_environment_exports_to_a_grpc_receiver(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sink = GrpcSink()
    executor = ThreadPoolExecutor(max_workers=2)
    server = grpc.server(executor)
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
        server.stop(grace=None).wait()
        executor.shutdown(wait=True)
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
    assert ours[0].startswith(
        f"hookscope: exporting traces to {url} (OTLP http/protobuf) failed (HTTP 400: the "
        "endpoint is up and refused the batch); the agent is unaffected but traces are dropped "
        "until it recovers. Check the endpoint's URL path, headers and credentials."
    )
    sdk = [
        r.getMessage()
        for r in caplog.records
        if r.name.startswith("opentelemetry.exporter")
        and (r.threadName or "").startswith("hookscope")
    ]
    # hookscope filters no other library's logger: the SDK's exporter reports each batch it
    # was given (the breaker is what limits how many it is given).
    # (OpenTelemetry 1.44, hookscope's floor, says "span batch"; 1.45 "spans batch".)
    assert len(sdk) == 3
    assert {m.replace("spans batch", "span batch") for m in sdk} == {
        "Failed to export span batch code: 400, reason: Bad Request"
    }


@pytest.mark.parametrize("protocol", ["http/protobuf", "http/json"])
@pytest.mark.parametrize("code", [404, 405, 501])
def test_an_endpoint_that_takes_no_metrics_is_named_as_such_not_as_down(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    protocol: str,
    code: int,
) -> None:
    # A traces-only backend (Phoenix answers 405 on /v1/metrics): up, and taking traces.
    with OtlpHttpReceiver(statuses={"/v1/metrics": code}) as receiver:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
        monkeypatch.setenv("OTEL_LOGS_EXPORTER", "none")
        caplog.set_level(logging.WARNING)
        telemetry = configure(directory=tmp_path, set_global=False)
        telemetry.tracer_provider.get_tracer("t").start_span("kept").end()
        telemetry.meter_provider.get_meter("m").create_counter("c").add(1)
        telemetry.force_flush()
        assert telemetry.shutdown()
    paths = sorted({path for path, _, _ in receiver.requests})
    assert paths == ["/v1/metrics", "/v1/traces"]
    url = f"{receiver.url}/v1/metrics"
    # hookscope's own line, once (the exporters log each refused batch their own way).
    ours = [m for r in caplog.records if (m := r.getMessage()).startswith(f"hookscope: {url}")]
    assert ours == [
        f"hookscope: {url} (OTLP {protocol}) takes no metrics (HTTP {code}): the endpoint is up "
        "but has no metrics route (traces-only backends such as Phoenix and Jaeger take traces "
        "alone). Set OTEL_METRICS_EXPORTER=none to stop sending them; until then they are "
        "dropped, counted in hookscope.telemetry.export.failures (items in "
        "hookscope.telemetry.export.dropped), not logged."
    ]
    assert not [r for r in caplog.records if "/v1/traces" in r.getMessage()]


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


def test_shutdown_returns_within_its_timeout_when_the_endpoint_hangs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "2")  # so the abandoned export ends soon
    with hanging_endpoint() as url:
        telemetry = configure(endpoint=url, directory=tmp_path, set_global=False)
        telemetry.tracer_provider.get_tracer("t").start_span("stuck").end()
        started = monotonic()
        finished = telemetry.shutdown(timeout_s=0.5)
        elapsed = monotonic() - started
    assert finished is False
    assert elapsed < 1.5  # the exporter alone would wait for its request timeout
    wait_for_telemetry_threads()  # the endpoint is gone: the abandoned exports end


def test_force_flush_returns_within_its_timeout_when_the_endpoint_hangs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "2")
    with hanging_endpoint() as url:
        telemetry = configure(endpoint=url, directory=tmp_path, set_global=False)
        telemetry.tracer_provider.get_tracer("t").start_span("stuck").end()
        started = monotonic()
        flushed = telemetry.force_flush(timeout_s=0.5)
        elapsed = monotonic() - started
        telemetry.shutdown(timeout_s=0.1)
    assert flushed is False
    assert elapsed < 1.5
    wait_for_telemetry_threads()


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
        "hookscope: using the traces provider(s) the application installed; "
        "configure() does not replace them"
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
    from hookscope.telemetry._exporters import otlp_metric_exporter, otlp_span_exporter

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
