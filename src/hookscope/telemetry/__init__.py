"""OpenTelemetry for hookscope: the OTelHook observer, configure(), its instruments and names.

The names are loaded on first use, so importing this package (or
``hookscope.telemetry.add_redaction_pattern``, which lives in the core :mod:`hookscope.redaction`)
needs no OpenTelemetry SDK.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from hookscope.redaction import add_redaction_pattern

if TYPE_CHECKING:
    from hookscope.telemetry.content import ContentCapture
    from hookscope.telemetry.files import read_logs, read_metrics, read_spans
    from hookscope.telemetry.otel_hook import OTelHook, TraceLayout
    from hookscope.telemetry.setup import Telemetry, TelemetryConfigError, configure

_LAZY = {
    "ContentCapture": "hookscope.telemetry.content",
    "OTelHook": "hookscope.telemetry.otel_hook",
    "Telemetry": "hookscope.telemetry.setup",
    "TelemetryConfigError": "hookscope.telemetry.setup",
    "TraceLayout": "hookscope.telemetry.otel_hook",
    "configure": "hookscope.telemetry.setup",
    "read_logs": "hookscope.telemetry.files",
    "read_metrics": "hookscope.telemetry.files",
    "read_spans": "hookscope.telemetry.files",
}

__all__ = [
    "ContentCapture",
    "OTelHook",
    "Telemetry",
    "TelemetryConfigError",
    "TraceLayout",
    "add_redaction_pattern",
    "configure",
    "read_logs",
    "read_metrics",
    "read_spans",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'hookscope.telemetry' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value
