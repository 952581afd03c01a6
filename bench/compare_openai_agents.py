"""hookscope vs OpenInference on the OpenAI Agents SDK: the same session, two span trees, and
the cost per tool call, measured in one run.

1. Span trees. One scripted conversation (an ``SQLiteSession``, two turns: the model adds two
   numbers, then deletes a file) runs on the real ``agents.Runner`` against the scripted Chat
   Completions server twice: governed by hookscope (``govern(agent, runner)`` with a policy
   that denies ``delete_file`` and an ``OTelHook``), and observed by OpenInference's
   ``OpenAIAgentsInstrumentor`` (which needs the SDK's own tracing on). Both trees are printed.

2. Cost per tool call. The same agent runs turns of ``CALLS`` tool calls each on an in-process
   model (no HTTP, so the noise is the SDK's, not the network's), in interleaved rounds of
   three variants: plain (no instrumentation, SDK tracing off), hookscope (a 10-rule policy +
   ``OTelHook``; SDK tracing off: hookscope does not need it), OpenInference (its
   instrumentor; SDK tracing on: it needs it). Both export to the same in-memory pipeline.
   Overhead per tool call = (variant's turn CPU time - the same round's plain turn CPU time)
   / ``CALLS``, median over rounds; the ratio hookscope/OpenInference is the verdict
   (target ≤ 1.0x). Every measured turn is checked to have done the same work: ``CALLS`` tool
   calls and ``CALLS + 1`` model calls, each a span in its variant's exporter.

   Each side runs in its default configuration, which is not quite the same telemetry:
   OpenInference records the tool calls' arguments and results on its spans (the SDK's
   ``trace_include_sensitive_data`` is on by default), ``OTelHook`` records no content unless
   asked, and hookscope also enforces the policy. ``--content`` has ``OTelHook`` record
   content on its spans too, like for like.

Run: ``.venv/bin/python bench/compare_openai_agents.py [--rounds N] [--content] [--profile]``
(about 30 s). ``--profile`` runs the governed turns under cProfile instead and prints where the time
goes: the adapter (``integrations/``), the runner and ``OTelHook``, the OpenTelemetry SDK.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import pstats
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # the scripted model server lives with the tests
    sys.path.insert(0, str(ROOT))

from agents import (  # noqa: E402
    Agent,
    ModelResponse,
    OpenAIChatCompletionsModel,
    RunConfig,
    Runner,
    SQLiteSession,
    Usage,
    function_tool,
    generation_span,
    set_trace_processors,
)
from agents.models.interface import Model  # noqa: E402
from agents.testing.model import assistant_message, function_call  # noqa: E402
from openai import AsyncOpenAI  # noqa: E402
from openinference.instrumentation.openai_agents import (  # noqa: E402
    OpenAIAgentsInstrumentor as OpenInferenceInstrumentor,
)
from opentelemetry.sdk.metrics import MeterProvider  # noqa: E402
from opentelemetry.sdk.metrics.export import InMemoryMetricReader  # noqa: E402
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)
from tests.support.model_server import ScriptedModelServer  # noqa: E402

from hookscope import HookRunner  # noqa: E402
from hookscope.integrations.openai_agents import end_session, govern  # noqa: E402
from hookscope.policy import allow, deny, enforce  # noqa: E402
from hookscope.telemetry import OTelHook  # noqa: E402
from span_lines import tree_lines  # noqa: E402

#: Tool calls per measured turn.
CALLS = 10
#: ``OTelHook(capture_content=...)`` in the measured turns (``--content``: on spans).
CONTENT: str | None = None
ROUNDS = 40
WARMUP = 5
TARGET = 1.0
#: Attributes each tree line shows (both vocabularies), in this order.
SHOWN = (
    "hookscope.turn.outcome",
    "hookscope.tool.outcome",
    "hookscope.policy.decision",
    "gen_ai.usage.input_tokens",
    "llm.token_count.prompt",
    "openinference.span.kind",
    "tool.name",
)


@function_tool
async def add(a: int, b: int) -> int:
    """Add two integers (async: the SDK runs a sync tool in a worker thread, whose GIL
    hand-offs would swamp what is measured here)."""
    return a + b


@function_tool
def delete_file(path: str) -> str:
    """Delete a file."""
    return "deleted"


def policy() -> Any:
    """Ten rules; the one that matters here allows ``add``."""
    return enforce(
        [deny(f"tool_{i}", reason="not here") for i in range(8)]
        + [deny("delete_file", reason="deleting files is not allowed"), allow("add")]
    )


def pipeline() -> tuple[TracerProvider, InMemorySpanExporter, MeterProvider]:
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    return tracer_provider, exporter, meter_provider


# --- 1. span trees ---------------------------------------------------------------------

SCRIPT = {
    "Add 2 and 3": [
        {"tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 3}}]},
        {"text": "{tool_result}"},
    ],
    "Delete the notes": [
        {"tool_calls": [{"name": "delete_file", "arguments": {"path": "notes.txt"}}]},
        {"text": "{tool_result}"},
    ],
}


def lines(spans: Sequence[ReadableSpan]) -> list[str]:
    """Each span as ``name  shown.attributes``, indented under its parent, by start time."""
    return tree_lines(spans, _label)


def _label(span: ReadableSpan) -> str:
    attributes = span.attributes or {}
    shown = " ".join(
        f"{'.'.join(k.split('.')[-2:])}={attributes[k]}" for k in SHOWN if k in attributes
    )
    return f"{span.name}  {shown}".rstrip()


async def conversation(agent: Agent[Any], tracing: bool) -> list[str]:
    session = SQLiteSession("side-by-side")
    config = RunConfig(tracing_disabled=not tracing)
    answers = [
        str((await Runner.run(agent, prompt, session=session, run_config=config)).final_output)
        for prompt in SCRIPT
    ]
    await end_session(session)
    return answers


async def side_by_side() -> None:
    with ScriptedModelServer(SCRIPT) as server:
        client = AsyncOpenAI(base_url=server.base_url + "/v1", api_key="sk-x", max_retries=0)
        model = OpenAIChatCompletionsModel(model="scripted-model", openai_client=client)
        agent = Agent(
            name="assistant", instructions="Use tools.", model=model, tools=[add, delete_file]
        )

        tracer_provider, exporter, meter_provider = pipeline()
        hook = OTelHook(tracer_provider, meter_provider)
        answers = await conversation(govern(agent, HookRunner([hook, policy()])), tracing=False)
        ours = lines(exporter.get_finished_spans())

        tracer_provider, exporter, _ = pipeline()
        instrumentor = OpenInferenceInstrumentor()
        instrumentor.instrument(tracer_provider=tracer_provider)
        try:
            peer_answers = await conversation(agent, tracing=True)
        finally:
            instrumentor.uninstrument()
        peer = lines(exporter.get_finished_spans())
        await client.close()
    print("Span trees of the same two-turn session")
    print(f"hookscope (governed; answers {json.dumps(answers)}):")
    print("\n".join("  " + line for line in ours))
    print(f"OpenInference (observes only; answers {json.dumps(peer_answers)}):")
    print("\n".join("  " + line for line in peer))


# --- 2. cost per tool call ---------------------------------------------------------------


class LoopModel(Model):
    """An in-process model: ``CALLS`` calls of ``add``, then an answer (stateless)."""

    def __init__(self) -> None:
        self.usage = Usage(requests=1, input_tokens=100, output_tokens=10, total_tokens=110)

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        items = args[1] if len(args) > 1 else kwargs["input"]
        tracing = args[6] if len(args) > 6 else kwargs["tracing"]
        done = sum(
            1 for i in items if isinstance(i, dict) and i.get("type") == "function_call_output"
        )
        output = (
            [function_call("add", {"a": done, "b": 1}, call_id=f"call_{done}")]
            if done < CALLS
            else [assistant_message("done")]
        )
        # As the SDK's own models do: a generation span (OpenInference's LLM span) when the
        # SDK traces, nothing when it does not; with the messages sent and received when it
        # traces data (trace_include_sensitive_data, on by default), as OpenAIChatCompletions
        # Model does, so OpenInference records what it records for a real model.
        with generation_span(model="loop-model", disabled=tracing.is_disabled()) as span:
            span.span_data.usage = {"input_tokens": 100, "output_tokens": 10}
            if tracing.include_data():
                instructions = args[0] if args else kwargs.get("system_instructions")
                system = [{"role": "system", "content": instructions}] if instructions else []
                span.span_data.input = system + [i for i in items if isinstance(i, dict)]
                span.span_data.output = [item.model_dump() for item in output]
        return ModelResponse(output=output, usage=self.usage, response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:  # pragma: no cover
        raise NotImplementedError


async def timed(agent: Agent[Any], tracing: bool) -> float:
    config = RunConfig(tracing_disabled=not tracing)
    # CPU time of this process: on a shared machine, wall time also counts other processes'
    # turns on the cores, which swamps the tens of microseconds measured here.
    started = time.process_time()
    await Runner.run(agent, "Add up", run_config=config, max_turns=CALLS + 2)
    return time.process_time() - started


def check_work(spans: Sequence[ReadableSpan], turns: int, tool: str, model: str) -> None:
    """Each of ``turns`` turns left ``CALLS`` tool spans and ``CALLS + 1`` model spans."""
    tools = sum(1 for s in spans if (s.attributes or {}).get("openinference.span.kind") == tool)
    models = sum(1 for s in spans if (s.attributes or {}).get("openinference.span.kind") == model)
    expected = (turns * CALLS, turns * (CALLS + 1))
    if (tools, models) != expected:
        raise SystemExit(f"unequal work: {tools} tool / {models} model spans, not {expected}")


async def cost(rounds: int) -> None:
    agent = Agent(name="adder", instructions="Add.", model=LoopModel(), tools=[add])
    tracer_provider, exporter, meter_provider = pipeline()
    hook = OTelHook(tracer_provider, meter_provider, capture_content=CONTENT)
    governed = govern(agent, HookRunner([hook, policy()]))
    peer_provider, peer_exporter, _ = pipeline()
    instrumentor = OpenInferenceInstrumentor()
    instrumentor.instrument(tracer_provider=peer_provider)
    variants = {
        "plain": lambda: timed(agent, tracing=False),
        "hookscope": lambda: timed(governed, tracing=False),
        "openinference": lambda: timed(agent, tracing=True),
    }
    samples: dict[str, list[float]] = {name: [] for name in variants}
    try:
        for index in range(WARMUP + rounds):
            order = list(variants)
            order = order[index % 3 :] + order[: index % 3]  # rotate: no variant always first
            for name in order:
                elapsed = await variants[name]()
                if index >= WARMUP:
                    samples[name].append(elapsed)
            # The same work on both sides, every round (outside the timed turns).
            check_work(exporter.get_finished_spans(), 1, "TOOL", "LLM")
            check_work(peer_exporter.get_finished_spans(), 1, "TOOL", "LLM")
            exporter.clear()
            peer_exporter.clear()
    finally:
        instrumentor.uninstrument()
        set_trace_processors([])
    # Paired: each round's own plain turn is the baseline, so load that drifts between rounds
    # (a shared machine) cancels out.
    plain = statistics.median(samples["plain"])
    ours_each = [
        (t - p) / CALLS for t, p in zip(samples["hookscope"], samples["plain"], strict=True)
    ]
    peer_each = [
        (t - p) / CALLS for t, p in zip(samples["openinference"], samples["plain"], strict=True)
    ]
    ours, peer = statistics.median(ours_each), statistics.median(peer_each)
    ratio = ours / peer if peer > 0 else float("inf")
    verdict = "met" if ratio <= TARGET else "NOT met"
    content = "content on both sides' spans" if CONTENT else "default settings"
    print(
        f"\nCost per tool call, {rounds} interleaved rounds of {CALLS}-call turns "
        f"(plain turn {plain * 1e3:.2f} ms CPU; the same work on both sides, checked; {content}):"
    )
    for label, each, median in (
        ("hookscope (10-rule policy + OTelHook):", ours_each, ours),
        ("OpenInference instrumentor:           ", peer_each, peer),
    ):
        print(f"  {label} {median * 1e6:8.1f} µs per tool call{_iqr(each)}")
    print(f"  ratio hookscope/OpenInference {ratio:.2f}x (target ≤ {TARGET:.1f}x: {verdict})")


def _iqr(values: Sequence[float]) -> str:
    """The middle half of the rounds, so a reader sees how far one run may be trusted."""
    if len(values) < 4:
        return ""
    low, _, high = statistics.quantiles(values, n=4)
    return f"  (middle half of rounds {low * 1e6:.0f}-{high * 1e6:.0f})"


#: Where a profiled function lives, by its file's path: whose cost it is.
OWNERS = (
    ("adapter (integrations/openai_agents, _kit)", ("hookscope/integrations/",)),
    ("runner, OTelHook, policy (rest of hookscope)", ("hookscope/",)),
    ("OpenTelemetry SDK", ("opentelemetry/",)),
    ("openai-agents SDK", ("/agents/",)),
)
_RUNTIME = "Python itself (asyncio, json, builtins; anyone's)"


async def profile(turns: int) -> None:
    """The governed turns under cProfile: own time by owner, then hookscope's hottest."""
    agent = Agent(name="adder", instructions="Add.", model=LoopModel(), tools=[add])
    tracer_provider, exporter, meter_provider = pipeline()
    hook = OTelHook(tracer_provider, meter_provider, capture_content=CONTENT)
    governed = govern(agent, HookRunner([hook, policy()]))
    for _ in range(WARMUP):
        await timed(governed, tracing=False)
    exporter.clear()
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(turns):
        await timed(governed, tracing=False)
    profiler.disable()
    check_work(exporter.get_finished_spans(), turns, "TOOL", "LLM")
    stats = pstats.Stats(profiler)
    table: dict[tuple[str, int, str], Any] = stats.stats  # type: ignore[attr-defined]
    total = sum(row[2] for row in table.values())
    owned: dict[str, float] = {}
    for (path, _, _), row in table.items():
        owner = next((o for o, marks in OWNERS if any(m in path for m in marks)), _RUNTIME)
        owned[owner] = owned.get(owner, 0.0) + row[2]
    calls = turns * CALLS
    print(f"\nProfile of {turns} governed {CALLS}-call turns (own time per tool call, profiled):")
    for owner, seconds in sorted(owned.items(), key=lambda item: -item[1]):
        print(f"  {owner:50s} {seconds / calls * 1e6:8.1f} µs  {seconds / total:5.1%}")
    print("\nhookscope's functions by own time:")
    stats.sort_stats("tottime").print_stats("hookscope/", 25)


async def main(rounds: int, profiled: bool) -> None:
    set_trace_processors([])  # never export to OpenAI's tracing backend from here
    if profiled:
        await profile(rounds)
        return
    await side_by_side()
    await cost(rounds)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="rounds (turns profiled)")
    parser.add_argument(
        "--profile", action="store_true", help="profile the governed turns instead of timing"
    )
    parser.add_argument("--content", action="store_true", help="OTelHook records content too")
    arguments = parser.parse_args()
    CONTENT = "SPAN_ONLY" if arguments.content else None
    asyncio.run(main(arguments.rounds, arguments.profile))
