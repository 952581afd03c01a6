"""Benchmark: a 1,000-rule policy loaded from TOML decides as fast as the same rules in Python.

1,000 rules over distinct tools (deny, ask and allow in turn; a third of them with an argument
condition — ``matches`` or ``equals`` — and every tenth an MCP ``server/*`` or ``server/tool``
rule over five servers) are written once as ``[[policy.rules]]`` in a hookscope.toml and loaded
with ``hookscope.engine.load_policy``, and once as the same rules built with the
``hookscope.policy`` builders, conditions as plain lambdas. Both enforcers first decide a probe
set identically (asserted), then ``pre_tool_call`` is timed on the whole probe set (calls that
meet a condition rule, an exact rule, a server rule, and no rule), interleaving the two
enforcers round by round so load from other processes hits both alike; the minimum per round
is kept.

Target (exit status 1 when missed): from-TOML / in-Python at most 1.05.

Run: ``.venv/bin/python bench/bench_policy_config.py [--rounds R]``.
"""

from __future__ import annotations

import argparse
import gc
import re
import sys
import tempfile
from collections.abc import Coroutine, Sequence
from pathlib import Path
from time import perf_counter
from typing import Any

from hookscope import policy
from hookscope.engine import load_policy
from hookscope.policy import PolicyEnforcer
from hookscope.types import ToolCall

RULES = 1_000
TARGET = 1.05
SERVERS = [f"srv{i}" for i in range(5)]
EFFECTS = ("deny", "ask", "allow")


def _spec(i: int) -> tuple[str, str | None, str, str | None]:
    """(effect, server, tool, condition kind) of rule ``i``."""
    effect = EFFECTS[i % 3]
    server = SERVERS[i % len(SERVERS)] if i % 10 == 0 else None
    tool = "*" if server is not None and i % 20 == 0 else f"tool_{i}"
    condition = None if i % 3 != 1 else ("matches" if i % 2 else "equals")
    return effect, server, tool, condition


def _toml() -> str:
    lines = [f"[policy]\nmcp_servers = {SERVERS!r}\n".replace("'", '"')]
    for i in range(RULES):
        effect, server, tool, condition = _spec(i)
        lines.append(f'[[policy.rules]]\neffect = "{effect}"\ntool = "{tool}"\nname = "r{i}"')
        if server is not None:
            lines.append(f'server = "{server}"')
        if condition == "matches":
            lines.append("args.command = { matches = '\\brm\\s' }")
        elif condition == "equals":
            lines.append('args.env = { equals = "prod" }')
        lines.append("")
    return "\n".join(lines)


def _python() -> PolicyEnforcer:
    rm = re.compile(r"\brm\s").search
    rules: list[Any] = []
    for i in range(RULES):
        effect, server, tool, condition = _spec(i)
        target = tool if server is None else f"{server}/{tool}"
        when: Any = None
        if condition == "matches":
            when = lambda a: isinstance(a.get("command"), str) and rm(a["command"]) is not None  # noqa: E731
        elif condition == "equals":
            when = lambda a: a.get("env") == "prod"  # noqa: E731
        if effect == "deny":
            rules.append(policy.deny(target, when=when, name=f"r{i}"))
        elif effect == "allow":
            rules.append(policy.allow(target, when=when, name=f"r{i}"))
        else:
            rules.append(policy.ask_user(target, policy.CONFIRM, when=when, name=f"r{i}"))
    return policy.enforce(rules, mcp_servers=SERVERS)


PROBES = [
    ToolCall("tool_1", {"command": "rm -rf /"}),  # matches condition (ask rule)
    ToolCall("tool_7", {"command": "ls"}),  # matches condition fails: no match
    ToolCall("tool_4", {"env": "prod"}),  # equals condition
    ToolCall("tool_3", {}),  # exact deny
    ToolCall("tool_5", {}),  # exact allow
    ToolCall("anything", {}, server="srv0"),  # server/* rule
    ToolCall("tool_10", {}, server="srv0"),  # server/tool rule
    ToolCall("view_file", {"AbsolutePath": "/w/x"}),  # no rule
]


def _drive(coro: Coroutine[Any, Any, Any]) -> Any:
    try:
        coro.send(None)
    except StopIteration as stop:
        return stop.value
    coro.close()
    raise RuntimeError("the decision suspended")


def _round(enforcer: PolicyEnforcer, iterations: int) -> float:
    """Seconds per decision over the probe set, one timed loop with the collector paused."""
    decide = enforcer.pre_tool_call
    gc.collect()
    gc.disable()
    try:
        started = perf_counter()
        for _ in range(iterations):
            for call in PROBES:
                _drive(decide(None, call))  # type: ignore[arg-type]
        return (perf_counter() - started) / (iterations * len(PROBES))
    finally:
        gc.enable()


def main(argv: Sequence[str] | None = None) -> int:
    """Print both costs and their ratio; return 1 when the target is missed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=15, help="interleaved rounds (min taken)")
    args = parser.parse_args([] if argv is None else argv)
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "hookscope.toml"
        path.write_text(_toml())
        started = perf_counter()
        from_toml = load_policy(path)
        load_s = perf_counter() - started
    assert from_toml is not None
    assert len(from_toml.policies) == RULES
    in_python = _python()
    for call in PROBES:
        left = _drive(from_toml.evaluate(call, ask=False))
        right = _drive(in_python.evaluate(call, ask=False))
        assert left == right, (call, left, right)
    best = [float("inf"), float("inf")]
    for enforcer in (from_toml, in_python):  # warm-up
        _round(enforcer, 2_000)
    for _ in range(args.rounds):
        for index, enforcer in enumerate((from_toml, in_python)):
            best[index] = min(best[index], _round(enforcer, 3_000))
    ratio = best[0] / best[1]
    verdict = "PASS" if ratio <= TARGET else "FAIL"
    print(
        f"{RULES} rules, {len(PROBES)} probe calls; ns per pre_tool_call decision, min of "
        f"{args.rounds} rounds"
    )
    print(
        f"  loaded from TOML   {best[0] * 1e9:8.0f} ns   (load + validate: {load_s * 1e3:.0f} ms)"
    )
    print(f"  written in Python  {best[1] * 1e9:8.0f} ns")
    print(f"  ratio TOML/Python  {ratio:8.3f}   target <= {TARGET}: {verdict}")
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
