"""Claude Code ``permissions`` from a settings file, compiled into one ``PolicyEnforcer``.

A ``.claude/settings.json`` such as::

    {"permissions": {
        "allow": ["Bash(npm run test:*)", "Edit(src/**)", "mcp__github"],
        "ask": ["Bash(git push:*)"],
        "deny": ["Read(./.env)", "WebFetch(domain:example.com)", "mcp__github__delete_repo"],
        "defaultMode": "default",
        "additionalDirectories": ["../shared"]}}

loads as hookscope policy rules with Claude Code's precedence — deny before ask before allow,
whatever the rules target — and its rule syntax:

- ``Tool`` (or ``Tool(*)``): every call of the tool.
- ``Bash(spec)``: the command equals ``spec``, where ``*`` stands for any text and a trailing
  ``:*`` or `` *`` for "followed by nothing or by a space and anything" (``npm run test:*``
  matches ``npm run test`` and ``npm run test -- -x``, not ``npm run testing``). A compound
  command (``&&``, ``||``, ``;``, ``|``, ``&``, a newline) is split: a deny or ask rule matches
  when any part does, an allow rule only when every part does and none substitutes a command
  (``$(...)`` or backquotes).
- ``Read(path)``, ``Edit(path)`` and the other file tools: a gitignore-style path — ``//p``
  from the file-system root, ``~/p`` from the home directory, ``/p``, ``./p`` and ``p`` from
  the project directory; a pattern without ``/`` matches at any depth; a directory matches
  what is inside it. ``Edit`` rules apply to every editing tool (Edit, Write, MultiEdit,
  NotebookEdit), ``Read`` rules to every reading one (Read, NotebookRead, Glob, Grep, LS). The
  path is matched where it really leads (the resolver of ``workspace_only``).
- ``WebFetch(domain:host)``: the URL's host is ``host`` (``*.host`` for its subdomains).
- ``mcp__server`` / ``mcp__server__*``: every tool of an MCP server; ``mcp__server__tool``.
- ``Tool(spec)`` for another tool: ``spec`` (``*`` wildcards) matches one of its string
  arguments.

``defaultMode`` decides calls no rule matches, as in Claude Code: ``default`` (also when
absent) asks, ``acceptEdits`` asks but allows edits inside the working directories, ``plan``
and ``dontAsk`` deny, ``bypassPermissions`` allows. In every mode but ``bypassPermissions``
the tools Claude Code runs without asking (Read, Glob, Grep, LS, NotebookRead inside the
working directories — the project and ``additionalDirectories`` — and TodoWrite, Task, Agent)
are allowed. ``tool_aliases`` map Claude Code's tool names, and their argument names, to the
agent's (``{"Bash": "run_command"}`` also maps ``command`` to ``CommandLine``).
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

from hookscope._paths import WorkspaceGuard
from hookscope._rules import CONFIRM, Policy, PolicyError, parse_target
from hookscope.engine.policy_config import Check, path_check
from hookscope.matching import _glob_to_regex
from hookscope.policy import PolicyEnforcer
from hookscope.types import Decision

__all__ = ["MODES", "PERMISSION_KEYS", "compile_permissions"]

#: The keys of Claude Code's ``permissions`` object hookscope reads (or accepts and ignores:
#: ``disableBypassPermissionsMode`` concerns Claude Code's own mode switch).
PERMISSION_KEYS: Final = frozenset(
    {"allow", "ask", "deny", "defaultMode", "additionalDirectories", "disableBypassPermissionsMode"}
)
MODES: Final = ("default", "acceptEdits", "plan", "dontAsk", "bypassPermissions")
_EFFECTS: Final = (("deny", Decision.DENY), ("ask", Decision.ASK_USER), ("allow", Decision.ALLOW))
EDIT_TOOLS: Final = ("Edit", "Write", "MultiEdit", "NotebookEdit")
READ_TOOLS: Final = ("Read", "NotebookRead", "Glob", "Grep", "LS")
#: Each tool's path argument, in Claude Code's names.
_PATH_ARGUMENT: Final[Mapping[str, str]] = {
    "Read": "file_path",
    "Edit": "file_path",
    "Write": "file_path",
    "MultiEdit": "file_path",
    "NotebookEdit": "notebook_path",
    "NotebookRead": "notebook_path",
    "Glob": "path",
    "Grep": "path",
    "LS": "path",
}
#: Tools whose path argument may be left out (they then work in the project directory).
_OPTIONAL_PATH: Final = frozenset({"Glob", "Grep"})
_NO_PERMISSION: Final = ("TodoWrite", "Task", "Agent")
#: Claude Code's argument names → the agent's, for aliases whose tools are known.
_BUILTIN_ARGUMENTS: Final[Mapping[tuple[str, str], Mapping[str, str]]] = {
    ("Bash", "run_command"): {"command": "CommandLine"},
    ("Read", "view_file"): {"file_path": "AbsolutePath"},
    ("Write", "write_to_file"): {"file_path": "TargetFile", "content": "CodeContent"},
    ("Edit", "replace_file_content"): {"file_path": "TargetFile"},
    ("Edit", "edit_file"): {"file_path": "TargetFile"},
}
_RULE: Final = re.compile(r"([A-Za-z0-9_\-]+)(?:\((.*)\))?", re.DOTALL)
_SPLIT: Final = re.compile(r"&&|\|\||;|\||&|\n")
_SUBSTITUTION: Final = re.compile(r"\$\(|`")

Report = Callable[[str, str], None]


def _aliases(given: Mapping[str, Any] | None) -> dict[str, tuple[str, Mapping[str, str]]]:
    """Claude tool → (agent tool, Claude argument → agent argument)."""
    out: dict[str, tuple[str, Mapping[str, str]]] = {}
    for claude, value in (given or {}).items():
        if isinstance(value, str):
            out[claude] = (value, _BUILTIN_ARGUMENTS.get((claude, value), {}))
        elif isinstance(value, Mapping) and isinstance(value.get("tool"), str):
            out[claude] = (value["tool"], dict(value.get("args") or {}))
        elif isinstance(getattr(value, "tool", None), str):  # an alias object
            out[claude] = (value.tool, dict(getattr(value, "args", {}) or {}))
    return out


class _Compiler:
    def __init__(
        self, project: Path, aliases: Mapping[str, Any] | None, report: Report, where: str
    ) -> None:
        self.project = project
        self.aliases = _aliases(aliases)
        self.report = report
        self.where = where
        self.failed = False
        self.servers: list[str] = []
        #: The allow rules' Bash patterns: a compound command whose every part one of them
        #: allows is allowed, as in Claude Code.
        self.bash_allowed: list[Callable[[str], Any]] = []

    def bad(self, entry: str, text: str) -> None:
        self.failed = True
        self.report(entry, text)

    def tool(self, claude: str) -> tuple[str, Callable[[str], str]]:
        """The agent's name for a Claude tool, and its argument-name translation."""
        name, args = self.aliases.get(claude, (claude, {}))
        return name, lambda key: args.get(key, key)

    # --- one rule string -------------------------------------------------------------------

    def rule(self, text: Any, effect: str, decision: Decision, entry: str) -> list[Policy]:
        if not isinstance(text, str):
            self.bad(
                entry, f"a permission rule is a string such as 'Bash(npm test:*)', got {text!r}"
            )
            return []
        found = _RULE.fullmatch(text.strip())
        if found is None:
            self.bad(
                entry,
                f"{text!r} is not a permission rule; write Tool or Tool(specifier), e.g. "
                "'Bash(npm run test:*)', 'Read(./.env)', 'WebFetch(domain:example.com)', "
                "'mcp__server__tool'",
            )
            return []
        tool, spec = found.group(1), found.group(2)
        name = f"{effect}:{text.strip()}"
        strict = decision is not Decision.ALLOW
        if tool.startswith("mcp__"):
            return self.mcp(tool, spec, decision, name, entry)
        whole = spec is None or spec.strip() in ("", "*")
        if tool in ("Edit", "Read"):
            tools: Sequence[str] = EDIT_TOOLS if tool == "Edit" else READ_TOOLS
        else:
            tools = (tool,)
        if not whole and not strict and tool in _PATH_ARGUMENT and tool not in ("Edit", "Read"):
            # The CLI grants nothing for Write(path) and the like (only Edit(...) and
            # Read(...) carry paths): neither does hookscope. Their deny and ask rules, which
            # the CLI ignores too, are kept: stricter is the safe side.
            return []
        rules: list[Policy] = []
        for claude in tools:
            agent, arg = self.tool(claude)
            when: Check | None = None
            if not whole:
                assert spec is not None
                when = self.condition(claude, spec.strip(), arg, strict, entry)
                if when is None:
                    return []
            rules.append(self.policy(agent, decision, when, name))
        return rules

    def policy(self, target: str, decision: Decision, when: Check | None, name: str) -> Policy:
        # Targets are made of the rule syntax's name characters: they always parse.
        handler = CONFIRM if decision is Decision.ASK_USER else None
        effect, _, rule = name.partition(":")
        reason = f"Claude Code permission rule {rule!r} ({effect})"
        return Policy(target, decision, when=when, handler=handler, name=name, reason=reason)

    def mcp(
        self, tool: str, spec: str | None, decision: Decision, name: str, entry: str
    ) -> list[Policy]:
        server, _, rest = tool[len("mcp__") :].partition("__")
        if not server:
            self.bad(entry, f"{tool!r} names no MCP server; write mcp__server or mcp__server__tool")
            return []
        if spec is not None:
            self.bad(entry, f"{tool}({spec}): MCP rules take no specifier; drop the (...)")
            return []
        self.servers.append(server)
        target = f"{server}/*" if rest in ("", "*") else f"{server}/{rest}"
        return [self.policy(target, decision, None, name)]

    def condition(
        self, claude: str, spec: str, arg: Callable[[str], str], strict: bool, entry: str
    ) -> Check | None:
        if claude == "Bash":
            if not strict:
                self.bash_allowed.append(_bash_regex(spec).fullmatch)
            return _bash(arg("command"), spec, strict)
        if claude in _PATH_ARGUMENT:
            glob = self.path_glob(spec)
            try:
                fullmatch = re.compile(f"(?:{_glob_to_regex(glob)})(?:/.*)?").fullmatch
            except ValueError as error:
                self.bad(entry, str(error))
                return None
            return path_check((arg(_PATH_ARGUMENT[claude]),), fullmatch, strict)
        if claude == "WebFetch":
            if not spec.startswith("domain:") or not spec[len("domain:") :].strip():
                self.bad(entry, f"WebFetch({spec}): write WebFetch(domain:example.com)")
                return None
            return _domain(arg("url"), spec[len("domain:") :].strip().casefold(), strict)
        pattern = re.compile(fnmatch.translate(spec), re.DOTALL).fullmatch

        def any_argument(args: Mapping[str, Any]) -> bool:
            return any(type(v) is str and pattern(v) is not None for v in args.values())

        return any_argument

    def path_glob(self, spec: str) -> str:
        """The absolute glob a gitignore-style Claude Code path pattern stands for."""
        if spec.startswith("//"):
            return spec[1:]
        if spec.startswith("~/"):
            return os.path.join(os.path.expanduser("~"), spec[2:])
        body = spec.lstrip("/") if spec.startswith("/") else spec
        body = body[2:] if body.startswith("./") else body
        if "/" not in body.rstrip("/") and not spec.startswith(("/", "./")):
            body = f"**/{body}"  # no slash: at any depth, as gitignore reads it
        return os.path.join(self.project, body.rstrip("/"))

    def compound(self) -> Policy:
        """The allow rule for compound commands whose every part an allow rule allows."""
        key = self.tool("Bash")[1]("command")
        patterns = tuple(self.bash_allowed)

        def every_part(args: Mapping[str, Any]) -> bool:
            command = args.get(key)
            if type(command) is not str or _SUBSTITUTION.search(command):
                return False
            parts = [part.strip() for part in _SPLIT.split(command) if part.strip()]
            return len(parts) > 1 and all(any(p(part) for p in patterns) for part in parts)

        name = "allow:Bash(every part allowed)"
        return self.policy(self.tool("Bash")[0], Decision.ALLOW, every_part, name)

    # --- the mode -------------------------------------------------------------------------

    def mode(self, mode: str, roots: list[str]) -> list[Policy]:
        if mode == "bypassPermissions":
            return []
        rules: list[Policy] = []
        name = f"defaultMode:{mode}"
        guard = WorkspaceGuard(roots, ["_"])
        free = list(READ_TOOLS) + (list(EDIT_TOOLS) if mode == "acceptEdits" else [])
        for claude in free:
            agent, arg = self.tool(claude)
            key = arg(_PATH_ARGUMENT[claude])
            rules.append(
                Policy(
                    agent,
                    Decision.ALLOW,
                    when=_inside(guard, key, claude in _OPTIONAL_PATH),
                    name=name,
                )
            )
        for claude in _NO_PERMISSION:
            rules.append(Policy(self.tool(claude)[0], Decision.ALLOW, name=name))
        if mode in ("plan", "dontAsk"):
            reason = f"Claude Code's {mode} mode denies calls no permission rule allows"
            rules.append(Policy("*", Decision.DENY, name=name, reason=reason))
        else:
            reason = "no Claude Code permission rule allows this call; confirm it"
            rules.append(Policy("*", Decision.ASK_USER, handler=CONFIRM, name=name, reason=reason))
        return rules


def _inside(guard: WorkspaceGuard, key: str, optional: bool) -> Check:
    def inside(args: Mapping[str, Any]) -> bool:
        if key not in args:
            return optional
        return guard.violation({"_": args[key]}) is None

    return inside


def _bash_regex(spec: str) -> re.Pattern[str]:
    tail = ""
    if spec.endswith(":*") or spec.endswith(" *"):
        spec, tail = spec[:-2], "(?: .*)?"
    body = ".*".join(re.escape(part) for part in spec.split("*"))
    return re.compile(body + tail, re.DOTALL)


def _bash(key: str, spec: str, strict: bool) -> Check:
    fullmatch = _bash_regex(spec).fullmatch

    def bash(args: Mapping[str, Any]) -> bool:
        command = args.get(key)
        if type(command) is not str:
            return strict and key in args
        parts = [part.strip() for part in _SPLIT.split(command) if part.strip()]
        if strict:
            return any(fullmatch(part) is not None for part in parts) or (
                fullmatch(command.strip()) is not None
            )
        if not parts or _SUBSTITUTION.search(command):
            return False
        return all(fullmatch(part) is not None for part in parts)

    return bash


def _domain(key: str, domain: str, strict: bool) -> Check:
    def host_of(url: str) -> str | None:
        try:
            return urlsplit(url).hostname
        except ValueError:
            return None

    def fetch(args: Mapping[str, Any]) -> bool:
        url = args.get(key)
        if key not in args:
            return False
        host = host_of(url) if type(url) is str else None
        if host is None:
            return strict
        return fnmatch.fnmatchcase(host.casefold(), domain)

    return fetch


def _strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def compile_permissions(
    permissions: Any,
    where: str,
    project_dir: Path,
    tool_aliases: Mapping[str, Any] | None,
    report: Report,
) -> PolicyEnforcer | None:
    """Compile a settings file's ``permissions`` object; problems go to ``report``.

    Returns:
        The enforcer (named ``permissions``), or ``None`` when a problem was reported.
    """
    compiler = _Compiler(project_dir, tool_aliases, report, where)
    if not isinstance(permissions, Mapping):
        compiler.bad(where, f"must be an object with allow, ask, deny, got {permissions!r}")
        return None
    unknown = sorted(set(permissions) - PERMISSION_KEYS)
    if unknown:
        compiler.bad(where, f"unknown key(s) {unknown}; allowed: {sorted(PERMISSION_KEYS)}")
    by_effect: dict[Decision, list[Policy]] = {}
    for effect, decision in _EFFECTS:
        items = permissions.get(effect, [])
        if not isinstance(items, list):
            compiler.bad(f"{where}.{effect}", f"must be a list of rule strings, got {items!r}")
            continue
        rules = by_effect.setdefault(decision, [])
        for index, text in enumerate(items):
            rules.extend(compiler.rule(text, effect, decision, f"{where}.{effect}[{index}]"))
    if compiler.bash_allowed:
        by_effect[Decision.ALLOW].append(compiler.compound())
    mode = permissions.get("defaultMode", "default")
    if mode not in MODES:
        compiler.bad(f"{where}.defaultMode", f"must be one of {', '.join(MODES)}, got {mode!r}")
    directories = permissions.get("additionalDirectories", [])
    if not _strings(directories):
        compiler.bad(
            f"{where}.additionalDirectories", f"must be a list of directories, got {directories!r}"
        )
        directories = []
    if compiler.failed:
        return None
    roots = [str(project_dir)] + [
        os.path.join(project_dir, os.path.expanduser(d)) for d in directories
    ]
    rules = [
        *by_effect.get(Decision.DENY, []),
        *by_effect.get(Decision.ASK_USER, []),
        *by_effect.get(Decision.ALLOW, []),
    ]
    rules = _server_wide_first(rules) + compiler.mode(str(mode), roots)
    try:
        return PolicyEnforcer(rules, compiler.servers, name="permissions")
    except (PolicyError, TypeError) as error:
        report(where, str(error))
        return None


_STRENGTH: Final = {Decision.DENY: 0, Decision.ASK_USER: 1, Decision.ALLOW: 2}


def _server_wide_first(rules: list[Policy]) -> list[Policy]:
    """Keep deny > ask > allow across targets: a server-wide deny (``mcp__github``) also beats
    an allow rule for one of its tools, although hookscope ranks exact targets first."""
    wide = [
        (parse_target(rule.tool)[1], rule)
        for rule in rules
        if parse_target(rule.tool)[0] == 1 and rule.decision is not Decision.ALLOW
    ]
    copies: list[Policy] = []
    for rule in rules:
        tier, server, _ = parse_target(rule.tool)
        if tier != 0 or server is None:
            continue
        for wide_server, wide_rule in wide:
            if wide_server == server and _STRENGTH[wide_rule.decision] < _STRENGTH[rule.decision]:
                copies.append(
                    Policy(
                        rule.tool,
                        wide_rule.decision,
                        handler=wide_rule.handler,
                        name=wide_rule.name,
                        reason=wide_rule.reason,
                    )
                )
    return copies + rules
