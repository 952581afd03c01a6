"""``hookscope demo`` and ``hookscope view``: run the demo agent, and look at sessions again."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import secrets
import signal
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

from opentelemetry.sdk.environment_variables import OTEL_EXPORTER_OTLP_PROTOCOL
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from rich.console import Console
from rich.progress import Progress

from hookscope.builtins import AuditLogError
from hookscope.demo.agent import DemoAgent, DemoResult
from hookscope.demo.judge import ScriptedJudge, demo_hooks
from hookscope.demo.timeline import (
    Tally,
    drawable,
    is_session,
    render_sessions,
    session_id,
    span_dict,
    summarize,
    summary_table,
)
from hookscope.redaction import mask_url
from hookscope.telemetry._endpoint import probe, probe_address
from hookscope.telemetry.files import TRACES_FILE, ReadProblems, TelemetryFileError, iter_spans
from hookscope.telemetry.otel_hook import OTelHook
from hookscope.telemetry.setup import TelemetryConfigError, configure
from hookscope.types import HookscopeError

__all__ = ["CommandError", "run_demo", "view"]

#: Timelines printed after a demo run; the summary covers every session.
SHOWN_SESSIONS = 3
#: Spans of one session `hookscope view` holds to draw its timeline; the rest are counted.
MAX_SPANS_PER_SESSION = 2000


class CommandError(HookscopeError):
    """A problem the user can fix: printed as one line, exit status 2."""


def _check_reachable(endpoint: str) -> None:
    """Fail fast, before any session runs, when nothing listens at ``endpoint``."""
    grpc = os.environ.get(OTEL_EXPORTER_OTLP_PROTOCOL, "").strip().lower() == "grpc"
    address = probe_address(endpoint, "grpc" if grpc else "http/protobuf")
    if address is None:  # malformed (configure() says so), behind a proxy, or not plain TCP
        return
    error = probe(address, timeout_s=2.0)
    if error is not None:
        raise CommandError(
            f"cannot reach the OTLP endpoint {mask_url(endpoint)} ({error.strerror or error}); "
            "start a "
            "collector (see collector/compose.yaml) or drop --otlp to write ./.hookscope/"
        )


def _serve_prometheus(port: int) -> tuple[object, threading.Thread]:
    from prometheus_client import start_http_server

    try:
        return start_http_server(port, addr="127.0.0.1")
    except OSError as error:
        raise CommandError(
            f"cannot serve metrics on 127.0.0.1:{port} ({error.strerror or error}); "
            "choose a free --prometheus-port"
        ) from None


async def _run_agents(
    agents: list[DemoAgent], sessions: int, duration_s: float, advance: Callable[[], object]
) -> None:
    """Every agent's sessions, interleaved, spread evenly over ``duration_s`` when positive:
    alert rules look at rates over minutes, so a story told in one burst fires nothing."""
    results = [DemoResult() for _ in agents]
    loop = asyncio.get_running_loop()
    started = loop.time()
    for index in range(sessions):
        for agent, result in zip(agents, results, strict=True):
            await agent.run_session(index, result)
            advance()
        if duration_s > 0:
            due = started + duration_s * (index + 1) / sessions
            await asyncio.sleep(max(0.0, due - loop.time()))


def run_demo(args: argparse.Namespace) -> int:
    """Run the demo sessions with telemetry on; print their timelines and a summary."""
    if args.sessions < 1:
        raise CommandError(f"--sessions must be at least 1, got {args.sessions}")
    if not 0 <= args.duration <= 86_400:
        raise CommandError(f"--duration must be 0 to 86400 seconds, got {args.duration:g}")
    if args.otlp:
        _check_reachable(args.otlp)
    try:
        telemetry = configure(
            service_name="hookscope-demo",
            endpoint=args.otlp,
            directory=args.directory,
            set_global=False,
        )
    except TelemetryConfigError as error:  # a malformed endpoint or an unwritable directory
        raise CommandError(str(error)) from None
    console = Console()
    recorded = InMemorySpanExporter()
    if isinstance(telemetry.tracer_provider, TracerProvider):
        telemetry.tracer_provider.add_span_processor(SimpleSpanProcessor(recorded))
    server = None
    if args.prometheus_port is not None:
        from hookscope.telemetry._scrape import ExemplarPrometheusReader

        reader = ExemplarPrometheusReader()  # buckets carry trace exemplars (OpenMetrics)
        telemetry.meter_provider.add_metric_reader(reader)  # type: ignore[attr-defined]
        server, _ = _serve_prometheus(args.prometheus_port)
    hook = OTelHook(
        telemetry.tracer_provider,
        telemetry.meter_provider,
        trace_layout=args.layout,
        logger_provider=telemetry.logger_provider,
    )
    try:
        with (
            tempfile.TemporaryDirectory(prefix="hookscope-demo-") as workspace,
            ScriptedJudge() as judge,
        ):
            configured = demo_hooks(judge.base_url, Path(workspace))  # demo/hookscope.toml
            audit_log = Path(args.directory) / "audit.jsonl"
            run_id = secrets.token_hex(3)  # session ids unique per run: runs never merge
            try:
                agents = [
                    DemoAgent(
                        Path(workspace),
                        [hook, *configured],
                        args.seed,
                        audit_log=audit_log,
                        agent=name,
                        run_id=run_id,
                    )
                    for name in args.agents
                ]
            except AuditLogError as error:  # an unwritable --directory, with --otlp
                raise CommandError(str(error)) from None
            total = args.sessions * len(agents)
            with Progress(console=console, transient=True, disable=total < 2) as progress:
                task = progress.add_task("sessions", total=total)
                asyncio.run(
                    _run_agents(
                        agents, args.sessions, args.duration, lambda: progress.advance(task)
                    )
                )
        telemetry.force_flush()
        spans = [span_dict(span) for span in recorded.get_finished_spans()]
        timelines = render_sessions(spans)
        for timeline in timelines[:SHOWN_SESSIONS]:
            console.print(timeline)
        if len(timelines) > SHOWN_SESSIONS:
            console.print(f"… and {len(timelines) - SHOWN_SESSIONS} more sessions")
        console.print(summary_table(summarize(spans)))
        if args.otlp:
            console.print(f"telemetry exported to {mask_url(args.otlp)}")
        else:
            console.print(
                f"telemetry written to {Path(args.directory) / TRACES_FILE} (and metrics, logs); "
                f"look again with: hookscope view {args.directory}"
            )
        console.print(f"audit log (one JSON line per tool call): {audit_log}")
        if server is not None:
            console.print(f"metrics at http://127.0.0.1:{args.prometheus_port}/metrics")
            if args.serve:
                console.print("serving metrics until interrupted (Ctrl-C)")
                # A shell starts background jobs with SIGINT ignored, and Python keeps that:
                # Ctrl-C (or a supervisor's SIGINT/SIGTERM) must still end the demo.
                for stop in (signal.SIGINT, signal.SIGTERM):
                    signal.signal(stop, _interrupt)
                with contextlib.suppress(KeyboardInterrupt):
                    threading.Event().wait()
    finally:
        if server is not None:
            server.shutdown()  # type: ignore[attr-defined]
        telemetry.shutdown()
    return 0


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _session_spans(
    directory: str, chosen: set[str], problems: ReadProblems
) -> tuple[list[dict[str, object]], dict[str, int]]:
    """The spans of the ``chosen`` sessions (at most MAX_SPANS_PER_SESSION each) and overflow."""
    kept: dict[str, int] = {}
    left_out: dict[str, int] = {}
    spans = []
    for span in iter_spans(directory, ReadProblems()):  # problems were counted in pass one
        sid = session_id(span)
        if not isinstance(sid, str) or sid not in chosen:
            continue
        if not drawable(span):
            problems.note("unexpected", f"span {span['span_id']}", "attributes of odd types")
            continue
        if kept.get(sid, 0) >= MAX_SPANS_PER_SESSION and not is_session(span):
            left_out[sid] = left_out.get(sid, 0) + 1
            continue
        kept[sid] = kept.get(sid, 0) + 1
        span.pop("resource", None)  # shared per batch, not needed to draw
        spans.append(span)
    return spans, left_out


def _warn(directory: str, problems: ReadProblems) -> None:
    if problems:
        print(f"hookscope: warning: {directory}: {problems.summary()}", file=sys.stderr)


def _scan(directory: str, problems: ReadProblems) -> tuple[Tally, list[str]]:
    """Pass one: the totals, and every session's id in start order."""
    tally = Tally()
    sessions: list[tuple[int, str]] = []
    try:
        for span in iter_spans(directory, problems):
            tally.add(span)
            if is_session(span):
                start = span["start_time_unix_nano"]
                sessions.append((start, str(session_id(span))))
    except FileNotFoundError:
        raise CommandError(
            f"no telemetry in {directory}: run `hookscope demo` first, or pass the "
            "directory configure() wrote to"
        ) from None
    except (TelemetryFileError, OSError) as error:
        raise CommandError(f"cannot read {directory}: {error}") from None
    return tally, [sid for _, sid in sorted(sessions)]


def _chosen(args: argparse.Namespace, known: list[str]) -> list[str]:
    if args.session is None:
        return known[-args.last :]
    if args.session not in known:
        latest = ", ".join(known[-5:])
        raise CommandError(f"no session {args.session!r} in {args.directory}; latest: {latest}")
    return [args.session]


def view(args: argparse.Namespace) -> int:
    """Print the timelines of the latest sessions the embedded default wrote, and a summary.

    Reads the files twice, line by line, so memory stays bounded whatever their size: once
    to count (the summary) and find the sessions, once to collect the shown sessions' spans.
    Malformed or unexpected records are skipped and reported as one counted warning.
    """
    problems = ReadProblems()
    tally, known = _scan(args.directory, problems)
    if not known:
        _warn(args.directory, problems)
        raise CommandError(f"{args.directory} holds no finished sessions yet")
    chosen = _chosen(args, known)
    spans, left_out = _session_spans(args.directory, set(chosen), problems)
    _warn(args.directory, problems)
    console = Console()
    if len(known) > len(chosen):
        console.print(f"{len(known) - len(chosen)} earlier sessions (in the summary; --last N)")
    try:
        timelines = render_sessions(spans)
    except (TypeError, ValueError, KeyError, AttributeError) as error:  # a case drawable() missed
        raise CommandError(
            f"cannot draw the sessions in {args.directory} ({type(error).__name__}: {error}); "
            "please report the file that caused it"
        ) from None
    for timeline in timelines:
        console.print(timeline)
    for sid, count in left_out.items():
        console.print(f"session {sid}: {count} more spans not drawn")
    # One session asked for: its own summary; else every session in the directory.
    console.print(summary_table(summarize(spans) if args.session else tally.summary()))
    return 0
