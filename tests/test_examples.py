"""The examples keep working."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from hookscope.telemetry import read_spans

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def test_one_hook_example_traces_its_session_to_the_embedded_default(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, str(EXAMPLES / "one_hook.py")],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        cwd=tmp_path,
    )
    lines = run.stdout.splitlines()
    assert lines[:2] == [
        "view_file: <contents of README.md>",
        "run_command: denied by policy rule 'deny:run_command': run_command is denied",
    ]
    assert lines[2].endswith(" completed")
    assert run.stderr == ""
    spans = {span["name"]: span for span in read_spans(tmp_path / ".hookscope")}
    assert sorted(spans) == [
        "execute_tool run_command",
        "execute_tool view_file",
        "invoke_agent coder",
        "session coder",
    ]
    session_id = lines[2].split()[1]
    assert {span["attributes"]["session.id"] for span in spans.values()} == {session_id}
    assert spans["session coder"]["parent_span_id"] is None
    assert spans["invoke_agent coder"]["parent_span_id"] == spans["session coder"]["span_id"]
    assert (
        spans["execute_tool run_command"]["attributes"]["hookscope.policy.rule"]
        == "deny:run_command"
    )
    assert spans["execute_tool run_command"]["resource"]["service.name"] == "one-hook-example"


README = EXAMPLES.parent / "README.md"
PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def readme_blocks() -> list[str]:
    return PYTHON_BLOCK.findall(README.read_text(encoding="utf-8"))


def test_the_readme_has_python_blocks_to_run() -> None:
    assert len(readme_blocks()) >= 3  # One hook, Policy, google-antigravity


@pytest.mark.parametrize("index", range(len(readme_blocks())))
def test_every_readme_python_block_runs_as_written(index: int, tmp_path: Path) -> None:
    code = readme_blocks()[index]
    environment = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    run = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp_path,
        env=environment,
    )
    first_line = code.strip().splitlines()[0]
    assert run.returncode == 0, f"README block {index} ({first_line}):\n{run.stderr}"
    assert "Traceback" not in run.stderr
