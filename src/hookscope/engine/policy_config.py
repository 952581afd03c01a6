"""Policy rules in configuration files: ``[policy]`` compiled into one ``PolicyEnforcer``.

``hookscope.toml`` (or ``[tool.hookscope]`` in ``pyproject.toml``) may carry::

    [policy]
    workspace_only = ["."]              # relative to the file's directory
    mcp_servers = ["github"]            # optional; default: the servers the rules name

    [[policy.rules]]
    effect = "deny"                     # deny | ask | allow
    tool = "run_command"                # a name, "server/tool", "server/*" or "*"
    args.CommandLine = { matches = '\\brm\\s+-rf\\b' }
    reason = "no recursive deletes"

The rules keep the nine buckets of :mod:`hookscope.policy` (the file's order is the order inside
a bucket), and an ``ask`` rule asks through the runner (:data:`hookscope.policy.CONFIRM`): a
confirm question to the ``on_interaction`` hooks. Argument conditions (``args.<key>``, all of
them must hold) are ``matches`` (a regular expression searched in a string argument),
``equals`` (the exact value) and ``glob`` (a path glob, relative ones taken from the file's
directory, matched against where the path really leads, by the resolver ``workspace_only``
uses). On doubt the stricter reading wins: a value a condition cannot read (missing is not
doubt; a non-string, a relative or unresolvable path is) makes a deny or ask rule match and an
allow rule not match; an allow rule's ``glob`` is matched only against the resolved path,
a deny rule's against the path as written, folded and resolved.

Validation is total and names the file, the rule and the fix; nothing is compiled from a table
with a problem.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from hookscope._paths import PathRejected, resolve_path
from hookscope._rules import CONFIRM, Policy, PolicyError, parse_target
from hookscope.matching import _glob_to_regex
from hookscope.policy import (
    WORKSPACE_PATH_ARGS,
    WORKSPACE_TOOLS,
    PolicyEnforcer,
    workspace_only,
)
from hookscope.types import Decision

__all__ = ["EFFECTS", "POLICY_KEYS", "RULE_KEYS", "compile_policy", "load_policy", "path_check"]

#: What a rule's ``effect`` may say, and the decision each is.
EFFECTS: Final[Mapping[str, Decision]] = {
    "deny": Decision.DENY,
    "ask": Decision.ASK_USER,
    "allow": Decision.ALLOW,
}
#: The keys of ``[policy]`` and of one ``[[policy.rules]]`` entry.
POLICY_KEYS: Final = frozenset(
    {
        "rules",
        "workspace_only",
        "workspace_tools",
        "workspace_path_args",
        "mcp_servers",
        "normalize",
    }
)
RULE_KEYS: Final = frozenset({"effect", "tool", "server", "name", "reason", "args"})
_CONDITIONS: Final = ("matches", "glob", "equals")
_MISSING: Final = object()

Report = Callable[[str, str], None]


def compile_policy(
    table: Any,
    where: str,
    project_dir: Path,
    report: Report,
    *,
    extra: Sequence[Policy] = (),
    mcp_servers: Sequence[str] = (),
) -> PolicyEnforcer | None:
    """Compile a ``[policy]`` table; every problem goes to ``report(entry, text)``.

    Args:
        table: The ``policy`` table as decoded.
        where: Its name in messages (``policy`` or ``tool.hookscope.policy``).
        project_dir: The file's project directory: relative workspaces and globs start there.
        report: Collects problems (the loader's ``ConfigError`` lists them all).
        extra: Rules from elsewhere in the same file, appended after the table's own.
        mcp_servers: Servers registered by those other rules' source.

    Returns:
        The enforcer, or ``None`` when a problem was reported (nothing is compiled then).
    """
    before: list[str] = []

    def note(entry: str, text: str) -> None:
        before.append(entry)
        report(entry, text)

    if not isinstance(table, Mapping):
        note(where, f"must be a table ([{where}]), got {table!r}")
        return None
    unknown = sorted(set(table) - POLICY_KEYS)
    if unknown:
        note(where, f"unknown key(s) {unknown}; allowed: {sorted(POLICY_KEYS)}")
    rules: list[Policy] = []
    servers: list[str] = list(mcp_servers)
    items = table.get("rules", [])
    if not isinstance(items, list):
        note(f"{where}.rules", f"must be a list of tables ([[{where}.rules]]), got {items!r}")
        items = []
    for index, item in enumerate(items):
        rule = _rule(item, f"{where}.rules[{index}]", project_dir, note)
        if rule is not None:
            rules.append(rule)
            target_server = parse_target(rule.tool)[1]
            if target_server is not None:
                servers.append(target_server)
    rules.extend(_workspace(table, where, project_dir, note))
    rules.extend(extra)
    normalize = table.get("normalize", False)
    if not isinstance(normalize, bool):
        note(f"{where}.normalize", f"must be true or false, got {normalize!r}")
    if "mcp_servers" in table:
        given = table["mcp_servers"]
        if not _strings(given):
            note(f"{where}.mcp_servers", f"must be a list of server names, got {given!r}")
        else:
            servers = [*given, *mcp_servers]
    if before:
        return None
    try:
        return PolicyEnforcer(rules, servers, normalize=normalize, name="policy")
    except (PolicyError, TypeError) as error:
        report(where, str(error))
        return None


def _strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) and v for v in value)


def _workspace(table: Mapping[str, Any], where: str, project: Path, note: Report) -> list[Policy]:
    roots = table.get("workspace_only")
    tools = table.get("workspace_tools", list(WORKSPACE_TOOLS))
    path_args = table.get("workspace_path_args", list(WORKSPACE_PATH_ARGS))
    problems = False
    for key, value in (("workspace_tools", tools), ("workspace_path_args", path_args)):
        if not _strings(value) or not value:
            note(f"{where}.{key}", f"must be a non-empty list of names, got {value!r}")
            problems = True
    if roots is None:
        if "workspace_tools" in table or "workspace_path_args" in table:
            note(where, "workspace_tools/workspace_path_args need workspace_only = [dirs]")
        return []
    if isinstance(roots, str):
        roots = [roots]
    if not _strings(roots) or not roots:
        note(
            f"{where}.workspace_only",
            f'must be a list of directories, e.g. ["."] for the file\'s own, got {roots!r}',
        )
        return []
    if problems:
        return []
    # Relative workspaces are the file's: "." is the project the file configures.
    absolute = [os.path.join(project, root) for root in roots]
    try:
        return workspace_only(absolute, tools=tools, path_args=path_args)
    except PolicyError as error:
        note(f"{where}.workspace_only", str(error))
        return []


def _rule(item: Any, entry: str, project: Path, note: Report) -> Policy | None:
    if not isinstance(item, Mapping):
        note(entry, f"must be a table of rule settings, got {item!r}")
        return None
    count = 0

    def bad(text: str) -> None:
        nonlocal count
        count += 1
        note(entry, text)

    unknown = sorted(set(item) - RULE_KEYS)
    if unknown:
        bad(f"unknown key(s) {unknown}; allowed: {sorted(RULE_KEYS)}")
    effect = item.get("effect")
    if effect not in EFFECTS:
        bad(f'effect must be "deny", "ask" or "allow", got {effect!r}')
    tool, server = item.get("tool"), item.get("server")
    target = ""
    if not isinstance(tool, str) or not tool:
        bad('needs tool = "name" (or "server/tool", "server/*", "*" for every tool)')
    elif server is not None and (not isinstance(server, str) or not server.strip()):
        bad(f"server must be an MCP server's name, got {server!r}")
    elif server is not None and "/" in tool:
        bad(f'tool {tool!r} names a server already; drop server = {server!r} or the "server/"')
    else:
        target = tool if server is None else f"{server.strip()}/{tool}"
        try:
            parse_target(target)
        except PolicyError as error:
            bad(str(error))
    for key in ("name", "reason"):
        if key in item and not isinstance(item[key], str):
            bad(f"{key} must be a string, got {item[key]!r}")
    decision = EFFECTS.get(effect, Decision.DENY) if isinstance(effect, str) else Decision.DENY
    when = _conditions(item.get("args"), entry, project, decision, bad)
    if count:
        return None
    try:
        return Policy(
            target,
            decision,
            when=when,
            handler=CONFIRM if decision is Decision.ASK_USER else None,
            name=item.get("name", ""),
            reason=item.get("reason", ""),
        )
    except PolicyError as error:
        note(entry, str(error))
        return None


# --- argument conditions --------------------------------------------------------------------

#: A compiled condition: the call's args in, whether the condition holds out. Each one reads
#: its own argument, so a rule with one condition costs one call, as a Python ``when`` does.
Check = Callable[[Mapping[str, Any]], bool]


def _conditions(
    table: Any, entry: str, project: Path, decision: Decision, bad: Callable[[str], None]
) -> Check | None:
    """One predicate over the call's args for the rule's ``args`` table (all must hold)."""
    if table is None:
        return None
    if not isinstance(table, Mapping) or not table:
        bad(
            "args must be a table of argument conditions, e.g. "
            f'args.path = {{ glob = "/etc/**" }}, got {table!r}'
        )
        return None
    strict = decision is not Decision.ALLOW  # on doubt, a deny or ask rule matches
    checks: list[Check] = []
    for key, spec in table.items():
        if not isinstance(spec, Mapping) or not spec:
            bad(f"args.{key} must be a table with matches, glob or equals, got {spec!r}")
            continue
        unknown = sorted(set(spec) - set(_CONDITIONS))
        if unknown:
            bad(f"args.{key} has unknown condition(s) {unknown}; use matches, glob or equals")
            continue
        for kind, value in spec.items():
            check = _condition(key, kind, value, project, strict, bad)
            if check is not None:
                checks.append(check)
    if not checks:
        return None
    if len(checks) == 1:
        return checks[0]
    every = tuple(checks)
    return lambda args: all(check(args) for check in every)


def _condition(
    key: str, kind: str, value: Any, project: Path, strict: bool, bad: Callable[[str], None]
) -> Check | None:
    missing = _MISSING
    if kind == "equals":
        expected, expected_type = value, type(value)

        def equals(args: Mapping[str, Any]) -> bool:
            found = args.get(key, missing)
            # Same type too: TOML's 1 is not true, and "1" is not 1.
            return type(found) is expected_type and bool(found == expected)

        return equals
    label = f"args.{key}.{kind}"
    if not isinstance(value, str) or not value:
        bad(f"{label} must be a non-empty string, got {value!r}")
        return None
    if kind == "matches":
        try:
            search = re.compile(value).search
        except re.error as error:
            bad(f"{label} {value!r} is not a valid regular expression ({error}); escape it")
            return None

        def matches(args: Mapping[str, Any]) -> bool:
            found = args.get(key, missing)
            if type(found) is str:
                return search(found) is not None
            return strict and found is not missing  # a value no regex can read

        return matches
    glob = value if os.path.isabs(value) else os.path.join(project, value)
    try:
        fullmatch = re.compile(_glob_to_regex(glob)).fullmatch
    except ValueError as error:
        bad(f"{label}: {error}")
        return None
    return path_check((key,), fullmatch, strict)


def path_check(keys: Sequence[str], fullmatch: Callable[[str], Any], strict: bool) -> Check:
    """Whether the first of ``keys`` the call has names a path ``fullmatch`` accepts.

    Matched where the path really leads (the resolver of ``workspace_only``); for a ``strict``
    (deny or ask) rule also as written and folded, and a path that cannot be resolved matches.
    """
    missing = _MISSING

    def glob_check(args: Mapping[str, Any]) -> bool:
        found: Any = missing
        for key in keys:
            found = args.get(key, missing)
            if found is not missing:
                break
        if found is missing:
            return False
        try:
            real = resolve_path(found)
        except PathRejected:
            return strict  # relative, NUL, not a string, a loop: where it leads is unknown
        if fullmatch(real) is not None:
            return True
        # A deny rule also meets the path as written and folded ("/etc/../etc/passwd"); an
        # allow rule only where the path really leads, so a symlink cannot borrow it.
        spelled = os.fspath(found)
        return strict and (
            fullmatch(spelled) is not None or fullmatch(os.path.normpath(spelled)) is not None
        )

    return glob_check


def load_policy(
    source: str | os.PathLike[str] | Mapping[str, Any],
    *,
    tool_aliases: Mapping[str, str] | None = None,
) -> PolicyEnforcer | None:
    """The ``PolicyEnforcer`` a configuration file compiles, validated with the whole file.

    Python hook references are resolved but not called (as ``hookscope hooks check`` does).

    Returns:
        The enforcer, or ``None`` when the file has no policy.

    Raises:
        ConfigError: the file is invalid; it lists every problem.
    """
    from hookscope.engine.config import load  # the loader imports this module

    table = load(source, tool_aliases=tool_aliases, call_references=False)
    try:
        return next((hook for hook in table if isinstance(hook, PolicyEnforcer)), None)
    finally:
        table.close()
