"""Benchmark: microseconds per tool call through hookscope's HookRunner and antigravity's.

One tool call is a ``pre_tool_call`` plus a ``post_tool_call`` dispatch with 5 no-op hooks
registered for each event. Work is built per session: 1 session x 1 turn x 10 tool calls. For
both libraries the session and turn are opened and closed inside the timed region (their
events have no hooks, so this is context creation plus empty dispatches) and amortized over
the 10 calls. Tool calls are built once, outside the timed region, as the model would hand
them over; results and operation contexts are built per call, inside it.

Cases (one asyncio event loop; warm-up, then min and median over interleaved rounds of N
sessions, ``gc.collect()`` before each round):

* hookscope low-level: ``dispatch_pre_tool_call`` + ``dispatch_post_tool_call`` with a fresh
  ``OperationContext`` and ``ToolResult`` per call; hooks return ``None`` (the idiomatic
  allow), or a prebuilt ``HookResult()`` for parity with antigravity, or ``None`` with one
  no-op ``DispatchObserver`` registered (how telemetry runs).
* hookscope scoped: ``turn.call_tool(call, fn)`` with a trivial sync ``fn``. This also runs
  and times the tool and opens/closes the operation scope, so it is not like for like.
* google-antigravity 0.1.22: ``HookRunner.dispatch_pre_tool_call`` (which creates the
  ``OperationContext``) + ``dispatch_post_tool_call`` with a ``ToolResult`` per call, hooks
  being ``PreToolCallDecideHook`` returning a prebuilt ``HookResult(allow=True)`` and no-op
  ``PostToolCallHook``; its pydantic ``ToolCall``/``ToolResult`` types.
* Session overhead alone (0 tool calls), per session, for both: what the per-call rows
  include on top of the dispatches, divided by 10.

Run: ``.venv/bin/python bench/bench_runner.py [--sessions N] [--rounds R] [--profile CASE]``.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import importlib.metadata
import platform
import pstats
import statistics
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from time import perf_counter
from typing import Any

from hookscope import Hook, HookResult, OperationContext, ToolCall, ToolResult
from hookscope.context import TurnContext
from hookscope.runner import DispatchObserver, HookRunner

HOOKS = 5
CALLS_PER_SESSION = 10
TARGET_RATIO = 1.0
SESSION_TARGET = 1.0

SessionFn = Callable[[], Awaitable[None]]


# --- hookscope ---------------------------------------------------------------------------

_HS_ALLOW = HookResult()


class _NoneHook(Hook):
    """Allows by returning ``None``, the idiomatic hookscope allow."""

    async def pre_tool_call(self, context: OperationContext, call: ToolCall) -> HookResult | None:
        return None

    async def post_tool_call(self, context: OperationContext, result: ToolResult) -> None:
        return None


class _ResultHook(Hook):
    """Allows by returning a prebuilt ``HookResult()``, as an antigravity hook must."""

    async def pre_tool_call(self, context: OperationContext, call: ToolCall) -> HookResult | None:
        return _HS_ALLOW

    async def post_tool_call(self, context: OperationContext, result: ToolResult) -> None:
        return None


class _NoOpObserver(DispatchObserver):
    """Watches every dispatch and does nothing, to price the observer path alone."""


def _tool(path: str) -> str:
    return "ok"


def _hs_calls(count: int = CALLS_PER_SESSION) -> list[ToolCall]:
    return [
        ToolCall(name="view_file", args={"path": f"src/m{i}.py"}, id=f"c{i}") for i in range(count)
    ]


def _hs_runner(hook_type: type[Hook], observed: bool) -> HookRunner:
    runner = HookRunner([hook_type() for _ in range(HOOKS)])
    if observed:
        runner.observe(_NoOpObserver())
    return runner


def hs_low_level(
    hook_type: type[Hook], observed: bool = False, calls_per_session: int = CALLS_PER_SESSION
) -> SessionFn:
    """One session of low-level dispatches, as an adapter drives the runner."""
    runner = _hs_runner(hook_type, observed)
    calls = _hs_calls(calls_per_session)
    pre, post = runner.dispatch_pre_tool_call, runner.dispatch_post_tool_call

    async def session() -> None:
        async with runner.session(agent_name="bench") as scope, scope.turn("prompt") as turn:
            turn_context: TurnContext = turn.context
            for call in calls:
                operation = OperationContext(turn_context, "tool", call, call.id)
                _, effective = await pre(operation, call)
                await post(operation, ToolResult(effective, "ok", 0.0))

    return session


def hs_scoped(hook_type: type[Hook], observed: bool = False) -> SessionFn:
    """One session through the scoped API: ``turn.call_tool`` runs the tool as well."""
    runner = _hs_runner(hook_type, observed)
    calls = _hs_calls()

    async def session() -> None:
        async with runner.session(agent_name="bench") as scope, scope.turn("prompt") as turn:
            for call in calls:
                await turn.call_tool(call, _tool)

    return session


# --- google-antigravity ------------------------------------------------------------------


def ag_low_level(calls_per_session: int = CALLS_PER_SESSION) -> SessionFn:
    """One session of antigravity dispatches with equivalent hooks and its own types."""
    from google.antigravity import types as ag_types
    from google.antigravity.hooks import hooks as ag_hooks
    from google.antigravity.hooks.hook_runner import HookRunner as AgHookRunner

    allow = ag_types.HookResult(allow=True)

    class Decide(ag_hooks.PreToolCallDecideHook):
        async def run(self, context: Any, data: Any) -> Any:
            return allow

    class Inspect(ag_hooks.PostToolCallHook):
        async def run(self, context: Any, data: Any) -> None:
            return None

    runner = AgHookRunner([*(Decide() for _ in range(HOOKS)), *(Inspect() for _ in range(HOOKS))])
    calls = [
        ag_types.ToolCall(name="view_file", args={"path": f"src/m{i}.py"}, id=f"c{i}")
        for i in range(calls_per_session)
    ]
    tool_result = ag_types.ToolResult
    session_context = ag_hooks.SessionContext

    async def session() -> None:
        # antigravity keeps one session context per runner; a new session gets a new one.
        runner.session_context = session_context()
        await runner.dispatch_session_start()
        _, turn_context = await runner.dispatch_pre_turn("prompt")
        for call in calls:
            _, effective, operation = await runner.dispatch_pre_tool_call(turn_context, call)
            result = tool_result(name=effective.name, id=effective.id, result="ok")
            await runner.dispatch_post_tool_call(operation, result)
        await runner.dispatch_post_turn(turn_context, "")
        await runner.dispatch_session_end()

    return session


# --- sanity check: the hooks really run ------------------------------------------------


async def _check_hooks_run() -> None:
    """Fail loudly if either runner skips hooks, which would make the figures meaningless."""
    from google.antigravity import types as ag_types
    from google.antigravity.hooks import hooks as ag_hooks
    from google.antigravity.hooks.hook_runner import HookRunner as AgHookRunner

    seen: list[str] = []

    class Counting(Hook):
        async def pre_tool_call(
            self, context: OperationContext, call: ToolCall
        ) -> HookResult | None:
            seen.append("hs pre")
            return None

        async def post_tool_call(self, context: OperationContext, result: ToolResult) -> None:
            seen.append("hs post")

    class Decide(ag_hooks.PreToolCallDecideHook):
        async def run(self, context: Any, data: Any) -> Any:
            seen.append("ag pre")
            return ag_types.HookResult(allow=True)

    class Inspect(ag_hooks.PostToolCallHook):
        async def run(self, context: Any, data: Any) -> None:
            seen.append("ag post")

    hs = HookRunner([Counting() for _ in range(HOOKS)])
    async with hs.session() as scope, scope.turn("prompt") as turn:
        call = ToolCall(name="view_file", args={"path": "x"}, id="c0")
        operation = OperationContext(turn.context, "tool", call, call.id)
        await hs.dispatch_pre_tool_call(operation, call)
        await hs.dispatch_post_tool_call(operation, ToolResult(call, "ok"))
        outcome = await turn.call_tool(call, _tool)
        assert outcome.allowed, outcome
        assert outcome.value == "ok", outcome
    ag = AgHookRunner([*(Decide() for _ in range(HOOKS)), *(Inspect() for _ in range(HOOKS))])
    _, turn_context = await ag.dispatch_pre_turn("prompt")
    ag_call = ag_types.ToolCall(name="view_file", args={"path": "x"}, id="c0")
    _, _, ag_operation = await ag.dispatch_pre_tool_call(turn_context, ag_call)
    await ag.dispatch_post_tool_call(ag_operation, ag_types.ToolResult(name="view_file"))
    expected = {"hs pre": 2 * HOOKS, "hs post": 2 * HOOKS, "ag pre": HOOKS, "ag post": HOOKS}
    counts = {key: seen.count(key) for key in expected}
    assert counts == expected, f"hooks did not all run: {counts}"


# --- timing ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One benchmarked configuration.

    ``per_session`` is what one session's time is divided by: its tool calls, or 1 for the
    session-overhead cases, which are reported per session.
    """

    key: str
    label: str
    make: Callable[[], SessionFn]
    per_session: int = CALLS_PER_SESSION
    baseline: str = "ag"


@dataclass(frozen=True)
class Timing:
    """Microseconds per unit (tool call or session) for one case, one figure per round."""

    case: Case
    rounds: list[float]

    @property
    def best(self) -> float:
        return min(self.rounds)

    @property
    def median(self) -> float:
        return statistics.median(self.rounds)


CASES: tuple[Case, ...] = (
    Case("hs", "hookscope dispatch_*, hooks return None", lambda: hs_low_level(_NoneHook)),
    Case(
        "hs-result",
        "hookscope dispatch_*, hooks return HookResult()",
        lambda: hs_low_level(_ResultHook),
    ),
    Case(
        "hs-observer",
        "hookscope dispatch_*, None + 1 DispatchObserver",
        lambda: hs_low_level(_NoneHook, observed=True),
    ),
    Case("hs-scoped", "hookscope turn.call_tool, None [*]", lambda: hs_scoped(_NoneHook)),
    Case(
        "hs-scoped-observer",
        "hookscope turn.call_tool, None + observer [*]",
        lambda: hs_scoped(_NoneHook, observed=True),
    ),
    Case("ag", "antigravity 0.1.22 HookRunner dispatch_*", ag_low_level),
    Case(
        "hs-session",
        "hookscope session + turn, 0 tool calls",
        lambda: hs_low_level(_NoneHook, calls_per_session=0),
        per_session=1,
        baseline="ag-session",
    ),
    Case(
        "ag-session",
        "antigravity session + turn, 0 tool calls",
        lambda: ag_low_level(calls_per_session=0),
        per_session=1,
        baseline="ag-session",
    ),
)


async def _round(session: SessionFn, sessions: int, per_session: int) -> float:
    """Run ``sessions`` sessions back to back; return microseconds per unit."""
    gc.collect()
    started = perf_counter()
    for _ in range(sessions):
        await session()
    elapsed = perf_counter() - started
    return elapsed / (sessions * per_session) * 1e6


async def _measure(cases: Sequence[Case], sessions: int, rounds: int) -> list[Timing]:
    fns = [case.make() for case in cases]
    for case, fn in zip(cases, fns, strict=True):  # warm-up: caches, specialisation, allocator
        for _ in range(2):
            await _round(fn, max(1, sessions // 2), case.per_session)
    results: list[list[float]] = [[] for _ in cases]
    # Interleaved, so slow drift in machine load touches every case alike.
    for _ in range(rounds):
        for case, fn, per_round in zip(cases, fns, results, strict=True):
            per_round.append(await _round(fn, sessions, case.per_session))
    return [Timing(case, per_round) for case, per_round in zip(cases, results, strict=True)]


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _print_rows(title: str, timings: Sequence[Timing], by_key: dict[str, Timing]) -> None:
    width = max(len(t.case.label) for t in timings)
    header = f"{title:<{width}}  {'min':>7}  {'median':>7}  {'÷ ag min':>8}  {'÷ ag med':>8}"
    print(header)
    print("-" * len(header))
    for t in timings:
        base = by_key[t.case.baseline]
        print(
            f"{t.case.label:<{width}}  {t.best:>7.2f}  {t.median:>7.2f}  "
            f"{t.best / base.best:>7.2f}x  {t.median / base.median:>7.2f}x"
        )


def _print_report(timings: Sequence[Timing], sessions: int, rounds: int) -> None:
    by_key = {t.case.key: t for t in timings}
    print(
        f"hookscope vs google-antigravity: {HOOKS} no-op pre_tool_call + {HOOKS} no-op "
        f"post_tool_call hooks; 1 session x 1 turn x {CALLS_PER_SESSION} tool calls"
    )
    print(
        f"Python {platform.python_version()}, hookscope {_version('hookscope')}, "
        f"google-antigravity {_version('google-antigravity')}; {rounds} interleaved rounds "
        f"x {sessions} sessions; min and median over rounds"
    )
    print(
        "Session + turn open/close is inside the timed region for every row, amortized over "
        f"the {CALLS_PER_SESSION} calls."
    )
    print()
    _print_rows("µs per tool call", [t for t in timings if t.case.per_session > 1], by_key)
    print()
    _print_rows(
        "µs per session (setup only)", [t for t in timings if t.case.per_session == 1], by_key
    )
    print()
    print("[*] call_tool also runs and times the tool (a trivial sync fn) and opens/closes the")
    print("    operation scope: not like for like with the dispatch_* rows.")
    ratio = by_key["hs"].best / by_key["ag"].best
    verdict = "met" if ratio <= TARGET_RATIO else "NOT met"
    print(
        f"target: hookscope dispatch_* (hooks return None) ≤ {TARGET_RATIO:.1f}x antigravity, "
        f"by min: measured {ratio:.3f}x → {verdict}"
    )
    setup = by_key["hs-session"].best / by_key["ag-session"].best
    verdict = "met" if setup <= SESSION_TARGET else "NOT met"
    print(
        f"target: hookscope session + turn setup ≤ {SESSION_TARGET:.1f}x antigravity's, by min: "
        f"measured {setup:.3f}x → {verdict}"
    )


def _profile(case: Case, sessions: int) -> None:
    """Profile one case with cProfile and print where its time goes."""
    fn = case.make()
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(
            _round(fn, sessions, case.per_session)
        )  # warm-up outside the profile
        profiler = cProfile.Profile()
        profiler.enable()
        loop.run_until_complete(_round(fn, sessions, case.per_session))
        profiler.disable()
    finally:
        loop.close()
    print(f"cProfile of {case.label!r}, {sessions} sessions:")
    pstats.Stats(profiler).sort_stats("tottime").print_stats(25)


def main(argv: Sequence[str] | None = None) -> int:
    """Time every case and print the table; 0 on success, 2 when antigravity is missing."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0] if __doc__ else "")
    parser.add_argument("--sessions", type=int, default=500, help="sessions per round")
    parser.add_argument("--rounds", type=int, default=9, help="timed rounds (at least 7)")
    parser.add_argument(
        "--profile", choices=[c.key for c in CASES], help="profile one case instead of timing"
    )
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if args.rounds < 7:
        parser.error("--rounds must be at least 7")
    try:
        import google.antigravity.hooks.hook_runner  # noqa: F401
    except ImportError as error:
        print(
            f"bench_runner: google-antigravity is not importable ({error}); "
            "install the bench extra: pip install -e '.[bench]'",
            file=sys.stderr,
        )
        return 2
    if args.profile:
        _profile(next(c for c in CASES if c.key == args.profile), args.sessions)
        return 0
    asyncio.run(_check_hooks_run())
    timings = asyncio.run(_measure(CASES, args.sessions, args.rounds))
    _print_report(timings, args.sessions, args.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
