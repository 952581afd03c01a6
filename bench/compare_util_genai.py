"""Comparison: opentelemetry-util-genai's tool invocations against hookscope's OTelHook.

Per tool call, sessions of 1 agent invocation x 10 tool calls, every span through a
``SimpleSpanProcessor`` to a null exporter, metrics to an ``InMemoryMetricReader``:

* util-genai: ``TelemetryHandler.invoke_local_agent()`` and ten ``handler.tool(...)``
  invocations started and stopped (span, ``gen_ai.execute_tool.duration``); with
  ``--same-attributes`` each also carries the attributes hookscope's tool span adds that the
  invocation API can hold (its span events cannot be added: the API says not to touch the span);
* hookscope: ``HookRunner([OTelHook(...)])`` through ``turn.call_tool``, and the same runner
  without OTelHook, so OTelHook's own cost is the difference.

util-genai is not a hookscope dependency: install it first (``pip install
opentelemetry-util-genai``). Run: ``.venv/bin/python bench/compare_util_genai.py
[--same-attributes]``.
"""

from __future__ import annotations

import asyncio
import gc
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

from hookscope import ToolCall
from hookscope.runner import HookRunner
from hookscope.telemetry import OTelHook

CALLS = 2000
ROUNDS = 7
#: What hookscope's tool span carries besides util-genai's own attributes.
EXTRA = {
    "session.id": "0" * 32,
    "openinference.span.kind": "TOOL",
    "tool.name": "search_notes",
    "hookscope.policy.decision": "allow",
    "hookscope.policy.outcome": "allowed",
    "hookscope.tool.outcome": "succeeded",
}


class _Null(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        return None


def _providers() -> tuple[TracerProvider, MeterProvider, InMemoryMetricReader]:
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(_Null()))
    reader = InMemoryMetricReader()
    return tracer_provider, MeterProvider(metric_readers=[reader]), reader


def util_genai(same_attributes: bool) -> float:
    """µs per tool call through util-genai's handler."""
    from opentelemetry.util.genai.handler import TelemetryHandler

    tracer_provider, meter_provider, reader = _providers()
    handler = TelemetryHandler(tracer_provider=tracer_provider, meter_provider=meter_provider)
    started = time.perf_counter()
    for _ in range(CALLS // 10):
        agent = handler.invoke_local_agent(agent_name="bench")
        for i in range(10):
            tool: Any = handler.tool("search_notes", tool_type="function", agent_name="bench")
            tool.tool_call_id = f"c{i}"
            if same_attributes:
                tool.attributes.update(EXTRA)
            tool.stop()
        agent.stop()
    reader.collect()
    return (time.perf_counter() - started) / CALLS * 1e6


def hookscope(observe: bool) -> float:
    """µs per tool call through hookscope's runner, with or without OTelHook."""
    tracer_provider, meter_provider, reader = _providers()
    runner = HookRunner([OTelHook(tracer_provider, meter_provider)] if observe else [])
    calls = [ToolCall("search_notes", {"path": f"n{i}"}, id=f"c{i}") for i in range(10)]

    async def sessions() -> None:
        for _ in range(CALLS // 10):
            async with runner.session(agent_name="bench") as session, session.turn("p") as turn:
                for call in calls:
                    await turn.call_tool(call, lambda path: "ok")

    started = time.perf_counter()
    asyncio.run(sessions())
    reader.collect()
    return (time.perf_counter() - started) / CALLS * 1e6


def main(argv: Sequence[str] | None = None) -> int:
    """Print µs per tool call for each case; 2 when util-genai is not installed."""
    args = sys.argv[1:] if argv is None else argv
    try:
        import opentelemetry.util.genai.handler  # noqa: F401
    except ImportError:
        print("install opentelemetry-util-genai to run this comparison", file=sys.stderr)
        return 2
    same = "--same-attributes" in args
    cases: dict[str, Callable[[], float]] = {
        "util-genai agent + tool invocations": lambda: util_genai(same),
        "hookscope runner + OTelHook": lambda: hookscope(True),
        "hookscope runner alone": lambda: hookscope(False),
    }
    timings: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(ROUNDS):  # interleaved, so drift in machine load touches every case alike
        for name, case in cases.items():
            gc.collect()
            timings[name].append(case())
    for name, values in timings.items():
        print(f"{name:40s} min {min(values):7.2f}  median {statistics.median(values):7.2f} µs/call")
    own = min(timings["hookscope runner + OTelHook"]) - min(timings["hookscope runner alone"])
    print(f"OTelHook's own cost (min less the runner alone): {own:.2f} µs/call")
    return 0


if __name__ == "__main__":
    sys.exit(main())
