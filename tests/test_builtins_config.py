"""The ready-made hooks from a hooks config file (DESIGN §7 ``type = "python"``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hookscope.engine import ConfigError, load
from hookscope.runner import HookRunner
from hookscope.types import ChatResponse, ToolCall, Usage

CONFIG = """
[[hooks.pre_turn]]
type = "python"
hook = "hookscope.builtins:TokenBudget"
options = { max_tokens = 100 }

[[hooks.pre_tool_call]]
type = "python"
hook = "hookscope.builtins:ToolTiers"
options = { tiers = { view_file = "observe" } }

[[hooks.pre_tool_call]]
type = "python"
hook = "hookscope.builtins:RetryLoopDetector"
matcher = "view_file"
options = { max_repeats = 2 }

[[hooks.on_interaction]]
type = "python"
hook = "hookscope.builtins:AutoAnswer"
options = { answers = { "Confirm edit_file? It is a confirm-tier tool." = "allow" } }
"""


async def test_builtins_configured_in_a_toml_file_behave_as_built_in_python(
    tmp_path: Path,
) -> None:
    path = tmp_path / "hookscope.toml"
    path.write_text(CONFIG)
    runner = HookRunner(load(path))
    async with runner.session() as session:
        async with session.turn("go") as turn:
            outcomes = [
                await turn.call_tool(ToolCall(name), lambda: "ok")
                for name in ("view_file", "view_file", "edit_file", "rm")
            ]
            turn.respond(ChatResponse("x", usage=Usage(200, 0)))
        async with session.turn("again") as blocked:
            assert not blocked.allowed
    assert [(o.allowed, o.decided_by) for o in outcomes] == [
        (True, None),
        (False, "RetryLoopDetector"),
        (True, "ToolTiers"),
        (False, "ToolTiers"),
    ]
    assert blocked.result.message.startswith("token budget exhausted: 200 of 100 tokens")


def test_a_bad_option_in_the_file_is_a_config_error_quoting_the_hooks_own_message(
    tmp_path: Path,
) -> None:
    path = tmp_path / "hookscope.toml"
    path.write_text(CONFIG.replace("max_tokens = 100", "max_tokens = 0"))
    with pytest.raises(ConfigError, match="TokenBudget: max_tokens must be a whole number"):
        load(path)
