"""The compiled policy: rules built for the hot path, and the enforcer hook that runs them.

Private; :class:`PolicyEnforcer` is public as :class:`hookscope.policy.PolicyEnforcer`.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any, Final, Literal, cast, final

from hookscope._index import RuleIndex
from hookscope._names import fold_server
from hookscope._paths import WorkspaceGuard
from hookscope._rules import (
    CONFIRM,
    DECISION_RANK,
    Decision,
    Named,
    Policy,
    PolicyDecision,
    PolicyError,
    claude_mcp_target,
    parse_target,
    predicate_input,
    server_name,
)
from hookscope.context import OperationContext
from hookscope.hooks import Hook
from hookscope.types import HookResult, ToolCall

logger = logging.getLogger("hookscope")

__all__ = ["PolicyEnforcer"]


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
        "order",
        "pass_call",
        "refused",
        "server",
        "static",
        "strict",
        "tier",
        "tool",
        "when",
    )

    def __init__(self, policy: Policy, order: int) -> None:
        self.failure_logged = False
        self.order = order
        self.tier, server, self.tool = parse_target(policy.tool)
        self.server = None if server is None else fold_server(server)
        self.bucket = bucket = self.tier * 3 + DECISION_RANK[policy.decision]
        self.strict = policy.decision is not Decision.ALLOW
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
        if policy.handler is CONFIRM:
            # The runner asks (HookResult.ask): the match itself is the pending question.
            self.handler = None
            self.static = when is None
            question = policy.reason or f"policy rule {label!r} asks to confirm this call"
            pending = PolicyDecision(
                Decision.ASK_USER, "denied", label, bucket, "would ask the user (not asked)"
            )
            self.matched = HookResult(allow=False, message=question, decision=pending, confirm=True)
            self.approved = self.refused = self.matched
            return
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
            subject = f"every tool of MCP server {server!r}"
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

    Build it with :func:`~hookscope.policy.enforce`. Every verdict, allow included, is a
    :class:`~hookscope.types.HookResult` whose ``decision`` is the :class:`PolicyDecision`, so
    dispatch observers (the OTel hook) see which rule decided.

    Rules are indexed by target: a call is checked only against the rules for its exact name
    (or ``server/tool``), its server's ``server/*`` rules and ``*`` rules, in bucket order, so
    rules for other tools cost nothing.

    Args:
        policies: Rules, or (nested) lists of rules, in registration order.
        mcp_servers: The MCP servers the agent registers (names or objects with ``.name``);
            every ``server/...`` rule must name one of them. Compared stripped and case-folded.
        normalize: Compare names by skeleton for deny and ask_user rules, so look-alikes of a
            denied name are denied (see :mod:`hookscope._names`).
        name: The hook's name in messages and telemetry.

    Raises:
        PolicyError: MCP rules without registered servers, or naming an unknown server.
        TypeError: Something in ``policies`` is not a :class:`Policy`.
    """

    __module__ = "hookscope.policy"
    name = "PolicyEnforcer"

    def __init__(
        self,
        policies: Policy | Iterable[Any],
        mcp_servers: Iterable[str | Named] | None = None,
        *,
        normalize: bool = False,
        name: str = "",
    ) -> None:
        if name:
            self.name = name
        if not isinstance(normalize, bool):
            raise TypeError(f"normalize= takes True or False, got {normalize!r}")
        #: Whether deny and ask_user rules also match look-alike names.
        self.normalize = normalize
        #: The rules, flattened, in registration order.
        self.policies: tuple[Policy, ...] = tuple(_flatten(policies, []))
        if isinstance(mcp_servers, str) or hasattr(mcp_servers, "name"):
            mcp_servers = [cast("str | Named", mcp_servers)]
        #: The registered MCP server names, as given (stripped).
        self.mcp_servers: frozenset[str] = frozenset(map(server_name, mcp_servers or ()))
        registered = {fold_server(server) for server in self.mcp_servers}
        # Rules written as Claude Code names MCP tools compile as server/tool (name unchanged).
        compiled = [_as_hookscope_target(p, self.mcp_servers) for p in self.policies]
        rules = [_Rule(p, order) for order, p in enumerate(compiled)]
        for policy, rule in zip(compiled, rules, strict=True):
            if rule.server is None or rule.server in registered:
                continue
            server = parse_target(policy.tool)[1]
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
        self._candidates = RuleIndex(rules, normalize=normalize).candidates

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


def _as_hookscope_target(policy: Policy, servers: Iterable[str]) -> Policy:
    """``policy`` with a target in Claude's MCP spelling read as ``server/tool``."""
    target = claude_mcp_target(policy.tool, servers)
    return policy if target is None else replace(policy, tool=target)
