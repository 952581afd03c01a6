"""The real Claude Code CLI (bundled in the claude-agent-sdk wheel), offline, for e2e tests.

One :class:`ClaudeEnv` (a scripted model server and a throwaway HOME) is shared by every
scenario: the CLI starts in ~1 s, the server is stateless per conversation, and each scenario
uses script keys of its own, so scenarios run concurrently.
"""

from __future__ import annotations

from collections.abc import Sequence
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


__all__ = ["MODEL", "ClaudeEnv", "Transcript", "calc_server", "converse", "workdir"]
