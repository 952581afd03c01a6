"""``hookscope hooks check`` and ``hookscope hooks run``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from hookscope.cli import main

CONFIG = """
[[hooks.pre_tool_call]]
name = "no-rm"
matcher = "run_command"
type = "command"
command = "grep -q 'rm -rf' && {{ echo 'recursive deletes are refused' >&2; exit 2; }} || exit 0"
timeout = 5

[[hooks.pre_tool_call]]
name = "paths"
matcher = {{ paths = ["/etc/**"] }}
type = "command"
args = ["{python}", "-c", "print('{{\\"allow\\": false, \\"message\\": \\"not /etc\\"}}')"]
on_failure = "allow"

[[hooks.pre_turn]]
type = "command"
command = "exit 0"
"""


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "hookscope.toml"
    path.write_text(CONFIG.format(python=sys.executable))
    return path


def test_check_prints_the_table(config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["hooks", "check", str(config)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "EVENT          MATCHER            TYPE     TIMEOUT  ON FAILURE  NAME",
        "pre_tool_call  tools=run_command  command  5s       deny        no-rm",
        "pre_tool_call  paths=/etc/**      command  60s      allow       paths",
        "pre_turn       *                  command  60s      deny        exit",
        f"{config}: 3 hooks, valid",
    ]


def test_check_reports_every_problem_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "hookscope.toml"
    path.write_text('[[hooks.pre_turn]]\ntype = "command"\n\n[[hooks.pre_tool]]\n')
    assert main(["hooks", "check", str(path)]) == 1
    assert capsys.readouterr().err.splitlines() == [
        f"hookscope: 2 problems in {path}:",
        f'  {path}: hooks.pre_turn[0]: give exactly one of command = "..." (run by /bin/sh) and args = ["prog", ...] (run without a shell)',
        f"  {path}: hooks.pre_tool: unknown event 'pre_tool'; use one of "
        + ", ".join(__import__("hookscope.hooks").hooks.EVENTS),
    ]


def test_check_finds_the_file_in_the_current_directory(
    config: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(config.parent)
    assert main(["hooks", "check"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "hookscope.toml: 3 hooks, valid"


def _lines(out: str) -> list[tuple[str, ...]]:
    # The last column is the run time in ms: present, not compared.
    rows = [tuple(line.split("\t")) for line in out.splitlines()]
    assert all(row[-1].endswith(" ms") for row in rows)
    return [row[:-1] for row in rows]


def test_run_denies_with_the_deciding_hook(
    config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    call = json.dumps({"CommandLine": "rm -rf /"})
    assert (
        main(["hooks", "run", str(config), "PreToolUse", "--tool", "run_command", "--input", call])
        == 2
    )
    assert _lines(capsys.readouterr().out) == [("no-rm", "deny", "recursive deletes are refused")]


def test_run_allows_and_lists_each_matching_hook(
    config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = json.dumps({"path": "/w/app.py"})
    assert (
        main(
            ["hooks", "run", str(config), "pre_tool_call", "--tool", "run_command", "--input", args]
        )
        == 0
    )
    assert _lines(capsys.readouterr().out) == [("no-rm", "none", "-")]
    assert (
        main(
            [
                "hooks",
                "run",
                str(config),
                "pre_tool_call",
                "--tool",
                "view_file",
                "--input",
                '{"path": "/etc/x"}',
            ]
        )
        == 2
    )
    assert _lines(capsys.readouterr().out) == [("paths", "deny", "not /etc")]


def test_run_input_errors_exit_1(config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["hooks", "run", str(config), "pre_tool_call", "--input", "{}"]) == 1
    assert capsys.readouterr().err == "hookscope: error: pre_tool_call needs --tool NAME\n"
    assert main(["hooks", "run", str(config), "pre_tool_call", "--tool", "x", "--input", "{"]) == 1
    assert capsys.readouterr().err.startswith("hookscope: error: --input is not valid JSON: ")
    assert main(["hooks", "run", str(config), "NoSuchEvent"]) == 1
    assert capsys.readouterr().err.startswith(
        "hookscope: error: unknown event 'NoSuchEvent'; use one of "
    )


def test_the_installed_command_runs_a_pre_turn_hook(config: Path) -> None:
    hookscope = Path(sys.executable).with_name("hookscope")
    run = subprocess.run(
        [str(hookscope), "hooks", "run", str(config), "UserPromptSubmit", "--input", '"hello"'],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (run.returncode, run.stderr) == (0, "")
    assert _lines(run.stdout) == [("exit", "none", "-")]


def test_run_on_claude_settings_with_tool_aliases(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    hook = {"type": "command", "command": "echo 'not in CI' >&2; exit 2"}
    settings.write_text(
        json.dumps({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [hook]}]}})
    )
    argv = ["hooks", "run", str(settings), "PreToolUse", "--tool", "run_command", "--input", "{}"]
    assert main(argv) == 0  # without the alias, Bash never matches run_command
    assert capsys.readouterr().out == ""
    assert main([*argv, "--tool-alias", "Bash=run_command"]) == 2
    assert _lines(capsys.readouterr().out) == [("echo", "deny", "not in CI")]
    assert main([*argv, "--tool-alias", "Bash"]) == 1
    assert capsys.readouterr().err == (
        "hookscope: error: --tool-alias must read THEIRS=OURS (e.g. Bash=run_command), got 'Bash'\n"
    )
