"""Matchers: which tool calls a hook sees.

A :class:`HookMatcher` narrows a hook on a tool event (``pre_tool_call``, ``post_tool_call``,
``on_tool_error``) to the calls it cares about — by tool name, by the paths the call touches,
or by the tool's tier. A hook whose matcher does not match is not called; the check is all it
costs. Every hook style takes one: ``@hooks.pre_tool_call_decide(matcher="run_command|bash")``,
a ``matcher`` class attribute, or ``matcher = {...}`` in a hook configuration file.

Example::

    guard = HookMatcher(tools="edit_file|write_to_file", paths=["/etc/**", "**/*.env"])
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection, Mapping, Sequence
from typing import Any, Final, final

from hookscope._paths import PathRejected, resolve_path
from hookscope.context import HookContext, OperationContext
from hookscope.types import ToolCall, ToolResult

__all__ = ["PATH_ARGUMENTS", "TIERS_KEY", "TOOL_EVENTS", "HookMatcher"]

#: The context key under which a tier table (tool name → tier, ``"*"`` for the default) is
#: stored; :class:`hookscope.builtins.ToolTiers` puts its table there when a session starts.
TIERS_KEY: Final = "hookscope.tool_tiers"

#: The call arguments a ``paths`` matcher reads (the same as ``policy.workspace_only``).
PATH_ARGUMENTS: Final = ("AbsolutePath", "TargetFile", "path", "file_path")

#: The events a matcher applies to: the ones whose data is (or names) a tool call.
TOOL_EVENTS: Final = frozenset({"pre_tool_call", "post_tool_call", "on_tool_error"})

# A pattern made only of these characters is a list of names (``Edit|Write``, ``github/*``),
# not a regular expression: names compare exactly, which is both faster and what users mean.
_PLAIN_NAMES: Final = re.compile(r"[\w.\-/|* ]+")
# Claude Code's own rule: only letters, digits, '_' and '|' make a list of exact names; any
# other character makes the matcher a regular expression, searched (not anchored).
_CLAUDE_PLAIN: Final = re.compile(r"[A-Za-z0-9_|]+")
_ALL: Final = frozenset({"", "*"})


def _is_plain(pattern: str, claude: bool) -> bool:
    if claude:
        return bool(_CLAUDE_PLAIN.fullmatch(pattern))
    return bool(_PLAIN_NAMES.fullmatch(pattern)) and "*" not in pattern.replace("/*", "")


def _compile_tools(
    tools: str | Sequence[str], claude: bool = False
) -> tuple[frozenset[str], frozenset[str], Any]:
    """(exact names, servers matched whole, regex or None) for a ``tools`` pattern."""
    alternatives = [tools] if isinstance(tools, str) else list(tools)
    names: set[str] = set()
    servers: set[str] = set()
    regexes: list[str] = []
    for pattern in alternatives:
        if not isinstance(pattern, str):
            raise ValueError(f"matcher tools must be strings, got {pattern!r}")
        if _is_plain(pattern, claude):
            for name in (part.strip() for part in pattern.split("|")):
                if not name:
                    raise ValueError(
                        f"matcher tools {pattern!r} has an empty alternative; "
                        "write names separated by '|', e.g. 'edit_file|write_to_file'"
                    )
                if name.endswith("/*"):
                    servers.add(name[:-2].strip().casefold())
                else:
                    names.add(name)
            continue
        try:
            re.compile(pattern)
        except re.error as error:
            raise ValueError(
                f"matcher tools {pattern!r} is not a valid regular expression ({error}); "
                "escape special characters or list exact names separated by '|'"
            ) from None
        regexes.append(f"(?:{pattern})")
    regex = re.compile("|".join(regexes)) if regexes else None
    return frozenset(names), frozenset(servers), regex


def _glob_to_regex(glob: str) -> str:
    """Translate a path glob: ``**`` crosses directories, ``*`` and ``?`` stay inside one."""
    out: list[str] = []
    i, n = 0, len(glob)
    while i < n:
        char = glob[i]
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif char == "*":
            out.append("[^/]*")
            i += 1
        elif char == "?":
            out.append("[^/]")
            i += 1
        elif char == "[":
            j = i + 1
            if j < n and glob[j] == "!":
                j += 1
            if j < n and glob[j] == "]":  # a leading ']' is a literal member of the class
                j += 1
            end = glob.find("]", j)
            if end < 0:
                raise ValueError(
                    f"path glob {glob!r} has an unbalanced '['; close it with ']' or "
                    "write '[[]' for a literal '['"
                )
            body = glob[i + 1 : end]
            if body.startswith("!"):
                body = "^" + body[1:]
            out.append(f"[{body.replace(chr(92), chr(92) * 2)}]")
            i = end + 1
        else:
            out.append(re.escape(char))
            i += 1
    return "".join(out)


@final
class HookMatcher:
    """Selects the tool calls a hook sees; every given criterion must match.

    Args:
        tools: Tool names — exact names separated by ``|`` (``"edit_file|write_to_file"``),
            ``server/*`` for every tool of an MCP server, or a regular expression matched
            against the whole name (``"mcp__.*"``); a call matches by its bare or its
            ``server/name`` form. ``None``, ``""`` or ``"*"``: every tool.
        paths: Glob patterns (``"/etc/**"``, ``"**/*.env"``) matched against the call's path
            arguments (:data:`PATH_ARGUMENTS`): as spelled, with ``..`` folded, and as the
            operating system resolves them (symlinks, ``//``, ``/proc/self/root``; a relative
            path from the current directory), by the resolver ``workspace_only`` uses. A path
            that cannot be resolved (a dangling symlink, a loop, over ``PATH_MAX``) matches,
            so the guard sees it; a call with no path argument does not match.
        tiers: Tool tiers (``"observe"``, ``"confirm"``) looked up in the tier table stored in
            the context under :data:`TIERS_KEY`; a call whose tool has no tier does not match.

    An MCP call (one with a ``server``) also matches by Claude Code's name for it,
    ``mcp__<server>__<tool>``, so ``"mcp__.*"`` and ``"mcp__github__.*"`` work everywhere.
    :meth:`claude` builds a matcher with Claude Code's own syntax and tool names.

    Raises:
        ValueError: A pattern is not a valid regular expression or glob (the message says
            how to fix it).
    """

    __slots__ = (
        "_aliases",
        "_claude",
        "_names",
        "_names_only",
        "_path_regex",
        "_regex",
        "_servers",
        "_tiers",
        "paths",
        "tiers",
        "tools",
    )

    def __init__(
        self,
        tools: str | Sequence[str] | None = None,
        paths: Sequence[str] | str | None = None,
        tiers: Collection[str] | str | None = None,
        *,
        _claude: bool = False,
        _aliases: Mapping[str, str] | None = None,
    ) -> None:
        self.tools = tools if isinstance(tools, str) or tools is None else tuple(tools)
        self._names: frozenset[str] | None = None
        self._servers: frozenset[str] = frozenset()
        self._regex: Any = None
        self._claude = _claude
        self._aliases: dict[str, str] = dict(_aliases or {})
        if tools is not None and not (isinstance(tools, str) and tools.strip() in _ALL):
            self._names, self._servers, self._regex = _compile_tools(tools, _claude)
            if self._names and self._aliases:
                # An exact Claude name matches the agent's tools aliased to it: still one
                # set lookup per call.
                aliased = {ours for ours, theirs in self._aliases.items() if theirs in self._names}
                self._names = self._names | aliased
        if isinstance(paths, str):
            paths = (paths,)
        self.paths = None if paths is None else tuple(paths)
        self._path_regex: re.Pattern[str] | None = None
        if self.paths is not None:
            if not self.paths or not all(isinstance(p, str) and p for p in self.paths):
                raise ValueError(
                    f"matcher paths must be non-empty glob strings, got {paths!r}; "
                    "e.g. paths=['/etc/**', '**/*.env']"
                )
            self._path_regex = re.compile("|".join(_glob_to_regex(p) for p in self.paths))
        if isinstance(tiers, str):
            tiers = (tiers,)
        self.tiers = None if tiers is None else frozenset(tiers)
        self._tiers = self.tiers
        if self.tiers is not None and not all(isinstance(t, str) and t for t in self.tiers):
            raise ValueError(f"matcher tiers must be tier names, got {tiers!r}")
        # The common matcher — a few exact names — is a set lookup and nothing else.
        self._names_only = (
            self._names is not None
            and not self._servers
            and self._regex is None
            and self._path_regex is None
            and self._tiers is None
        )

    @classmethod
    def claude(cls, tools: str, aliases: Mapping[str, str] | None = None) -> HookMatcher:
        """A matcher written as in a Claude Code settings file.

        Names made only of letters, digits, ``_`` and ``|`` are exact names (``Edit|Write``);
        anything else is a regular expression *searched* in the name, as Claude Code does
        (``Bash.*``, ``^Bash$``, ``(Bash)``, ``mcp__github__.*``). Calls are matched by
        Claude Code's name for them: ``aliases`` (agent tool → Claude tool, the reverse of a
        settings file's ``tool_aliases``) and ``mcp__<server>__<tool>`` for MCP calls.

        Raises:
            ValueError: ``tools`` is not a valid regular expression.
        """
        return cls(tools=tools, _claude=True, _aliases=aliases)

    @classmethod
    def parse(cls, value: object) -> HookMatcher | None:
        """A matcher from a :class:`HookMatcher`, a tools pattern (str) or ``None``.

        Raises:
            ValueError: ``value`` is another type or a bad pattern.
        """
        if value is None or isinstance(value, HookMatcher):
            return value
        if isinstance(value, str):
            return cls(tools=value)
        raise ValueError(
            f"matcher must be a HookMatcher or a tools pattern string, got {value!r}; "
            "e.g. matcher='run_command|bash' or matcher=HookMatcher(paths=['/etc/**'])"
        )

    @property
    def selects_tools(self) -> bool:
        """Whether the matcher narrows calls at all (a matcher with no criteria matches all)."""
        return self._names is not None or self.paths is not None or self.tiers is not None

    def admits(self, context: HookContext, data: Any) -> bool:
        """:meth:`matches` for the data a tool event dispatches (a call, a result, an error),
        in one call: the dispatch loop asks this for every hook with a matcher."""
        # The pre_tool_call case inline: it is the one every guard hook meets.
        call = data if type(data) is ToolCall else _call_of(context, data)
        if self._names_only:
            names = self._names
            assert names is not None
            server = call.server
            return call.name in names or (
                server is not None
                and (call.qualified_name in names or f"mcp__{server}__{call.name}" in names)
            )
        return self.matches(call, context)

    def matches(self, call: ToolCall, context: HookContext | None = None) -> bool:
        """Whether ``call`` (made in ``context``) is one the hook should see."""
        if self._names is not None and not self._matches_tool(call):
            return False
        if self._path_regex is not None and not self._matches_path(call.args):
            return False
        if self._tiers is not None:
            table = context.get(TIERS_KEY) if context is not None else None
            if not isinstance(table, Mapping):
                return False
            # An MCP tool's tier may be given as server/tool (as ToolTiers reads it) or bare.
            tier = table.get(call.qualified_name, table.get(call.name, table.get("*")))
            if tier not in self._tiers:
                return False
        return True

    def _matches_tool(self, call: ToolCall) -> bool:
        names = self._names
        assert names is not None
        if call.name in names:
            return True
        server = call.server
        if server is not None:
            qualified = call.qualified_name
            if qualified in names or server.strip().casefold() in self._servers:
                return True
        elif "/" in call.name and call.name.partition("/")[0].strip().casefold() in self._servers:
            return True  # a server-less "server/tool" name reads as that server's tool
        elif call.name in self._aliases and self._aliases[call.name] in names:
            return True
        if server is not None and f"mcp__{server}__{call.name}" in names:
            return True
        regex = self._regex
        if regex is None:
            return False
        if self._claude:  # searched in Claude Code's name for the call, as Claude Code does
            if server is not None:
                return bool(regex.search(f"mcp__{server}__{call.name}"))
            return bool(regex.search(self._aliases.get(call.name, call.name)))
        return bool(
            regex.fullmatch(call.name)
            or (
                server is not None
                and (
                    regex.fullmatch(call.qualified_name)
                    or regex.fullmatch(f"mcp__{server}__{call.name}")
                )
            )
        )

    def _matches_path(self, args: Mapping[str, Any]) -> bool:
        regex = self._path_regex
        assert regex is not None
        for key in PATH_ARGUMENTS:
            value = args.get(key)
            if not isinstance(value, str) or not value:
                continue
            # The folded form too: "/tmp/../etc/passwd" is a path under /etc.
            if regex.fullmatch(value) or regex.fullmatch(os.path.normpath(value)):
                return True
            # Then where it really leads, as workspace_only sees it: a symlink into /etc,
            # "//etc/hosts", "/proc/self/root/etc/hosts" or "../../etc/hosts" is under /etc.
            try:
                real = resolve_path(value, os.getcwd())
            except (PathRejected, OSError):
                return True  # where it leads is unknown: let the guard see the call
            if regex.fullmatch(real):
                return True
        return False

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, HookMatcher):
            return NotImplemented
        return self._key() == other._key()

    def _key(self) -> tuple[Any, ...]:
        aliases = tuple(sorted(self._aliases.items()))
        return (self.tools, self.paths, self.tiers, self._claude, aliases)

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        given = [
            f"{name}={value!r}"
            for name, value in (("tools", self.tools), ("paths", self.paths), ("tiers", self.tiers))
            if value is not None
        ]
        if self._claude:
            return f"HookMatcher.claude({self.tools!r})"
        return f"HookMatcher({', '.join(given)})"


def _call_of(context: HookContext, data: Any) -> ToolCall:
    """The call a ``post_tool_call`` or ``on_tool_error`` dispatch concerns."""
    if type(data) is ToolResult:
        return data.call
    call = context.call if isinstance(context, OperationContext) else None
    return call if call is not None else _NO_CALL


_NO_CALL: Final = ToolCall("")
