"""Benchmark: cost of one policy decision as rules for *other* tools pile up.

For 10, 1,000 and 10,000 rules that do not target the probed tool (a mix of deny, allow and
ask_user rules, a third of them with conditions, over distinct tool names), one decision on a
``view_file`` call is timed for:

* hookscope ``PolicyEnforcer.evaluate(call)`` (returns the ``PolicyDecision``);
* hookscope ``PolicyEnforcer.pre_tool_call(context, call)`` (the hook entry point);
* google-antigravity 0.1.22 ``policy.enforce(rules).run(context, call)``, its hook entry point,
  with the same rules built by its own builders and its pydantic ``ToolCall``.

A second probe, ``targeted``, adds one deny rule for the probed tool, registered last.

A second table times hookscope's ``evaluate`` for the name readings of DESIGN §4, with 10 and
10,000 non-targeting rules (half of them ``server/tool`` rules over ten registered MCP servers):
an MCP call (``server=" Srv0 "``, folded), a local call named ``srv0/view_file`` (which meets
srv0's deny and ask rules) and a local call under ``enforce(..., normalize=True)``.

Each coroutine is driven with ``send(None)`` (none of them suspends), so the figures are the
decision itself, without event-loop scheduling; the floor (an empty coroutine driven the same
way) is printed for reference and not subtracted. Per case: a warm-up, then the minimum over
rounds of ``gc.collect()`` + a timed loop with the collector paused. The scaling checks time
their two ends in interleaved rounds, so load from other processes falls on both alike.

Targets (checked on the untargeted probe, exit status 1 when missed): hookscope's cost with
10,000 rules at most 1.5x its cost with 10, for every probe of both tables; hookscope
``pre_tool_call`` at least 15x faster than antigravity's enforcer at 1,000 rules.

Run: ``.venv/bin/python bench/bench_policy.py [--rounds R]``.
"""

from __future__ import annotations

import argparse
import gc
import importlib.metadata
import platform
import sys
from collections.abc import Callable, Coroutine, Sequence
from time import perf_counter
from typing import Any

from google.antigravity import types as ag_types
from google.antigravity.hooks import policy as ag_policy

from hookscope import policy
from hookscope.types import ToolCall

RULE_COUNTS = (10, 1_000, 10_000)
SCALING_TARGET = 1.5  # cost(10,000 rules) / cost(10 rules), at most
SPEEDUP_TARGET = 15.0  # antigravity / hookscope at 1,000 rules, at least
ROUND_SECONDS = 0.05


def _big(args: Any) -> bool:
    return bool(args.get("n", 0) > 5)


def _approve(call: Any) -> bool:
    return True


def _rules(count: int, targeted: bool) -> tuple[list[Any], list[Any]]:
    """``count`` rules for tools other than view_file, built with both libraries' builders."""
    ours: list[Any] = []
    theirs: list[Any] = []
    for i in range(count):
        tool, when = f"tool_{i}", _big if i % 3 == 0 else None
        kind = i % 3
        if kind == 0:
            ours.append(policy.deny(tool, when=when))
            theirs.append(ag_policy.deny(tool, when=when))
        elif kind == 1:
            ours.append(policy.allow(tool, when=when))
            theirs.append(ag_policy.allow(tool, when=when))
        else:
            ours.append(policy.ask_user(tool, _approve, when=when))
            theirs.append(ag_policy.ask_user(tool, handler=_approve, when=when))
    if targeted:
        ours.append(policy.deny("view_file"))
        theirs.append(ag_policy.deny("view_file"))
    return ours, theirs


def _drive(coro: Coroutine[Any, Any, Any]) -> Any:
    """Run a coroutine that never suspends to completion, without an event loop."""
    try:
        coro.send(None)
    except StopIteration as stop:
        return stop.value
    coro.close()
    raise RuntimeError("the decision suspended; this benchmark needs one that does not")


def _time(make: Callable[[], Coroutine[Any, Any, Any]], rounds: int) -> float:
    """Minimum over ``rounds`` of seconds per decision."""
    started = perf_counter()
    _drive(make())
    estimate = max(perf_counter() - started, 1e-7)
    iterations = max(20, min(200_000, int(ROUND_SECONDS / estimate)))
    for _ in range(min(iterations, 1_000)):  # warm-up
        _drive(make())
    best = float("inf")
    for _ in range(rounds):
        gc.collect()
        gc.disable()
        try:
            started = perf_counter()
            for _ in range(iterations):
                _drive(make())
            best = min(best, (perf_counter() - started) / iterations)
        finally:
            gc.enable()
    return best


async def _empty() -> None:
    """The floor: creating and driving a coroutine that does nothing."""


def _measure(count: int, targeted: bool, rounds: int) -> tuple[float, float, float]:
    ours, theirs = _rules(count, targeted)
    enforcer = policy.enforce(ours)
    their_hook = ag_policy.enforce(theirs)
    call = ToolCall("view_file", {"AbsolutePath": "/w/app/main.py"}, id="c1")
    their_call = ag_types.ToolCall(name="view_file", args=dict(call.args), id="c1")
    expected = "denied" if targeted else "allowed"
    assert _drive(enforcer.evaluate(call)).outcome == expected
    assert _drive(their_hook.run(None, their_call)).allow is (not targeted)
    evaluate = _time(lambda: enforcer.evaluate(call), rounds)
    hook = _time(lambda: enforcer.pre_tool_call(None, call), rounds)  # type: ignore[arg-type]
    theirs_s = _time(lambda: their_hook.run(None, their_call), rounds)
    return evaluate, hook, theirs_s


SERVERS = [f"srv{i}" for i in range(10)]
READINGS: dict[str, tuple[ToolCall, bool]] = {
    "mcp call, server ' Srv0 '": (ToolCall("view_file", server=" Srv0 "), False),
    "local name srv0/view_file": (ToolCall("srv0/view_file"), False),
    "normalize=True, view_file": (ToolCall("view_file"), True),
}


def _mixed_rules(count: int) -> list[Any]:
    """``count`` rules, half local and half ``server/tool``, none for view_file."""
    rules: list[Any] = []
    for i in range(count):
        when = _big if i % 3 == 0 else None
        tool = f"tool_{i}" if i % 2 else f"{SERVERS[i % len(SERVERS)]}/tool_{i}"
        kind = i % 3
        if kind == 0:
            rules.append(policy.deny(tool, when=when))
        elif kind == 1:
            rules.append(policy.allow(tool, when=when))
        else:
            rules.append(policy.ask_user(tool, _approve, when=when))
    return rules


def _untargeted_ends(rounds: int) -> tuple[tuple[float, float], tuple[float, float]]:
    """(evaluate, pre_tool_call) seconds with the fewest and the most rules, interleaved."""
    call = ToolCall("view_file", {"AbsolutePath": "/w/app/main.py"}, id="c1")
    ends = [policy.enforce(_rules(count, False)[0]) for count in (RULE_COUNTS[0], RULE_COUNTS[-1])]
    best = [[float("inf")] * 2 for _ in ends]
    for _ in range(rounds):
        for end, enforcer in enumerate(ends):
            evaluate = _time(lambda e=enforcer: e.evaluate(call), 1)
            hook = _time(lambda e=enforcer: e.pre_tool_call(None, call), 1)  # type: ignore[arg-type]
            best[end] = [min(best[end][0], evaluate), min(best[end][1], hook)]
    return (best[0][0], best[0][1]), (best[1][0], best[1][1])


def _measure_reading(call: ToolCall, normalize: bool, rounds: int) -> tuple[float, float]:
    """Seconds per decision with the fewest and the most rules, rounds interleaved so that
    load from other processes hits both alike."""
    low, high = (
        policy.enforce(_mixed_rules(count), mcp_servers=SERVERS, normalize=normalize)
        for count in (RULE_COUNTS[0], RULE_COUNTS[-1])
    )
    assert _drive(low.evaluate(call)).outcome == _drive(high.evaluate(call)).outcome == "allowed"
    best_low = best_high = float("inf")
    for _ in range(rounds):
        best_low = min(best_low, _time(lambda: low.evaluate(call), 1))
        best_high = min(best_high, _time(lambda: high.evaluate(call), 1))
    return best_low, best_high


def main(argv: Sequence[str] | None = None) -> int:
    """Print the table and ratios; return 1 when a target is missed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=7, help="timed rounds per case (min taken)")
    args = parser.parse_args([] if argv is None else argv)

    print(
        f"Python {platform.python_version()} on {platform.machine()}, google-antigravity "
        f"{importlib.metadata.version('google-antigravity')}; ns per decision, min of "
        f"{args.rounds} rounds"
    )
    header = (
        f"{'probe':<10} {'rules':>7} {'evaluate':>10} {'pre_tool_call':>14} "
        f"{'antigravity':>12} {'ag / hs':>9}"
    )
    print(header)
    print("-" * len(header))
    results: dict[tuple[bool, int], tuple[float, float, float]] = {}
    for targeted in (False, True):
        for count in RULE_COUNTS:
            evaluate, hook, theirs = results[targeted, count] = _measure(
                count, targeted, args.rounds
            )
            print(
                f"{'targeted' if targeted else 'untargeted':<10} {count:>7,} "
                f"{evaluate * 1e9:>10.0f} {hook * 1e9:>14.0f} {theirs * 1e9:>12.0f} "
                f"{theirs / hook:>8.1f}x"
            )

    # The scaling checks re-time both ends with interleaved rounds: on a shared machine,
    # cases timed seconds apart see different load, and the ratio would measure the load.
    low, high = _untargeted_ends(args.rounds)
    checks = [
        (
            f"evaluate scaling, {RULE_COUNTS[-1]:,} / {RULE_COUNTS[0]:,} rules",
            high[0] / low[0],
            f"<= {SCALING_TARGET}x",
            high[0] / low[0] <= SCALING_TARGET,
        ),
        (
            f"pre_tool_call scaling, {RULE_COUNTS[-1]:,} / {RULE_COUNTS[0]:,} rules",
            high[1] / low[1],
            f"<= {SCALING_TARGET}x",
            high[1] / low[1] <= SCALING_TARGET,
        ),
    ]
    speedup = results[False, 1_000][2] / results[False, 1_000][1]
    checks.append(
        (
            "antigravity / hookscope pre_tool_call, 1,000 rules",
            speedup,
            f">= {SPEEDUP_TARGET}x",
            speedup >= SPEEDUP_TARGET,
        )
    )
    print()
    low_count, high_count = RULE_COUNTS[0], RULE_COUNTS[-1]
    header = f"{'name reading':<28} {low_count:>10,} {high_count:>10,} {'ratio':>8}"
    print(header)
    print("-" * len(header))
    for label, (call, normalize) in READINGS.items():
        low_s, high_s = _measure_reading(call, normalize, args.rounds)
        ratio = high_s / low_s
        print(f"{label:<28} {low_s * 1e9:>10.0f} {high_s * 1e9:>10.0f} {ratio:>7.2f}x")
        checks.append(
            (
                f"{label}, {high_count:,} / {low_count:,} rules",
                ratio,
                f"<= {SCALING_TARGET}x",
                ratio <= SCALING_TARGET,
            )
        )
    floor = _time(_empty, args.rounds)
    print(f"(floor: an empty coroutine driven the same way costs {floor * 1e9:.0f} ns)")
    print()
    for label, value, target, met in checks:
        print(f"{label:<48} {value:>8.2f}x  target {target:<8} {'met' if met else 'MISSED'}")
    return 0 if all(met for *_, met in checks) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
