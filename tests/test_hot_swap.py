"""One immutable hook table: register, unregister and replace swap it whole (DESIGN §7)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from hookscope import hooks
from hookscope.context import HookContext, OperationContext, SessionContext, TurnContext
from hookscope.hooks import Hook
from hookscope.runner import DispatchObserver, HookRun, HookRunner, current_hook_run
from hookscope.types import HookResult, ToolCall

from .conftest import Recorder


def _op() -> OperationContext:
    return OperationContext(TurnContext(SessionContext("s"), 0), "tool")


class Tag(Hook):
    """Appends its generation to the call's args so a dispatch shows which table it used."""

    def __init__(self, generation: int, position: int) -> None:
        self.generation, self.position = generation, position
        self.name = f"g{generation}h{position}"

    async def pre_tool_call(self, context: OperationContext, call: ToolCall) -> HookResult:
        await asyncio.sleep(0)  # let a swap happen between two hooks of one dispatch
        seen = (*call.args.get("seen", ()), self.generation)
        return HookResult(modified_args={"seen": seen})


def test_replace_puts_the_new_hooks_where_the_old_stood() -> None:
    first, middle, last = Tag(0, 0), Tag(0, 1), Tag(0, 2)
    runner = HookRunner([first, middle, last])
    new = [Tag(1, 0), Tag(1, 1)]
    runner.replace([middle], new)
    assert runner.hooks == (first, *new, last)
    assert runner.hook_names("pre_tool_call") == ("g0h0", "g1h0", "g1h1", "g0h2")


def test_unregister_removes_a_hook_and_an_unknown_one_is_an_error() -> None:
    a, b = Tag(0, 0), Tag(0, 1)
    runner = HookRunner([a, b])
    runner.unregister(a)
    assert runner.hooks == (b,)
    with pytest.raises(ValueError, match="is not registered with this runner"):
        runner.unregister(a)


def test_an_invalid_replacement_changes_nothing() -> None:
    a = Tag(0, 0)
    runner = HookRunner([a])
    with pytest.raises(TypeError):
        runner.replace([a], [Tag(1, 0), object()])
    assert runner.hooks == (a,)
    assert runner.hook_names("pre_tool_call") == ("g0h0",)


def test_registering_a_hook_twice_is_an_error() -> None:
    a = Tag(0, 0)
    runner = HookRunner([a])
    with pytest.raises(ValueError, match="is already registered with this runner"):
        runner.register(a)


async def test_observers_registered_as_hooks_are_swapped_too(recorder: Recorder) -> None:
    runner = HookRunner([recorder])
    await runner.dispatch_pre_tool_call(_op(), ToolCall("t"))
    runner.unregister(recorder)
    await runner.dispatch_pre_tool_call(_op(), ToolCall("t"))
    assert len(recorder.named("dispatch_finished")) == 1


async def test_two_hundred_concurrent_dispatches_never_see_a_mixed_table() -> None:
    runner = HookRunner([Tag(0, i) for i in range(3)])
    results: list[tuple[int, ...]] = []

    async def dispatch(delay: int) -> None:
        for _ in range(delay):  # start at different moments of the swapping
            await asyncio.sleep(0)
        _, call = await runner.dispatch_pre_tool_call(_op(), ToolCall("t"))
        results.append(call.args["seen"])

    async def swap() -> None:
        for generation in range(1, 40):
            runner.replace(runner.hooks, [Tag(generation, i) for i in range(3)])
            await asyncio.sleep(0)

    await asyncio.gather(swap(), *(dispatch(i % 50) for i in range(200)))
    assert len(results) == 200
    mixed = [seen for seen in results if len(set(seen)) != 1 or len(seen) != 3]
    assert mixed == []
    assert len({seen[0] for seen in results}) > 1  # the swaps really happened mid-run


# --- runs of command and prompt hooks --------------------------------------------------


class RunLog(DispatchObserver):
    def __init__(self) -> None:
        self.log: list[tuple[Any, ...]] = []

    def hook_run_started(self, run: HookRun, context: HookContext) -> None:
        self.log.append(("started", run.event, run.hook_name, run.hook_type))

    def hook_run_finished(self, run: HookRun, context: HookContext) -> None:
        error = type(run.error).__name__ if run.error else None
        self.log.append(("finished", run.verdict, dict(run.attributes), error))


class FakeCommand(Hook):
    """Stands in for an engine hook: reports attributes through current_hook_run()."""

    hook_type = "command"

    def __init__(self, verdict: HookResult | None, fail: bool = False) -> None:
        self.verdict, self.fail = verdict, fail

    async def pre_tool_call(self, context: OperationContext, call: ToolCall) -> HookResult | None:
        run = current_hook_run()
        assert run is not None
        run.attributes["process.exit.code"] = 1 if self.fail else 0
        if self.fail:
            raise RuntimeError("exit 1")
        return self.verdict


@pytest.mark.parametrize(
    ("hook", "expected"),
    [
        (FakeCommand(None), ("finished", "none", {"process.exit.code": 0}, None)),
        (FakeCommand(HookResult()), ("finished", "allow", {"process.exit.code": 0}, None)),
        (FakeCommand(HookResult.deny("no")), ("finished", "deny", {"process.exit.code": 0}, None)),
        (FakeCommand(HookResult.ask("?")), ("finished", "ask", {"process.exit.code": 0}, None)),
        (
            FakeCommand(None, fail=True),
            ("finished", "none", {"process.exit.code": 1}, "RuntimeError"),
        ),
    ],
)
async def test_non_python_hook_runs_are_reported(
    hook: FakeCommand, expected: tuple[Any, ...]
) -> None:
    observer = RunLog()
    runner = HookRunner([hook, observer])
    await runner.dispatch_pre_tool_call(_op(), ToolCall("t"))
    assert observer.log == [("started", "pre_tool_call", "FakeCommand", "command"), expected]
    assert current_hook_run() is None


async def test_python_hooks_are_not_reported_as_runs() -> None:
    @hooks.pre_tool_call_decide
    def plain(call: ToolCall) -> None:
        assert current_hook_run() is None

    observer = RunLog()
    await HookRunner([plain, observer]).dispatch_pre_tool_call(_op(), ToolCall("t"))
    assert observer.log == []


def test_hook_type_must_be_known() -> None:
    class Odd(Hook):
        hook_type = "shell"  # type: ignore[assignment]

        def pre_tool_call(self, context: Any, call: ToolCall) -> None: ...

    with pytest.raises(
        ValueError, match="hook_type must be 'python', 'command', 'prompt' or 'http'"
    ):
        HookRunner([Odd()])
