"""The validating loader: three file formats and a mapping, one table; every error named."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from hookscope.engine import CommandHook, ConfigError, HookMatcher, HookTable, PromptHook, load
from hookscope.engine.claude import CLAUDE_EVENTS, IDLE_EVENTS
from hookscope.runner import HookRunner
from hookscope.types import HookscopeError

from .conftest import dispatch
from .test_command import CALL

HOOKSCOPE_TOML = """
[[hooks.pre_tool_call]]
matcher = {{ tools = "run_command|bash", paths = ["/etc/**"] }}
type = "command"
command = "python3 hooks/guard.py"
timeout = 5

[[hooks.pre_tool_call]]
name = "judge"
type = "prompt"
prompt = "Is this safe? $ARGUMENTS"
model = "small"
base_url = "http://127.0.0.1:9/v1"
api_key_env = "JUDGE_KEY"
on_failure = "allow"

[[hooks.pre_turn]]
type = "python"
hook = "{module}:Budget"
options = {{ max_tokens = 200000 }}
timeout = 2
"""

PYTHON_HOOKS = """
from hookscope.hooks import Hook, PreToolCallDecideHook


class Budget(Hook):
    def __init__(self, max_tokens):
        self.max_tokens = max_tokens

    async def pre_turn(self, context, prompt):
        return None


class Checker(PreToolCallDecideHook):
    def run(self, context, call):
        return None


checker = Checker()
"""


@pytest.fixture
def module(tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """A Python hook module in the project directory, with a name unique to the test."""
    name = f"project_hooks_{abs(hash(request.node.nodeid))}"
    (tmp_path / f"{name}.py").write_text(PYTHON_HOOKS)
    return name


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def problems(source: Any, **kwargs: Any) -> tuple[str, ...]:
    with pytest.raises(ConfigError) as caught:
        load(source, **kwargs)
    return caught.value.problems


# --- formats ---


def test_hookscope_toml_builds_every_handler_type(tmp_path: Path, module: str) -> None:
    path = write(tmp_path / "hookscope.toml", HOOKSCOPE_TOML.format(module=module))
    table = load(path)
    assert isinstance(table, HookTable)
    assert table.source == str(path)
    assert [(e.event, e.entry) for e in table.entries] == [
        ("pre_tool_call", "hooks.pre_tool_call[0]"),
        ("pre_tool_call", "hooks.pre_tool_call[1]"),
        ("pre_turn", "hooks.pre_turn[0]"),
    ]
    command, prompt, budget = table
    assert isinstance(command, CommandHook)
    assert (command.name, command.command, command.timeout, command.fail_open) == (
        "guard.py",
        "python3 hooks/guard.py",
        5.0,
        False,
    )
    assert command.matcher == HookMatcher(tools="run_command|bash", paths=["/etc/**"])
    assert command.project_dir == str(tmp_path.resolve())
    assert isinstance(prompt, PromptHook)
    assert (prompt.name, prompt.model, prompt.api_key_env, prompt.timeout, prompt.fail_open) == (
        "judge",
        "small",
        "JUDGE_KEY",
        30.0,
        True,
    )
    assert type(budget).__name__ == "Budget"
    assert (budget.max_tokens, budget.timeout) == (200000, 2.0)  # type: ignore[attr-defined]


def test_pyproject_reads_tool_hookscope(tmp_path: Path) -> None:
    path = write(
        tmp_path / "pyproject.toml",
        """
        [project]
        name = "agent"

        [[tool.hookscope.hooks.post_tool_call]]
        type = "command"
        args = ["logger", "-t", "agent"]
        """,
    )
    (entry,) = load(path).entries
    assert (entry.event, entry.entry) == (
        "post_tool_call",
        "tool.hookscope.hooks.post_tool_call[0]",
    )
    assert isinstance(entry.hook, CommandHook)
    assert entry.hook.args == ("logger", "-t", "agent")


CLAUDE_SETTINGS = {
    "permissions": {"allow": ["Bash(npm run lint)"]},
    "hooks": {
        "PreToolUse": [
            {
                "matcher": "Bash",
                "hooks": [
                    {
                        "type": "command",
                        "command": '"$CLAUDE_PROJECT_DIR"/.claude/hooks/check.sh',
                        "timeout": 30,
                    }
                ],
            },
            {"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "jq .tool_input"}]},
        ],
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "audit-prompt"}]}],
        "SessionStart": [
            {"matcher": "startup", "hooks": [{"type": "command", "command": "echo started"}]},
            {"matcher": "resume", "hooks": [{"type": "command", "command": "echo resumed"}]},
        ],
        "Stop": [
            {
                "hooks": [
                    {
                        "type": "prompt",
                        "prompt": "Is the work done? $ARGUMENTS",
                        "model": "small",
                        "base_url": "http://127.0.0.1:9/v1",
                    }
                ]
            }
        ],
    },
}


def test_claude_settings_load_as_they_are(tmp_path: Path) -> None:
    path = tmp_path / ".claude" / "settings.json"
    write(path, json.dumps(CLAUDE_SETTINGS))
    aliases = {"Bash": "run_command", "Edit": "edit_file", "Write": "write_to_file"}
    table = load(path, tool_aliases=aliases)
    assert [(e.event, e.entry) for e in table.entries] == [
        # the transcript the hooks read (transcript_path), kept ahead of them
        ("pre_turn", "transcript"),
        ("pre_tool_call", "permissions"),  # the permissions block, as one PolicyEnforcer
        ("pre_tool_call", "hooks.PreToolUse[0].hooks[0]"),
        ("pre_tool_call", "hooks.PreToolUse[1].hooks[0]"),
        ("pre_turn", "hooks.UserPromptSubmit[0].hooks[0]"),
        ("on_session_start", "hooks.SessionStart[0].hooks[0]"),
        ("post_turn", "hooks.Stop[0].hooks[0]"),
    ]
    # "startup" never matches the SessionStart hookscope sends after a compaction, and
    # "resume" never fires: both load and are reported (hooks check).
    assert [(i.entry, i.reason) for i in table.idle] == [
        (
            "hooks.SessionStart[0].hooks[0]",
            "matcher 'startup' never matches 'compact', what hookscope sends in SessionStart "
            "on on_compaction",
        ),
        (
            "hooks.SessionStart[1].hooks[0]",
            "matcher 'resume' never matches 'startup', what hookscope sends in SessionStart "
            "on on_session_start",
        ),
        (
            "hooks.SessionStart[1].hooks[0]",
            "matcher 'resume' never matches 'compact', what hookscope sends in SessionStart "
            "on on_compaction",
        ),
    ]
    check, edit = table[2], table[3]
    assert isinstance(check, CommandHook)
    assert isinstance(edit, CommandHook)
    names = {"run_command": "Bash", "edit_file": "Edit", "write_to_file": "Write"}
    assert check.matcher == HookMatcher.claude("Bash", names)
    assert edit.matcher == HookMatcher.claude("Edit|Write", names)
    assert (check.name, check.timeout, check.fail_open) == ("check.sh", 30.0, False)
    # The project root is the directory above .claude/; scripts still see Claude's tool names.
    assert check.project_dir == str(tmp_path.resolve())
    assert check.names.names == names
    assert table[4].matcher is None  # type: ignore[attr-defined]
    # One file's hooks of one event run together (Claude Code's all-matching-hooks rule).
    assert check.parallel_group is edit.parallel_group is not None


def test_a_mapping_in_the_toml_shape(tmp_path: Path) -> None:
    table = load({"hooks": {"on_session_end": [{"type": "command", "command": "true"}]}})
    assert table.source is None
    assert [e.event for e in table.entries] == ["on_session_end"]


async def test_a_table_registers_and_replaces_like_a_list_of_hooks() -> None:
    deny = load(
        {"hooks": {"pre_tool_call": [{"type": "command", "command": "exit 2", "name": "no"}]}}
    )
    allow = load(
        {"hooks": {"pre_tool_call": [{"type": "command", "command": "true", "name": "yes"}]}}
    )
    runner = HookRunner(deny)
    assert (await dispatch(runner, "pre_tool_call", CALL)).result.allow is False
    runner.replace(deny, allow)
    assert runner.hooks == tuple(allow)
    assert (await dispatch(runner, "pre_tool_call", CALL)).result.allow is True


def test_python_hooks_by_reference(tmp_path: Path, module: str) -> None:
    path = write(
        tmp_path / "hookscope.toml",
        f"""
        [[hooks.pre_tool_call]]
        type = "python"
        hook = "{module}:checker"
        matcher = "view_file"
        name = "checker"
        on_failure = "allow"
        """,
    )
    (hook,) = load(path)
    assert type(hook).__name__ == "Checker"
    assert (hook.name, hook.fail_open, hook.matcher) == (
        "checker",
        True,
        HookMatcher(tools="view_file"),
    )  # type: ignore[attr-defined]


# --- validation: every error names the file, the entry and the fix ---


def test_config_error_is_a_hookscope_error_and_a_value_error(tmp_path: Path) -> None:
    path = tmp_path / "missing.toml"
    with pytest.raises(ConfigError) as caught:
        load(path)
    assert isinstance(caught.value, HookscopeError)
    assert isinstance(caught.value, ValueError)
    assert str(caught.value) == f"1 problem in {path}:\n  {path}: file not found; check the path"


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        (
            {"type": "shell", "command": "x"},
            "hooks.pre_tool_call[0]: type must be one of command, prompt, python, got 'shell'",
        ),
        (
            {"type": "command", "command": "x", "retries": 3},
            "hooks.pre_tool_call[0]: unknown key(s) ['retries'] for a command hook; allowed: "
            "['args', 'command', 'matcher', 'name', 'on_failure', 'timeout', 'type']",
        ),
        (
            {"type": "command"},
            'hooks.pre_tool_call[0]: give exactly one of command = "..." (run by /bin/sh) and '
            'args = ["prog", ...] (run without a shell)',
        ),
        (
            {"type": "command", "command": "x", "args": ["x"]},
            'hooks.pre_tool_call[0]: give exactly one of command = "..." (run by /bin/sh) and '
            'args = ["prog", ...] (run without a shell)',
        ),
        (
            {"type": "command", "command": "  "},
            "hooks.pre_tool_call[0]: command must be a non-empty string, got '  '",
        ),
        (
            {"type": "command", "command": "x", "timeout": 0},
            "hooks.pre_tool_call[0]: timeout must be a positive number of seconds, got 0",
        ),
        (
            {"type": "command", "command": "x", "timeout": True},
            "hooks.pre_tool_call[0]: timeout must be a positive number of seconds, got True",
        ),
        (
            {"type": "command", "command": "x", "on_failure": "ignore"},
            'hooks.pre_tool_call[0]: on_failure must be "deny" (fail closed) or "allow", got '
            "'ignore'",
        ),
        (
            {"type": "command", "command": "x", "matcher": "run_command|("},
            "hooks.pre_tool_call[0]: matcher tools 'run_command|(' is not a valid regular "
            "expression (missing ), unterminated subpattern at position 12); escape special "
            "characters or list exact names separated by '|'",
        ),
        (
            {"type": "command", "command": "x", "matcher": {"paths": ["/etc/[abc"]}},
            "hooks.pre_tool_call[0]: path glob '/etc/[abc' has an unbalanced '['; close it with "
            "']' or write '[[]' for a literal '['",
        ),
        (
            {"type": "command", "command": "x", "matcher": {"tool": "x"}},
            "hooks.pre_tool_call[0]: unknown matcher key(s) ['tool']; allowed: paths, tiers, tools",
        ),
        (
            {"type": "prompt", "prompt": "ok?"},
            "hooks.pre_tool_call[0]: a prompt hook needs model, base_url: the template, the model "
            "and an OpenAI-compatible base_url such as https://api.openai.com/v1",
        ),
        (
            {"type": "prompt", "prompt": "ok?", "model": "m", "base_url": "localhost:8000"},
            "hooks.pre_tool_call[0]: base_url must be an http(s) URL such as "
            "https://api.openai.com/v1, got 'localhost:8000'",
        ),
        (
            {"type": "python", "hook": "nomodule"},
            "hooks.pre_tool_call[0]: hook must read \"package.module:Name\", got 'nomodule'",
        ),
        (
            {"type": "python", "hook": "hookscope_no_such_module:X"},
            "hooks.pre_tool_call[0]: cannot import 'hookscope_no_such_module' "
            "(ModuleNotFoundError: No module named 'hookscope_no_such_module'); check the module "
            "path and that it is installed or in the project directory",
        ),
        (
            {"type": "python", "hook": "hookscope.hooks:Nothing"},
            "hooks.pre_tool_call[0]: module 'hookscope.hooks' has no attribute 'Nothing'",
        ),
        (
            {"type": "python", "hook": "hookscope.policy:deny_all"},
            "hooks.pre_tool_call[0]: hookscope.policy:deny_all handles no event, not "
            "pre_tool_call; list it under hooks.<its event>",
        ),
        (
            {"type": "python", "hook": "hookscope.policy:PolicyEnforcer", "options": {"nope": 1}},
            "hooks.pre_tool_call[0]: hookscope.policy:PolicyEnforcer(**options) failed: "
            "TypeError: PolicyEnforcer.__init__() got an unexpected keyword argument 'nope'",
        ),
    ],
)
def test_each_invalid_entry_is_named_with_its_fix(entry: dict[str, Any], problem: str) -> None:
    assert problems({"hooks": {"pre_tool_call": [entry]}}) == (problem,)


def test_a_python_hook_listed_under_an_event_it_does_not_handle(
    module: str, tmp_path: Path
) -> None:
    path = write(
        tmp_path / "hookscope.toml",
        f"""
        [[hooks.pre_tool_call]]
        type = "python"
        hook = "{module}:Budget"
        options = {{ max_tokens = 1 }}
        """,
    )
    assert problems(path) == (
        f"hooks.pre_tool_call[0]: {module}:Budget handles pre_turn, not pre_tool_call; list it "
        "under hooks.pre_turn",
    )


def test_a_matcher_on_a_non_tool_event() -> None:
    entry = {"type": "command", "command": "x", "matcher": "run_command"}
    assert problems({"hooks": {"pre_turn": [entry]}}) == (
        "hooks.pre_turn[0]: a matcher applies to tool events (on_tool_error, post_tool_call, "
        "pre_tool_call); remove it from this pre_turn hook",
    )


def test_unknown_events_are_named_with_the_fix() -> None:
    assert problems({"hooks": {"pre_tool": [], "UserPromptSubmitX": []}}) == (
        "hooks.pre_tool: unknown event 'pre_tool'; use one of "
        + ", ".join(__import__("hookscope.hooks").hooks.EVENTS),
        "hooks.UserPromptSubmitX: unknown event 'UserPromptSubmitX'; use one of "
        + ", ".join(__import__("hookscope.hooks").hooks.EVENTS),
    )


def test_every_problem_is_reported_at_once_and_nothing_is_built(tmp_path: Path) -> None:
    path = write(
        tmp_path / "hookscope.toml",
        """
        extra = 1

        [[hooks.pre_tool_call]]
        type = "command"
        command = "true"

        [[hooks.pre_tool_call]]
        type = "command"
        timeout = -1

        [hooks]
        on_compaction = "not a list"
        """,
    )
    assert problems(path) == (
        "top level: unknown key(s) ['extra']; only 'hooks', 'failure', 'policy' and 'prices' are read",
        "hooks.pre_tool_call[1]: timeout must be a positive number of seconds, got -1",
        "hooks.on_compaction: must be a list of tables ([[hooks.on_compaction]]), got 'not a list'",
    )


def test_claude_settings_errors(tmp_path: Path) -> None:
    settings = {
        "hooks": {
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "agentic", "prompt": "x"}]}],
            "Notify": [{"hooks": [{"type": "command", "command": "notify-send hi"}]}],
            "PostToolUse": {"matcher": "Bash"},
            "Stop": [{"hooks": [{"type": "command", "command": "true", "colour": "red"}]}],
            "SessionEnd": [{"matcher": "(", "hooks": [{"type": "command", "command": "true"}]}],
            "pre_tool_call": [],
        }
    }
    path = write(tmp_path / "settings.json", json.dumps(settings))
    assert problems(path) == (
        "hooks.PreToolUse[0].hooks[0]: type must be one of command, prompt, agent, http, "
        "mcp_tool, got 'agentic'",
        "hooks.Notify: unknown event 'Notify'; Claude Code's events are "
        + ", ".join([*CLAUDE_EVENTS, *IDLE_EVENTS]),
        "hooks.PostToolUse: must be a list of matcher groups, got {'matcher': 'Bash'}",
        "hooks.Stop[0].hooks[0]: unknown key(s) ['colour'] for a command hook; allowed: "
        "['args', 'async', 'asyncRewake', 'cloud', 'command', 'description', 'holdsTools', "
        "'if', 'name', 'onFailure', 'on_failure', 'once', 'rewakeMessage', 'rewakeSummary', "
        "'shell', 'statusMessage', 'timeout', 'type']",
        "hooks.SessionEnd[0]: matcher '(' is not a valid regex (missing ), unterminated subpattern "
        "at position 0)",
        "hooks.pre_tool_call: hookscope's event names cannot be mixed with Claude Code's in one "
        "file; use Claude Code's name here, or move this to hookscope.toml",
    )


@pytest.mark.parametrize(
    ("name", "text", "problem"),
    [
        ("settings.json", '{"hooks": ', "line 1: invalid JSON (Expecting value); fix the syntax"),
        (
            "pyproject.toml",
            "[project]\nname = 'x'\n",
            "no [tool.hookscope] table; add hooks as [[tool.hookscope.hooks.pre_tool_call]]",
        ),
        (
            "hooks.yaml",
            "hooks: {}",
            "unsupported file type; use hookscope.toml, pyproject.toml or a Claude Code settings .json file",
        ),
        (
            "hookscope.toml",
            "title = 'x'\n",
            'no "hooks" table; add one, e.g. [[hooks.pre_tool_call]]',
        ),
    ],
)
def test_unreadable_files(tmp_path: Path, name: str, text: str, problem: str) -> None:
    assert problems(write(tmp_path / name, text)) == (problem,)


def test_invalid_toml_says_where(tmp_path: Path) -> None:
    (problem,) = problems(write(tmp_path / "hookscope.toml", "[[hooks.pre_turn]\n"))
    assert problem == (
        "line 1: invalid TOML (Expected ']]' at the end of an array declaration); fix the syntax"
    )


def test_tool_aliases_apply_only_to_claude_settings() -> None:
    assert problems({"hooks": {}}, tool_aliases={"Bash": "run_command"}) == (
        "tool_aliases: apply only to Claude Code settings files; drop them",
    )
