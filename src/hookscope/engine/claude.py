"""Claude Code's names: events, handler keys, tool names, argument names (DESIGN §7a).

A Claude Code settings file speaks Claude Code's language: ``PreToolUse``, ``Bash``,
``command``, ``file_path``, ``mcp__github__create_issue``. hookscope's agents call their tools
what they like (``run_command`` with ``CommandLine``). This module is the dictionary between
the two, in both directions, so an unmodified hook script sees the names it was written for and
its answers (``updatedInput``) reach the agent's tool in the agent's names.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from hookscope.context import SUBAGENT_KEY, TurnContext
from hookscope.hooks import HookEvent
from hookscope.types import ToolCall

__all__ = [
    "BUILTIN_ARGUMENTS",
    "CLAUDE_EVENTS",
    "IDLE_EVENTS",
    "ClaudeNames",
    "ClaudeOptions",
    "ToolAlias",
    "claude_tool_name",
    "if_condition",
]

#: Claude Code's hook events that run in hookscope, and the hookscope event each runs on.
CLAUDE_EVENTS: Final[Mapping[str, HookEvent]] = {
    "PreToolUse": "pre_tool_call",
    "PostToolUse": "post_tool_call",
    "PostToolUseFailure": "on_tool_error",
    "UserPromptSubmit": "pre_turn",
    "Stop": "post_turn",
    "SubagentStart": "pre_turn",
    "SubagentStop": "post_turn",
    "SessionStart": "on_session_start",
    "SessionEnd": "on_session_end",
    "PreCompact": "pre_compaction",
    "PostCompact": "on_compaction",
    "PermissionRequest": "on_interaction",
    "Notification": "on_interaction",
}

#: Claude Code's other hook events: they load, never fire in hookscope, and
#: ``hookscope hooks check`` says why.
IDLE_EVENTS: Final[Mapping[str, str]] = {
    "PostToolBatch": "hookscope dispatches tool calls one by one, with no batch event",
    "UserPromptExpansion": "hookscope has no slash-command expansion",
    "StopFailure": "a failed turn ends in hookscope's on_session_end, not a Stop-like event",
    "PreModelSwitch": "hookscope has no model switch event",
    "PostModelSwitch": "hookscope has no model switch event",
    "PermissionDenied": "a denial in hookscope is the pre_tool_call verdict itself",
    "Setup": "hookscope has no install/setup phase",
    "TeammateIdle": "hookscope has no teammates",
    "TaskCreated": "hookscope has no task list",
    "TaskCompleted": "hookscope has no task list",
    "Elicitation": "hookscope's MCP elicitations are not reported to hooks",
    "ElicitationResult": "hookscope's MCP elicitations are not reported to hooks",
    "ConfigChange": "hookscope reloads files with engine.watch(), which is not an event",
    "WorktreeCreate": "hookscope manages no git worktrees",
    "WorktreeRemove": "hookscope manages no git worktrees",
    "InstructionsLoaded": "hookscope loads no CLAUDE.md instructions",
    "CwdChanged": "hookscope's working directory is the project's, fixed",
    "FileChanged": "hookscope watches no files for the agent",
    "DirectoryAdded": "hookscope has no additional working directories",
    "MessageDisplay": "hookscope has no terminal display",
    "PreSkillShellCommand": "hookscope has no skills",
}

#: hookscope event → the Claude Code event name its envelope carries.
WIRE_NAMES: Final[Mapping[str, str]] = {
    "pre_tool_call": "PreToolUse",
    "post_tool_call": "PostToolUse",
    "on_tool_error": "PostToolUseFailure",
    "pre_turn": "UserPromptSubmit",
    "post_turn": "Stop",
    "on_session_start": "SessionStart",
    "on_session_end": "SessionEnd",
    "pre_compaction": "PreCompact",
    "on_compaction": "PostCompact",
    "on_interaction": "PermissionRequest",
}

#: Keys every Claude Code handler may carry, whatever its type. ``statusMessage`` and
#: ``description`` are display text (hookscope has no spinner); the rest are honoured.
HANDLER_KEYS: Final = frozenset(
    {
        "type",
        "if",
        "timeout",
        "statusMessage",
        "once",
        "description",
        "onFailure",
        "name",
        "on_failure",
    }
)
#: Keys per handler type, beyond :data:`HANDLER_KEYS`.
TYPE_KEYS: Final[Mapping[str, frozenset[str]]] = {
    "command": frozenset(
        {
            "command",
            "args",
            "shell",
            "async",
            "asyncRewake",
            "rewakeMessage",
            "rewakeSummary",
            "holdsTools",
            "cloud",
        }
    ),
    "prompt": frozenset({"prompt", "model", "continueOnBlock", "base_url", "api_key_env"}),
    "agent": frozenset({"prompt", "model"}),
    "http": frozenset({"url", "headers", "allowedEnvVars", "cloud"}),
    "mcp_tool": frozenset({"server", "tool", "input"}),
}
#: Handler types that load but never run in hookscope, and why.
IDLE_TYPES: Final[Mapping[str, str]] = {
    "agent": "an agent hook needs Claude Code's own subagent; use a command or prompt hook",
    "mcp_tool": "an mcp_tool hook calls an MCP server of Claude Code's session; hookscope has none",
}

#: Claude Code's argument names for an agent's tool, for the tools whose names are known:
#: (Claude tool, agent tool) → {Claude argument: agent argument}. An alias without a map
#: passes arguments unchanged.
BUILTIN_ARGUMENTS: Final[Mapping[tuple[str, str], Mapping[str, str]]] = {
    ("Bash", "run_command"): {"command": "CommandLine"},
    ("Read", "view_file"): {"file_path": "AbsolutePath"},
    ("Write", "write_to_file"): {"file_path": "TargetFile", "content": "CodeContent"},
    ("Edit", "replace_file_content"): {"file_path": "TargetFile"},
    ("Edit", "edit_file"): {"file_path": "TargetFile"},
}


@dataclass(frozen=True)
class ToolAlias:
    """One Claude Code tool name and the agent's tool it stands for.

    Args:
        claude: Claude Code's tool name (``Bash``).
        tool: The agent's tool name (``run_command``).
        args: Claude Code's argument name → the agent's (``{"command": "CommandLine"}``);
            arguments not listed keep their names.
    """

    claude: str
    tool: str
    args: Mapping[str, str] = field(default_factory=dict)

    def to_claude(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """The agent's arguments under Claude Code's names."""
        back = {ours: theirs for theirs, ours in self.args.items()}
        return {back.get(key, key): value for key, value in arguments.items()}

    def from_claude(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Arguments in Claude Code's names (an ``updatedInput``) under the agent's names."""
        return {self.args.get(key, key): value for key, value in arguments.items()}


def parse_aliases(given: Mapping[str, Any] | None) -> tuple[ToolAlias, ...]:
    """:class:`ToolAlias` es from ``tool_aliases`` as ``load()`` takes them.

    A value is the agent's tool name (``{"Bash": "run_command"}``, arguments from
    :data:`BUILTIN_ARGUMENTS` when known) or a mapping ``{"tool": "run_command", "args":
    {"command": "CommandLine"}}``.

    Raises:
        ValueError: a value has another shape (the message shows the accepted ones).
    """
    aliases: list[ToolAlias] = []
    for claude, value in (given or {}).items():
        if isinstance(value, ToolAlias):
            aliases.append(value)
            continue
        if isinstance(value, str) and value:
            args = BUILTIN_ARGUMENTS.get((claude, value), {})
            aliases.append(ToolAlias(claude, value, dict(args)))
            continue
        if isinstance(value, Mapping) and isinstance(value.get("tool"), str):
            args = value.get("args", {})
            extra = set(value) - {"tool", "args"}
            if (
                not extra
                and isinstance(args, Mapping)
                and all(isinstance(k, str) and isinstance(v, str) for k, v in args.items())
            ):
                aliases.append(ToolAlias(claude, value["tool"], dict(args)))
                continue
        raise ValueError(
            f"tool_aliases[{claude!r}] must be the agent's tool name ('run_command') or "
            "{'tool': 'run_command', 'args': {'command': 'CommandLine'}}, got "
            f"{value!r}"
        )
    return tuple(aliases)


def claude_tool_name(call: ToolCall, names: Mapping[str, str] | None = None) -> str:
    """The name Claude Code would give ``call``: ``mcp__<server>__<tool>`` for an MCP tool,
    else its alias (``names``: agent name → Claude name), else its own name."""
    if call.server is not None:
        return f"mcp__{call.server}__{call.name}"
    return (names or {}).get(call.name, call.name)


class ClaudeNames:
    """The dictionary for one settings file: agent tool ↔ Claude Code tool, with arguments."""

    __slots__ = ("_by_claude", "_by_tool", "names")

    def __init__(self, aliases: tuple[ToolAlias, ...] = ()) -> None:
        self._by_tool = {alias.tool: alias for alias in aliases}
        self._by_claude = {alias.claude: alias for alias in aliases}
        #: Agent tool name → Claude Code tool name.
        self.names: dict[str, str] = {alias.tool: alias.claude for alias in aliases}

    @classmethod
    def of(cls, tool_names: Mapping[str, str] | ClaudeNames | None) -> ClaudeNames:
        """From a plain agent name → Claude name mapping (arguments from the builtins)."""
        if isinstance(tool_names, ClaudeNames):
            return tool_names
        return cls(parse_aliases({theirs: ours for ours, theirs in (tool_names or {}).items()}))

    def tool_name(self, call: ToolCall) -> str:
        """``call``'s Claude Code name (see :func:`claude_tool_name`)."""
        return claude_tool_name(call, self.names)

    def tool_input(self, call: ToolCall) -> dict[str, Any]:
        """``call``'s arguments under Claude Code's names."""
        alias = self._by_tool.get(call.name) if call.server is None else None
        return alias.to_claude(call.args) if alias is not None else dict(call.args)

    def agent_input(self, call: ToolCall, updated: Mapping[str, Any]) -> dict[str, Any]:
        """A hook's ``updatedInput`` for ``call`` under the agent's argument names."""
        alias = self._by_tool.get(call.name) if call.server is None else None
        return alias.from_claude(updated) if alias is not None else dict(updated)

    def __bool__(self) -> bool:
        return bool(self._by_tool)


_CONDITION: Final = re.compile(r"\s*([\w\-]+)\s*(?:\((.*)\))?\s*", re.S)
#: The argument a permission rule's pattern is matched against, per Claude Code tool.
_RULE_ARGUMENT: Final[Mapping[str, tuple[str, ...]]] = {
    "Bash": ("command",),
    "Read": ("file_path",),
    "Write": ("file_path",),
    "Edit": ("file_path",),
    "MultiEdit": ("file_path",),
    "NotebookEdit": ("notebook_path",),
    "WebFetch": ("url",),
    "Glob": ("pattern",),
    "Grep": ("pattern",),
}


_PLAIN: Final = re.compile(r"[A-Za-z0-9_|]+")


def value_matches(pattern: str, value: str) -> bool:
    """Claude Code's matcher rule: exact names for ``[A-Za-z0-9_|]+``, else a regex search."""
    if _PLAIN.fullmatch(pattern):
        return value in pattern.split("|")
    return re.search(pattern, value) is not None


def if_condition(rule: str) -> tuple[str, str | None]:
    """A handler's ``if`` (a permission rule such as ``Bash(git *)``): (tool, pattern).

    Raises:
        ValueError: ``rule`` does not read ``Tool`` or ``Tool(pattern)``.
    """
    found = _CONDITION.fullmatch(rule)
    if found is None:
        raise ValueError(
            f"if {rule!r} is not a permission rule; write Tool or Tool(pattern), "
            "e.g. 'Bash(git *)' or 'Edit(*.py)'"
        )
    return found.group(1), found.group(2)


def condition_holds(rule: tuple[str, str | None], tool: str, tool_input: Mapping[str, Any]) -> bool:
    """Whether a call (Claude Code's tool name and input) meets an ``if`` rule."""
    name, pattern = rule
    if name != tool:
        return False
    if pattern is None or pattern.strip() in ("", "*"):
        return True
    pattern = pattern.replace(":*", " *") if pattern.endswith(":*") else pattern
    keys = _RULE_ARGUMENT.get(tool, tuple(tool_input))
    return any(
        isinstance(tool_input.get(key), str) and fnmatch.fnmatchcase(tool_input[key], pattern)
        for key in keys
    )


@dataclass(frozen=True)
class ClaudeOptions:
    """How a hook from a Claude Code settings file runs, beyond a hookscope hook's options.

    Args:
        event: The Claude Code event it was listed under (``SubagentStop`` …); the envelope's
            ``hook_event_name``.
        names: Claude Code's names for the agent's tools.
        source: SessionStart's ``source`` for this run (``startup``, or ``compact`` when the
            hook runs on ``on_compaction``).
        condition: The handler's ``if`` rule, parsed (:func:`if_condition`).
        once: Run once per session (``once: true``).
        background: Run without waiting and without a verdict (``async``/``asyncRewake``).
        rewake: On exit 2 of a background run, add its stderr to the turn's context
            (``asyncRewake``), after ``rewake_message``.
        rewake_message: The prefix for that text.
        plugin_root: ``CLAUDE_PLUGIN_ROOT`` for a plugin's hooks.
        transcript: Keep the transcript file (``transcript_path`` points to an empty file
            when not).
        tool_matcher: PermissionRequest's matcher (a ``HookMatcher``), checked at run time.
        agent_matcher: SubagentStart's/SubagentStop's matcher (on the subagent's name).
    """

    event: str
    names: ClaudeNames = field(default_factory=ClaudeNames)
    source: str | None = None
    condition: tuple[str, str | None] | None = None
    once: bool = False
    background: bool = False
    rewake: bool = False
    rewake_message: str = ""
    plugin_root: str | None = None
    transcript: bool = True
    tool_matcher: Any = None
    agent_matcher: str | None = None

    def skips(self, context: Any, data: Any) -> bool:
        """Whether this run is one Claude Code would not make."""
        if isinstance(context, TurnContext):
            # A subagent's run (adapters mark it) fires SubagentStart/SubagentStop; the
            # main agent's turns fire UserPromptSubmit/Stop.
            subagent = context.get(SUBAGENT_KEY)
            if self.event in ("SubagentStart", "SubagentStop"):
                if subagent is None:
                    return True
                matcher = self.agent_matcher
                if matcher and not value_matches(matcher, str(subagent[0])):
                    return True
            elif self.event in ("UserPromptSubmit", "Stop") and subagent is not None:
                return True
            if self.event == "UserPromptSubmit" and context.continues:
                return True  # a Stop hook's continuation is no user prompt
        if self.event == "PermissionRequest" and not any(
            getattr(question, "kind", "") == "confirm" for question in data or ()
        ):
            return True  # PermissionRequest is asked only for a call's confirmation
        if self.tool_matcher is not None:
            call = getattr(context, "call", None)
            if not isinstance(call, ToolCall) or not self.tool_matcher.matches(call):
                return True
        if self.condition is not None:
            call = data if isinstance(data, ToolCall) else getattr(data, "call", None)
            call = call if isinstance(call, ToolCall) else getattr(context, "call", None)
            if not isinstance(call, ToolCall):
                return True
            name = self.names.tool_name(call)
            if not condition_holds(self.condition, name, self.names.tool_input(call)):
                return True
        return False
