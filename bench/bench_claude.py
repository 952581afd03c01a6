"""Per-tool-call cost of hookscope governing a Claude Agent SDK agent vs OpenInference tracing it.

Three variants run the same session through the real ``ClaudeSDKClient`` (claude-agent-sdk)
over an in-process stand-in for the CLI (``claude_fake_cli.FakeCli``: the CLI's own work is
tens of milliseconds a step and would drown the difference): no instrumentation; hookscope's
``govern()`` with a 10-rule policy and an ``OTelHook`` (spans to an in-memory exporter, metrics
to an in-memory reader): governance on; OpenInference's ``ClaudeAgentSDKInstrumentor`` (spans
to an in-memory exporter). Rounds interleave the three (order rotating); each session makes
``CALLS`` tool calls. Per-call overhead = (median session time - the uninstrumented median) /
CALLS. Target: hookscope <= 1.0x OpenInference.

Run: ``.venv/bin/python bench/bench_claude.py`` (about 20 s).
"""

from __future__ import annotations

import asyncio
import itertools
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient
from openinference.instrumentation.claude_agent_sdk import ClaudeAgentSDKInstrumentor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)

from claude_fake_cli import FakeCli
from hookscope import HookRunner, OTelHook
from hookscope.integrations.claude_agent_sdk import govern
from hookscope.integrations.claude_agent_sdk import stream as claude_stream
from hookscope.policy import allow, ask_user, deny, enforce

ROUNDS = 21
CALLS = 20
TARGET = 1.0
_sessions = itertools.count()


def policy() -> Any:
    """Ten rules, the last one allowing the calls the session makes."""
    rules = [deny(f"tool_{i}", reason="not here") for i in range(7)]
    rules.append(deny("Bash", when=lambda args: "rm -rf" in args.get("command", "")))
    rules.append(ask_user("WebFetch", handler=lambda call: False))
    rules.append(allow("Bash"))
    return enforce(rules)


async def session(options: ClaudeAgentOptions) -> float:
    fake = FakeCli(CALLS, session_id=f"bench-{next(_sessions)}")
    started = time.perf_counter()
    async with ClaudeSDKClient(options=options, transport=fake) as client:
        await client.query("go")
        async for _ in client.receive_response():
            pass
    elapsed = time.perf_counter() - started
    await claude_stream.drain()
    return elapsed


async def measure() -> dict[str, list[float]]:
    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    plain = ClaudeAgentOptions()
    runner = HookRunner([OTelHook(tracer_provider, meter_provider), policy()])
    governed = govern(plain, runner, agent_name="bench")
    openinference = ClaudeAgentSDKInstrumentor()

    async def baseline() -> float:
        return await session(plain)

    async def hookscope() -> float:
        return await session(governed)

    async def peer() -> float:
        openinference.instrument(tracer_provider=tracer_provider)
        try:
            return await session(plain)
        finally:
            openinference.uninstrument()

    variants: list[tuple[str, Callable[[], Awaitable[float]]]] = [
        ("none", baseline),
        ("hookscope", hookscope),
        ("openinference", peer),
    ]
    times: dict[str, list[float]] = {name: [] for name, _ in variants}
    for _name, run in variants:  # warm-up: imports, first spans
        await run()
    spans.clear()
    for round_ in range(ROUNDS):
        order = variants[round_ % 3 :] + variants[: round_ % 3]
        for name, run in order:
            times[name].append(await run())
        spans.clear()
    tracer_provider.shutdown()
    meter_provider.shutdown()
    return times


def main() -> int:
    times = asyncio.run(measure())
    medians = {name: statistics.median(values) for name, values in times.items()}
    base = medians["none"]
    per_call = {
        name: (medians[name] - base) / CALLS * 1e6 for name in ("hookscope", "openinference")
    }
    print(
        f"Claude Agent SDK, {CALLS} tool calls per session, {ROUNDS} interleaved rounds "
        f"(uninstrumented session: {base * 1e3:.1f} ms)"
    )
    for name, cost in per_call.items():
        print(f"  {name:<14} {cost:8.1f} µs per tool call over uninstrumented")
    if per_call["openinference"] <= 0:
        print("  ratio: n/a (OpenInference's overhead was not measurable this run)")
        return 0
    ratio = per_call["hookscope"] / per_call["openinference"]
    verdict = "met" if ratio <= TARGET else "MISSED"
    print(
        f"  ratio hookscope (10-rule policy + OTelHook, governing) / OpenInference: {ratio:.2f}x "
        f"(target <= {TARGET:.1f}x: {verdict})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
