"""The real Claude Code CLI (bundled in the claude-agent-sdk wheel), offline, for e2e tests.

One :class:`ClaudeEnv` (a scripted model server and a throwaway HOME) is shared by every
scenario: the CLI starts in ~1 s, the server is stateless per conversation, and each scenario
uses script keys of its own, so scenarios run concurrently.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from claude_agent_sdk import (
    AssistantMessage,
    ClaudeAgentOptions,
    ClaudeSDKClient,
    ResultMessage,
    create_sdk_mcp_server,
    tool,
)

from hookscope.integrations.claude_agent_sdk import stream as claude_stream
from hookscope.testing import Recording
from tests.support.model_server import ScriptedModelServer

MODEL = "claude-sonnet-4-5"


@dataclass
class ClaudeEnv:
    """A scripted model server and the environment that points the CLI at it."""

    server: ScriptedModelServer
    home: Path

    def env(self) -> dict[str, str]:
        """Everything the CLI needs to stay on loopback and out of the user's files."""
        return {
            "ANTHROPIC_BASE_URL": self.server.base_url,
            "ANTHROPIC_API_KEY": "sk-ant-test",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "DISABLE_AUTOUPDATER": "1",
            "ENABLE_TOOL_SEARCH": "false",
            "HOME": str(self.home),
            "CLAUDE_CONFIG_DIR": str(self.home / ".claude"),
        }

    def options(self, workdir: Path, **overrides: Any) -> ClaudeAgentOptions:
        """Options for a scenario in ``workdir`` with the ``calc`` SDK MCP server."""
        workdir.mkdir(parents=True, exist_ok=True)
        values: dict[str, Any] = {
            "model": MODEL,
            "cwd": str(workdir),
            "env": self.env(),
            "setting_sources": [],
            "permission_mode": "default",
            "mcp_servers": {"calc": calc_server()},
            "allowed_tools": ["mcp__calc__add", "mcp__calc__divide"],
            "max_turns": 8,
        }
        values.update(overrides)
        return ClaudeAgentOptions(**values)


@tool("add", "Add two integers", {"a": int, "b": int})
async def _add(args: dict[str, Any]) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": str(args["a"] + args["b"])}]}


@tool("divide", "Divide two integers", {"a": int, "b": int})
async def _divide(args: dict[str, Any]) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": str(args["a"] // args["b"])}]}  # b=0 raises


def calc_server() -> Any:
    """The in-process MCP server ``calc`` with ``add`` and ``divide``."""
    return create_sdk_mcp_server("calc", tools=[_add, _divide])


@dataclass
class Transcript:
    """What the application saw: each turn's final answer and every assistant text."""

    results: list[str] = field(default_factory=list)
    errors: list[bool] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)


async def converse(options: ClaudeAgentOptions, prompts: Sequence[str]) -> Transcript:
    """One ``ClaudeSDKClient`` session: each prompt, then its response to the result."""
    seen = Transcript()
    async with ClaudeSDKClient(options=options) as client:
        for prompt in prompts:
            await client.query(prompt)
            async for message in client.receive_response():
                if isinstance(message, AssistantMessage):
                    seen.texts.extend(
                        getattr(block, "text", "")
                        for block in message.content
                        if hasattr(block, "text")
                    )
                elif isinstance(message, ResultMessage):
                    seen.results.append(message.result or "")
                    seen.errors.append(message.is_error)
    return seen


def workdir(base: Path, name: str) -> Path:
    """A fresh directory for one scenario's files."""
    path = base / name
    path.mkdir(parents=True, exist_ok=True)
    return path


KEYS = (
    "hookscope.session.outcome",
    "hookscope.turn.outcome",
    "hookscope.tool.outcome",
    "hookscope.tool.server",
    "hookscope.policy.decision",
    "hookscope.policy.outcome",
    "hookscope.policy.decided_by",
    "hookscope.recovery.recovered",
    "error.type",
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.output_tokens",
)


@contextmanager
def claude_env() -> Iterator[ClaudeEnv]:
    """A scripted model server and a throwaway HOME, for one test module."""
    with (
        tempfile.TemporaryDirectory(prefix="hookscope-claude-") as tmp,
        ScriptedModelServer({}) as server,
    ):
        home = Path(tmp) / "home"
        home.mkdir()
        yield ClaudeEnv(server, home)


def tree(rec: Recording) -> list[Any]:
    """Names and the KEYS attributes, nested; siblings in start order."""

    def strip(node: dict[str, Any]) -> Any:
        out: list[Any] = [node["name"], node["attributes"]]
        if "children" in node:
            out.append([strip(c) for c in node["children"]])
        return out

    return [strip(n) for n in rec.span_tree(keys=KEYS)]


def same_tree(actual: Any, expected: Any, path: str = "") -> None:
    """Assert two trees are equal, naming the first span where they differ."""
    if isinstance(expected, list) and isinstance(actual, list):
        assert len(actual) == len(expected), (
            f"{path}: {len(actual)} items, expected {len(expected)}: {actual!r}"
        )
        for index, (a, e) in enumerate(zip(actual, expected, strict=True)):
            where = (
                f"{path}/{a[0]}"
                if isinstance(a, list) and a and isinstance(a[0], str)
                else f"{path}[{index}]"
            )
            same_tree(a, e, where)
    else:
        assert actual == expected, f"{path}: {actual!r} != {expected!r}"


def totals(rec: Recording, name: str, *keys: str) -> dict[tuple[Any, ...], int]:
    """A metric's points, keyed by the values of ``keys``."""
    points = rec.metric_points([name]).get(name, {})
    out: dict[tuple[Any, ...], int] = {}
    for attributes, value in points.items():
        found = dict(attributes)
        out[tuple(found.get(k) for k in keys)] = value
    return out


async def settled() -> None:
    """Let the conversations the CLI's exit ended finish their on_session_end hooks."""
    await claude_stream.drain()


def chat(input_tokens: int = 100, output_tokens: int = 1) -> list[Any]:
    # The CLI's stream reports usage as of message_start: 1 output token here (see README).
    return [
        "chat claude-sonnet-4-5",
        {"gen_ai.usage.input_tokens": input_tokens, "gen_ai.usage.output_tokens": output_tokens},
    ]


def allowed(tool: str, by: str | None = "PolicyEnforcer", server: str | None = None) -> list[Any]:
    attributes: dict[str, Any] = {
        "hookscope.policy.decision": "allow",
        "hookscope.policy.outcome": "allowed",
        "hookscope.tool.outcome": "succeeded",
    }
    if by is not None:
        attributes["hookscope.policy.decided_by"] = by
    if server is not None:  # an MCP tool is server/tool, as policies name it
        attributes["hookscope.tool.server"] = server
        tool = f"{server}/{tool}"
    return [f"execute_tool {tool}", attributes]


def denied(tool: str, by: str, decision: str = "deny") -> list[Any]:
    return [
        f"execute_tool {tool}",
        {
            "hookscope.policy.decided_by": by,
            "hookscope.policy.decision": decision,
            "hookscope.policy.outcome": "denied",
            "hookscope.tool.outcome": "denied",
        },
    ]


def turn(agent: str, children: list[Any], outcome: str = "completed") -> list[Any]:
    chats = sum(1 for c in children if c[0].startswith("chat "))
    attributes: dict[str, Any] = {"hookscope.turn.outcome": outcome}
    if chats:
        attributes["gen_ai.usage.input_tokens"] = 100 * chats
        attributes["gen_ai.usage.output_tokens"] = chats
    return [f"invoke_agent {agent}", attributes, children]


__all__ = [
    "KEYS",
    "MODEL",
    "ClaudeEnv",
    "Transcript",
    "allowed",
    "calc_server",
    "chat",
    "claude_env",
    "converse",
    "denied",
    "same_tree",
    "settled",
    "totals",
    "tree",
    "turn",
    "workdir",
]
