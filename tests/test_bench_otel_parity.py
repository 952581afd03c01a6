"""The raw-OTel baseline of ``bench/bench_otel.py`` emits exactly OTelHook's telemetry.

The bench's target "OTelHook alone ≤ 0.85x raw OTel, same telemetry" only means something when
the raw case writes what OTelHook writes for the bench's workload: the same spans (names,
parents, kinds, statuses, attributes including the OpenInference ``metadata`` JSON, events)
and the same metrics. These tests run the bench's own cases once each, so a change to
OTelHook's output that the raw case does not follow fails here, in CI, not only in
``make bench``.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from hookscope.telemetry import semconv as sc

BENCH = Path(__file__).resolve().parent.parent / "bench" / "bench_otel.py"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_otel_under_test", BENCH)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while it executes
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def tracing(bench: ModuleType) -> Iterator[Any]:
    """The bench's tracing bundle on private providers (never the global one)."""
    exporter = bench._CountingExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    sampled = TracerProvider()
    sampled.add_span_processor(SimpleSpanProcessor(exporter))
    yield bench._Tracing(provider, exporter, sampled)
    provider.shutdown()
    sampled.shutdown()


async def _telemetry(bench: ModuleType, tracing: Any, make: Any, hooks: int) -> Any:
    case = make(tracing, hooks)
    spans = await bench._one_session(tracing, case)
    return bench._span_tree(spans), bench._metric_points(case.reader)


@pytest.mark.parametrize("hooks", [0, 5])
async def test_raw_case_emits_the_same_telemetry_as_otel_hook(
    bench: ModuleType, tracing: Any, hooks: int
) -> None:
    await bench.check_raw_parity(tracing, hooks)


@pytest.mark.parametrize("hooks", [0, 5])
async def test_same_span_names_attribute_keys_and_metric_names(
    bench: ModuleType, tracing: Any, hooks: int
) -> None:
    hs_tree, hs_points = await _telemetry(bench, tracing, bench.hookscope_otel, hooks)
    raw_tree, raw_points = await _telemetry(bench, tracing, bench.raw_otel, hooks)

    def shape(tree: Any) -> list[tuple[str, list[str]]]:
        return [(name, sorted(k for k, _ in attrs)) for name, _, _, _, attrs, _ in tree]

    assert shape(raw_tree) == shape(hs_tree)
    hs_metrics = {name for name in hs_points if not name.startswith("hookscope.telemetry")}
    assert sorted(raw_points) == sorted(hs_metrics)


async def test_the_workload_carries_metadata_and_unset_status(
    bench: ModuleType, tracing: Any
) -> None:
    """What the comparison covers for this workload (every call allowed and succeeding):
    ``metadata`` on session, turn and tool spans, no span with an ERROR status."""
    tree, points = await _telemetry(bench, tracing, bench.hookscope_otel, 0)
    names = [span[0] for span in tree]
    assert (
        names
        == [f"session {bench.AGENT}", f"invoke_agent {bench.AGENT}"]
        + [f"execute_tool {bench.TOOL}"] * bench.CALLS_PER_SESSION
    )
    assert {span[3] for span in tree} == {("UNSET", None)}
    metadata = [json.loads(dict(span[4])[sc.METADATA]) for span in tree]
    assert metadata[0] == {
        sc.META_OUTCOME: "completed",
        sc.META_TURNS: 1,
        sc.META_TOOL_CALLS: bench.CALLS_PER_SESSION,
        sc.META_DENIED_CALLS: 0,
        sc.META_TOOL_ERRORS: 0,
    }
    assert metadata[1] == {sc.META_OUTCOME: "completed"}
    assert metadata[2:] == [{sc.META_OUTCOME: sc.TOOL_SUCCEEDED}] * bench.CALLS_PER_SESSION
    assert sorted(k for k in points if not k.startswith("hookscope.telemetry")) == sorted(
        [
            sc.METRIC_POLICY_DECISIONS,
            sc.METRIC_SESSIONS,
            sc.METRIC_SESSIONS_ACTIVE,
            sc.METRIC_TOOL_CALLS,
            sc.METRIC_TOOL_DURATION,
            sc.METRIC_TURNS,
            sc.METRIC_TURN_DURATION,
        ]
    )


def test_a_raw_case_without_metadata_or_status_is_caught(bench: ModuleType) -> None:
    tool = (
        "execute_tool t",
        "invoke_agent a",
        "INTERNAL",
        ("ERROR", "denied by policy"),
        ((sc.METADATA, '{"outcome": "denied"}'), (sc.TOOL_OUTCOME, "denied")),
        (),
    )
    no_metadata = (*tool[:4], ((sc.TOOL_OUTCOME, "denied"),), ())
    no_status = (*tool[:3], ("UNSET", None), *tool[4:])
    for stale in (no_metadata, no_status):
        with pytest.raises(AssertionError, match="the raw baseline is stale"):
            bench._same_telemetry("hookscope", [tool], {}, "raw", [stale], {})
    bench._same_telemetry("hookscope", [tool], {}, "raw", [tool], {})
