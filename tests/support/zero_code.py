"""Run an unchanged app under ``opentelemetry-instrument`` and read the spans it printed.

The zero-code tests of every adapter start the app the same way: the console span exporter,
no metrics or logs exporter, warnings off (their text would land among the spans), and
OpenInference's instrumentors for the same SDKs turned off by their entry point names.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPOSITORY = Path(__file__).parents[2]

#: The OpenTelemetry environment of every zero-code run: spans to stdout, nothing else.
CONSOLE_ENV = {
    "OTEL_TRACES_EXPORTER": "console",
    "OTEL_METRICS_EXPORTER": "none",
    "OTEL_LOGS_EXPORTER": "none",
    "PYTHONWARNINGS": "ignore",
}


@dataclass(frozen=True, slots=True)
class Finished:
    """An instrumented app's exit code and decoded output."""

    returncode: int | None
    stdout: str
    stderr: str


async def run_instrumented(*module: str, env: dict[str, str], timeout: float = 120) -> Finished:
    """``opentelemetry-instrument python -m <module…>`` from the repository, to its end.

    Args:
        module: The module to run and its arguments.
        env: Added to this process's environment and :data:`CONSOLE_ENV` (and wins over both).
        timeout: Seconds the app may take.
    """
    process = await asyncio.create_subprocess_exec(
        str(Path(sys.executable).parent / "opentelemetry-instrument"),
        sys.executable,
        "-m",
        *module,
        cwd=str(REPOSITORY),
        env={**os.environ, **CONSOLE_ENV, **env},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout)
    return Finished(process.returncode, out.decode(), err.decode())


def console_spans(output: str) -> list[dict[str, Any]]:
    """The spans the console exporter printed in ``output`` (JSON objects among other text)."""
    decoder, spans, index = json.JSONDecoder(), [], 0
    while (start := output.find("{", index)) != -1:
        try:
            value, index = decoder.raw_decode(output, start)
        except json.JSONDecodeError:
            index = start + 1
            continue
        if isinstance(value, dict) and "context" in value and "name" in value:
            spans.append(value)
    return spans
