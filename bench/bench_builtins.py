"""Benchmark: what the ready-made hooks cost per tool call.

Cases, each ``turn.call_tool(call, fn)`` with a trivial sync tool, 1 session x 1 turn x 10
calls per session (session and turn opened and closed inside the timed region, amortized over
the calls), one event loop, interleaved rounds, ``gc.collect()`` before each round:

* bare: a ``HookRunner`` with no hooks.
* AuditLog: the bare runner plus ``AuditLog`` writing a real file in a temporary directory
  (one JSON line and one ``os.write`` per call). Target: ≤ 15 µs added per call.
* every built-in, non-matching or inactive: ``LoggingHook`` on a logger that is off,
  ``AllowAll``, ``ToolTiers`` whose default tier is ``observe``, ``TurnLimit``,
  ``TurnRateLimit`` and ``TokenBudget`` with limits never reached, ``RetryLoopDetector`` and
  ``SlowToolWarning`` with matchers for another tool, ``RecoverErrors`` (no error),
  ``AutoAnswer`` (no question) and ``SecretGuard`` (no model response). ``AuditLog`` is left
  out: it is always active, priced above. Target: ≤ 1.3x bare.

Ratios compare figures measured in the same run; the minimum over many short interleaved
rounds is what a shared machine's load disturbs least (the load average is printed). Run:
``.venv/bin/python bench/bench_builtins.py [--sessions N] [--rounds R]``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import os
import statistics
import sys
import tempfile
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from time import perf_counter

from hookscope.builtins import (
    AllowAll,
    AuditLog,
    AutoAnswer,
    LoggingHook,
    RecoverErrors,
    RetryLoopDetector,
    SecretGuard,
    SlowToolWarning,
    TokenBudget,
    ToolTiers,
    TurnLimit,
    TurnRateLimit,
)
from hookscope.runner import HookRunner
from hookscope.types import ChatResponse, ToolCall, Usage

CALLS_PER_SESSION = 10
AUDIT_TARGET_US = 15.0
SET_TARGET_RATIO = 1.3

SessionFn = Callable[[], Awaitable[None]]


def _tool(path: str) -> str:
    return "ok"


def _calls() -> list[ToolCall]:
    return [
        ToolCall("view_file", {"path": f"src/m{i}.py"}, f"c{i}") for i in range(CALLS_PER_SESSION)
    ]


def every_builtin() -> list[object]:
    """Every ready-made hook but AuditLog, configured so none matches or acts on the calls."""
    quiet = logging.getLogger("hookscope.bench.off")
    quiet.setLevel(logging.CRITICAL)
    quiet.propagate = False
    retry = RetryLoopDetector()
    retry.matcher = "run_command"  # type: ignore[attr-defined]
    slow = SlowToolWarning(threshold_s=3600)
    slow.matcher = "run_command"  # type: ignore[attr-defined]
    return [
        LoggingHook(logger=quiet, level=logging.DEBUG),
        AllowAll(),
        ToolTiers({"run_command": "confirm"}, default="observe"),
        TurnLimit(max_turns=1_000_000),
        TurnRateLimit(max_turns=1_000_000, per_seconds=1),
        TokenBudget(max_tokens=10**15),
        retry,
        slow,
        RecoverErrors(errors=(TimeoutError,), value="cached"),
        AutoAnswer({"Proceed?": "yes"}),
        SecretGuard(),
    ]


def scoped(runner: HookRunner) -> SessionFn:
    calls = _calls()
    response = ChatResponse("done", usage=Usage(10, 5))

    async def session() -> None:
        async with runner.session(agent_name="bench") as scope, scope.turn("prompt") as turn:
            for call in calls:
                await turn.call_tool(call, _tool)
            turn.respond(response)

    return session


async def _round(session: SessionFn, sessions: int) -> float:
    gc.collect()
    started = perf_counter()
    for _ in range(sessions):
        await session()
    return (perf_counter() - started) / (sessions * CALLS_PER_SESSION) * 1e6


async def _measure(
    cases: Sequence[tuple[str, SessionFn]], sessions: int, rounds: int
) -> dict[str, list[float]]:
    for _, fn in cases:  # warm-up
        await _round(fn, max(1, sessions // 2))
    results: dict[str, list[float]] = {name: [] for name, _ in cases}
    for _ in range(rounds):  # interleaved: drift in machine load touches every case alike
        for name, fn in cases:
            results[name].append(await _round(fn, sessions))
    return results


def _check(audit: Path) -> None:
    """Fail loudly if AuditLog does not write its lines, which would make figures meaningless."""
    asyncio.run(scoped(HookRunner([AuditLog(audit)]))())
    lines = audit.read_text().splitlines()
    assert len(lines) == CALLS_PER_SESSION, f"AuditLog wrote {len(lines)} lines"


def main(argv: Sequence[str] | None = None) -> int:
    """Time the cases and print the table with each target's verdict; 0 once it ran."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0] if __doc__ else "")
    parser.add_argument("--sessions", type=int, default=20, help="sessions per round")
    parser.add_argument("--rounds", type=int, default=101, help="timed rounds (at least 5)")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if args.rounds < 5:
        parser.error("--rounds must be at least 5")
    load_before = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    with tempfile.TemporaryDirectory(prefix="hookscope-bench-") as directory:
        _check(Path(directory) / "check.jsonl")
        audit = AuditLog(Path(directory) / "audit.jsonl")
        cases = [
            ("bare runner", scoped(HookRunner())),
            ("+ AuditLog", scoped(HookRunner([audit]))),
            ("+ every built-in (non-matching/inactive)", scoped(HookRunner(every_builtin()))),
        ]
        results = asyncio.run(_measure(cases, args.sessions, args.rounds))
        failed = audit.failed_lines
    best = {name: min(values) for name, values in results.items()}
    median = {name: statistics.median(values) for name, values in results.items()}
    width = max(len(name) for name in results)
    print(
        f"µs per tool call through turn.call_tool; 1 session x 1 turn x {CALLS_PER_SESSION} "
        f"calls; {args.rounds} interleaved rounds x {args.sessions} sessions"
    )
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"load average before/after: {load_before} / {load} (min over many short rounds)")
    print(f"{'case':<{width}}  {'min':>7}  {'median':>7}  {'÷ bare min':>10}")
    bare = best["bare runner"]
    for name in results:
        print(
            f"{name:<{width}}  {best[name]:>7.2f}  {median[name]:>7.2f}  {best[name] / bare:>9.2f}x"
        )
    added = best["+ AuditLog"] - bare
    ratio = best["+ every built-in (non-matching/inactive)"] / bare
    audit_ok, set_ok = added <= AUDIT_TARGET_US and failed == 0, ratio <= SET_TARGET_RATIO
    print(
        f"target: AuditLog adds ≤ {AUDIT_TARGET_US:g} µs per call: measured {added:.2f} µs "
        f"(by min; {failed} failed lines) → {'met' if audit_ok else 'NOT met'}"
    )
    print(
        f"target: every built-in ≤ {SET_TARGET_RATIO:g}x bare: measured {ratio:.3f}x (by min) "
        f"→ {'met' if set_ok else 'NOT met'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
