"""The embedded sink: OTLP/JSON lines written whole, and read back as flat records."""

from __future__ import annotations

import errno
import json
import os
import re
import threading
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode

from hookscope.hooks import Hook
from hookscope.policy import deny, enforce
from hookscope.runner import HookRunner
from hookscope.telemetry import OTelHook
from hookscope.telemetry.files import (
    METRICS_FILE,
    TRACES_FILE,
    JsonLinesSpanExporter,
    ReadProblems,
    TelemetryFileError,
    iter_spans,
    read_metrics,
    read_spans,
)
from hookscope.telemetry.setup import Telemetry, configure
from hookscope.types import ChatResponse, Recovery, ToolCall, Usage


class RecoverMissingFiles(Hook):
    def on_tool_error(self, context: Any, error: Exception) -> Recovery | None:
        return Recovery("(no such file)") if isinstance(error, FileNotFoundError) else None


def view_file(path: str) -> str:
    if path == "missing.txt":
        raise FileNotFoundError(path)
    return f"contents of {path}"


async def run_session(telemetry: Telemetry) -> None:
    runner = HookRunner(
        [
            OTelHook(telemetry.tracer_provider, telemetry.meter_provider),
            enforce([deny("run_command", name="no-shell", reason="shell is off")]),
            RecoverMissingFiles(),
        ]
    )
    async with (
        runner.session(agent_name="coder", session_id="s-1") as session,
        session.turn("fix it") as turn,
    ):
        await turn.call_tool(ToolCall("view_file", {"path": "a.py"}, id="c1"), view_file)
        await turn.call_tool(ToolCall("run_command", {"cmd": "ls"}, id="c2"), lambda cmd: cmd)
        await turn.call_tool(ToolCall("view_file", {"path": "missing.txt"}, id="c3"), view_file)
        turn.respond(ChatResponse(text="done", usage=Usage(input_tokens=12, output_tokens=5)))


def make_spans(count: int, name: str = "work") -> list[ReadableSpan]:
    """Real SDK spans, ended, with attributes, an event, and status."""
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("test")
    with tracer.start_as_current_span("root", kind=SpanKind.SERVER) as root:
        for index in range(count - 1):
            with tracer.start_as_current_span(name, attributes={"index": index}) as span:
                span.add_event("tick", {"n": index})
        root.set_status(Status(StatusCode.ERROR, "boom"))
    return list(memory.get_finished_spans())


def pick(attributes: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {key: attributes[key] for key in keys if key in attributes}


async def test_a_session_configured_without_endpoint_reads_back_as_its_span_tree(
    tmp_path: Path,
) -> None:
    telemetry = configure(service_name="svc", directory=tmp_path, set_global=False)
    await run_session(telemetry)
    assert telemetry.shutdown()

    spans = read_spans(tmp_path)
    names = {span["span_id"]: span["name"] for span in spans}
    tree = sorted(
        (
            span["name"],
            names.get(span["parent_span_id"]),
            span["attributes"].get("gen_ai.tool.call.id"),
        )
        for span in spans
    )
    assert tree == [
        ("execute_tool run_command", "invoke_agent coder", "c2"),
        ("execute_tool view_file", "invoke_agent coder", "c1"),
        ("execute_tool view_file", "invoke_agent coder", "c3"),
        ("invoke_agent coder", "session coder", None),
        ("session coder", None, None),
    ]
    denied = next(s for s in spans if s["attributes"].get("gen_ai.tool.call.id") == "c2")
    assert pick(
        denied["attributes"],
        "session.id",
        "hookscope.tool.outcome",
        "hookscope.policy.decision",
        "hookscope.policy.outcome",
        "hookscope.policy.rule",
        "hookscope.policy.bucket",
        "hookscope.policy.reason",
    ) == {
        "session.id": "s-1",
        "hookscope.tool.outcome": "denied",
        "hookscope.policy.decision": "deny",
        "hookscope.policy.outcome": "denied",
        "hookscope.policy.rule": "no-shell",
        "hookscope.policy.bucket": 0,
        "hookscope.policy.reason": "shell is off",
    }
    assert [event["name"] for event in denied["events"]] == ["hookscope.pre_tool_call"]
    recovered = next(s for s in spans if s["attributes"].get("gen_ai.tool.call.id") == "c3")
    assert pick(
        recovered["attributes"], "hookscope.tool.outcome", "error.type", "hookscope.recovery.hook"
    ) == {
        "hookscope.tool.outcome": "recovered",
        "error.type": "FileNotFoundError",
        "hookscope.recovery.hook": "RecoverMissingFiles",
    }
    assert {span["trace_id"] for span in spans} == {spans[0]["trace_id"]}
    assert {span["resource"]["service.name"] for span in spans} == {"svc"}
    assert {(span["scope"]["name"], span["kind"]) for span in spans} == {("hookscope", "INTERNAL")}


async def test_a_session_configured_without_endpoint_reads_back_its_metrics(
    tmp_path: Path,
) -> None:
    telemetry = configure(directory=tmp_path, set_global=False)
    await run_session(telemetry)
    assert telemetry.shutdown()

    calls = [p for p in read_metrics(tmp_path) if p["name"] == "hookscope.tool.calls"]
    assert sorted((p["attributes"]["hookscope.tool.outcome"], p["value"]) for p in calls) == [
        ("denied", 1),
        ("recovered", 1),
        ("succeeded", 1),
    ]
    assert {(p["type"], p["is_monotonic"], p["temporality"], p["unit"]) for p in calls} == {
        ("sum", True, "cumulative", "{call}")
    }
    durations = [p for p in read_metrics(tmp_path) if p["name"] == "gen_ai.execute_tool.duration"]
    assert sum(p["count"] for p in durations) == 2  # the denied call never ran
    assert {p["type"] for p in durations} == {"histogram"}
    assert durations[0]["explicit_bounds"][:2] == [0.0005, 0.001]


def test_a_line_is_one_export_request_in_otlp_json(tmp_path: Path) -> None:
    exporter = JsonLinesSpanExporter(tmp_path)
    sdk_child, sdk_root = make_spans(2)
    assert exporter.export([sdk_child, sdk_root]) is SpanExportResult.SUCCESS
    exporter.shutdown()

    (line,) = (tmp_path / TRACES_FILE).read_text().splitlines()
    request = json.loads(line)
    child, root = request["resourceSpans"][0]["scopeSpans"][0]["spans"]
    assert sdk_root.context is not None
    assert root["traceId"] == format(sdk_root.context.trace_id, "032x")  # ids as hex
    assert root["spanId"] == format(sdk_root.context.span_id, "016x")
    assert child["parentSpanId"] == root["spanId"]
    assert (root["kind"], child["kind"]) == (2, 1)  # enums as integers: SERVER, INTERNAL
    assert root["status"] == {"code": 2, "message": "boom"}
    assert root["startTimeUnixNano"] == str(sdk_root.start_time)  # 64-bit integers as strings
    assert child["attributes"] == [{"key": "index", "value": {"intValue": "0"}}]


def test_read_spans_decodes_ids_kinds_status_events_and_values(tmp_path: Path) -> None:
    exporter = JsonLinesSpanExporter(tmp_path)
    exporter.export(make_spans(2))
    exporter.shutdown()

    child, root = read_spans(tmp_path)
    assert child["parent_span_id"] == root["span_id"]
    assert root["parent_span_id"] is None
    assert (root["kind"], root["status"]) == ("SERVER", {"code": "ERROR", "message": "boom"})
    assert (child["kind"], child["status"]) == ("INTERNAL", {"code": "UNSET", "message": ""})
    assert child["attributes"] == {"index": 0}
    assert [(e["name"], e["attributes"]) for e in child["events"]] == [("tick", {"n": 0})]
    assert child["end_time_unix_nano"] >= child["start_time_unix_nano"] > 0


def test_each_export_appends_one_line(tmp_path: Path) -> None:
    exporter = JsonLinesSpanExporter(tmp_path)
    for _ in range(3):
        exporter.export(make_spans(2))
    exporter.shutdown()
    assert len((tmp_path / TRACES_FILE).read_bytes().splitlines()) == 3
    assert len(read_spans(tmp_path)) == 6


def test_a_trailing_partial_line_is_not_read(tmp_path: Path) -> None:
    exporter = JsonLinesSpanExporter(tmp_path)
    exporter.export(make_spans(2))
    exporter.shutdown()
    with open(tmp_path / TRACES_FILE, "ab") as file:
        file.write(b'{"resourceSpans":[{"scopeSp')  # a writer killed mid-line
    assert [span["name"] for span in read_spans(tmp_path)] == ["work", "root"]


def test_a_corrupt_complete_line_raises_naming_file_and_line(tmp_path: Path) -> None:
    exporter = JsonLinesSpanExporter(tmp_path)
    exporter.export(make_spans(2))
    exporter.shutdown()
    with open(tmp_path / TRACES_FILE, "ab") as file:
        file.write(b"not json\n")
    with pytest.raises(TelemetryFileError, match=rf"{TRACES_FILE}:2: not JSON \(Expecting value"):
        read_spans(tmp_path)


def test_a_directory_without_files_reads_as_empty(tmp_path: Path) -> None:
    assert (read_spans(tmp_path), read_metrics(tmp_path)) == ([], [])


def test_a_missing_directory_raises_saying_what_writes_it(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"configure\(\) writes one"):
        read_spans(tmp_path / "nowhere")


def test_a_write_failing_half_way_leaves_the_file_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    exporter = JsonLinesSpanExporter(tmp_path)
    exporter.export(make_spans(2))
    before = (tmp_path / TRACES_FILE).read_bytes()
    real_write = os.write
    calls = 0

    def disk_fills_up(fd: int, data: Any) -> int:
        nonlocal calls
        calls += 1
        if calls == 1:
            return real_write(fd, bytes(data[: len(data) // 2]))
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", disk_fills_up)
    assert exporter.export(make_spans(2)) is SpanExportResult.FAILURE
    monkeypatch.setattr(os, "write", real_write)
    assert (tmp_path / TRACES_FILE).read_bytes() == before
    assert exporter.export(make_spans(2)) is SpanExportResult.SUCCESS
    exporter.shutdown()
    assert len(read_spans(tmp_path)) == 4


def test_concurrent_writers_keep_every_line_whole(tmp_path: Path) -> None:
    # Two exporters (two open files, as two processes would have) and several threads each;
    # lines of ~60 KB, far above the size the OS writes atomically without the lock.
    exporters = [JsonLinesSpanExporter(tmp_path), JsonLinesSpanExporter(tmp_path)]
    batch = make_spans(200)

    def write(exporter: JsonLinesSpanExporter) -> None:
        for _ in range(10):
            assert exporter.export(batch) is SpanExportResult.SUCCESS

    threads = [threading.Thread(target=write, args=(e,)) for e in exporters for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for exporter in exporters:
        exporter.shutdown()
    lines = (tmp_path / TRACES_FILE).read_bytes().splitlines()
    assert len(lines) == 60
    assert all(
        len(json.loads(line)["resourceSpans"][0]["scopeSpans"][0]["spans"]) == 200 for line in lines
    )


def test_export_after_shutdown_fails_without_raising(tmp_path: Path) -> None:
    exporter = JsonLinesSpanExporter(tmp_path)
    exporter.shutdown()
    assert exporter.export(make_spans(1)) is SpanExportResult.FAILURE
    assert not (tmp_path / METRICS_FILE).exists()


# --- bounds and permissions ---------------------------------------------------------------


def test_files_rotate_at_the_cap_and_keep_only_keep_files(tmp_path: Path) -> None:
    exporter = JsonLinesSpanExporter(tmp_path, max_file_bytes=8192, keep_files=2)
    for batch in range(40):
        exporter.export(make_spans(3, name=f"batch-{batch}"))
    exporter.shutdown()
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "traces.1.jsonl",
        "traces.2.jsonl",
        "traces.jsonl",
    ]
    for path in tmp_path.iterdir():
        assert 0 < path.stat().st_size <= 8192
    names = [span["name"] for span in read_spans(tmp_path) if span["name"] != "root"]
    # Oldest first across the rotated files, ending with the last batch; the first ones gone.
    assert names[-1] == "batch-39"
    assert "batch-0" not in names
    numbers = [int(name.removeprefix("batch-")) for name in names]
    assert numbers == sorted(numbers)


def test_keep_files_zero_keeps_only_the_current_file(tmp_path: Path) -> None:
    exporter = JsonLinesSpanExporter(tmp_path, max_file_bytes=4096, keep_files=0)
    for _ in range(20):
        exporter.export(make_spans(3))
    exporter.shutdown()
    assert [p.name for p in tmp_path.iterdir()] == [TRACES_FILE]
    assert (tmp_path / TRACES_FILE).stat().st_size <= 4096


def test_a_batch_larger_than_the_cap_is_written_alone_not_lost(tmp_path: Path) -> None:
    exporter = JsonLinesSpanExporter(tmp_path, max_file_bytes=4096, keep_files=1)
    exporter.export(make_spans(2))
    exporter.export(make_spans(60, name="big"))  # far more than 4096 bytes
    exporter.shutdown()
    assert sum(span["name"] == "big" for span in read_spans(tmp_path)) == 59
    assert (tmp_path / "traces.1.jsonl").stat().st_size <= 4096


def test_two_writers_rotating_one_directory_lose_no_line(tmp_path: Path) -> None:
    writers = [JsonLinesSpanExporter(tmp_path, max_file_bytes=64 * 1024, keep_files=50)]
    writers.append(JsonLinesSpanExporter(tmp_path, max_file_bytes=64 * 1024, keep_files=50))

    def write(exporter: JsonLinesSpanExporter) -> None:
        for _ in range(100):
            exporter.export(make_spans(2))

    threads = [threading.Thread(target=write, args=(w,)) for w in writers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for writer in writers:
        writer.shutdown()
    assert len(read_spans(tmp_path)) == 2 * 100 * 2
    assert len(list(tmp_path.iterdir())) > 2


def test_the_directory_is_private_and_files_are_owner_only(tmp_path: Path) -> None:
    telemetry = configure(directory=tmp_path / "fresh", set_global=False)
    telemetry.shutdown()
    assert (tmp_path / "fresh").stat().st_mode & 0o777 == 0o700
    for path in (tmp_path / "fresh").iterdir():
        assert path.stat().st_mode & 0o777 == 0o600, path.name


def test_an_existing_world_readable_file_is_tightened(tmp_path: Path) -> None:
    (tmp_path / TRACES_FILE).write_text("")
    (tmp_path / TRACES_FILE).chmod(0o644)
    JsonLinesSpanExporter(tmp_path).shutdown()
    assert (tmp_path / TRACES_FILE).stat().st_mode & 0o777 == 0o600


def test_configure_reads_the_file_bounds_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOOKSCOPE_MAX_FILE_BYTES", "4096")
    monkeypatch.setenv("HOOKSCOPE_KEEP_FILES", "1")
    telemetry = configure(directory=tmp_path, set_global=False)
    tracer = telemetry.tracer_provider.get_tracer("t")
    for _ in range(30):
        for n in range(10):
            tracer.start_span(f"span-{n}").end()
        telemetry.force_flush()
    telemetry.shutdown()
    traces = sorted(p.name for p in tmp_path.glob("traces*"))
    assert traces == ["traces.1.jsonl", TRACES_FILE]
    assert all(p.stat().st_size <= 4096 for p in tmp_path.iterdir())


# --- reading what is not quite telemetry --------------------------------------------------

UNEXPECTED_LINES = [
    b"[]\n",  # valid JSON, not an object
    b'{"resourceSpans": "nope"}\n',
    b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"name": "x", "kind": 99}]}]}]}\n',
    b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"attributes": [{"value": {}}]}]}]}]}\n',
    b'{"resourceSpans": [{"resource": 5}]}\n',
]


def test_problems_are_counted_and_skipped_when_a_tally_is_given(tmp_path: Path) -> None:
    exporter = JsonLinesSpanExporter(tmp_path)
    exporter.export(make_spans(2))
    exporter.shutdown()
    with open(tmp_path / TRACES_FILE, "ab") as file:
        file.write(b"not json\n")
        file.writelines(UNEXPECTED_LINES)
    exporter = JsonLinesSpanExporter(tmp_path)
    exporter.export(make_spans(2, name="after"))
    exporter.shutdown()
    problems = ReadProblems()
    assert [span["name"] for span in read_spans(tmp_path, problems)] == [
        "work",
        "root",
        "after",
        "root",
    ]
    assert (problems.malformed, problems.unexpected) == (1, len(UNEXPECTED_LINES))
    assert problems.summary().startswith(
        f"skipped 1 malformed line(s) and 5 unexpected record(s) (first: {tmp_path / TRACES_FILE}:2"
    )


def test_a_line_longer_than_the_limit_is_a_problem_not_a_memory_spike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("hookscope.telemetry._reading.MAX_RECORD_BYTES", 1000)
    (tmp_path / TRACES_FILE).write_bytes(b'{"resourceSpans": []' + b" " * 5000 + b"}\n")
    problems = ReadProblems()
    assert read_spans(tmp_path, problems) == []
    assert problems.malformed == 1
    assert "line too long" in problems.examples[0]


def test_view_reports_problems_as_one_counted_warning_never_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from hookscope.cli import main

    assert main(["demo", "--sessions", "2", "--directory", str(tmp_path)]) == 0
    second = re.findall(r"^session (\S+)", capsys.readouterr().out, re.MULTILINE)[1]
    odd_span = {  # valid OTLP, but an outcome that is an array and a turn index that is text
        "spanId": "00000000000000aa",
        "parentSpanId": "00000000000000bb",
        "attributes": [
            {"key": "session.id", "value": {"stringValue": second}},
            {"key": "hookscope.turn.index", "value": {"stringValue": "first"}},
            {"key": "hookscope.tool.outcome", "value": {"arrayValue": {"values": []}}},
        ],
    }
    odd = {"resourceSpans": [{"scopeSpans": [{"spans": [odd_span]}]}]}
    with open(tmp_path / TRACES_FILE, "ab") as file:
        file.write(b"{oops\n")
        file.writelines(UNEXPECTED_LINES)
        file.write(json.dumps(odd).encode() + b"\n")
    assert main(["view", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    assert f"session {second}" in out
    assert err.startswith(
        f"hookscope: warning: {tmp_path}: skipped 1 malformed line(s) and 6 unexpected record(s)"
    )
    assert err.count("\n") == 1
    assert "Traceback" not in out + err


def test_view_draws_the_latest_sessions_and_summarises_them_all(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from hookscope.cli import main

    assert main(["demo", "--sessions", "4", "--directory", str(tmp_path)]) == 0
    ids = re.findall(r"^session (\S+)", capsys.readouterr().out, re.MULTILINE)
    assert main(["view", str(tmp_path), "--last", "1"]) == 0
    out = capsys.readouterr().out
    assert "3 earlier sessions" in out
    assert f"session {ids[0][:-1]}3" in out
    assert f"session {ids[0]}" not in out
    [sessions_row] = [line for line in out.splitlines() if line.startswith("│ sessions ")]
    assert sessions_row.split("│")[2].strip() == "4"


def test_reading_streams_memory_does_not_grow_with_the_directory(tmp_path: Path) -> None:
    import tracemalloc

    from hookscope.demo.timeline import Tally

    batch = JsonLinesSpanExporter(tmp_path / "batch", max_file_bytes=64 * 1024)
    batch.export(make_spans(20))
    batch.shutdown()
    line = (tmp_path / "batch" / TRACES_FILE).read_bytes()

    def peak(lines: int) -> int:
        directory = tmp_path / f"d{lines}"
        directory.mkdir()
        (directory / TRACES_FILE).write_bytes(line * lines)
        tracemalloc.start()
        tally = Tally()
        for span in iter_spans(directory):
            tally.add(span)
        _, high = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        return high

    small, large = peak(50), peak(800)  # 16x the data
    assert large < 2 * small
