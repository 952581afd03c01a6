"""watch(): reload on change, keep the old hooks when the new file is invalid, count both."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from hookscope.engine import ConfigError, watch
from hookscope.runner import HookRunner
from hookscope.types import ToolCall

from .conftest import dispatch, eventually


def config(name: str, status: int) -> str:
    return (
        f'[[hooks.pre_tool_call]]\ntype = "command"\nname = "{name}"\ncommand = "exit {status}"\n'
    )


def replace_file(path: Path, text: str) -> None:
    """Write atomically, as editors do: the watch never reads half a file."""
    temporary = path.with_suffix(".tmp")
    temporary.write_text(text)
    os.replace(temporary, path)


def wait_until(predicate: Callable[[], bool]) -> None:
    assert eventually(predicate), "the watch did not react in time"


def reloads(reader: InMemoryMetricReader) -> dict[str, int]:
    data = reader.get_metrics_data()
    counts: dict[str, int] = {}
    for resource in data.resource_metrics if data else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name == "hookscope.engine.reloads":
                    for point in metric.data.data_points:  # type: ignore[union-attr]
                        counts[str(point.attributes["hookscope.engine.reload.outcome"])] = int(
                            point.value
                        )
    return counts


def names(runner: HookRunner) -> list[str]:
    return [getattr(hook, "name", "") for hook in runner.hooks]


def allowed(runner: HookRunner) -> Any:
    return asyncio.run(dispatch(runner, "pre_tool_call", ToolCall("t"))).result.allow


def test_a_valid_edit_is_applied_and_an_invalid_one_keeps_the_old_hooks(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "hookscope.toml"
    path.write_text(config("v1", 2))
    reader = InMemoryMetricReader()
    runner = HookRunner()
    handle = watch(
        runner, path, interval=0.01, meter_provider=MeterProvider(metric_readers=[reader])
    )
    try:
        assert names(runner) == ["v1"]
        assert allowed(runner) is False

        replace_file(path, config("v2", 0))
        wait_until(lambda: names(runner) == ["v2"])
        assert handle.table[0] is runner.hooks[0]
        assert handle.last_error is None
        assert allowed(runner) is True

        replace_file(path, config("v3", 0).replace('type = "command"', 'type = "shell"'))
        wait_until(lambda: handle.last_error is not None)
        assert names(runner) == ["v2"]
        assert allowed(runner) is True
        assert handle.last_error.problems == (  # type: ignore[union-attr]
            "hooks.pre_tool_call[0]: type must be one of command, prompt, python, got 'shell'",
        )
        assert reloads(reader) == {"applied": 1, "rejected": 1}
        assert "hook configuration not reloaded, the old hooks stay" in caplog.text
    finally:
        handle.stop()
    assert not handle._thread.is_alive()
    assert names(runner) == ["v2"]  # stopping leaves the hooks registered


def test_a_file_invalid_at_start_registers_nothing(tmp_path: Path) -> None:
    path = tmp_path / "hookscope.toml"
    path.write_text(config("v1", 0) + "timeout = 0\n")
    runner = HookRunner()
    with pytest.raises(ConfigError):
        watch(runner, path)
    assert runner.hooks == ()


def test_a_deleted_file_keeps_the_hooks(tmp_path: Path) -> None:
    path = tmp_path / "hookscope.toml"
    path.write_text(config("v1", 0))
    runner = HookRunner()
    with watch(runner, path, interval=0.01) as handle:
        path.unlink()
        wait_until(lambda: handle.last_error is not None)
        assert names(runner) == ["v1"]


def test_interval_must_be_positive(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="interval must be a positive number"):
        watch(HookRunner(), tmp_path / "x.toml", interval=0)
