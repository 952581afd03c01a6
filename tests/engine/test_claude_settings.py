"""Claude Code settings in hookscope (DESIGN §7a), each item with a real hook script.

The parity harness (test_claude_parity.py) compares whole runs with the real CLI; these tests
pin down each rule on its own: names, keys, failures, scheduling, steering verdicts, the CLI.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from threading import Thread
from typing import Any, ClassVar

import pytest

from hookscope import ChatResponse, HookRunner, ToolCall
from hookscope.cli import main
from hookscope.context import SUBAGENT_KEY
from hookscope.engine import CommandHook, HookMatcher, HttpHook, load
from hookscope.hooks import OnInteractionHook
from hookscope.runner import DispatchObserver
from hookscope.types import MAX_CONTINUATIONS, Answer

from .conftest import dispatch, operation

PY = sys.executable


def settings_file(tmp_path: Path, hooks: dict[str, Any], **top: Any) -> Path:
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"hooks": hooks, **top}))
    return path


def group(*handlers: dict[str, Any], matcher: str | None = None) -> list[dict[str, Any]]:
    found: dict[str, Any] = {"hooks": list(handlers)}
    if matcher is not None:
        found["matcher"] = matcher
    return [found]


def cmd(command: str, **extra: Any) -> dict[str, Any]:
    return {"type": "command", "command": command, **extra}


def record(tmp_path: Path, name: str) -> str:
    """A shell command that appends its envelope to ``<name>.jsonl`` (no opinion)."""
    return f"cat >> {tmp_path / name}.jsonl; echo >> {tmp_path / name}.jsonl"


def seen(tmp_path: Path, name: str) -> list[dict[str, Any]]:
    path = tmp_path / f"{name}.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


# --- names: MCP tools, aliases with argument maps -----------------------------------------


@pytest.mark.parametrize("matcher", ["mcp__.*", "mcp__context7__.*", "mcp__context7__get_docs"])
async def test_mcp_tools_are_mcp_server_tool_for_matchers_and_envelopes(
    tmp_path: Path, matcher: str
) -> None:
    path = settings_file(
        tmp_path, {"PreToolUse": group(cmd(record(tmp_path, "mcp")), matcher=matcher)}
    )
    runner = HookRunner(load(path))
    await dispatch(runner, "pre_tool_call", ToolCall("get_docs", {"q": "x"}, server="context7"))
    await dispatch(runner, "pre_tool_call", ToolCall("get_docs", {"q": "x"}))  # not MCP
    (envelope,) = seen(tmp_path, "mcp")
    assert (envelope["tool_name"], envelope["tool_server"]) == (
        "mcp__context7__get_docs",
        "context7",
    )


async def test_updated_input_goes_back_to_the_agents_argument_names(tmp_path: Path) -> None:
    answer = {
        "hookSpecificOutput": {"permissionDecision": "allow", "updatedInput": {"command": "ls -la"}}
    }
    path = settings_file(
        tmp_path, {"PreToolUse": group(cmd(f"echo '{json.dumps(answer)}'"), matcher="Bash")}
    )
    aliases = {"Bash": {"tool": "shell", "args": {"command": "cmd"}}}
    runner = HookRunner(load(path, tool_aliases=aliases))
    decided = await dispatch(runner, "pre_tool_call", ToolCall("shell", {"cmd": "ls"}))
    assert dict(decided.data.args) == {"cmd": "ls -la"}


# What the real CLI matched for a call to Bash (probed with Claude Code 2.1.332): plain names
# are exact and case-sensitive; anything else is a regular expression searched in the name.
CLAUDE_MATCHES = {
    "Bash": True,
    "bash": False,
    "ash": False,
    "Bas": False,
    "Bash|Edit": True,
    "^Bash$": True,
    "(Bash)": True,
    "B.sh|Nope": True,
    "B.s": True,
    "as.*": True,
    "Bash*": True,
    "Bash.*": True,
}


@pytest.mark.parametrize(("pattern", "matches"), CLAUDE_MATCHES.items())
def test_matchers_match_as_the_real_cli_did(pattern: str, matches: bool) -> None:
    aliases = {"run_command": "Bash"}
    matcher = HookMatcher.claude(pattern, aliases)
    assert matcher.matches(ToolCall("Bash")) is matches
    assert matcher.matches(ToolCall("run_command")) is matches  # the alias, every spelling
    assert matcher.matches(ToolCall("view_file")) is False


def test_a_bad_alias_says_what_shapes_are_accepted(tmp_path: Path) -> None:
    path = settings_file(tmp_path, {"PreToolUse": group(cmd("true"))})
    with pytest.raises(ValueError, match=r"tool_aliases\['Bash'\] must be the agent's tool name"):
        load(path, tool_aliases={"Bash": 3})


# --- every event and key loads ------------------------------------------------------------


def test_every_event_and_key_loads_and_check_says_what_never_fires(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = settings_file(
        tmp_path,
        {
            "PreToolUse": group(
                cmd(
                    "true",
                    statusMessage="Checking…",
                    description="guard",
                    timeout=5,
                    **{"if": "Bash(git *)"},
                ),
                {"type": "agent", "prompt": "Is it safe?"},
                matcher="Bash",
            ),
            "PostToolUse": group(
                cmd("true", **{"async": True}),
                cmd("true", asyncRewake=True, rewakeMessage="Note: "),
            ),
            "Notification": group(cmd("true")),
            "TeammateIdle": group(cmd("true")),
            "Setup": group(cmd("true")),
            "Stop": group(cmd("true", once=True), matcher="ignored"),
        },
        permissions={"allow": []},
    )
    assert main(["hooks", "check", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["EVENT", "MATCHER", "TYPE", "TIMEOUT", "ON", "FAILURE", "NAME"]
    # The permissions block first: one PolicyEnforcer (DESIGN §11).
    assert out[1].split() == ["pre_tool_call", "*", "python", "-", "deny", "permissions"]
    out = out[:1] + out[2:]
    assert [line.split()[0] for line in out[1:6]] == [
        "PreToolUse→pre_tool_call",
        "PostToolUse→post_tool_call",
        "PostToolUse→post_tool_call",
        "Notification→on_interaction",
        "Stop→post_turn",
    ]
    assert out[6:] == [
        "loads, never fires here:",
        "  hooks.PreToolUse[0].hooks[1] (PreToolUse): an agent hook needs Claude Code's own "
        "subagent; use a command or prompt hook",
        "  hooks.TeammateIdle[0].hooks[0] (TeammateIdle): hookscope has no teammates",
        "  hooks.Setup[0].hooks[0] (Setup): hookscope has no install/setup phase",
        "note: hooks.Stop[0]: Claude Code ignores a matcher on Stop; so does hookscope",
        "note: the session transcript (transcript_path) is kept in .hookscope/transcripts/",
        f"{path}: 6 hooks, valid; 3 never fire here",
    ]


def test_check_refuses_a_bad_file_and_goes_on_with_the_next(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = settings_file(tmp_path, {"Stop": group(cmd("true"))})
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"hooks": {"PreToolUse": group(cmd("true", colour="red"))}}))
    assert main(["hooks", "check", str(bad), str(good)]) == 1
    captured = capsys.readouterr()
    assert captured.out.splitlines()[0] == f"{bad}: refused (nothing in it is applied)"
    assert captured.out.splitlines()[-1] == f"{good}: 1 hook, valid"
    assert "unknown key(s) ['colour'] for a command hook" in captured.err


async def test_an_if_rule_narrows_a_hook_like_claude_code(tmp_path: Path) -> None:
    path = settings_file(
        tmp_path,
        {"PreToolUse": group(cmd("echo no git push >&2; exit 2", **{"if": "Bash(git push*)"}))},
    )
    runner = HookRunner(load(path))
    push = await dispatch(runner, "pre_tool_call", ToolCall("Bash", {"command": "git push -f"}))
    status = await dispatch(runner, "pre_tool_call", ToolCall("Bash", {"command": "git status"}))
    assert (push.result.allow, push.result.message, status.result.allow) == (
        False,
        "no git push",
        True,
    )


async def test_once_runs_a_hook_once_per_session(tmp_path: Path) -> None:
    path = settings_file(
        tmp_path, {"UserPromptSubmit": group(cmd(record(tmp_path, "once"), once=True))}
    )
    runner = HookRunner(load(path))
    async with runner.session() as session:
        for prompt in ("one", "two"):
            async with session.turn(prompt):
                pass
    assert [e["prompt"] for e in seen(tmp_path, "once")] == ["one"]


async def test_async_rewake_adds_its_reason_to_the_turn(tmp_path: Path) -> None:
    flag = tmp_path / "go"
    command = f"while [ ! -e {flag} ]; do sleep 0.01; done; echo 'tests failed' >&2; exit 2"
    path = settings_file(
        tmp_path,
        {"PostToolUse": group(cmd(command, asyncRewake=True, rewakeMessage="Background: "))},
    )
    runner = HookRunner(load(path))
    async with runner.session() as session, session.turn("hi") as turn:
        outcome = await turn.call_tool(ToolCall("Bash", {"command": "x"}), lambda command: "ok")
        assert outcome.value == "ok"  # the call did not wait for the background hook
        assert turn.context_additions == []
        flag.write_text("")
        for _ in range(1000):
            if turn.context_additions:
                break
            await asyncio.sleep(0.01)
        assert turn.context_additions == ["Background: tests failed"]


# --- running: every matching hook, in parallel, strictest verdict --------------------------


async def test_matching_hooks_run_concurrently(tmp_path: Path) -> None:
    # Each hook marks its start, then waits until all four have started: run one after the
    # other, the first would wait in vain (and fail after its deadline).
    wait = (
        f"import pathlib, sys, time\n"
        f"d = pathlib.Path({str(tmp_path)!r})\n"
        f"(d / ('started-' + sys.argv[1])).touch()\n"
        f"deadline = time.monotonic() + 20\n"
        f"while len(list(d.glob('started-*'))) < 4:\n"
        f"    if time.monotonic() > deadline: sys.exit(1)\n"
        f"    time.sleep(0.01)\n"
    )
    (tmp_path / "wait.py").write_text(wait)
    hooks = [cmd(f"{PY} {tmp_path / 'wait.py'} {n}") for n in range(4)]
    path = settings_file(tmp_path, {"PreToolUse": group(*hooks, matcher="Bash")})
    decided = await dispatch(HookRunner(load(path)), "pre_tool_call", ToolCall("Bash"))
    assert decided.result.allow is True
    assert sorted(p.name for p in await asyncio.to_thread(tmp_path.glob, "started-*")) == [
        f"started-{n}" for n in range(4)
    ]


async def test_the_strictest_verdict_wins_and_every_hook_runs(tmp_path: Path) -> None:
    ask = {"hookSpecificOutput": {"permissionDecision": "ask", "permissionDecisionReason": "sure?"}}
    hooks = [
        cmd(f"echo '{json.dumps(ask)}'", name="asker"),
        cmd("echo 'no deletes' >&2; exit 2", name="guard"),
        cmd(record(tmp_path, "after"), name="logger"),  # listed after the deny: runs anyway
    ]
    path = settings_file(tmp_path, {"PreToolUse": group(*hooks)})
    runner = HookRunner(load(path))
    finished: list[tuple[str, str]] = []

    class Watcher(DispatchObserver):
        def hook_finished(
            self, event: Any, name: str, context: Any, result: Any, *rest: Any
        ) -> None:
            finished.append((name, type(result).__name__))

    runner.observe(Watcher())
    decided = await dispatch(runner, "pre_tool_call", ToolCall("Bash"))
    assert (decided.result.allow, decided.result.message) == (False, "no deletes")
    assert len(seen(tmp_path, "after")) == 1
    # observers hear of every run, the one after the deciding deny too
    assert finished == [
        ("transcript", "NoneType"),
        ("asker", "HookResult"),
        ("guard", "HookResult"),
        ("logger", "NoneType"),
    ]


async def test_identical_commands_run_once(tmp_path: Path) -> None:
    same = cmd(record(tmp_path, "same"))
    path = settings_file(
        tmp_path,
        {"PreToolUse": [{"matcher": "Bash", "hooks": [same]}, {"matcher": "B.*", "hooks": [same]}]},
    )
    await dispatch(HookRunner(load(path)), "pre_tool_call", ToolCall("Bash"))
    assert len(seen(tmp_path, "same")) == 1


# --- verdicts that steer the agent ---------------------------------------------------------


async def test_a_stop_hook_that_always_blocks_is_capped_like_claude_code(tmp_path: Path) -> None:
    block = json.dumps({"decision": "block", "reason": "keep going"})
    path = settings_file(
        tmp_path, {"Stop": group(cmd(f"{{ cat; echo; }} >> {tmp_path}/stops; echo '{block}'"))}
    )
    runner = HookRunner(load(path))
    turns = 0
    async with runner.session() as session:
        prompt: Any = "work"
        while prompt is not None:
            async with session.turn(prompt) as turn:
                turn.respond(ChatResponse(f"answer {turns}"))
            turns += 1
            prompt = turn.continuation
    # Claude Code 2.1.332 asked the same script 9 times: the turn and 8 continuations.
    assert turns == MAX_CONTINUATIONS + 1 == 9
    stops = [json.loads(line) for line in (tmp_path / "stops").read_text().splitlines() if line]
    assert [s["stop_hook_active"] for s in stops] == [False] + [True] * 8
    assert stops[3]["last_assistant_message"] == "answer 3"


async def test_defer_hands_the_call_to_the_host(tmp_path: Path) -> None:
    defer = {
        "hookSpecificOutput": {
            "permissionDecision": "defer",
            "permissionDecisionReason": "a human decides",
        }
    }
    path = settings_file(tmp_path, {"PreToolUse": group(cmd(f"echo '{json.dumps(defer)}'"))})
    asked: list[str] = []

    class Host(OnInteractionHook):
        async def run(self, context: Any, questions: Any) -> list[Answer]:
            asked.append(questions[0].text)
            return [Answer("allow", "confirm")]

    runner = HookRunner([*load(path), Host()])
    decided = await dispatch(runner, "pre_tool_call", ToolCall("Bash"))
    assert (decided.result.allow, asked) == (True, ["a human decides"])


async def test_permission_request_answers_the_confirm_question(tmp_path: Path) -> None:
    ask = {"hookSpecificOutput": {"permissionDecision": "ask"}}
    allow = {
        "hookSpecificOutput": {
            "hookEventName": "PermissionRequest",
            "decision": {"behavior": "allow"},
        }
    }
    path = settings_file(
        tmp_path,
        {
            "PreToolUse": group(cmd(f"echo '{json.dumps(ask)}'")),
            "PermissionRequest": group(cmd(f"echo '{json.dumps(allow)}'"), matcher="Bash"),
        },
    )
    runner = HookRunner(load(path))
    assert (await dispatch(runner, "pre_tool_call", ToolCall("Bash"))).result.allow is True
    # the matcher names Bash: another tool's confirmation is not answered, so it is denied
    assert (await dispatch(runner, "pre_tool_call", ToolCall("Write"))).result.allow is False


async def test_session_start_runs_again_after_a_compaction(tmp_path: Path) -> None:
    path = settings_file(
        tmp_path,
        {
            "SessionStart": group(cmd(record(tmp_path, "start")), matcher="startup|compact"),
            "PreCompact": group(cmd(record(tmp_path, "pre"))),
        },
    )
    runner = HookRunner(load(path))
    async with runner.session() as session, session.turn("long") as turn:
        await turn.summarize([{"role": "user", "content": "long"}])
        await turn.compact("short")
    assert [e["source"] for e in seen(tmp_path, "start")] == ["startup", "compact"]
    (pre,) = seen(tmp_path, "pre")
    assert (pre["trigger"], pre["custom_instructions"]) == ("auto", None)


# --- failures -----------------------------------------------------------------------------


@pytest.mark.parametrize(("failure", "allowed"), [("hookscope", False), ("claude", True)])
async def test_failure_claude_lets_a_crashing_guard_through(
    tmp_path: Path, failure: str, allowed: bool, caplog: pytest.LogCaptureFixture
) -> None:
    path = settings_file(tmp_path, {"PreToolUse": group(cmd("exit 1"))})
    caplog.set_level(logging.WARNING, "hookscope")
    decided = await dispatch(
        HookRunner(load(path, failure=failure)), "pre_tool_call", ToolCall("Bash")
    )
    assert decided.result.allow is allowed
    assert "exit" in caplog.text  # logged either way


async def test_on_failure_block_keeps_a_hook_closed_under_failure_claude(tmp_path: Path) -> None:
    path = settings_file(tmp_path, {"PreToolUse": group(cmd("exit 1", onFailure="block"))})
    decided = await dispatch(
        HookRunner(load(path, failure="claude")), "pre_tool_call", ToolCall("Bash")
    )
    assert decided.result.allow is False


def test_failure_claude_in_hookscope_toml(tmp_path: Path) -> None:
    path = tmp_path / "hookscope.toml"
    path.write_text(
        'failure = "claude"\n[[hooks.pre_tool_call]]\ntype = "command"\ncommand = "x"\n'
    )
    (hook,) = load(path)
    assert isinstance(hook, CommandHook)
    assert hook.fail_open is True


# --- plugin root, http hooks ---------------------------------------------------------------


async def test_a_plugin_hooks_json_gets_claude_plugin_root(tmp_path: Path) -> None:
    plugin = tmp_path / "plugin"
    (plugin / "hooks").mkdir(parents=True)
    (plugin / "bin").mkdir()
    script = plugin / "bin" / "guard.sh"
    script.write_text('#!/bin/sh\necho "root=$CLAUDE_PLUGIN_ROOT" >&2\nexit 2\n')
    script.chmod(0o755)
    hooks = {
        "description": "x",
        "hooks": {"PreToolUse": group(cmd("${CLAUDE_PLUGIN_ROOT}/bin/guard.sh"))},
    }
    (plugin / "hooks" / "hooks.json").write_text(json.dumps(hooks))
    runner = HookRunner(load(plugin / "hooks" / "hooks.json"))
    decided = await dispatch(runner, "pre_tool_call", ToolCall("Bash"))
    assert decided.result.message == f"root={plugin.resolve()}"


class _Endpoint(BaseHTTPRequestHandler):
    seen: ClassVar[list[tuple[dict[str, Any], str]]] = []

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _Endpoint.seen.append((body, self.headers.get("Authorization", "")))
        deny = "rm" in body.get("tool_input", {}).get("command", "")
        answer = json.dumps({"decision": "block", "reason": "no rm over http"} if deny else {})
        data = answer.encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


async def test_an_http_hook_posts_the_envelope_and_reads_the_verdict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Endpoint)
    Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("HOOK_TOKEN", "t0k")
    monkeypatch.setenv("OTHER_SECRET", "nope")
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/hook"
        handler = {
            "type": "http",
            "url": url,
            "headers": {"Authorization": "Bearer $HOOK_TOKEN $OTHER_SECRET"},
            "allowedEnvVars": ["HOOK_TOKEN"],
        }
        path = settings_file(tmp_path, {"PreToolUse": group(handler, matcher="Bash")})
        (hook,) = [h for h in load(path) if isinstance(h, HttpHook)]
        runner = HookRunner(load(path))
        rm = await dispatch(runner, "pre_tool_call", ToolCall("Bash", {"command": "rm x"}))
        ls = await dispatch(runner, "pre_tool_call", ToolCall("Bash", {"command": "ls"}))
    finally:
        server.shutdown()
        server.server_close()
    assert (rm.result.allow, rm.result.message, ls.result.allow) == (False, "no rm over http", True)
    assert [(body["tool_name"], auth) for body, auth in _Endpoint.seen[-2:]] == [
        ("Bash", "Bearer t0k"),
        ("Bash", "Bearer t0k"),
    ]
    assert hook.name == "http:127.0.0.1"


# --- hooks run: --session, --cwd, --input @file of any size --------------------------------


def test_hooks_run_takes_session_cwd_and_a_large_input_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = settings_file(tmp_path, {"PreToolUse": group(cmd(record(tmp_path, "run")))})
    project = tmp_path / "elsewhere"
    project.mkdir()
    big = tmp_path / "input.json"
    big.write_text(json.dumps({"command": "x" * 300_000}))  # over the 128 KiB argv limit
    argv = ["hooks", "run", str(path), "PreToolUse", "--tool", "Bash", "--input", f"@{big}"]
    assert main([*argv, "--session", "s-42", "--cwd", str(project)]) == 0
    (envelope,) = seen(tmp_path, "run")
    assert (envelope["session_id"], envelope["cwd"], len(envelope["tool_input"]["command"])) == (
        "s-42",
        str(project.resolve()),
        300_000,
    )
    assert main([*argv[:-1], f"@{tmp_path / 'missing.json'}"]) == 1
    assert "cannot read --input @" in capsys.readouterr().err


def test_hooks_run_prints_what_a_stop_hook_and_context_asked_for(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    block = json.dumps(
        {"decision": "block", "reason": "add tests", "systemMessage": "Remember the changelog"}
    )
    path = settings_file(tmp_path, {"Stop": group(cmd(f"echo '{block}'"))})
    # a Stop block: exit 2, as for any block, and what the agent is asked to go on with
    assert main(["hooks", "run", str(path), "Stop", "--input", '"done"']) == 2
    lines = capsys.readouterr().out.splitlines()
    assert lines[1:] == ["continue:\tadd tests", "context:\tRemember the changelog"]


async def test_the_transcript_is_claude_codes_jsonl(tmp_path: Path) -> None:
    path = settings_file(tmp_path, {"Stop": group(cmd("true"))})
    runner = HookRunner(load(path))
    async with runner.session(session_id="s/1") as session, session.turn("hi") as turn:
        await turn.call_tool(ToolCall("Bash", {"command": "ls"}, id="t1"), lambda command: "a b")
        turn.respond(ChatResponse("bye"))
    transcript = tmp_path / ".hookscope" / "transcripts" / "s_1.jsonl"
    lines = [json.loads(line) for line in transcript.read_text().splitlines()]
    assert [(line["type"], line["message"]["content"]) for line in lines] == [
        ("user", "hi"),
        (
            "assistant",
            [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}],
        ),
        (
            "user",
            [{"tool_use_id": "t1", "type": "tool_result", "content": "a b", "is_error": False}],
        ),
        ("assistant", [{"type": "text", "text": "bye"}]),
    ]
    assert [line["parentUuid"] for line in lines[1:]] == [line["uuid"] for line in lines[:-1]]
    assert transcript.stat().st_mode & 0o777 == 0o600


def test_transcript_false_keeps_no_writer(tmp_path: Path) -> None:
    path = settings_file(tmp_path, {"Stop": group(cmd("true"))})
    assert [type(h).__name__ for h in load(path, transcript=False)] == ["CommandHook"]
    assert operation(ToolCall("x")).call is not None


async def test_subagent_runs_fire_subagent_start_and_stop_not_the_main_events(
    tmp_path: Path,
) -> None:
    path = settings_file(
        tmp_path,
        {
            "SubagentStart": group(cmd(record(tmp_path, "sub")), matcher="review.*"),
            "SubagentStop": group(cmd(record(tmp_path, "sub"))),
            "UserPromptSubmit": group(cmd(record(tmp_path, "main"))),
            "Stop": group(cmd(record(tmp_path, "main"))),
        },
    )
    runner = HookRunner(load(path))
    async with runner.session() as session:
        async with session.turn("main work") as turn:
            turn.respond(ChatResponse("main done"))
        for name in ("reviewer", "writer"):  # as adapters mark a subagent's run
            scope = session.turn("sub work")
            scope.context.set(SUBAGENT_KEY, (name, f"run-{name}"))
            async with scope as sub:
                sub.respond(ChatResponse(f"{name} done"))
    assert [e["hook_event_name"] for e in seen(tmp_path, "main")] == ["UserPromptSubmit", "Stop"]
    assert [
        (e["hook_event_name"], e["agent_type"], e["agent_id"]) for e in seen(tmp_path, "sub")
    ] == [
        ("SubagentStart", "reviewer", "run-reviewer"),
        ("SubagentStop", "reviewer", "run-reviewer"),
        ("SubagentStop", "writer", "run-writer"),
    ]


async def test_two_tables_of_one_project_write_the_transcript_once(tmp_path: Path) -> None:
    shared = settings_file(tmp_path, {"Stop": group(cmd("true"))})
    local = tmp_path / ".claude" / "settings.local.json"
    local.write_text(json.dumps({"hooks": {"Stop": group(cmd("exit 0"))}}))
    first = load(shared)
    runner = HookRunner([*first, *load(local)])
    async with runner.session(session_id="s") as session:
        async with session.turn("one") as turn:
            turn.respond(ChatResponse("a"))
        runner.replace(first, load(shared))  # a hot reload: a new writer takes over
        async with session.turn("two") as turn:
            turn.respond(ChatResponse("b"))
    transcript = tmp_path / ".hookscope" / "transcripts" / "s.jsonl"
    lines = [json.loads(line) for line in transcript.read_text().splitlines()]
    assert [line["message"]["content"] for line in lines] == [
        "one",
        [{"type": "text", "text": "a"}],
        "two",
        [{"type": "text", "text": "b"}],
    ]
