"""OpenTelemetry for hookscope: the OTelHook observer, configure(), its instruments and names."""

from hookscope.telemetry.content import ContentCapture
from hookscope.telemetry.files import read_logs, read_metrics, read_spans
from hookscope.telemetry.otel_hook import OTelHook, TraceLayout
from hookscope.telemetry.setup import Telemetry, TelemetryConfigError, configure

__all__ = [
    "ContentCapture",
    "OTelHook",
    "Telemetry",
    "TelemetryConfigError",
    "TraceLayout",
    "configure",
    "read_logs",
    "read_metrics",
    "read_spans",
]
