"""``hookscope demo`` and ``hookscope view``: run the demo agent, and look at sessions again."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import tempfile
import threading
from pathlib import Path

from opentelemetry.sdk.environment_variables import OTEL_EXPORTER_OTLP_PROTOCOL
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from rich.console import Console
from rich.progress import Progress

from hookscope.demo.agent import DemoAgent
from hookscope.demo.judge import ScriptedJudge, demo_hooks
from hookscope.demo.timeline import (
    render,
    render_sessions,
    session_ids,
    span_dict,
    summarize,
    summary_table,
)
from hookscope.telemetry._export import probe, probe_address
from hookscope.telemetry.files import TRACES_FILE, TelemetryFileError, read_spans
from hookscope.telemetry.otel_hook import OTelHook
from hookscope.telemetry.setup import TelemetryConfigError, configure

__all__ = ["CommandError", "run_demo", "view"]

#: Timelines printed after a demo run; the summary covers every session.
SHOWN_SESSIONS = 3


class CommandError(Exception):
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
            f"cannot reach the OTLP endpoint {endpoint} ({error.strerror or error}); start a "
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


def run_demo(args: argparse.Namespace) -> int:
    """Run the demo sessions with telemetry on; print their timelines and a summary."""
    if args.sessions < 1:
        raise CommandError(f"--sessions must be at least 1, got {args.sessions}")
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
        from opentelemetry.exporter.prometheus import PrometheusMetricReader

        telemetry.meter_provider.add_metric_reader(PrometheusMetricReader())  # type: ignore[attr-defined]
        server, _ = _serve_prometheus(args.prometheus_port)
    hook = OTelHook(telemetry.tracer_provider, telemetry.meter_provider, trace_layout=args.layout)
    try:
        with (
            tempfile.TemporaryDirectory(prefix="hookscope-demo-") as workspace,
            ScriptedJudge() as judge,
        ):
            configured = demo_hooks(judge.base_url, Path(workspace))  # demo/hookscope.toml
            agent = DemoAgent(Path(workspace), hooks=[hook, *configured], seed=args.seed)
            with Progress(console=console, transient=True, disable=args.sessions < 2) as progress:
                task = progress.add_task("sessions", total=args.sessions)
                asyncio.run(agent.run(args.sessions, lambda _: progress.advance(task)))
        telemetry.force_flush()
        spans = [span_dict(span) for span in recorded.get_finished_spans()]
        timelines = render_sessions(spans)
        for timeline in timelines[:SHOWN_SESSIONS]:
            console.print(timeline)
        if len(timelines) > SHOWN_SESSIONS:
            console.print(f"… and {len(timelines) - SHOWN_SESSIONS} more sessions")
        console.print(summary_table(summarize(spans)))
        if args.otlp:
            console.print(f"telemetry exported to {args.otlp}")
        else:
            console.print(
                f"telemetry written to {Path(args.directory) / TRACES_FILE} (and metrics); "
                f"look again with: hookscope view {args.directory}"
            )
        if server is not None:
            console.print(f"metrics at http://127.0.0.1:{args.prometheus_port}/metrics")
            if args.serve:
                console.print("serving metrics until interrupted (Ctrl-C)")
                with contextlib.suppress(KeyboardInterrupt):
                    threading.Event().wait()
    finally:
        if server is not None:
            server.shutdown()  # type: ignore[attr-defined]
        telemetry.shutdown()
    return 0


def view(args: argparse.Namespace) -> int:
    """Print the timelines (and summary) of sessions the embedded default wrote."""
    try:
        spans = read_spans(args.directory)
    except FileNotFoundError:
        raise CommandError(
            f"no telemetry in {args.directory}: run `hookscope demo` first, or pass the "
            "directory configure() wrote to"
        ) from None
    except (TelemetryFileError, OSError) as error:
        raise CommandError(f"cannot read {args.directory}: {error}") from None
    known = session_ids(spans)
    if not known:
        raise CommandError(f"{args.directory} holds no finished sessions yet")
    if args.session is not None:
        if args.session not in known:
            latest = ", ".join(known[-5:])
            raise CommandError(f"no session {args.session!r} in {args.directory}; latest: {latest}")
        spans = [s for s in spans if s["attributes"].get("session.id") == args.session]
    Console().print(render(spans))
    return 0
