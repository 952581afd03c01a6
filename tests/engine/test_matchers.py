"""Matchers on configured hooks: a hook whose matcher does not match never runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hookscope.engine import load
from hookscope.matching import TIERS_KEY
from hookscope.runner import HookRunner
from hookscope.types import ToolCall

from .conftest import dispatch, operation


def _marking(tmp_path: Path, name: str) -> str:
    """A command that records the envelope it got in ``<name>.json`` and denies."""
    out = tmp_path / f"{name}.json"
    return f"cat > {out}; echo '{name} ran' >&2; exit 2"


def _seen(tmp_path: Path, name: str) -> Any:
    path = tmp_path / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else None


async def test_tool_and_path_matchers_select_the_calls_a_command_sees(tmp_path: Path) -> None:
    table = load(
        {
            "hooks": {
                "pre_tool_call": [
                    {
                        "type": "command",
                        "name": "shell",
                        "matcher": "run_command|bash",
                        "command": _marking(tmp_path, "shell"),
                    },
                    {
                        "type": "command",
                        "name": "etc",
                        "matcher": {"paths": ["/etc/**"]},
                        "command": _marking(tmp_path, "etc"),
                    },
                ]
            }
        }
    )
    runner = HookRunner(table)
    view = await dispatch(runner, "pre_tool_call", ToolCall("view_file", {"path": "/w/a.py"}))
    assert view.result.allow is True
    assert (_seen(tmp_path, "shell"), _seen(tmp_path, "etc")) == (None, None)

    hosts = await dispatch(runner, "pre_tool_call", ToolCall("view_file", {"path": "/etc/hosts"}))
    assert (hosts.result.allow, hosts.result.message, hosts.decided_by) == (False, "etc ran", "etc")
    assert _seen(tmp_path, "shell") is None

    shell = await dispatch(runner, "pre_tool_call", ToolCall("bash", {"command": "ls"}))
    assert (shell.result.message, shell.decided_by) == ("shell ran", "shell")


async def test_claude_matchers_use_the_agent_names_and_scripts_see_claude_names(
    tmp_path: Path,
) -> None:
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(
        json.dumps(
            {
                "hooks": {
                    "PreToolUse": [
                        {
                            "matcher": "Bash",
                            "hooks": [{"type": "command", "command": _marking(tmp_path, "bash")}],
                        }
                    ]
                }
            }
        )
    )
    runner = HookRunner(load(settings, tool_aliases={"Bash": "run_command"}))
    assert (await dispatch(runner, "pre_tool_call", ToolCall("view_file"))).result.allow is True
    assert _seen(tmp_path, "bash") is None
    denied = await dispatch(runner, "pre_tool_call", ToolCall("run_command", {"CommandLine": "ls"}))
    assert denied.result.message == "bash ran"
    envelope = _seen(tmp_path, "bash")
    # The script reads Claude Code's argument name too: run_command's CommandLine is command.
    assert (envelope["hook_event_name"], envelope["tool_name"], envelope["tool_input"]) == (
        "PreToolUse",
        "Bash",
        {"command": "ls"},
    )


async def test_a_tiers_matcher_reads_the_session_tier_table(tmp_path: Path) -> None:
    table = load(
        {
            "hooks": {
                "pre_tool_call": [
                    {
                        "type": "command",
                        "name": "confirm-tier",
                        "matcher": {"tiers": ["confirm"]},
                        "command": _marking(tmp_path, "tier"),
                    },
                ]
            }
        }
    )
    runner = HookRunner(table)
    tiers = {"view_file": "observe", "*": "confirm"}
    results = []
    for call in (ToolCall("view_file"), ToolCall("run_command")):
        context = operation(call)
        context.session.set(TIERS_KEY, tiers)
        results.append((await runner.dispatch("pre_tool_call", context, call)).result.allow)
    assert results == [True, False]
