"""Comparison: the same google-antigravity chats traced by the SDK's OTel hooks and by hookscope.

Each scenario runs a real ``Agent`` (google-antigravity 0.1.22 with its Go harness) against a
scripted OpenAI-compatible model, twice: once with ``get_otel_hooks()`` from
``google.antigravity.utils.otel`` in the agent's hooks, once under hookscope's
``AntigravityInstrumentor`` (no hooks added). Both span trees are printed side by side, one
block per trace, with the attributes that say what happened; then the count of metric series.

Scenarios: an allowed tool call; a call denied by a ``when`` policy; a failing tool whose error
an ``on_tool_error`` hook recovers; a turn with a StopHook registered; two tool calls in a turn.
Tool-call ids come from an OpenAI-style model, so they carry no trajectory prefix.

Run: ``.venv/bin/python bench/compare_antigravity_otel.py`` (about 10 s).
"""

from __future__ import annotations

import asyncio
import logging
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # the scripted model lives with the tests
    sys.path.insert(0, str(ROOT))

from google.antigravity import Agent, LocalOpenAIAgentConfig, types  # noqa: E402
from google.antigravity.hooks import hooks, policy  # noqa: E402
from google.antigravity.utils.otel import get_otel_hooks  # noqa: E402
from opentelemetry.sdk.metrics import MeterProvider  # noqa: E402
from opentelemetry.sdk.metrics.export import InMemoryMetricReader  # noqa: E402
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)
from tests.support.openai_server import Call, Reply, ScriptedOpenAIServer  # noqa: E402

from hookscope.integrations.antigravity import AntigravityInstrumentor  # noqa: E402

AGENT = "weather-bot"
COLUMN = 62
#: Upper bound for one chat to finish.
DEADLINE_S = 60.0
#: Attributes worth a glance, in this order (everything else is left out of the picture).
SHOWN = (
    "hookscope.turn.outcome",
    "hookscope.tool.outcome",
    "hookscope.policy.rule",
    "hookscope.policy.decided_by",
    "hookscope.recovery.recovered",
    "hookscope.recovery.hook",
    "gen_ai.tool.call.id",
    "error.type",
)


def get_weather(city: str) -> str:
    """Today's weather in a city."""
    if city == "Atlantis":
        raise LookupError(f"no weather station in {city}")
    return f"sunny in {city}"


@hooks.on_tool_error
def suggest_another_city(error: Exception) -> str:
    return "No station there; try a nearby city."


@hooks.stop
def double_check_once(stop: types.StopArgs) -> types.StopHookResult:
    if stop.continuation_count == 0:
        return types.StopHookResult(decision=types.StopDecision.CONTINUE, reason="Double-check.")
    return types.StopHookResult(decision=types.StopDecision.ALLOW_STOP)


def _no_oslo(args: dict[str, Any]) -> bool:
    return args.get("city") == "Oslo"


@dataclass(frozen=True)
class Scenario:
    title: str
    prompt: str
    replies: Sequence[Reply]
    policies: Sequence[Any] = (policy.allow_all(),)
    sdk_hooks: Sequence[Any] = ()


OSLO = [Reply(tool_calls=[Call("get_weather", {"city": "Oslo"}, id="call_1")])]
SCENARIOS = [
    Scenario("an allowed tool call", "weather in Oslo", [*OSLO, Reply(text="Sunny.")]),
    Scenario(
        "a call denied by a `when` policy",
        "weather in Oslo, please",
        [*OSLO, Reply(text="Not allowed.")],
        policies=[policy.deny("get_weather", when=_no_oslo, name="no_oslo"), policy.allow_all()],
    ),
    Scenario(
        "a failing tool, recovered by an on_tool_error hook",
        "weather in Atlantis",
        [
            Reply(tool_calls=[Call("get_weather", {"city": "Atlantis"}, id="call_1")]),
            Reply(text="No report."),
        ],
        sdk_hooks=[suggest_another_city],
    ),
    Scenario(
        "a turn with a StopHook registered",
        "weather in Oslo, twice",
        [*OSLO, Reply(text="Sunny."), Reply(text="Checked: sunny.")],
        sdk_hooks=[double_check_once],
    ),
    Scenario(
        "two tool calls in one turn",
        "Oslo and Rome",
        [
            Reply(
                tool_calls=[
                    Call("get_weather", {"city": "Oslo"}, id="call_1"),
                    Call("get_weather", {"city": "Rome"}, id="call_2"),
                ]
            ),
            Reply(text="Sunny in both."),
        ],
    ),
]


@dataclass
class Capture:
    """Where one run's spans and metrics went."""

    spans: InMemorySpanExporter = field(default_factory=InMemorySpanExporter)
    metrics: InMemoryMetricReader | None = None

    def providers(self) -> tuple[TracerProvider, MeterProvider]:
        tracer_provider = TracerProvider()
        tracer_provider.add_span_processor(SimpleSpanProcessor(self.spans))
        self.metrics = InMemoryMetricReader()
        return tracer_provider, MeterProvider(metric_readers=[self.metrics])

    def metric_series(self) -> int:
        if self.metrics is None:  # the SDK's hooks record no metrics
            return 0
        data = self.metrics.get_metrics_data()
        if data is None:
            return 0
        return sum(
            len(metric.data.data_points)
            for resource in data.resource_metrics
            for scope in resource.scope_metrics
            for metric in scope.metrics
        )


async def _run(model: ScriptedOpenAIServer, scenario: Scenario, extra_hooks: Sequence[Any]) -> None:
    with tempfile.TemporaryDirectory(prefix="hookscope-compare-") as workdir:
        home = Path(workdir) / "home"
        home.mkdir()
        config = LocalOpenAIAgentConfig(
            base_url=model.base_url,
            model="scripted",
            tools=[get_weather],
            policies=list(scenario.policies),
            hooks=[*extra_hooks, *scenario.sdk_hooks],
            capabilities=types.CapabilitiesConfig(enabled_tools=[]),
            workspaces=[workdir],
            save_dir=f"{workdir}/save",
            app_data_dir=f"{workdir}/app",
            env={"HOME": str(home)},
        )
        agent = Agent(config)
        try:
            async with agent:
                response = await agent.chat(scenario.prompt)
                await asyncio.wait_for(response.text(), DEADLINE_S)
        finally:
            # 0.1.22 leaves the harness's stdout and stderr pipes open after disconnecting.
            process = getattr(agent.conversation.connection, "_process", None)
            for pipe in (getattr(process, "stdout", None), getattr(process, "stderr", None)):
                if pipe is not None:
                    pipe.close()


async def run_sdk_hooks(
    model: ScriptedOpenAIServer, scenario: Scenario, capture: Capture, global_spans: Capture
) -> None:
    """The SDK's own OTel hooks: they use the global tracer provider, so read that one."""
    global_spans.spans.clear()
    await _run(model, scenario, get_otel_hooks(AGENT))
    for span in global_spans.spans.get_finished_spans():
        capture.spans.export([span])


async def run_hookscope(model: ScriptedOpenAIServer, scenario: Scenario, capture: Capture) -> None:
    tracer_provider, meter_provider = capture.providers()
    instrumentor = AntigravityInstrumentor()
    instrumentor.instrument(
        tracer_provider=tracer_provider, meter_provider=meter_provider, agent_name=AGENT
    )
    try:
        await _run(model, scenario, ())
    finally:
        instrumentor.uninstrument()


# --- rendering ---------------------------------------------------------------------------


def _label(span: ReadableSpan) -> str:
    attributes = span.attributes or {}
    shown = [f"{key.split('.')[-1]}={attributes[key]}" for key in SHOWN if key in attributes]
    if span.status.status_code.name == "ERROR":
        shown.append("ERROR")
    return " ".join([span.name, *shown])


def render(spans: Sequence[ReadableSpan]) -> list[str]:
    """Spans as indented lines, one block per trace, in start order.

    A span whose parent was never exported (the parent was lost: never ended) is shown at the
    top of its trace, marked ``[parent lost]``.
    """
    ids = {s.context.span_id for s in spans}
    children: dict[int | None, list[ReadableSpan]] = {}
    for span in spans:
        parent = span.parent.span_id if span.parent and span.parent.span_id in ids else None
        children.setdefault(parent, []).append(span)

    lines: list[str] = []

    def walk(span: ReadableSpan, depth: int) -> None:
        lost = (
            "[parent lost] " if span.parent is not None and span.parent.span_id not in ids else ""
        )
        lines.append("  " * depth + lost + _label(span))
        for child in sorted(children.get(span.context.span_id, []), key=_start):
            walk(child, depth + 1)

    traces: dict[int, int] = {}
    for root in sorted(children.get(None, []), key=_start):
        if root.context.trace_id not in traces:
            traces[root.context.trace_id] = len(traces) + 1
            lines.append(f"trace {traces[root.context.trace_id]}")
        walk(root, 1)
    return lines or ["(no spans)"]


def _start(span: ReadableSpan) -> int:
    return span.start_time or 0


def side_by_side(left: list[str], right: list[str]) -> str:
    width = COLUMN
    rows = [
        f"{(a[: width - 1] + '…') if len(a) > width else a:<{width}} | {b}"
        for a, b in _zip_longest(left, right)
    ]
    return "\n".join(rows)


def _zip_longest(left: list[str], right: list[str]) -> list[tuple[str, str]]:
    size = max(len(left), len(right))
    return [
        (left[i] if i < len(left) else "", right[i] if i < len(right) else "") for i in range(size)
    ]


def _summary(capture: Capture) -> str:
    spans = capture.spans.get_finished_spans()
    traces = len({s.context.trace_id for s in spans})
    return f"{len(spans)} spans in {traces} trace(s), {capture.metric_series()} metric series"


async def compare(print_: Callable[[str], None] = print) -> None:
    """Run every scenario both ways and print the trees side by side."""
    from opentelemetry import trace

    global_capture = Capture()
    global_provider, _ = global_capture.providers()
    trace.set_tracer_provider(global_provider)
    scripts = {s.prompt: list(s.replies) for s in SCENARIOS}
    with ScriptedOpenAIServer(scripts) as model:
        for number, scenario in enumerate(SCENARIOS, 1):
            sdk, ours = Capture(), Capture()
            await run_sdk_hooks(model, scenario, sdk, global_capture)
            await run_hookscope(model, scenario, ours)
            print_(f"\n{number}. {scenario.title}")
            header = side_by_side(["google-antigravity get_otel_hooks()"], ["hookscope"])
            print_(header)
            print_(side_by_side(["-" * COLUMN], ["-" * COLUMN]))
            print_(
                side_by_side(
                    render(sdk.spans.get_finished_spans()), render(ours.spans.get_finished_spans())
                )
            )
            print_(side_by_side([_summary(sdk)], [_summary(ours)]))
        if model.errors:
            raise RuntimeError(f"the scripted model failed: {model.errors}")


def main() -> int:
    """Print the comparison; 0 on success."""
    # The SDK logs leaked spans and harness chatter through the root logger: keep stdout clean.
    logging.basicConfig(level=logging.ERROR)
    asyncio.run(compare())
    return 0


if __name__ == "__main__":
    sys.exit(main())
