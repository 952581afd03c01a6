"""The README's "Hooks as configuration" section: each of its code blocks works as written."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

from hookscope.engine import CommandHook, PromptHook, load
from hookscope.engine.transcript import TranscriptWriter
from hookscope.policy import PolicyEnforcer

README = Path(__file__).resolve().parents[2] / "README.md"


def blocks() -> dict[str, str]:
    text = README.read_text()
    start = text.index("## Hooks as configuration\n")
    section = text[start : text.index("\n## ", start + 1)]
    found = dict(
        (lang, body) for lang, body in re.findall(r"```(\w+)\n(.*?)```", section, re.DOTALL)
    )
    assert sorted(found) == ["console", "json", "python", "toml"]
    return found


def test_the_python_example_runs_and_denies_the_recursive_delete(tmp_path: Path) -> None:
    script = tmp_path / "example.py"
    script.write_text(blocks()["python"])
    run = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=60, check=True
    )
    assert run.stdout.splitlines() == [
        "ls -> ran ls",
        "rm -rf build -> denied: no recursive deletes",
    ]


def test_the_toml_and_claude_settings_examples_load(tmp_path: Path) -> None:
    toml = tmp_path / "hookscope.toml"
    toml.write_text(blocks()["toml"])
    assert [type(hook).__name__ for hook in load(toml)] == ["CommandHook", "PromptHook", "OTelHook"]
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(blocks()["json"])
    table = load(settings, tool_aliases={"Bash": "run_command"})
    assert [(e.event, type(e.hook)) for e in table.entries] == [
        ("pre_turn", TranscriptWriter),
        ("pre_tool_call", PolicyEnforcer),  # the permissions
        ("pre_tool_call", CommandHook),
        ("pre_turn", CommandHook),
    ]
    assert not any(isinstance(hook, PromptHook) for hook in table)


def test_the_console_commands_run_on_the_toml_example(tmp_path: Path) -> None:
    (tmp_path / "hookscope.toml").write_text(blocks()["toml"])
    hookscope = Path(sys.executable).with_name("hookscope")
    for line in blocks()["console"].splitlines():
        argv = shlex.split(line.removeprefix("$ "))
        assert argv[0] == "hookscope"
        run = subprocess.run(
            [str(hookscope), *argv[1:]], cwd=tmp_path, capture_output=True, text=True, timeout=60
        )
        assert (run.returncode, run.stderr) == (0, ""), line
