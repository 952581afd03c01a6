"""OTLP receivers on loopback ports for the telemetry tests: real HTTP and gRPC servers."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from time import monotonic, sleep
from typing import Any

from opentelemetry.proto.collector.metrics.v1 import (
    metrics_service_pb2,
    metrics_service_pb2_grpc,
)
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc


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

    def __init__(
        self,
        port: int = 0,
        delay_s: float = 0.0,
        status: int = 200,
        statuses: dict[str, int] | None = None,
    ) -> None:
        """``statuses``: path → the status it answers (else ``status``)."""
        self.requests: list[tuple[str, dict[str, str], bytes]] = []
        by_path = statuses or {}
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                headers = {key.lower(): value for key, value in self.headers.items()}
                receiver.requests.append((self.path, headers, body))
                sleep(delay_s)  # a slow collector
                self.send_response(by_path.get(self.path, status))
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


TELEMETRY_THREADS = ("Otel", "hookscope-telemetry")


def wait_for_telemetry_threads(deadline_s: float = 20.0) -> None:
    """Return once no export thread (the SDK's or hookscope's) runs; fail at the deadline."""
    deadline = monotonic() + deadline_s
    alive: list[str] = []
    while monotonic() < deadline:
        alive = [t.name for t in threading.enumerate() if t.name.startswith(TELEMETRY_THREADS)]
        if not alive:
            return
        sleep(0.05)
    raise AssertionError(f"telemetry threads still running after {deadline_s:.0f}s: {alive}")
