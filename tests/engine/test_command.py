"""Command hooks with real subprocesses: every verdict form, every failure row, the limits."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hookscope.engine import CommandHook
from hookscope.engine.command import OUTPUT_LIMIT
from hookscope.hooks import Hook
from hookscope.policy import Decision
from hookscope.runner import HookRunner
from hookscope.types import (
    Answer,
    HookResult,
    LlmRequest,
    LlmResponse,
    RequestDecision,
    ResponseDecision,
    ToolCall,
)

from .conftest import PYTHON, dispatch, eventually, pid_alive

CALL = ToolCall("run_command", {"CommandLine": "ls", "cwd": "/w"}, id="c1")
Script = Callable[[str], str]


def printing(answer: Any, status: int = 0) -> str:
    """A shell command that prints ``answer`` (JSON-encoded unless a str) and exits."""
    text = answer if isinstance(answer, str) else json.dumps(answer)
    return f"printf '%s' '{text}'; exit {status}"


async def decide(command: str, call: ToolCall = CALL, **options: Any) -> Any:
    runner = HookRunner([CommandHook("pre_tool_call", command=command, name="guard", **options)])
    return await dispatch(runner, "pre_tool_call", call)


class Confirm(Hook):
    def __init__(self, answer: str | None) -> None:
        self.answer = answer
        self.questions: list[Any] = []

    def on_interaction(self, context: Any, questions: Any) -> Any:
        self.questions.extend(questions)
        return None if self.answer is None else [Answer(self.answer, "confirm")]


# --- verdicts ---


@pytest.mark.parametrize("stdout", ["", "all good\n", "  \n", "[1, 2]"])
async def test_exit_0_without_a_json_object_is_no_opinion(stdout: str) -> None:
    result = (await decide(f"printf '{stdout}'")).result
    assert result == HookResult()


async def test_hookscope_form_denies_with_its_message() -> None:
    result = (await decide(printing({"allow": False, "message": "no ls here"}))).result
    assert (result.allow, result.message) == (False, "no ls here")


async def test_hookscope_form_modified_args_merge_into_the_call() -> None:
    outcome = await decide(printing({"allow": True, "modified_args": {"CommandLine": "ls -la"}}))
    assert outcome.result.allow is True
    assert dict(outcome.data.args) == {"CommandLine": "ls -la", "cwd": "/w"}


async def test_claude_permission_decision_deny_carries_its_reason() -> None:
    answer = {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "rm is not allowed",
        }
    }
    result = (await decide(printing(answer))).result
    assert (result.allow, result.message) == (False, "rm is not allowed")


async def test_claude_updated_input_replaces_the_arguments() -> None:
    answer = {
        "hookSpecificOutput": {
            "permissionDecision": "allow",
            "updatedInput": {"CommandLine": "ls -l"},
        }
    }
    outcome = await decide(printing(answer))
    assert outcome.result.allow is True
    assert dict(outcome.data.args) == {"CommandLine": "ls -l"}  # "cwd" is gone, as in Claude


@pytest.mark.parametrize(("answer", "allowed"), [("allow", True), ("deny", False), (None, False)])
async def test_claude_ask_puts_a_confirm_question_to_the_interaction_hooks(
    answer: str | None, allowed: bool
) -> None:
    confirm = Confirm(answer)
    ask = {"hookSpecificOutput": {"permissionDecision": "ask", "permissionDecisionReason": "sure?"}}
    runner = HookRunner(
        [CommandHook("pre_tool_call", command=printing(ask), name="asker"), confirm]
    )
    outcome = await dispatch(runner, "pre_tool_call", CALL)
    assert [(q.text, q.kind) for q in confirm.questions] == [("sure?", "confirm")]
    assert outcome.result.allow is allowed
    assert outcome.result.decision.decision is Decision.ASK_USER
    assert outcome.decided_by == "asker"


async def test_ask_without_a_reason_asks_about_the_tool() -> None:
    confirm = Confirm("allow")
    ask = {"hookSpecificOutput": {"permissionDecision": "ask"}}
    runner = HookRunner(
        [CommandHook("pre_tool_call", command=printing(ask), name="asker"), confirm]
    )
    await dispatch(runner, "pre_tool_call", CALL)
    assert [q.text for q in confirm.questions] == ["hook 'asker' asks to confirm run_command call"]


@pytest.mark.parametrize(
    ("answer", "allow", "message"),
    [
        ({"decision": "approve"}, True, ""),
        ({"decision": "block", "reason": "blocked by rule"}, False, "blocked by rule"),
        ({"continue": False, "stopReason": "stop now"}, False, "stop now"),
        # When forms disagree the strictest wins.
        ({"decision": "approve", "continue": False, "stopReason": "halt"}, False, "halt"),
        ({"allow": True, "decision": "block", "reason": "no"}, False, "no"),
    ],
)
async def test_claude_older_forms(answer: dict[str, Any], allow: bool, message: str) -> None:
    result = (await decide(printing(answer))).result
    assert (result.allow, result.message) == (allow, message)


async def test_exit_2_denies_with_stderr_trimmed() -> None:
    result = (await decide("echo '  rm -rf is never run  ' >&2; exit 2")).result
    assert (result.allow, result.message) == (False, "rm -rf is never run")


async def test_exit_2_with_empty_stderr_names_the_hook() -> None:
    result = (await decide("exit 2")).result
    assert (result.allow, result.message) == (False, "hook 'guard' denied the call")


async def test_pre_turn_block_and_continue_false_block_the_turn() -> None:
    for command in (
        "echo 'not today' >&2; exit 2",
        printing({"continue": False, "stopReason": "not today"}),
    ):
        runner = HookRunner([CommandHook("pre_turn", command=command, name="gate")])
        result = (await dispatch(runner, "pre_turn", "deploy it")).result
        assert (result.allow, result.message) == (False, "not today")


async def test_model_events_block_with_their_own_decisions() -> None:
    block = printing({"decision": "block", "reason": "too long"})
    runner = HookRunner(
        [
            CommandHook("pre_llm_request", command=block, name="req"),
            CommandHook("on_llm_response", command=block, name="resp"),
        ]
    )
    request = (await dispatch(runner, "pre_llm_request", LlmRequest("m"))).result
    response = (await dispatch(runner, "on_llm_response", LlmResponse("m", "text"))).result
    assert request == RequestDecision.block("too long")
    assert response == ResponseDecision.block("too long")


async def test_a_verdict_on_an_inspect_event_changes_nothing(tmp_path: Path) -> None:
    runner = HookRunner([CommandHook("on_session_end", command="exit 2", name="after")])
    assert (await dispatch(runner, "on_session_end", None)).result is None


async def test_a_post_turn_block_continues_the_turn_with_its_reason() -> None:
    # Claude Code's Stop hook: exit 2 (or decision block) asks the agent to go on.
    runner = HookRunner([CommandHook("post_turn", command="echo 'run the tests' >&2; exit 2")])
    result = (await dispatch(runner, "post_turn", None)).result
    assert (result.continuation, result.message) == ("run the tests", "run the tests")


# --- failures (DESIGN §2): decide events fail closed unless on_failure = "allow" ---


@pytest.mark.parametrize(
    ("command", "detail"),
    [
        ("echo oops >&2; exit 1", "exited with status 1"),
        # The shell reports its child's death by a signal as status 128 + N.
        (
            f"{PYTHON} -c 'import os, signal; os.kill(os.getpid(), signal.SIGSEGV)'",
            "exited with status 139",
        ),
        (printing('{"allow": fals'), "printed malformed JSON (invalid JSON (Expecting value))"),
        (
            printing({"decision": "maybe"}),
            "answered an unknown decision (a str); expected approve or block",
        ),
        (
            printing({"hookSpecificOutput": {"permissionDecision": "perhaps"}}),
            "answered an unknown permissionDecision (a str); expected allow, deny, ask or defer",
        ),
        (printing({"allow": "no"}), 'answered "allow" with a str; it must be true or false'),
    ],
)
async def test_a_failing_program_fails_closed_naming_the_failure(command: str, detail: str) -> None:
    result = (await decide(command)).result
    assert result.allow is False
    assert (
        result.message
        == f"hook 'guard' failed in pre_tool_call (HookFailure: {detail}); failing closed"
    )


async def test_a_crashing_program_is_a_failure_naming_the_signal() -> None:
    crash = "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"
    runner = HookRunner([CommandHook("pre_tool_call", args=[PYTHON, "-c", crash], name="guard")])
    result = (await dispatch(runner, "pre_tool_call", CALL)).result
    assert result.message == (
        "hook 'guard' failed in pre_tool_call (HookFailure: was killed by SIGSEGV); failing closed"
    )


async def test_on_failure_allow_lets_the_call_through() -> None:
    result = (await decide("exit 1", fail_open=True)).result
    assert result == HookResult()


async def test_a_missing_program_is_a_failure() -> None:
    runner = HookRunner([CommandHook("pre_tool_call", args=["/nonexistent/guard"], name="guard")])
    result = (await dispatch(runner, "pre_tool_call", CALL)).result
    assert result.message == (
        "hook 'guard' failed in pre_tool_call (HookFailure: cannot start 'guard' "
        "(No such file or directory)); failing closed"
    )


@pytest.mark.parametrize("stream", ["stdout", "stderr"])
async def test_output_past_the_cap_is_a_failure(script: Script, stream: str) -> None:
    command = script(
        f"""
        import sys
        sys.{stream}.buffer.write(b"x" * {OUTPUT_LIMIT + 1})
        """
    )
    result = (await decide(command)).result
    assert result.message == (
        f"hook 'guard' failed in pre_tool_call (HookFailure: wrote more than 1 MiB on {stream}); "
        "failing closed"
    )


async def test_output_at_the_cap_is_accepted(script: Script) -> None:
    command = script(
        f"""
        import sys
        sys.stdout.write(" " * ({OUTPUT_LIMIT} - 20) + '{{"allow": false}}')
        """
    )
    result = (await decide(command)).result
    assert (result.allow, result.message) == (False, "hook 'guard' denied the call")


async def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    # The grandchild ignores SIGTERM: only the SIGKILL after the grace period ends it.
    command = f"(trap '' TERM; exec sleep 300) & echo $! > {pids}; echo $$ >> {pids}; sleep 300"
    result = (await decide(command, timeout=3.0)).result
    assert result.message == (
        "hook 'guard' failed in pre_tool_call (HookTimeoutError: hook 'guard' took longer than 3s); "
        "failing closed"
    )
    grandchild, child = (int(line) for line in pids.read_text().split())
    assert await asyncio.to_thread(
        eventually, lambda: not pid_alive(grandchild) and not pid_alive(child)
    )


async def test_cancelling_the_agent_kills_the_running_program(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    command = f"sleep 300 & echo $! > {pids}; wait"
    task = asyncio.ensure_future(decide(command))
    assert await asyncio.to_thread(
        eventually, lambda: pids.exists() and pids.read_text().strip() != ""
    )
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    sleeper = int(pids.read_text())
    assert await asyncio.to_thread(eventually, lambda: not pid_alive(sleeper))


async def test_a_running_program_never_blocks_the_event_loop(
    script: Script, tmp_path: Path
) -> None:
    flag = tmp_path / "flag"
    # The program waits for a file only this event loop writes while the program runs.
    command = script(
        f"""
        import os, sys, time
        deadline = time.monotonic() + 30
        while not os.path.exists({str(flag)!r}):
            if time.monotonic() > deadline:
                sys.exit(1)
            time.sleep(0.01)
        """
    )
    task = asyncio.ensure_future(decide(command))
    await asyncio.sleep(0)
    flag.write_text("go")
    assert (await task).result == HookResult()


# --- what the program receives ---


async def test_the_program_reads_the_envelope_and_its_environment(
    script: Script, tmp_path: Path
) -> None:
    out = tmp_path / "seen.json"
    command = script(
        f"""
        import json, os, sys
        seen = {{"envelope": json.load(sys.stdin), "cwd": os.getcwd()}}
        for key in ("HOOKSCOPE_PROJECT_DIR", "CLAUDE_PROJECT_DIR"):
            seen[key] = os.environ.get(key)
        open({str(out)!r}, "w").write(json.dumps(seen))
        """
    )
    project = tmp_path / "project"
    project.mkdir()
    runner = HookRunner(
        [
            CommandHook(
                "pre_tool_call",
                command=command,
                project_dir=project,
                tool_names={"run_command": "Bash"},
            )
        ]
    )
    await dispatch(runner, "pre_tool_call", CALL)
    seen = json.loads(out.read_text())
    envelope = seen["envelope"]
    prompt_id = envelope.pop("prompt_id")
    assert len(prompt_id) == 36  # a uuid, as Claude Code's
    transcript = project / ".hookscope" / "transcripts" / "s-1.jsonl"
    assert envelope == {
        "session_id": "s-1",
        "transcript_path": str(transcript),
        "cwd": str(project),
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "hookscope_event": "pre_tool_call",
        "turn_index": 0,
        "agent_name": "tester",
        "tool_name": "Bash",
        "tool_server": None,
        # run_command's CommandLine is Claude Code's command (DESIGN §7a argument maps)
        "tool_input": {"command": "ls", "cwd": "/w"},
        "tool_use_id": "c1",
    }
    # No writer runs outside a loaded settings file: the path is an empty file, never missing.
    assert transcript.read_text() == ""
    assert (
        seen["cwd"] == seen["HOOKSCOPE_PROJECT_DIR"] == seen["CLAUDE_PROJECT_DIR"] == str(project)
    )


async def test_args_run_without_a_shell(tmp_path: Path) -> None:
    out = tmp_path / "argv.json"
    program = f"import json, sys; open({str(out)!r}, 'w').write(json.dumps(sys.argv[1:]))"
    runner = HookRunner(
        [CommandHook("pre_tool_call", args=[PYTHON, "-c", program, "$HOME", "a b"])]
    )
    await dispatch(runner, "pre_tool_call", CALL)
    assert json.loads(out.read_text()) == ["$HOME", "a b"]


def test_a_command_hook_needs_exactly_one_of_command_and_args() -> None:
    with pytest.raises(ValueError, match="exactly one of command"):
        CommandHook("pre_tool_call")
    with pytest.raises(ValueError, match="exactly one of command"):
        CommandHook("pre_tool_call", command="true", args=["true"])
    with pytest.raises(ValueError, match="args must be a non-empty list"):
        CommandHook("pre_tool_call", args=[])


def test_default_names_are_the_script_or_the_program() -> None:
    assert (
        CommandHook("pre_tool_call", command="python3 hooks/guard.py --strict").name == "guard.py"
    )
    assert (
        CommandHook("pre_tool_call", command='"$CLAUDE_PROJECT_DIR"/.claude/hooks/check.sh').name
        == "check.sh"
    )
    assert CommandHook("pre_tool_call", args=["/usr/bin/jq", "-r", ".x"]).name == "jq"
