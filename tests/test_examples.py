"""The examples keep working."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def test_one_hook_example_governs_and_narrates_the_loop() -> None:
    run = subprocess.run(
        [sys.executable, str(EXAMPLES / "one_hook.py")],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    lines = run.stdout.splitlines()
    assert lines[:2] == [
        "  view_file{'path': 'README.md'} -> '<contents of README.md>'",
        "  run_command denied by Guard: shell commands need a human",
    ]
    assert lines[2].startswith("session ")
    assert lines[2].endswith(" completed")
    assert len(lines) == 3
    assert run.stderr == ""
