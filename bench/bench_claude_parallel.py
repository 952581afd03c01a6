"""Benchmark: a Claude Code settings file's matching hooks run in parallel, as in Claude Code.

One ``pre_tool_call`` dispatch through ``HookRunner(load(.claude/settings.json))`` with
**four** matching command hooks, versus the same with **one** (interleaved rounds, median of
the paired ratios). Target: four cost <= 1.5x one (run one after the other they would cost
about 4x).

The hooks are what makes a hook's time in practice: a program that waits — for a linter
daemon, a policy service, a file lock — here ``sleep 0.1`` behind ``/bin/sh``. Hooks that
only burn CPU cannot go faster than the machine's cores allow; that case (four ``exit 0``
hooks) is printed too, for scale, without a target.

Run: ``.venv/bin/python bench/bench_claude_parallel.py [--rounds R]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
from pathlib import Path
from time import perf_counter

from hookscope import ToolCall
from hookscope.context import OperationContext, SessionContext, TurnContext
from hookscope.engine import load
from hookscope.runner import HookRunner

TARGET = 1.5


def _settings(directory: Path, name: str, command: str, count: int) -> Path:
    path = directory / name / ".claude" / "settings.json"
    path.parent.mkdir(parents=True)
    # Distinct commands: Claude Code (and hookscope) run identical commands once.
    hooks = [{"type": "command", "command": f"{command} # hook {n}"} for n in range(count)]
    path.write_text(json.dumps({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": hooks}]}}))
    return path


async def _dispatch_time(runner: HookRunner) -> float:
    call = ToolCall("Bash", {"command": "ls"}, id="c1")
    turn = TurnContext(SessionContext("bench", "bench"), 0, "go")
    started = perf_counter()
    decided = await runner.dispatch(
        "pre_tool_call", OperationContext(turn, "tool", call, "c1"), call
    )
    elapsed = perf_counter() - started
    assert decided.result.allow
    return elapsed


async def _compare(one: HookRunner, four: HookRunner, rounds: int) -> tuple[float, float, float]:
    for runner in (one, four):  # warm-up
        await _dispatch_time(runner)
    singles: list[float] = []
    quads: list[float] = []
    for index in range(rounds):
        pair = [(one, singles), (four, quads)]
        for runner, times in pair if index % 2 == 0 else pair[::-1]:
            times.append(await _dispatch_time(runner))
    ratios = [q / s for s, q in zip(singles, quads, strict=True)]
    return statistics.median(singles), statistics.median(quads), statistics.median(ratios)


def main(argv: list[str] | None = None) -> int:
    """Print both comparisons and the verdict; a missed target is reported, not failed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=16)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-claude-") as tmp:
        root = Path(tmp)
        waiting = [
            HookRunner(load(_settings(root, f"wait{count}", "sleep 0.1", count), transcript=False))
            for count in (1, 4)
        ]
        busy = [
            HookRunner(load(_settings(root, f"busy{count}", "exit 0", count), transcript=False))
            for count in (1, 4)
        ]
        one, four, ratio = asyncio.run(_compare(waiting[0], waiting[1], args.rounds))
        busy_one, busy_four, busy_ratio = asyncio.run(_compare(busy[0], busy[1], args.rounds * 4))
    print("pre_tool_call with matching command hooks from .claude/settings.json:")
    print(f"  1 hook  (sleep 0.1)                 {one * 1e3:8.1f} ms")
    print(f"  4 hooks (sleep 0.1), in parallel    {four * 1e3:8.1f} ms")
    print(f"  ratio {ratio:.3f}x (target <= {TARGET}x; one after the other would be ~4x)")
    print(
        f"  for scale, CPU-only hooks (exit 0): 1 = {busy_one * 1e3:.1f} ms, "
        f"4 = {busy_four * 1e3:.1f} ms, ratio {busy_ratio:.3f}x"
    )
    print("every target met" if ratio <= TARGET else "missed target: parallel hooks")
    return 0


if __name__ == "__main__":
    sys.exit(main())
