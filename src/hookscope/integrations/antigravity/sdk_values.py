"""google-antigravity 0.1.x values as hookscope values: tool calls, usage, answers, rules.

Imported only when instrumenting (it imports the SDK). Nothing here keeps state.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from google.antigravity import types as ag_types
from google.antigravity.connections.local import struct_converter
from google.antigravity.connections.local.local_connection_config import (
    PROTO_FIELD_TO_SDK_NAME,
)
from google.antigravity.hooks import policy as ag_policy
from google.antigravity.proto import localharness_pb2 as pb2

from hookscope._rules import PolicyError, parse_target
from hookscope.integrations.antigravity.policy_rules import UNKNOWN_TOOL, RuleInfo
from hookscope.types import Answer, Decision, HookResult, PolicyDecision, ToolCall, Usage

__all__ = [
    "TURN_ENDS",
    "answers_of",
    "call_from_request",
    "call_from_sdk",
    "call_of_error",
    "call_of_result",
    "compaction_summary",
    "denial_message",
    "denied_call",
    "harness_denial",
    "is_denial",
    "json_args",
    "model_of",
    "policy_result",
    "post_turn_text",
    "pre_tool_verdict",
    "pre_turn_verdict",
    "recovery_of",
    "rule_of",
    "rules_of",
    "static_rule",
    "subagent_names",
    "tool_error",
    "tool_name",
    "usage_of",
]


_SDK_DECISIONS: Final = {
    ag_policy.Decision.APPROVE: Decision.ALLOW,
    ag_policy.Decision.DENY: Decision.DENY,
    ag_policy.Decision.ASK_USER: Decision.ASK_USER,
}

# Within a target tier, deny before ask-user before allow: DESIGN §4's nine buckets.
_DECISION_RANK: Final = {Decision.DENY: 0, Decision.ASK_USER: 1, Decision.ALLOW: 2}

# The harness reports a denied call as a step in an error state. Its text says a pre-tool check
# denied it; a static rule without a reason is named in the message (`Denied by policy "x".`),
# and the error repeats the verdict as a suffix: `<message> ("denied by pre-tool hook: …")`.
_DENIAL: Final = re.compile(r"denied by pre-tool hook", re.IGNORECASE)
_POLICY_NAME: Final = re.compile(r'Denied by policy "([^"]*)"')
_DENIAL_SUFFIX: Final = re.compile(r'\s*\("denied by pre-tool hook:.*\)\s*$', re.DOTALL)


# --- values ------------------------------------------------------------------------------


def tool_name(raw: Any) -> str:
    """A tool name as the SDK reports it to hooks (enum values and proto field names mapped)."""
    name = str(getattr(raw, "value", raw))
    return str(PROTO_FIELD_TO_SDK_NAME.get(name, name))


def json_args(raw: str) -> dict[str, Any]:
    """Tool arguments from their JSON text; empty when they are not a JSON object."""
    try:
        args = json.loads(raw or "{}")
    except json.JSONDecodeError:
        return {}
    return args if isinstance(args, dict) else {}


def call_from_sdk(tool_call: Any, call_id: str | None) -> ToolCall:
    """An SDK ``ToolCall`` as a hookscope :class:`ToolCall` with ``call_id``."""
    return ToolCall(
        tool_name(tool_call.name), dict(tool_call.args or {}), call_id or "", tool_call.server_name
    )


def call_of_result(result: Any) -> ToolCall:
    """The call an SDK ``ToolResult`` (given to post-call hooks) reports, without arguments."""
    name = str(getattr(result.name, "value", result.name))
    return ToolCall(name, {}, result.id or "", result.server_name or None)


def call_of_error(error: BaseException) -> ToolCall:
    """The call an SDK ``ToolExecutionError`` (given to error hooks) names, if it names one."""
    name = str(getattr(error, "tool_name", "") or "")
    return ToolCall(name, {}, str(getattr(error, "call_id", None) or ""))


def call_from_request(args: Any, with_args: bool = True) -> ToolCall:
    """The call a harness request names (``PreToolArgs``, ``PostToolArgs``, ``ToolArgs`` of a
    policy request, ``OnToolErrorArgs``); its arguments only where the request has them."""
    arguments = json_args(args.arguments_json) if with_args else {}
    return ToolCall(
        tool_name(args.tool_name), arguments, args.call_id or "", args.server_name or None
    )


def subagent_names(config: Any) -> tuple[str, ...]:
    """The names of the subagents an agent config defines."""
    found = getattr(config, "subagents", None) or ()
    return tuple(n for s in found if isinstance(n := getattr(s, "name", None), str) and n)


def usage_of(metadata: Any) -> Usage:
    """An SDK ``UsageMetadata`` as hookscope :class:`Usage`."""
    return Usage(
        input_tokens=metadata.prompt_token_count or 0,
        output_tokens=metadata.candidates_token_count or 0,
    )


def model_of(config: Any) -> str | None:
    """The model an agent config names, if it names one."""
    model = getattr(config, "model", None)
    if isinstance(model, str):
        return model
    name = getattr(model, "name", None)
    return name if isinstance(name, str) and name else None


def answers_of(result: Any) -> list[Answer] | None:
    """An SDK ``QuestionHookResult`` as hookscope answers (``None``: not answered)."""
    responses = getattr(result, "responses", None)
    if result is None or responses is None or getattr(result, "cancelled", False):
        return None
    answers = [
        Answer(r.freeform_response or ",".join(r.selected_option_ids or ()), str(index))
        for index, r in enumerate(responses)
        if not r.skipped
    ]
    return answers or None


# --- policies ----------------------------------------------------------------------------


def _bucket(target: str, decision: Decision) -> int | None:
    try:
        tier, _, _ = parse_target(target)
    except PolicyError:
        # The SDK takes any string as a target; one hookscope rejects (a pattern such as
        # ``run_*``) has no bucket of hookscope's to report.
        return None
    return tier * 3 + _DECISION_RANK[decision]


def rule_of(policy: Any) -> RuleInfo:
    """An SDK ``Policy`` as a :class:`RuleInfo` (same nine buckets as hookscope's).

    The SDK orders its rules as hookscope does: exact targets, then ``server/*``, then ``*``;
    deny, then ask-user, then allow within each.
    """
    decision = _SDK_DECISIONS.get(policy.decision, Decision.DENY)
    dynamic = (policy.when is not None or decision is Decision.ASK_USER) and (
        policy.name != ag_policy.WORKSPACE_ONLY_POLICY_NAME
    )
    target = str(policy.tool)
    return RuleInfo(
        policy.name or target, target, decision, _bucket(target, decision), policy.reason, dynamic
    )


def rules_of(config: Any) -> list[RuleInfo]:
    """The policy rules of an agent config (empty when unreadable)."""
    try:
        policies = ag_policy.flatten_policies(list(getattr(config, "policies", None) or []))
    except (TypeError, ValueError):
        return []
    return [rule_of(p) for p in policies if not isinstance(p, ag_policy.AutoPolicy)]


def is_denial(step: Any) -> bool:
    """Whether an error step is the harness's report of a denied call."""
    return bool(_DENIAL.search(step.content or ""))


def denial_message(step: Any) -> str:
    """The denial's own message, without the harness's repeated suffix."""
    return _DENIAL_SUFFIX.sub("", step.error or "") or "denied by policy"


def _deny_rules(rules: Sequence[RuleInfo], message: str) -> list[RuleInfo]:
    named = _POLICY_NAME.search(message)
    if named is not None:
        name = named.group(1)
        return [r for r in rules if r.name == name and r.decision is Decision.DENY]
    # A rule with a reason of its own is reported by that reason alone.
    return [
        r
        for r in rules
        if r.decision is Decision.DENY and not r.dynamic and r.reason and r.reason == message
    ]


def harness_denial(rules: Sequence[RuleInfo], message: str) -> HookResult:
    """A denial by a static rule, which the harness names by its name or its reason."""
    rule = static_rule(rules, message)
    if rule is None:
        decision = PolicyDecision(Decision.DENY, "denied", None, None, message)
    else:
        decision = PolicyDecision(rule.decision, "denied", rule.name, rule.bucket, message)
    return HookResult(allow=False, message=message, decision=decision)


def policy_result(policy: Any, outcome: str, deny_reason: str) -> HookResult | None:
    """One Python-evaluated rule's outcome (``POLICY_EVALUATION_OUTCOME_*``) as a hook result.

    ``None`` when the rule did not match (or is unknown); ask-user rules say whether the user
    approved.
    """
    if outcome.endswith("NO_MATCH") or policy is None:
        return None
    rule = rule_of(policy)
    allowed = outcome.endswith("ALLOW")
    asked = policy.ask_user is not None
    decision = PolicyDecision(
        rule.decision,
        "allowed" if allowed else "denied",
        rule.name,
        rule.bucket,
        deny_reason or f"rule {rule.name!r} matched",
        asked_user=asked,
        user_approved=allowed if asked else None,
    )
    return HookResult(allow=allowed, message=deny_reason, decision=decision)


def static_rule(rules: Sequence[RuleInfo], message: str) -> RuleInfo | None:
    """The static rule a harness denial names (by name, or by its reason)."""
    named = _deny_rules(rules, message)
    return named[0] if named else None


def denied_call(rules: Sequence[RuleInfo], message: str) -> ToolCall:
    """The call a harness denial was about, as far as the rule's target tells.

    The harness does not say which tool it denied; a rule for one tool tells, a wildcard rule
    does not (the tool is then :data:`UNKNOWN_TOOL`).
    """
    targets = {r.target for r in _deny_rules(rules, message)}
    if len(targets) != 1:
        return ToolCall(UNKNOWN_TOOL)
    target = targets.pop()
    if target == "*":
        return ToolCall(UNKNOWN_TOOL)
    server, _, name = target.rpartition("/")
    if name == "*":
        return ToolCall(UNKNOWN_TOOL, server=server)
    return ToolCall(tool_name(name), server=server or None)


def tool_error(message: str, tool: str) -> BaseException:
    """The SDK's ``ToolExecutionError`` for a failure known only by its message."""
    error: BaseException = ag_types.ToolExecutionError(message or "tool failed", tool)
    return error


# --- how a trajectory's state update ends its turn (or subagent run) ---------------------

_STATE: Final = pb2.TrajectoryStateUpdate.State


def _idle(update: Any, cancel_requested: bool, blocked: bool) -> BaseException | None:
    error: BaseException | None = None
    if update.HasField("error"):
        error = ag_types.AntigravityExecutionError(update.error)
    elif cancel_requested:
        # After conversation.cancel() the harness reports plain idle; the caller gets
        # AntigravityCancelledError, and so does the turn.
        error = ag_types.AntigravityCancelledError()
    return error


def _cancelled(update: Any, cancel_requested: bool, blocked: bool) -> BaseException | None:
    if blocked:  # a pre_turn hook denied the turn: it ends blocked, not cancelled
        return None
    # The SDK's own conversation.cancel(), or the harness halting the turn.
    message = update.error if update.HasField("error") else "turn cancelled"
    error: BaseException = ag_types.AntigravityCancelledError(message)
    return error


#: Trajectory states that end a turn → the error it ends with (``None``: normally), given the
#: update, whether the SDK's ``cancel()`` was called and whether ``pre_turn`` blocked it.
TURN_ENDS: Final[Mapping[int, Callable[[Any, bool, bool], BaseException | None]]] = {
    _STATE.STATE_FULLY_IDLE: _idle,
    _STATE.STATE_CANCELLED: _cancelled,
}


# --- what the SDK's hooks answered the harness (the router handlers' responses) ----------

_PRE_TOOL_DENY: Final = pb2.PreToolResult.Decision.DENY
_PRE_TURN_DENY: Final = pb2.PreTurnResult.Decision.DENY


def pre_turn_verdict(response: Any) -> HookResult:
    """The ``pre_turn`` verdict a handler answered the harness with."""
    result = response.pre_turn_result
    return HookResult.deny(result.reason) if result.decision == _PRE_TURN_DENY else HookResult()


def pre_tool_verdict(response: Any) -> tuple[HookResult | None, dict[str, Any] | None]:
    """A ``pre_tool_call`` handler's answer: the denial (``None``: allowed) and the arguments
    the SDK's hooks changed (``None``: none)."""
    result = response.pre_tool_result
    if result.decision == _PRE_TOOL_DENY:
        return HookResult.deny(result.reason), None
    if result.HasField("modified_args"):
        modified: dict[str, Any] = struct_converter.to_json_fallback(result.modified_args)
        return None, modified
    return None, None


def recovery_of(response: Any) -> str | None:
    """The text an ``on_tool_error`` handler replaced the error with (``None``: none)."""
    if not response.HasField("on_tool_error_result"):
        return None
    return response.on_tool_error_result.custom_error_message or None


def post_turn_text(request: Any) -> str | None:
    """The response text a ``post_turn`` request carries, if it carries one."""
    return request.post_turn_args.response_text if request.HasField("post_turn_args") else None


def compaction_summary(request: Any) -> str:
    """The summary an ``on_compaction`` request carries."""
    return request.on_compaction_args.summary if request.HasField("on_compaction_args") else ""
