"""Claude Code parity (DESIGN §7a): real hook scripts, the real Claude Code CLI, and hookscope.

Each test writes one ``.claude/settings.json`` over the scripts in ``claude_hooks/`` (plain
Python, Python with the cchooks SDK, ``uv run --script``, shell with jq, a plugin with
``${CLAUDE_PLUGIN_ROOT}``), runs it through the Claude Code CLI against the scripted model
server and through hookscope, and asserts both reach the same outcome.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from .claude_parity import HOOKS, Outcome, hook, make_project, run_claude, run_hookscope


def bash(command: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "Bash", "arguments": {"command": command}}]}


async def both(
    tmp_path: Path, settings: dict[str, Any], replies: list[dict[str, Any]], prompt: str, **kw: Any
) -> tuple[Outcome, Outcome]:
    markers = kw.pop("markers", ())
    claude_project = make_project(tmp_path / "claude", settings)
    ours_project = make_project(tmp_path / "hookscope", settings)
    claude = run_claude(claude_project, replies, prompt, tmp_path, markers=markers, **kw)
    ours = await run_hookscope(ours_project, replies, prompt, tmp_path, markers=markers)
    return claude, ours


async def test_a_guard_denies_and_every_matching_hook_still_runs(tmp_path: Path) -> None:
    # The guard (plain Python, exit 2) and a logger (shell + jq) listed after it: Claude Code
    # runs both, so does hookscope (not stop-at-first-deny).
    settings = {
        "hooks": {
            "PreToolUse": [
                {"matcher": "Bash", "hooks": [hook("guard.py")]},
                {"matcher": "Bash", "hooks": [hook("log.sh")]},
            ]
        }
    }
    replies = [bash("echo one > one.txt"), bash("rm -rf one.txt"), {"text": "done"}]
    claude, ours = await both(tmp_path, settings, replies, "tidy up")
    reason = "Recursive deletes are blocked by the project guard"
    for outcome in (claude, ours):
        assert outcome.files["one.txt"] == "one\n"  # the first call ran, the delete did not
        assert reason in outcome.tool_texts[-1]
        assert outcome.files["hook-log/guard.log"] == (
            "PreToolUse Bash echo one > one.txt\nPreToolUse Bash rm -rf one.txt\n"
        )
    assert claude.files == ours.files
    assert claude.turns == ours.turns == 1


async def test_a_cchooks_guard_reads_its_validated_input_and_denies_with_json(
    tmp_path: Path,
) -> None:
    # cchooks validates session_id, transcript_path, cwd …: without them it exits 1 and, fail
    # closed, hookscope would deny every call. Here it allows echo and denies sudo.
    settings = {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [hook("cchooks_guard.py")]}]}}
    replies = [bash("echo fine > fine.txt"), bash("sudo touch root.txt"), {"text": "done"}]
    claude, ours = await both(tmp_path, settings, replies, "set up")
    for outcome in (claude, ours):
        assert outcome.files == {"fine.txt": "fine\n"}
        assert "sudo is not allowed in this project" in outcome.tool_texts[-1]


async def test_a_uv_script_blocks_a_prompt(tmp_path: Path) -> None:
    settings = {"hooks": {"UserPromptSubmit": [{"hooks": [hook("prompt_check.py")]}]}}
    replies = [bash("echo ran > ran.txt"), {"text": "done"}]
    claude, ours = await both(tmp_path, settings, replies, "my password is hunter2")
    assert (claude.blocked, ours.blocked) == (True, True)
    assert claude.files == ours.files == {}


async def test_prompt_and_session_context_reach_the_model(tmp_path: Path) -> None:
    settings = {
        "hooks": {
            "UserPromptSubmit": [{"hooks": [hook("prompt_check.py")]}],
            "SessionStart": [{"matcher": "startup", "hooks": [hook("session_context.sh")]}],
        }
    }
    markers = ("BLUEBIRD-7", "TEAM-RULE-42")
    replies = [{"text": "done"}]
    claude, ours = await both(tmp_path, settings, replies, "hello", markers=markers)
    assert claude.context == ours.context == ["BLUEBIRD-7", "TEAM-RULE-42"]
    assert (claude.blocked, ours.blocked) == (False, False)


async def test_a_stop_hook_continues_the_turn_once_and_reads_the_transcript(
    tmp_path: Path,
) -> None:
    settings = {"hooks": {"Stop": [{"hooks": [hook("stop_once.sh")]}]}}
    replies = [
        bash("echo a > a.txt"),
        {"text": "first answer"},
        bash("echo ok > DONE.txt"),
        {"text": "all done"},
    ]
    claude, ours = await both(tmp_path, settings, replies, "write a")
    for outcome in (claude, ours):
        assert outcome.turns == 2  # the Stop hook asked to go on once
        assert outcome.files["DONE.txt"] == "ok\n"
        assert outcome.files["hook-log/stops.jsonl"] == (
            '{"active":false,"last":"first answer"}\n{"active":true,"last":"all done"}\n'
        )
        # the transcript held the prompt, and then the Stop hook's feedback, when read
        assert outcome.files["hook-log/prompts-in-transcript.txt"] == (
            '"PARITY: write a"\n"Stop hook feedback:\\nNot done yet: also create DONE.txt"\n'
        )
    assert claude.files == ours.files


async def test_a_post_tool_use_block_is_feedback_for_the_model(tmp_path: Path) -> None:
    settings = {"hooks": {"PostToolUse": [{"matcher": "Bash", "hooks": [hook("post_check.py")]}]}}
    replies = [bash("echo WARN: disk almost full"), {"text": "done"}]
    claude, ours = await both(tmp_path, settings, replies, "check disk")
    for outcome in (claude, ours):
        # the call ran, and the hook's reason is appended to the result the model reads
        assert "WARN: disk almost full" in outcome.tool_texts[-1]
        assert "The command printed a warning: fix it" in outcome.tool_texts[-1]


async def test_a_plugin_guard_is_found_through_claude_plugin_root(tmp_path: Path) -> None:
    plugin = tmp_path / "safety-plugin"
    shutil.copytree(HOOKS / "plugin", plugin)
    replies = [bash("touch f.txt && chmod 777 f.txt"), {"text": "done"}]
    claude_project = make_project(tmp_path / "claude", {})
    ours_project = make_project(tmp_path / "hookscope", {})
    claude = run_claude(claude_project, replies, "open up f", tmp_path, plugin_dir=plugin)
    ours = await run_hookscope(
        ours_project, replies, "open up f", tmp_path, settings=plugin / "hooks" / "hooks.json"
    )
    for outcome in (claude, ours):
        assert outcome.files == {}  # denied: the file was never created
        assert "chmod 777 is refused by the safety plugin" in outcome.tool_texts[-1]


@pytest.mark.parametrize("matcher", ["Bash", "^Bash$", "Bash.*", "(Bash)", "B.sh|Write"])
async def test_claude_regex_matchers_are_not_aliased_away(tmp_path: Path, matcher: str) -> None:
    # Issue 19's case "Claude regex matchers are not aliased": with tool_aliases the agent's
    # run_command is Claude Code's Bash for every matcher spelling, and the guard reads the
    # command under Claude Code's argument name.
    settings = {"hooks": {"PreToolUse": [{"matcher": matcher, "hooks": [hook("guard.py")]}]}}
    replies = [bash("rm -rf /tmp/nothing-here"), {"text": "done"}]
    claude_project = make_project(tmp_path / "claude", settings)
    ours_project = make_project(tmp_path / "hookscope", settings)
    claude = run_claude(claude_project, replies, "clean", tmp_path)
    ours = await run_hookscope(
        ours_project,
        replies,
        "clean",
        tmp_path,
        tool_aliases={"Bash": "run_command"},
        tool_name="run_command",
        argument="CommandLine",
    )
    reason = "Recursive deletes are blocked by the project guard"
    assert reason in claude.tool_texts[-1]
    assert ours.tool_texts == [reason]
    assert claude.files == ours.files


#: Fields the real CLI sends that hookscope has nothing for: Claude Code's own background
#: task and cron lists on Stop.
CLAUDE_ONLY = {"background_tasks", "session_crons"}
#: Fields whose values must be equal in both runs (paths and ids are compared by shape).
SAME_VALUES = (
    "hook_event_name",
    "tool_name",
    "tool_input",
    "permission_mode",
    "stop_hook_active",
    "last_assistant_message",
    "source",
    "reason",
    "prompt",
    "error",
    "is_interrupt",
)


def _envelopes(files: dict[str, str]) -> list[dict[str, Any]]:
    import json

    return [json.loads(line) for line in files["hook-log/envelopes.jsonl"].splitlines()]


async def test_every_envelope_carries_what_the_real_cli_sends(tmp_path: Path) -> None:
    events = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse")
    failed = ("PreToolUse", "PostToolUseFailure", "Stop", "SessionEnd")
    names = {*events, *failed}
    settings = {"hooks": {name: [{"hooks": [hook("dump.py")]}] for name in names}}
    replies = [bash("echo hi > hi.txt"), bash("ls /no-such-dir-here"), {"text": "said hi"}]
    claude_project = make_project(tmp_path / "claude", settings)
    ours_project = make_project(tmp_path / "hookscope", settings)
    claude = _envelopes(run_claude(claude_project, replies, "greet", tmp_path).files)
    ours = _envelopes((await run_hookscope(ours_project, replies, "greet", tmp_path)).files)
    assert (
        [e["hook_event_name"] for e in claude]
        == [e["hook_event_name"] for e in ours]
        == [*events, *failed]
    )
    for theirs, mine in zip(claude, ours, strict=True):
        assert set(theirs) - set(mine) <= CLAUDE_ONLY, theirs["hook_event_name"]
        for key in SAME_VALUES:
            assert theirs.get(key) == mine.get(key), (theirs["hook_event_name"], key)
        # Claude Code writes its transcript file in the background (at first, a hook may find
        # none); hookscope's is there from the start, empty at worst.
        assert mine["transcript_is_a_file"] is True
        assert ("prompt_id" in theirs) == ("prompt_id" in mine)
        assert type(theirs.get("duration_ms")) is type(mine.get("duration_ms"))
    for run, project in ((claude, claude_project), (ours, ours_project)):
        assert {e["cwd"] for e in run} == {str(project.resolve())}  # cwd = the project
        pre, post = (next(e for e in run if e["hook_event_name"] == n) for n in events[2:4])
        assert pre["tool_use_id"] == post["tool_use_id"] != ""
        assert len({e["prompt_id"] for e in run if "prompt_id" in e}) == 1
        assert len({e["session_id"] for e in run}) == 1
        assert next(e for e in run if e["hook_event_name"] == "Stop")["transcript_is_a_file"]


async def test_mcp_tools_match_mcp_server_tool_in_both(tmp_path: Path) -> None:
    guard = (
        "jq -e '.tool_input.word == \"secret\"' >/dev/null && "
        "{ echo 'no secret lookups' >&2; exit 2; } || exit 0"
    )
    settings = {
        "hooks": {
            "PreToolUse": [
                {"matcher": "mcp__words__.*", "hooks": [{"type": "command", "command": guard}]},
                {"matcher": "mcp__.*", "hooks": [hook("dump.py")]},
            ]
        }
    }
    lookup = "mcp__words__lookup"
    replies = [
        {"tool_calls": [{"name": lookup, "arguments": {"word": "hello"}}]},
        {"tool_calls": [{"name": lookup, "arguments": {"word": "secret"}}]},
        {"text": "done"},
    ]
    claude_project = make_project(tmp_path / "claude", settings)
    ours_project = make_project(tmp_path / "hookscope", settings)
    claude = run_claude(claude_project, replies, "look up", tmp_path, mcp=True)
    ours = await run_hookscope(ours_project, replies, "look up", tmp_path)
    for outcome in (claude, ours):
        assert "hello: a word" in outcome.tool_texts[0]
        assert "no secret lookups" in outcome.tool_texts[-1]
        envelopes = _envelopes(outcome.files)
        assert [(e["tool_name"], e["tool_input"]) for e in envelopes] == [
            (lookup, {"word": "hello"}),
            (lookup, {"word": "secret"}),
        ]
