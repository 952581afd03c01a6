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
that raises, or returns anything but a ``bool``, denies: the policy fails closed. A call without
a ``server`` never matches a ``server/...`` rule, whatever its name contains; a call with one
matches only ``server/tool``, ``server/*`` and ``*`` rules. Names are compared exactly (no case
folding, no Unicode normalisation, no patterns other than ``*`` and ``server/*``).
"""

from __future__ import annotations

import inspect
import logging
import os
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, cast, final

from hookscope._paths import WorkspaceGuard
from hookscope._rules import (
    WILDCARD,
    Named,
    PolicyError,
    RuleIndex,
    parse_target,
    predicate_input,
    server_name,
)
from hookscope.context import OperationContext
from hookscope.hooks import Hook
from hookscope.types import Decision, HookResult, PolicyDecision, ToolCall

logger = logging.getLogger("hookscope")

__all__ = [
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

#: A rule's condition: gets the call's args (or the :class:`ToolCall` when its parameter is
#: annotated ``ToolCall``), sync or async, and returns whether the rule applies.
Predicate = Callable[..., bool | Awaitable[bool]]
#: Asks the user about a call; returns ``True`` to run it. Sync or async.
AskHandler = Callable[[ToolCall], bool | Awaitable[bool]]

#: The file tools :func:`workspace_only` guards unless told otherwise.
WORKSPACE_TOOLS: Final = ("view_file", "create_file", "edit_file", "write_to_file")
#: The argument names :func:`workspace_only` reads paths from unless told otherwise.
WORKSPACE_PATH_ARGS: Final = ("AbsolutePath", "TargetFile", "path", "file_path")


_DECISION_RANK: Final = {Decision.DENY: 0, Decision.ASK_USER: 1, Decision.ALLOW: 2}


# --- rules --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Policy:
    """One rule: what it targets, what it decides, and when it applies.

    Build rules with :func:`allow`, :func:`deny`, :func:`ask_user` and the other builders;
    the constructor validates them the same way.

    Args:
        tool: A tool name, ``server/tool`` for an MCP tool, ``server/*`` for every tool of an
            MCP server, or ``*`` for every tool.
        decision: What the rule decides when it matches.
        when: Optional condition; the rule matches only when it returns ``True``.
        handler: For ``ASK_USER`` rules (and only those): asks the user about the call.
        name: Label in denial messages and telemetry; ``"<decision>:<tool>"`` when empty.
        reason: Why the rule denies, for the model and the logs; a default is derived.

    Raises:
        PolicyError: The rule cannot be enforced as written (the message says why).
    """

    tool: str
    decision: Decision
    when: Predicate | None = None
    handler: AskHandler | None = None
    name: str = ""
    reason: str = ""

    def __post_init__(self) -> None:
        parse_target(self.tool)
        if not isinstance(self.decision, Decision):
            raise PolicyError(f"decision must be a policy.Decision, got {self.decision!r}")
        if self.when is not None:
            if not callable(self.when):
                raise PolicyError(
                    f"when= must be a function of the call's args, got {self.when!r}; wrap a "
                    "constant in a lambda or drop when= for a rule that always applies"
                )
            predicate_input(self.when, "when=")
        if self.decision is Decision.ASK_USER:
            if self.handler is None:
                raise PolicyError(
                    f"ask_user rule for {self.tool!r} has no handler; pass handler=fn, where "
                    "fn(call) returns True to run the call (use deny() to refuse it outright)"
                )
            if not callable(self.handler) or predicate_input(self.handler, "handler") == "nothing":
                raise PolicyError(
                    f"handler {self.handler!r} must be a function taking the ToolCall and "
                    "returning True to run it"
                )
        elif self.handler is not None:
            raise PolicyError(
                f"only ask_user rules take a handler; the {self.decision.value} rule for "
                f"{self.tool!r} would never call it"
            )
        if not isinstance(self.name, str) or not isinstance(self.reason, str):
            raise PolicyError(f"name and reason must be strings in the rule for {self.tool!r}")
        if not self.name:
            object.__setattr__(self, "name", f"{self.decision.value}:{self.tool}")


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


# --- decisions ----------------------------------------------------------------------------


def _result(decision: PolicyDecision) -> HookResult:
    if decision.outcome == "allowed":
        message = f"allowed by policy rule {decision.rule!r}" if decision.rule else decision.reason
        return HookResult(allow=True, message=message, decision=decision)
    return HookResult(
        allow=False,
        message=f"denied by policy rule {decision.rule!r}: {decision.reason}",
        decision=decision,
    )


_NO_MATCH: Final = _result(
    PolicyDecision(Decision.ALLOW, "allowed", None, None, "no policy rule matches; allowed")
)


@final
class _Rule:
    """A policy compiled for the hot path: everything it can return is built once, here."""

    __slots__ = (
        "approved",
        "bucket",
        "failure_logged",
        "guard",
        "handler",
        "label",
        "matched",
        "pass_call",
        "refused",
        "server",
        "static",
        "tier",
        "tool",
        "when",
    )

    def __init__(self, policy: Policy) -> None:
        self.failure_logged = False
        self.tier, self.server, self.tool = parse_target(policy.tool)
        self.bucket = bucket = self.tier * 3 + _DECISION_RANK[policy.decision]
        self.label = label = policy.name
        when = policy.when
        # workspace_only's deny rules explain their denials; anywhere else a guard is a
        # plain predicate.
        is_guard = isinstance(when, WorkspaceGuard) and policy.decision is Decision.DENY
        self.guard = cast(WorkspaceGuard, when) if is_guard else None
        self.pass_call = False
        self.when: Callable[[Any], Any] | None = None
        if when is not None and self.guard is None:
            wants = predicate_input(when, "when=")
            self.pass_call = wants == "call"
            self.when = (lambda _: when()) if wants == "nothing" else when
        self.handler = policy.handler
        #: A rule without a condition always decides: nothing after it is ever reached.
        self.static = when is None and policy.decision is not Decision.ASK_USER
        if policy.decision is Decision.ASK_USER:
            # Matched but not asked (a dry run); the handler's answer picks the other two.
            ask = Decision.ASK_USER
            reason = "would ask the user (not asked)"
            self.matched = _result(PolicyDecision(ask, "denied", label, bucket, reason))
            reason = "the user approved the call"
            self.approved = _result(
                PolicyDecision(ask, "allowed", label, bucket, reason, True, True)
            )
            reason = policy.reason or "the user refused the call"
            self.refused = _result(
                PolicyDecision(ask, "denied", label, bucket, reason, True, False)
            )
            return
        if self.tier == 2:
            subject = "every tool"
        elif self.tier == 1:
            subject = f"every tool of MCP server {self.server!r}"
        else:
            subject = policy.tool
        outcome: Literal["allowed", "denied"] = (
            "allowed" if policy.decision is Decision.ALLOW else "denied"
        )
        condition = "" if when is None else " (the rule's condition matched)"
        reason = policy.reason or f"{subject} is {outcome}{condition}"
        self.matched = _result(PolicyDecision(policy.decision, outcome, label, bucket, reason))
        self.approved = self.refused = self.matched  # no handler: never returned

    def failed(self, what: str, problem: object, asked: bool = False) -> HookResult:
        """The fail-closed denial for a ``what`` that raised ``problem`` or returned it."""
        if isinstance(problem, Exception):
            # The reason reaches the model and the spans; the exception's text may carry
            # secrets (it often quotes the arguments), so it goes only to the log.
            detail = f"raised {type(problem).__name__}"
            if not self.failure_logged:
                self.failure_logged = True
                logger.warning(
                    "policy rule %r: its %s raised; the call is denied (later failures of this "
                    "rule are not logged)",
                    self.label,
                    what,
                    exc_info=problem,
                )
        else:
            detail = f"returned {type(problem).__name__}, not bool"
        decision = Decision.ASK_USER if asked else Decision.DENY
        reason = f"the {what} of rule {self.label!r} {detail}; failing closed"
        return _result(PolicyDecision(decision, "denied", self.label, self.bucket, reason, asked))


# --- the enforcer -------------------------------------------------------------------------


def _flatten(policies: object, into: list[Policy]) -> list[Policy]:
    if isinstance(policies, Policy):
        into.append(policies)
    elif isinstance(policies, Iterable) and not isinstance(policies, (str, bytes, Mapping)):
        for item in policies:
            _flatten(item, into)
    else:
        raise TypeError(
            f"enforce() takes Policy objects and lists of them, got {policies!r}; build rules "
            "with policy.allow(), policy.deny(), policy.ask_user() and the other builders"
        )
    return into


@final
class PolicyEnforcer(Hook):
    """A ``pre_tool_call`` hook that decides every tool call by the compiled rules.

    Build it with :func:`enforce`. Every verdict, allow included, is a
    :class:`~hookscope.types.HookResult` whose ``decision`` is the :class:`PolicyDecision`, so
    dispatch observers (the OTel hook) see which rule decided.

    Rules are indexed by target: a call is checked only against the rules for its exact name
    (or ``server/tool``), its server's ``server/*`` rules and ``*`` rules, in bucket order, so
    rules for other tools cost nothing.

    Args:
        policies: Rules, or (nested) lists of rules, in registration order.
        mcp_servers: The MCP servers the agent registers (names or objects with ``.name``);
            every ``server/...`` rule must name one of them.
        name: The hook's name in messages and telemetry.

    Raises:
        PolicyError: MCP rules without registered servers, or naming an unknown server.
        TypeError: Something in ``policies`` is not a :class:`Policy`.
    """

    name = "PolicyEnforcer"

    def __init__(
        self,
        policies: Policy | Iterable[Any],
        mcp_servers: Iterable[str | Named] | None = None,
        *,
        name: str = "",
    ) -> None:
        if name:
            self.name = name
        #: The rules, flattened, in registration order.
        self.policies: tuple[Policy, ...] = tuple(_flatten(policies, []))
        if isinstance(mcp_servers, str) or hasattr(mcp_servers, "name"):
            mcp_servers = [cast("str | Named", mcp_servers)]
        #: The registered MCP server names.
        self.mcp_servers: frozenset[str] = frozenset(map(server_name, mcp_servers or ()))
        rules = [_Rule(p) for p in self.policies]
        for policy, rule in zip(self.policies, rules, strict=True):
            server = rule.server
            if server is None or server in self.mcp_servers:
                continue
            if not self.mcp_servers:
                raise PolicyError(
                    f"rule {policy.name!r} targets MCP server {server!r}, but enforce() got no "
                    "mcp_servers; pass mcp_servers=[...] with the servers the agent registers"
                )
            raise PolicyError(
                f"rule {policy.name!r} targets MCP server {server!r}, which is not registered "
                f"(mcp_servers: {', '.join(sorted(self.mcp_servers))}); fix the rule's server "
                "name or add the server to mcp_servers"
            )
        self._candidates = RuleIndex(rules).candidates

    async def evaluate(self, call: ToolCall, *, ask: bool = True) -> PolicyDecision:
        """Decide ``call``.

        Args:
            call: The tool call.
            ask: ``False`` for a dry run: an ask_user match is reported (``asked_user=False``,
                outcome denied) without calling its handler.
        """
        rules = self._candidates(call.name, call.server)
        if not rules:
            result = _NO_MATCH
        elif rules[0].static:
            result = rules[0].matched
        else:
            result = await self._scan(call, rules, ask)
        return cast(PolicyDecision, result.decision)

    async def pre_tool_call(self, context: OperationContext, call: ToolCall) -> HookResult:
        """Allow or deny ``call``; the result's ``decision`` says which rule decided and why."""
        rules = self._candidates(call.name, call.server)
        if not rules:
            return _NO_MATCH
        if rules[0].static:
            return rules[0].matched
        return await self._scan(call, rules, True)

    @staticmethod
    async def _scan(call: ToolCall, rules: tuple[_Rule, ...], ask: bool) -> HookResult:
        for rule in rules:
            if rule.guard is not None:
                try:
                    violation = rule.guard.violation(call.args)
                except Exception as error:
                    return rule.failed("workspace check", error)
                if violation is None:
                    continue
                return _result(
                    PolicyDecision(Decision.DENY, "denied", rule.label, rule.bucket, violation)
                )
            if rule.when is not None:
                try:
                    matched = rule.when(call if rule.pass_call else call.args)
                    if inspect.isawaitable(matched):
                        matched = await matched
                except Exception as error:
                    return rule.failed("condition", error)
                if matched is False:
                    continue
                if matched is not True:
                    return rule.failed("condition", matched)
            if rule.handler is None:
                return rule.matched
            if not ask:
                return rule.matched
            try:
                answer = rule.handler(call)
                if inspect.isawaitable(answer):
                    answer = await answer
            except Exception as error:
                return rule.failed("ask handler", error, asked=True)
            if answer is True:
                return rule.approved
            if answer is False:
                return rule.refused
            return rule.failed("ask handler", answer, asked=True)
        return _NO_MATCH

    def __repr__(self) -> str:
        return f"<PolicyEnforcer {self.name!r}: {len(self.policies)} rules>"


def enforce(
    policies: Policy | Iterable[Any], mcp_servers: Iterable[str | Named] | None = None
) -> PolicyEnforcer:
    """Validate and compile ``policies`` into a :class:`PolicyEnforcer` hook.

    Args:
        policies: Rules, or (nested) lists of rules, in registration order.
        mcp_servers: The MCP servers the agent registers (names or objects with ``.name``).

    Raises:
        PolicyError: A rule cannot be enforced (the message says what to change).
        TypeError: Something in ``policies`` is not a :class:`Policy`.
    """
    return PolicyEnforcer(policies, mcp_servers)
