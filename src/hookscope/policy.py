"""Tool-call policy: declarative allow / deny / ask-user rules, compiled into a hook.

Build rules with the builders, compile them with :func:`enforce`, register the result::

    from hookscope import policy

    enforcer = policy.enforce([
        policy.deny_all(),
        policy.allow("view_file"),
        policy.deny("run_command", when=lambda args: "rm " in args.get("CommandLine", "")),
        policy.ask_user("run_command", handler=confirm),
        policy.workspace_only(["/srv/app"]),
    ])
    runner = HookRunner([enforcer])

Every rule falls into one of nine buckets; the lowest bucket that has a matching rule decides,
and inside a bucket the first registered match wins:

======  ==============================================  ======================
bucket  target                                          decision
======  ==============================================  ======================
0 1 2   an exact tool name, or an exact ``server/tool``  deny, ask_user, allow
3 4 5   ``server/*``                                     deny, ask_user, allow
6 7 8   ``*``                                            deny, ask_user, allow
======  ==============================================  ======================

A call no rule matches is allowed (``rule=None``, ``bucket=None``). A condition or ask handler
that raises, or returns anything but a ``bool``, denies: the policy fails closed.

Names. A call with a ``server`` matches only ``server/tool``, ``server/*`` and ``*`` rules. A call
without one matches its exact-name rules and ``*`` rules; when its name reads ``server/tool`` for a
server in ``mcp_servers``, it also meets that server's deny and ask_user rules (for the tool, and
``server/*``) but never its allow rules: a local tool cannot borrow an MCP server's permissions,
and on ambiguity the stricter reading wins. Server names are compared with surrounding whitespace
stripped and case folded (``" GitHub"`` is ``github``). A rule written as Claude Code names MCP
tools reads as ours: ``mcp__<server>__<tool>`` is ``server/tool`` and ``mcp__<server>`` is
``server/*`` for a server in ``mcp_servers`` (spelled as Claude writes it: ``corp.files`` is
``corp_files``); naming no such server, it is refused. Tool names are compared exactly, unless the
enforcer is built with ``enforce(..., normalize=True)``: then deny and ask_user rules also match
names that only *look* the same (Unicode NFKC, invisible characters removed, case folded, accents
dropped, common confusable letters such as Cyrillic "a" mapped, surrounding whitespace stripped);
allow rules stay exact. No patterns other than ``*`` and ``server/*`` exist.

Denial reasons name rules, argument names and workspaces, never argument values: the model
supplies those, and a reason reaches span attributes even when content capture is off.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Any, Final

from hookscope._enforcer import PolicyEnforcer
from hookscope._paths import WorkspaceGuard
from hookscope._rules import (
    CONFIRM,
    DECISION_RANK,
    WILDCARD,
    AskHandler,
    Decision,
    Named,
    Policy,
    PolicyDecision,
    PolicyError,
    Predicate,
    server_name,
)

__all__ = [
    "CONFIRM",
    "WORKSPACE_PATH_ARGS",
    "WORKSPACE_TOOLS",
    "AskHandler",
    "Decision",
    "Policy",
    "PolicyDecision",
    "PolicyEnforcer",
    "PolicyError",
    "Predicate",
    "allow",
    "allow_all",
    "allow_mcp",
    "ask_user",
    "ask_user_mcp",
    "confirm_run_command",
    "deny",
    "deny_all",
    "deny_mcp",
    "enforce",
    "workspace_only",
]

#: The file tools :func:`workspace_only` guards unless told otherwise.
WORKSPACE_TOOLS: Final = ("view_file", "create_file", "edit_file", "write_to_file")
#: The argument names :func:`workspace_only` reads paths from unless told otherwise.
WORKSPACE_PATH_ARGS: Final = ("AbsolutePath", "TargetFile", "path", "file_path")
# Kept for the antigravity integration, which ranks the SDK's own rules the same way.
_DECISION_RANK: Final = DECISION_RANK


# --- builders -----------------------------------------------------------------------------


def allow(tool: str, *, when: Predicate | None = None, name: str = "") -> Policy:
    """A rule that allows calls to ``tool`` (when ``when`` holds)."""
    return Policy(tool, Decision.ALLOW, when=when, name=name)


def deny(tool: str, *, when: Predicate | None = None, name: str = "", reason: str = "") -> Policy:
    """A rule that denies calls to ``tool`` (when ``when`` holds); ``reason`` goes to the model."""
    return Policy(tool, Decision.DENY, when=when, name=name, reason=reason)


def ask_user(
    tool: str,
    handler: AskHandler,
    *,
    when: Predicate | None = None,
    name: str = "",
    reason: str = "",
) -> Policy:
    """A rule that lets ``handler(call)`` decide; ``True`` runs the call, anything else denies."""
    return Policy(tool, Decision.ASK_USER, when=when, handler=handler, name=name, reason=reason)


def allow_all() -> Policy:
    """Allow every tool: the lowest bucket, so any deny or ask rule still wins."""
    return Policy(WILDCARD, Decision.ALLOW, name="allow_all")


def deny_all() -> Policy:
    """Deny every tool that no exact or ``server/*`` rule allows: a deny-by-default base."""
    return Policy(WILDCARD, Decision.DENY, name="deny_all")


def confirm_run_command(handler: AskHandler | None = None) -> list[Policy]:
    """The safe default: every tool allowed except ``run_command``.

    With ``handler``, each ``run_command`` call is put to it (``ask_user``); without one,
    ``run_command`` is denied outright. Like google-antigravity's default, the set includes
    :func:`allow_all`, so later ``*`` allow rules never decide.
    """
    if handler is not None:
        guard = Policy(
            "run_command", Decision.ASK_USER, handler=handler, name="confirm_run_command"
        )
    else:
        guard = Policy(
            "run_command",
            Decision.DENY,
            name="confirm_run_command",
            reason=(
                "run_command is disabled by default; the agent's owner can enable it with "
                "confirm_run_command(handler=...) or allow('run_command')"
            ),
        )
    return [guard, allow_all()]


def workspace_only(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    tools: Sequence[str] = WORKSPACE_TOOLS,
    path_args: Sequence[str] = WORKSPACE_PATH_ARGS,
) -> list[Policy]:
    """Deny file-tool calls whose paths leave the given workspace directories.

    Each path argument present is resolved the way the OS would (``..`` and symlinks, the
    missing tail of a file to be created taken as plain names) and must equal a root or lie
    below one by whole components: ``/w/app2`` is outside ``/w/app``. Relative paths, NUL
    bytes, non-strings, unresolvable paths and calls carrying none of ``path_args`` are
    denied. The rules are exact-tool denies (bucket 0), so no allow rule overrides them.

    Args:
        paths: Absolute workspace directories (resolved now, once).
        tools: The tools to guard.
        path_args: The argument names that carry paths.

    Raises:
        PolicyError: A root is not absolute, or ``tools``/``path_args`` are empty.
    """
    roots = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    try:
        guard = WorkspaceGuard(roots, path_args)
    except ValueError as error:
        raise PolicyError(str(error)) from None
    if isinstance(tools, str) or not tools:
        raise PolicyError(f"workspace_only(tools=...) takes a non-empty list, got {tools!r}")
    return [Policy(tool, Decision.DENY, when=guard, name="workspace_only") for tool in tools]


def _mcp_rules(
    decision: Decision,
    server: str | Named,
    tools: Sequence[str] | None,
    when: Predicate | None,
    handler: AskHandler | None,
    name: str,
    reason: str,
) -> list[Policy]:
    prefix = server_name(server)
    if isinstance(tools, str):
        raise PolicyError(f"tools= takes a list of tool names; write tools=[{tools!r}]")
    targets = [f"{prefix}/*"] if tools is None else [f"{prefix}/{t}" for t in tools]
    if not targets:
        raise PolicyError(f"tools=[] names no tool of {prefix!r}; pass None for all of them")
    return [Policy(t, decision, when, handler, name, reason) for t in targets]


def allow_mcp(
    server: str | Named,
    tools: Sequence[str] | None = None,
    *,
    when: Predicate | None = None,
    name: str = "",
) -> list[Policy]:
    """Allow ``tools`` of an MCP ``server`` (a name or an object with ``.name``), or all."""
    return _mcp_rules(Decision.ALLOW, server, tools, when, None, name, "")


def deny_mcp(
    server: str | Named,
    tools: Sequence[str] | None = None,
    *,
    when: Predicate | None = None,
    name: str = "",
    reason: str = "",
) -> list[Policy]:
    """Deny ``tools`` of an MCP ``server`` (a name or an object with ``.name``), or all."""
    return _mcp_rules(Decision.DENY, server, tools, when, None, name, reason)


def ask_user_mcp(
    server: str | Named,
    tools: Sequence[str] | None = None,
    *,
    handler: AskHandler,
    when: Predicate | None = None,
    name: str = "",
    reason: str = "",
) -> list[Policy]:
    """Ask ``handler`` about ``tools`` of an MCP ``server``, or about all of its tools."""
    return _mcp_rules(Decision.ASK_USER, server, tools, when, handler, name, reason)


def enforce(
    policies: Policy | Iterable[Any],
    mcp_servers: Iterable[str | Named] | None = None,
    normalize: bool = False,
) -> PolicyEnforcer:
    """Validate and compile ``policies`` into a :class:`PolicyEnforcer` hook.

    Args:
        policies: Rules, or (nested) lists of rules, in registration order.
        mcp_servers: The MCP servers the agent registers (names or objects with ``.name``),
            compared with surrounding whitespace stripped and case folded.
        normalize: ``True`` to deny look-alikes too: deny and ask_user rules then compare tool
            and server names after Unicode NFKC, removal of invisible characters, case
            folding, accent stripping, mapping of common confusable letters and whitespace
            stripping. Allow rules stay exact. ``False`` (the default) compares exactly.

    Raises:
        PolicyError: A rule cannot be enforced (the message says what to change).
        TypeError: Something in ``policies`` is not a :class:`Policy`.
    """
    return PolicyEnforcer(policies, mcp_servers, normalize=normalize)
