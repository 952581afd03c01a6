"""OpenTelemetry for hookscope: the OTelHook observer, its instruments and names."""

from hookscope.telemetry.content import ContentCapture
from hookscope.telemetry.otel_hook import OTelHook, TraceLayout

__all__ = ["ContentCapture", "OTelHook", "TraceLayout"]
