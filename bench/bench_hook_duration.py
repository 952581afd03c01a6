"""Benchmark: four ways to record ``hookscope.hook.duration``, per value.

Every hook run of every event is one value: an agent with a dozen hooks records two dozen per
tool call. The same values (20 series: 2 agents x 5 hooks x 2 events, durations spread over
the buckets) go through:

* SDK, synchronous: ``histogram.record(value, attributes)`` on the OpenTelemetry SDK, each
  value as it comes (attribute dicts built once and reused).
* SDK, batched (hookscope before issue 25): values queued in a deque and recorded into the SDK
  histogram in batches (at ``FLUSH_THRESHOLD`` queued values and at collection) — hookscope's
  ``Instruments`` on a provider whose view keeps it on that path.
* queued, aggregated at collection: values queued in a deque, counted into buckets in Python
  when a reader collects (an alternative not taken: cheapest hot path, but memory grows with
  the values between collections and the counting is only moved).
* in-process buckets (hookscope now): ``Instruments.hook_ran`` counts each value into its
  series' bucket under a lock; readers collect the counts as the same metric
  (:mod:`hookscope.telemetry._aggregated`).

Each is timed hot (the values only) and +collect (plus ``reader.collect()``), min over
interleaved rounds, ``gc.collect()`` before each. Target: the chosen way ≤ 2 µs per value,
whole (hot + its share of collection).

Run: ``.venv/bin/python bench/bench_hook_duration.py [--values N] [--rounds R]``.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import threading
from bisect import bisect_left
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from time import perf_counter

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.metrics.view import ExplicitBucketHistogramAggregation, View

from hookscope.telemetry import semconv as sc
from hookscope.telemetry.instruments import Instruments

TARGET_US = 2.0
AGENTS = ("agent-a", "agent-b")
HOOKS = tuple(f"hook{i}" for i in range(5))
EVENTS = ("pre_tool_call", "post_tool_call")
SERIES = [(agent, hook, event) for agent in AGENTS for hook in HOOKS for event in EVENTS]


@dataclass(frozen=True)
class Way:
    """One way of recording: ``record(agent, hook, event, value)`` and a collection."""

    label: str
    record: Callable[[str, str, str, float], None]
    collect: Callable[[], None]
    total: Callable[[], int]


def _reader() -> tuple[MeterProvider, InMemoryMetricReader]:
    reader = InMemoryMetricReader()
    return MeterProvider(metric_readers=[reader]), reader


def _count(reader: InMemoryMetricReader) -> int:
    data = reader.get_metrics_data()
    return sum(
        point.count
        for resource in (data.resource_metrics if data is not None else ())
        for scope in resource.scope_metrics
        for metric in scope.metrics
        if metric.name == sc.METRIC_HOOK_DURATION
        for point in metric.data.data_points
    )


def sdk_synchronous() -> Way:
    provider, reader = _reader()
    histogram = provider.get_meter("bench").create_histogram(
        sc.METRIC_HOOK_DURATION,
        unit="s",
        explicit_bucket_boundaries_advisory=sc.HOOK_DURATION_BUCKETS_S,
    )
    attributes = {
        key: {sc.GEN_AI_AGENT_NAME: key[0], sc.HOOK_NAME: key[1], sc.HOOK_EVENT: key[2]}
        for key in SERIES
    }
    seen = [0]

    def record(agent: str, hook: str, event: str, value: float) -> None:
        histogram.record(value, attributes[(agent, hook, event)])

    def collect() -> None:
        seen[0] = _count(reader)

    return Way("SDK histogram.record, synchronous", record, collect, lambda: seen[0])


def sdk_batched() -> Way:
    reader = InMemoryMetricReader()
    view = View(
        instrument_name=sc.METRIC_HOOK_DURATION,
        aggregation=ExplicitBucketHistogramAggregation(sc.HOOK_DURATION_BUCKETS_S),
    )
    instruments = Instruments(MeterProvider(metric_readers=[reader], views=[view]))
    assert instruments.hook_duration.buckets is None, "expected the SDK's own path"
    seen = [0]

    def collect() -> None:
        seen[0] = _count(reader)

    return Way("SDK, queued + batched (before)", instruments.hook_ran, collect, lambda: seen[0])


def queued_aggregated() -> Way:
    pending: deque[tuple[str, str, str, float]] = deque()
    buckets = sc.HOOK_DURATION_BUCKETS_S
    counts: dict[tuple[str, str, str], list[int]] = {}
    sums: dict[tuple[str, str, str], float] = {}
    lock = threading.Lock()

    def record(agent: str, hook: str, event: str, value: float) -> None:
        pending.append((agent, hook, event, value))

    def collect() -> None:
        with lock:
            while pending:
                agent, hook, event, value = pending.popleft()
                key = (agent, hook, event)
                row = counts.get(key)
                if row is None:
                    row = counts[key] = [0] * (len(buckets) + 1)
                    sums[key] = 0.0
                row[bisect_left(buckets, value)] += 1
                sums[key] += value

    return Way(
        "deque, counted at collection",
        record,
        collect,
        lambda: sum(sum(row) for row in counts.values()),
    )


def in_process() -> Way:
    provider, reader = _reader()
    instruments = Instruments(provider)
    assert instruments.hook_duration.buckets is not None, "expected the in-process path"
    seen = [0]

    def collect() -> None:
        seen[0] = _count(reader)

    return Way("in-process buckets (chosen)", instruments.hook_ran, collect, lambda: seen[0])


WAYS = (sdk_synchronous, sdk_batched, queued_aggregated, in_process)


def _values(count: int) -> list[tuple[str, str, str, float]]:
    spread = (2e-6, 8e-6, 3e-5, 1.2e-4, 6e-4, 4e-3, 0.02, 0.3)
    return [(*SERIES[i % len(SERIES)], spread[i % len(spread)]) for i in range(count)]


def main(argv: Sequence[str] | None = None) -> int:
    """Time every way and print µs per value with the target's verdict; 1 if counts are lost."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0] if __doc__ else "")
    parser.add_argument("--values", type=int, default=20_000, help="values per round")
    parser.add_argument("--rounds", type=int, default=9, help="timed rounds (at least 5)")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if args.rounds < 5:
        parser.error("--rounds must be at least 5")
    values = _values(args.values)
    ways = [make() for make in WAYS]
    hot: dict[str, list[float]] = {way.label: [] for way in ways}
    full: dict[str, list[float]] = {way.label: [] for way in ways}
    for round_ in range(args.rounds + 1):  # the first round warms up
        for way in ways:
            gc.collect()
            record = way.record
            started = perf_counter()
            for agent, hook, event, value in values:
                record(agent, hook, event, value)
            recorded = perf_counter()
            way.collect()
            done = perf_counter()
            if round_:
                hot[way.label].append((recorded - started) / len(values) * 1e6)
                full[way.label].append((done - started) / len(values) * 1e6)
    expected = (args.rounds + 1) * len(values)
    lost = [f"{way.label}: {way.total()} of {expected}" for way in ways if way.total() != expected]
    width = max(len(way.label) for way in ways)
    print(
        f"µs per hook-duration value; {len(values)} values over {len(SERIES)} series per round, "
        f"{args.rounds} interleaved rounds, min [median]"
    )
    print(f"{'way':<{width}}  {'hot':>15}  {'+collect':>15}")
    for way in ways:
        h, f = hot[way.label], full[way.label]
        print(
            f"{way.label:<{width}}  {min(h):>6.3f} [{statistics.median(h):>6.3f}]  "
            f"{min(f):>6.3f} [{statistics.median(f):>6.3f}]"
        )
    chosen = min(full[ways[-1].label])
    verdict = "met" if chosen <= TARGET_US else "NOT met"
    print(
        f"target: in-process buckets ≤ {TARGET_US:g} µs per value incl. collection: "
        f"measured {chosen:.3f} µs → {verdict}"
    )
    for problem in lost:
        print(f"lost values: {problem}", file=sys.stderr)
    return 1 if lost else 0


if __name__ == "__main__":
    sys.exit(main())
