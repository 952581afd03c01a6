"""Claude Agent SDK values ↔ hookscope values: the adapter's conversions, and nothing else.

The SDK speaks the CLI's wire format (camelCase dicts); hookscope speaks frozen dataclasses.
Every translation between the two lives here, so the rest of the adapter only routes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from hookscope.integrations._kit import ToolVerdict
from hookscope.types import HookscopeError, LlmResponse, ToolCall, Usage

__all__ = [
    "MCP_PREFIX",
    "PROVIDER",
    "SUBAGENT_TOOLS",
    "ClaudeToolError",
    "PermissionRefused",
    "hook_output",
    "llm_response",
    "mcp_name",
    "server_names",
    "tool_call",
    "usage",
]

#: ``gen_ai.provider.name`` of every model call the CLI makes.
PROVIDER: Final = "anthropic"
#: How Claude Code names an MCP server's tool: ``mcp__<server>__<tool>``.
MCP_PREFIX: Final = "mcp__"
#: What Claude Code replaces with ``_`` in an MCP server's name.
_CLAUDE_UNSAFE: Final = re.compile(r"[^A-Za-z0-9_-]")
#: The built-in tools that start a subagent (``Agent``; ``Task`` in older CLIs).
SUBAGENT_TOOLS: Final = frozenset({"Agent", "Task"})


class ClaudeToolError(HookscopeError):
    """A tool call that Claude Code reported failed (``PostToolUseFailure``); the text is the
    CLI's error message. ``on_tool_error`` hooks receive it."""


class PermissionRefused(HookscopeError):
    """Claude Code's own permission check refused a call hookscope had allowed (a
    ``can_use_tool`` callback, a settings rule, or the permission mode)."""


def mcp_name(name: str, servers: Mapping[str, str] | None = None) -> tuple[str, str | None]:
    """``mcp__server__tool`` → ``("tool", "server")``; other names → ``(name, None)``.

    ``servers`` (:func:`server_names`) maps the names Claude Code writes to the servers the
    options configure: the tool of a server whose name has ``__`` in it, or a character
    Claude Code replaces (``my.srv`` becomes ``my_srv``), is then named by the configured
    server, so a policy rule for that server meets it. Otherwise the name splits at the first
    ``__`` after the prefix.
    """
    if name.startswith(MCP_PREFIX):
        rest = name[len(MCP_PREFIX) :]
        if servers:
            known = [k for k in servers if rest.startswith(f"{k}__") and len(rest) > len(k) + 2]
            if known:
                written = max(known, key=len)  # the longest reading is the configured one
                return rest[len(written) + 2 :], servers[written]
        server, sep, tool = rest.partition("__")
        if sep and server and tool:
            return tool, server
    return name, None


def server_names(mcp_servers: object) -> dict[str, str]:
    """The options' MCP servers by the name Claude Code writes in tool names → their own.

    Claude Code replaces every character but letters, digits, ``_`` and ``-`` with ``_``.
    ``mcp_servers`` given as a path (a config file) names none here.
    """
    if not isinstance(mcp_servers, Mapping):
        return {}
    return {_CLAUDE_UNSAFE.sub("_", str(key)): str(key) for key in mcp_servers}


def tool_call(
    name: str,
    tool_input: Mapping[str, Any] | None,
    tool_use_id: str | None,
    servers: Mapping[str, str] | None = None,
) -> ToolCall:
    """The :class:`ToolCall` of one Claude tool use; MCP tools carry their server."""
    tool, server = mcp_name(name, servers)
    return ToolCall(tool, dict(tool_input or {}), tool_use_id or "", server)


def hook_output(verdict: ToolVerdict) -> dict[str, Any]:
    """A ``PreToolUse`` hook's answer for ``verdict``.

    Denied → ``permissionDecision: "deny"`` with the message (the model reads it); pending →
    ``"ask"`` (Claude then calls ``can_use_tool``); approved by a person through hookscope's
    confirm path → ``"allow"``; otherwise allowed → no decision: hookscope only ever narrows
    what Claude may do, so Claude's own permission checks run as they would without it (an
    ``allow`` rule does not grant a permission Claude would ask for). Changed arguments travel
    as ``updatedInput``.
    """
    specific: dict[str, Any] = {"hookEventName": "PreToolUse"}
    if verdict.pending:
        specific["permissionDecision"] = "ask"
        specific["permissionDecisionReason"] = verdict.message or "hookscope asks to confirm"
        return {"hookSpecificOutput": specific}
    if not verdict.allowed:
        specific["permissionDecision"] = "deny"
        specific["permissionDecisionReason"] = verdict.message or "denied by hookscope"
        return {"hookSpecificOutput": specific}
    decision = verdict.decision
    if decision is not None and decision.asked_user and decision.user_approved:
        # A person approved the call: that is the permission (Claude would ask again).
        specific["permissionDecision"] = "allow"
        if verdict.message:
            specific["permissionDecisionReason"] = verdict.message
    if verdict.args is not None:
        specific["updatedInput"] = dict(verdict.args)
    return {"hookSpecificOutput": specific} if len(specific) > 1 else {}


def usage(raw: Mapping[str, Any] | None) -> Usage | None:
    """A Messages API ``usage`` object as :class:`Usage` (input includes cached tokens)."""
    if not isinstance(raw, Mapping):
        return None
    cache_read = _int(raw.get("cache_read_input_tokens"))
    cache_creation = _int(raw.get("cache_creation_input_tokens"))
    return Usage(
        input_tokens=_int(raw.get("input_tokens")) + cache_read + cache_creation,
        output_tokens=_int(raw.get("output_tokens")),
        cache_read_tokens=cache_read,
        cache_creation_tokens=cache_creation,
    )


def llm_response(message: Mapping[str, Any]) -> LlmResponse:
    """The CLI's raw ``assistant`` message as an :class:`LlmResponse`."""
    text: list[str] = []
    calls: list[ToolCall] = []
    content: Sequence[Any] = message.get("content") or ()
    for block in content:
        if not isinstance(block, Mapping):
            continue
        if block.get("type") == "text":
            text.append(str(block.get("text", "")))
        elif block.get("type") == "tool_use":
            calls.append(tool_call(str(block.get("name", "")), block.get("input"), block.get("id")))
    stop = message.get("stop_reason")
    return LlmResponse(
        model=str(message.get("model") or "claude"),
        text="".join(text),
        tool_calls=tuple(calls),
        usage=usage(message.get("usage")),
        provider=PROVIDER,
        finish_reasons=(str(stop),) if stop else (),
    )


def _int(value: Any) -> int:
    return value if type(value) is int else 0
