"""Hot swap: a dispatch in flight finishes with the table it started with, never a mix."""

from __future__ import annotations

import asyncio
import threading
from collections import defaultdict
from typing import Any

from hookscope.hooks import PreToolCallDecideHook
from hookscope.runner import HookRunner
from hookscope.types import ToolCall

from .conftest import operation

DISPATCHES = 200


class Mark(PreToolCallDecideHook):
    """Records which hook saw which call, and yields so swaps land mid-dispatch."""

    def __init__(self, label: str, seen: dict[str, list[str]]) -> None:
        self.name = label
        self.seen = seen

    async def run(self, context: Any, call: ToolCall) -> None:
        self.seen[call.id].append(self.name)
        await asyncio.sleep(0)


def tables(seen: dict[str, list[str]]) -> tuple[list[Mark], list[Mark]]:
    return [Mark(f"A{i}", seen) for i in range(3)], [Mark(f"B{i}", seen) for i in range(3)]


async def test_200_concurrent_dispatches_across_swaps_never_see_a_mixed_table() -> None:
    seen: dict[str, list[str]] = defaultdict(list)
    a, b = tables(seen)
    runner = HookRunner(a)
    done = asyncio.Event()
    swaps = 0

    async def swapper() -> None:
        nonlocal swaps
        current, other = a, b
        while not done.is_set():
            runner.replace(current, other)
            current, other = other, current
            swaps += 1
            await asyncio.sleep(0)

    async def call(index: int) -> None:
        for _ in range(index % 7):  # stagger the starts across swaps
            await asyncio.sleep(0)
        tool = ToolCall("t", id=f"c{index}")
        await runner.dispatch("pre_tool_call", operation(tool), tool)

    swapping = asyncio.ensure_future(swapper())
    await asyncio.gather(*(call(i) for i in range(DISPATCHES)))
    done.set()
    await swapping
    sequences = {tuple(labels) for labels in seen.values()}
    assert len(seen) == DISPATCHES
    assert sequences == {("A0", "A1", "A2"), ("B0", "B1", "B2")}  # both tables, never a mix
    assert swaps > 1


async def test_swaps_from_another_thread_never_mix_tables() -> None:
    seen: dict[str, list[str]] = defaultdict(list)
    a, b = tables(seen)
    runner = HookRunner(a)
    stop = threading.Event()
    swapped = threading.Event()

    def swapper() -> None:  # as watch() does: the swap comes from its polling thread
        current, other = a, b
        while not stop.is_set():
            runner.replace(current, other)
            current, other = other, current
            swapped.set()

    thread = threading.Thread(target=swapper)
    thread.start()
    try:
        await asyncio.to_thread(swapped.wait, 10)
        for index in range(DISPATCHES):
            tool = ToolCall("t", id=f"c{index}")
            await runner.dispatch("pre_tool_call", operation(tool), tool)
    finally:
        stop.set()
        thread.join()
    assert len(seen) == DISPATCHES
    assert {tuple(labels) for labels in seen.values()} <= {("A0", "A1", "A2"), ("B0", "B1", "B2")}
