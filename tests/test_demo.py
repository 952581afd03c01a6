"""The demo: its telemetry, `hookscope demo` / `hookscope view`, and their errors."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import urllib.request
from collections import Counter
from pathlib import Path

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client.openmetrics.parser import (
    text_string_to_metric_families as openmetrics_families,
)

from hookscope.cli import main
from hookscope.demo import DemoAgent
from hookscope.telemetry import OTelHook
from hookscope.telemetry.files import iter_spans
from hookscope.testing import metric_points, recording

from .otel_helpers import attrs

HOOKSCOPE = Path(sys.executable).parent / "hookscope"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_demo_sessions_produce_the_seeded_decisions_and_recoveries(tmp_path: Path) -> None:
    exporter, reader = InMemorySpanExporter(), InMemoryMetricReader()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    hook = OTelHook(tracer_provider, MeterProvider(metric_readers=[reader]))
    result = await DemoAgent(tmp_path, hooks=[hook], seed=7, run_id="r1").run(6)
    tools = Counter(
        (
            s.attributes["gen_ai.tool.name"],  # type: ignore[index]
            s.attributes["hookscope.tool.outcome"],  # type: ignore[index]
            s.attributes.get("hookscope.policy.rule"),  # type: ignore[union-attr]
        )
        for s in exporter.get_finished_spans()
        if s.name.startswith("execute_tool")
    )
    assert tools == {
        ("github/delete_branch", "denied", "github-write"): 2,
        ("edit_file", "succeeded", None): 6,
        ("fetch_url", "failed", None): 2,
        ("fetch_url", "recovered", None): 1,
        ("fetch_url", "succeeded", None): 9,
        ("github/get_issue", "succeeded", "github-read"): 6,
        ("grep_search", "succeeded", None): 18,
        ("run_command", "denied", "confirm-command"): 6,
        ("run_command", "denied", "no-rm-rf"): 1,
        ("run_command", "denied", "no-sudo"): 1,
        ("run_command", "succeeded", "confirm-command"): 12,
        ("view_file", "succeeded", None): 6,
        ("write_to_file", "denied", "workspace_only"): 2,
    }
    assert result.blocked_turns == 2
    assert {k: len(v) for k, v in result.errors.items() if v} == {"demo-coder-r1-0005": 2}
    points = metric_points(reader.get_metrics_data())
    agent = {"gen_ai__agent__name": "demo-coder"}
    assert points["hookscope.sessions"] == {attrs(**agent): 6}
    assert points["hookscope.sessions.active"] == {attrs(**agent): 0}
    assert points["hookscope.turns"] == {
        attrs(hookscope__turn__outcome="completed", **agent): 18,
        attrs(hookscope__turn__outcome="blocked", **agent): 2,
    }
    assert points["hookscope.interactions"] == {
        attrs(hookscope__interaction__outcome="answered", **agent): 6
    }
    assert sum(points["hookscope.compactions"].values()) >= 1


async def test_demo_workspace_files_stay_inside_the_workspace(tmp_path: Path) -> None:
    await DemoAgent(tmp_path / "ws", seed=3).run(2)
    files = await asyncio.to_thread(lambda: sorted(tmp_path.rglob("*.py")))
    assert [p.relative_to(tmp_path).as_posix() for p in files] == [
        "ws/src/auth.py",
        "ws/src/session.py",
        "ws/tests/test_auth.py",
    ]


def _session_ids(output: str) -> list[str]:
    return re.findall(r"^session (\S+)", output, re.MULTILINE)


@pytest.mark.parametrize("layout", ["session", "turn"])
def test_view_renders_what_demo_wrote(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], layout: str
) -> None:
    directory = str(tmp_path / "telemetry")
    argv = ["demo", "--sessions", "2", "--seed", "7", "--directory", directory, "--layout", layout]
    assert main(argv) == 0
    demo_output = capsys.readouterr().out
    first, second = _session_ids(demo_output)
    assert re.fullmatch(r"demo-coder-[0-9a-f]{6}-0000", first)
    assert second == first[:-1] + "1"
    # The demo prices its scripted model ([prices] in its hookscope.toml): spend is shown.
    (cost_line,) = [line for line in demo_output.splitlines() if "cost (model calls)" in line]
    assert re.search(r"\$0\.\d{4}", cost_line), cost_line
    assert main(["view", directory]) == 0
    view_output = capsys.readouterr().out
    assert _session_ids(view_output) == [first, second]
    for expected in ("sessions", "tool calls", "github/get_issue"):
        assert expected in view_output
    assert "github/github/" not in view_output
    assert main(["view", directory, "--session", second]) == 0
    one = capsys.readouterr().out
    assert _session_ids(one) == [second]
    assert "turn 1" in one  # turn-layout turns found by their session's id


def test_demo_session_ids_are_unique_per_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = []
    for _ in range(2):
        assert main(["demo", "--sessions", "1", "--directory", str(tmp_path)]) == 0
        runs.append(_session_ids(capsys.readouterr().out))
    assert runs[0] != runs[1]


async def test_demo_agents_deny_as_their_temper_says(tmp_path: Path) -> None:
    shares = {}
    for agent in ("careful", "demo-coder", "reckless", "stuck"):
        with recording() as rec:
            await DemoAgent(tmp_path, hooks=[rec.hook], seed=0, agent=agent).run(10)
            calls = rec.metric_points()["hookscope.tool.calls"]
        denied = sum(n for k, n in calls.items() if ("hookscope.tool.outcome", "denied") in k)
        shares[agent] = round(denied / sum(calls.values()), 3)
        assert {dict(k)["gen_ai.agent.name"] for k in calls} == {agent}
    # The alert threshold is 25%: careful stays far under it, reckless far over.
    assert shares == {"careful": 0.009, "demo-coder": 0.2, "reckless": 0.5, "stuck": 0.656}


def test_demo_runs_several_agents_and_rejects_unknown_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["demo", "--agents", "careful,reckless", "--sessions", "1", "--directory", str(tmp_path)]
    assert main(argv) == 0
    ids = _session_ids(capsys.readouterr().out)
    assert [i.rsplit("-", 2)[0] for i in ids] == ["careful", "reckless"]
    assert main(["demo", "--agents", "careful,sloppy"]) == 2
    assert (
        "argument --agents: choose demo agents from demo-coder, careful, reckless, stuck "
        "(comma-separated), got 'careful,sloppy'" in capsys.readouterr().err
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["demo", "--sessions", "0"], "--sessions must be at least 1, got 0"),
        (["demo", "--serve"], "--serve needs --prometheus-port"),
        (
            ["demo", "--prometheus-port", "99999"],
            "argument --prometheus-port: must be a port number from 1 to 65535, got '99999'",
        ),
        (["view", "--last", "0"], "argument --last: must be a whole number >= 1, got '0'"),
        (["demo", "--layout", "flat"], "argument --layout: invalid choice: 'flat'"),
        (["demo", "--otlp", "nonsense"], "endpoint='nonsense' is not an http(s) URL"),
        (
            ["view", "/nonexistent/dir"],
            "no telemetry in /nonexistent/dir: run `hookscope demo` first",
        ),
    ],
)
def test_bad_arguments_print_one_line_and_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert message in err


def test_unreachable_otlp_endpoint_fails_before_running(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    port = _free_port()
    directory = tmp_path / "telemetry"
    assert main(["demo", "--otlp", f"http://127.0.0.1:{port}", "--directory", str(directory)]) == 2
    err = capsys.readouterr().err
    assert f"cannot reach the OTLP endpoint http://127.0.0.1:{port}" in err
    assert not directory.exists()


def test_view_of_an_unknown_session_lists_the_latest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["demo", "--sessions", "1", "--directory", str(tmp_path)]) == 0
    capsys.readouterr()
    assert main(["view", str(tmp_path), "--session", "nope"]) == 2
    assert "no session 'nope' in" in capsys.readouterr().err


def test_console_script_runs_the_demo(tmp_path: Path) -> None:
    run = subprocess.run(
        [str(HOOKSCOPE), "demo", "--sessions", "1", "--seed", "2"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    (session_id,) = _session_ids(run.stdout)
    assert (tmp_path / ".hookscope" / "traces.jsonl").stat().st_size > 0
    audit = (tmp_path / ".hookscope" / "audit.jsonl").read_text().splitlines()
    assert len(audit) >= 10
    assert {json.loads(line)["session_id"] for line in audit} == {session_id}


OPENMETRICS = "application/openmetrics-text; version=1.0.0; charset=utf-8"


def _exemplars(body: str, family: str) -> list[tuple[str, str, float]]:
    """(trace id, span id, bucket upper bound) of every exemplar on ``family``'s buckets."""
    found = []
    for parsed in openmetrics_families(body):
        if parsed.name != family:
            continue
        for sample in parsed.samples:
            if sample.name.endswith("_bucket") and sample.exemplar is not None:
                ids = sample.exemplar.labels
                found.append((ids["trace_id"], ids["span_id"], float(sample.labels["le"])))
                assert sample.exemplar.value <= float(sample.labels["le"])
    return found


def test_demo_serves_prometheus_metrics_until_interrupted(tmp_path: Path) -> None:
    port = _free_port()
    with subprocess.Popen(
        [str(HOOKSCOPE), "demo", "--sessions", "2", "--prometheus-port", str(port), "--serve"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    ) as process:
        serving = threading.Event()

        def watch() -> None:
            assert process.stdout is not None
            for line in process.stdout:
                if "serving metrics until interrupted" in line:
                    serving.set()

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        try:
            assert serving.wait(timeout=90), "the demo never said it was serving"
            url = f"http://127.0.0.1:{port}/metrics"
            with urllib.request.urlopen(url, timeout=10) as reply:
                body = reply.read().decode()
            asking = urllib.request.Request(url, headers={"Accept": OPENMETRICS})
            with urllib.request.urlopen(asking, timeout=10) as reply:
                assert reply.headers["Content-Type"].startswith("application/openmetrics-text")
                openmetrics = reply.read().decode()
        finally:
            os.killpg(process.pid, signal.SIGINT)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)  # never leave the test hanging
                process.wait(timeout=30)
            watcher.join(timeout=10)
    assert process.returncode == 0
    assert 'hookscope_sessions_total{gen_ai_agent_name="demo-coder"' in body
    assert "hookscope_tool_calls_total{" in body
    assert " # {" not in body  # the classic text format has no exemplars
    # OpenMetrics: latency buckets carry the trace and span that measured a value in them,
    # and those spans are the ones the demo exported.
    spans = {(s["trace_id"], s["span_id"]) for s in iter_spans(str(tmp_path / ".hookscope"))}
    for family in ("gen_ai_execute_tool_duration_seconds", "gen_ai_invoke_agent_duration_seconds"):
        exemplars = _exemplars(openmetrics, family)
        assert len(exemplars) >= 3, family
        assert {(trace, span) for trace, span, _ in exemplars} <= spans, family


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("write_to_file", {"TargetFile": "/etc/hosts", "Content": "x"}),
        ("view_file", {"AbsolutePath": "/etc/passwd"}),
        ("edit_file", {"TargetFile": "../outside.py", "Patch": "x"}),
        ("grep_search", {"Query": "x", "SearchPath": "/"}),
    ],
)
def test_demo_file_tools_refuse_paths_outside_the_workspace_even_without_the_policy(
    tmp_path: Path, tool: str, args: dict[str, str]
) -> None:
    from random import Random

    from hookscope.demo.agent import _Tools

    tools = _Tools(tmp_path / "ws", Random(0))
    with pytest.raises(PermissionError, match="outside the demo workspace"):
        getattr(tools, tool)(**args)
