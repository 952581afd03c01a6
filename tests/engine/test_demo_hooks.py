"""The demo's hookscope.toml: a command hook and a prompt hook against the scripted judge."""

from __future__ import annotations

from pathlib import Path

import pytest

from hookscope.cli import main
from hookscope.demo.judge import CONFIG, ScriptedJudge, demo_hooks
from hookscope.engine import CommandHook, PromptHook, load
from hookscope.runner import HookRunner
from hookscope.types import ToolCall

from .conftest import dispatch


def test_the_shipped_configuration_is_valid() -> None:
    assert [(e.event, type(e.hook)) for e in load(CONFIG).entries] == [
        ("pre_tool_call", CommandHook),
        ("pre_tool_call", PromptHook),
    ]


async def test_the_demo_hooks_deny_deploys_and_edits_outside_the_project(tmp_path: Path) -> None:
    with ScriptedJudge() as judge:
        runner = HookRunner(demo_hooks(judge.base_url, tmp_path))
        deploy = await dispatch(
            runner, "pre_tool_call", ToolCall("run_command", {"CommandLine": "make deploy"})
        )
        hosts = await dispatch(
            runner,
            "pre_tool_call",
            ToolCall("write_to_file", {"TargetFile": "/etc/hosts", "Content": "x"}),
        )
        edit = await dispatch(
            runner,
            "pre_tool_call",
            ToolCall("edit_file", {"TargetFile": str(tmp_path / "a.py"), "Patch": "x"}),
        )
        tests = await dispatch(
            runner, "pre_tool_call", ToolCall("run_command", {"CommandLine": "pytest"})
        )
    assert (deploy.result.message, deploy.decided_by) == (
        "deploys go through CI, not the agent",
        "no-deploy",
    )
    assert (hosts.result.message, hosts.decided_by) == (
        "changes outside the project are refused",
        "edit-judge",
    )
    assert (edit.result.allow, tests.result.allow) == (True, True)


def test_the_demo_timelines_show_the_hook_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["demo", "--sessions", "1", "--directory", str(tmp_path / "telemetry")]) == 0
    out = capsys.readouterr().out
    assert "⚙ command hook no-deploy  deny" in out
    assert "⚙ prompt hook edit-judge  allow" in out
    assert "denied by no-deploy: deploys go through CI, not the agent" in out
