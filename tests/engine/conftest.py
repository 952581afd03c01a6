"""Helpers for engine tests: hook scripts on disk, contexts, and one-hook dispatches."""

from __future__ import annotations

import os
import stat
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hookscope.context import OperationContext, SessionContext, TurnContext
from hookscope.hooks import HookEvent
from hookscope.runner import Dispatch, DispatchObserver, HookRun, HookRunner
from hookscope.types import ToolCall

PYTHON = sys.executable


def operation(call: ToolCall) -> OperationContext:
    """A fresh session → turn → operation chain for one call."""
    session = SessionContext("s-1", "tester")
    return OperationContext(TurnContext(session, 0, "hi"), "tool", call, call.id)


def turn() -> TurnContext:
    return TurnContext(SessionContext("s-1", "tester"), 0, "hi")


async def dispatch(runner: HookRunner, event: HookEvent, data: Any) -> Dispatch[Any]:
    """Dispatch ``event`` with the context it takes (an operation for tool events)."""
    if isinstance(data, ToolCall):
        return await runner.dispatch(event, operation(data), data)
    context = turn() if event not in ("on_session_start", "on_session_end") else turn().session
    return await runner.dispatch(event, context, data)


@pytest.fixture
def script(tmp_path: Path) -> Callable[[str], str]:
    """Write a Python hook program; return the shell command that runs it."""
    counter = iter(range(1000))

    def write(body: str) -> str:
        path = tmp_path / f"hook_{next(counter)}.py"
        path.write_text(textwrap.dedent(body))
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
        return f"{PYTHON} {path}"

    return write


def pid_alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie counts as gone: it no longer runs anything)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def eventually(predicate: Callable[[], bool], seconds: float = 15.0) -> bool:
    """Poll ``predicate`` until it holds or ``seconds`` pass; return whether it held."""
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.01)
    return True


class Runs(DispatchObserver):
    """Collects every finished command or prompt hook run."""

    def __init__(self) -> None:
        self.runs: list[HookRun] = []

    def hook_run_finished(self, run: HookRun, context: Any) -> None:
        self.runs.append(run)
