"""Claude Code `permissions`: hookscope decides as the real Claude Code CLI does, call by call.

One `.claude/settings.json` with allow, ask and deny rules is given both to the CLI bundled in
the claude-agent-sdk wheel (as the project's settings, talking to a scripted model server on
127.0.0.1) and to `hookscope.engine.load_policy`. The model asks for each call in turn; what the
CLI did with it — ran it without asking, asked `can_use_tool` (which refuses), or refused it
outright — must be what hookscope's enforcer decides for the same call: allow, ask, deny.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hookscope.engine import load_policy
from hookscope.types import ToolCall
from tests.support.claude_cli import ClaudeEnv, claude_env, converse

pytestmark = pytest.mark.e2e

PERMISSIONS = {
    "allow": ["Bash(touch allowed_*)", "Edit(src/**)", "Write(free/**)", "mcp__calc__add"],
    "ask": ["Bash(touch asked_*)"],
    "deny": [
        "Bash(touch denied_*)",
        "Bash(rm:*)",
        "Edit(./secret/**)",
        "Read(./.env)",
        "mcp__calc",
    ],
    "defaultMode": "default",
}


@pytest.fixture(scope="module")
def claude() -> Iterator[ClaudeEnv]:
    with claude_env() as env:
        yield env


def cases(work: Path) -> list[tuple[str, str, dict[str, Any], str]]:
    """(key, Claude tool name, input, what both must decide)."""
    return [
        ("bash-allow", "Bash", {"command": "touch allowed_1"}, "allow"),
        ("bash-ask", "Bash", {"command": "touch asked_1"}, "ask"),
        ("bash-deny", "Bash", {"command": "touch denied_1"}, "deny"),
        ("bash-unlisted", "Bash", {"command": "touch other_1"}, "ask"),
        ("bash-and-deny", "Bash", {"command": "touch allowed_2 && touch denied_2"}, "deny"),
        ("bash-and-allow", "Bash", {"command": "touch allowed_3 && touch allowed_4"}, "allow"),
        ("bash-rm", "Bash", {"command": "touch allowed_5; rm -f nothing"}, "deny"),
        ("bash-pipe", "Bash", {"command": "touch allowed_6 | touch allowed_7"}, "allow"),
        ("bash-lines", "Bash", {"command": "touch allowed_8\ntouch allowed_9"}, "allow"),
        ("bash-substitution", "Bash", {"command": "touch allowed_10; echo $(ls)"}, "ask"),
        ("write-src", "Write", {"file_path": f"{work}/src/a.txt", "content": "a"}, "allow"),
        ("write-secret", "Write", {"file_path": f"{work}/secret/k.txt", "content": "k"}, "deny"),
        ("write-other", "Write", {"file_path": f"{work}/notes.txt", "content": "n"}, "ask"),
        # Only Edit(...) and Read(...) carry paths: Write(free/**) allows nothing.
        ("write-free", "Write", {"file_path": f"{work}/free/a.txt", "content": "f"}, "ask"),
        ("read-env", "Read", {"file_path": f"{work}/.env"}, "deny"),
        ("read-readme", "Read", {"file_path": f"{work}/readme.txt"}, "allow"),
        ("mcp-add", "mcp__calc__add", {"a": 2, "b": 3}, "deny"),
    ]


def trust(claude: ClaudeEnv, work: Path) -> None:
    """Mark ``work`` trusted: the CLI ignores a project's allow rules until its trust dialog
    was accepted (it says so on stderr); hookscope has no such dialog, the file is loaded on
    purpose."""
    config = claude.home / ".claude" / ".claude.json"
    config.parent.mkdir(exist_ok=True)
    data = json.loads(config.read_text()) if config.exists() else {}
    data.setdefault("projects", {})[str(work)] = {"hasTrustDialogAccepted": True}
    config.write_text(json.dumps(data))


def hookscope_verdict(settings: Path, tool: str, args: dict[str, Any]) -> str:
    enforcer = load_policy(settings)
    assert enforcer is not None
    server = None
    if tool.startswith("mcp__"):
        server, _, tool = tool[len("mcp__") :].partition("__")
    decision = asyncio.run(enforcer.evaluate(ToolCall(tool, args, server=server), ask=False))
    return {"allow": "allow", "deny": "deny", "ask_user": "ask"}[decision.decision.value]


def ran(work: Path, tool: str, args: dict[str, Any], result: str) -> bool:
    """Whether the CLI ran the call: its effect is there, or its output reached the model."""
    if tool == "Bash":
        first = args["command"].split()[1]
        return (work / first).exists()
    if tool == "Write":
        return Path(args["file_path"]).exists()
    if tool == "Read":
        return "secret-token" in result or "hello readme" in result
    return result == "done: 5"


async def test_the_cli_and_hookscope_decide_every_call_alike(
    claude: ClaudeEnv, tmp_path: Path
) -> None:
    work = tmp_path / "project"
    for directory in ("src", "secret", "free", ".claude"):
        (work / directory).mkdir(parents=True)
    (work / ".env").write_text("secret-token\n")
    (work / "readme.txt").write_text("hello readme\n")
    settings = work / ".claude" / "settings.json"
    settings.write_text(json.dumps({"permissions": PERMISSIONS}))
    trust(claude, work)
    table = cases(work)
    for key, tool, args, _ in table:
        claude.server.resolver.script[f"[perm-{key}] go"] = [
            {"tool_calls": [{"name": tool, "arguments": args}]},
            {"text": "done: {tool_result}"},
        ]
    asked: list[str] = []

    async def can_use_tool(name: str, tool_input: dict[str, Any], context: Any) -> Any:
        from claude_agent_sdk import PermissionResultDeny

        asked.append(name + json.dumps(tool_input, sort_keys=True))
        return PermissionResultDeny(message="refused by the test")

    options = claude.options(
        work,
        setting_sources=["project"],
        allowed_tools=[],
        can_use_tool=can_use_tool,
    )
    seen = await converse(options, [f"[perm-{key}] go" for key, *_ in table])
    assert len(seen.results) == len(table)
    decided = []
    for (key, tool, args, _), result in zip(table, seen.results, strict=True):
        if tool + json.dumps(args, sort_keys=True) in asked:
            cli = "ask"
        elif ran(work, tool, args, result):
            cli = "allow"
        else:
            cli = "deny"
        ours = await asyncio.to_thread(hookscope_verdict, settings, tool, args)
        decided.append((key, cli, ours))
    assert decided == [(key, expected, expected) for key, _, _, expected in table]
