"""Hooks written either way type-check for users running mypy --strict."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

USER_CODE = """
from typing import Any
from hookscope import Hook, HookResult, Recovery, ToolCall, hooks

class SyncHook(Hook):
    def pre_tool_call(self, context: Any, call: ToolCall) -> HookResult | None:
        return None

class AsyncHook(Hook):
    async def pre_tool_call(self, context: Any, call: ToolCall) -> HookResult | None:
        return None

    async def on_tool_error(self, context: Any, error: Exception) -> Recovery | None:
        return None

@hooks.pre_tool_call_decide(timeout=1.0)
async def decorated(call: ToolCall) -> HookResult | None:
    return None
"""


def test_sync_and_async_overrides_type_check_strictly(tmp_path: Path) -> None:
    module = tmp_path / "user_hooks.py"
    module.write_text(USER_CODE)
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(module)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stdout
    assert run.stdout.startswith("Success: no issues found in 1 source file")
