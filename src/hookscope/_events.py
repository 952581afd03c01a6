"""The rules of dispatch: what each event's hooks return, when a dispatch stops, what failing means.

Each lifecycle event has one :class:`Rule`. :meth:`HookRunner._run
<hookscope.runner.HookRunner._run>` runs every event through the same loop and asks the
event's rule what a hook's return value means; nothing event-specific lives at a call site.
This is DESIGN §2 as data. The machinery the rules work in (:class:`Fold`, the step codes, the
failure table) is :mod:`hookscope._fold`, re-exported here.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, Final, final, get_args

from hookscope._fold import (
    GO_ON,
    SKIPPED_GUARDS,
    STOP,
    TENTATIVE,
    Fold,
    HookFailure,
    HookKind,
    HookTimeoutError,
    Rule,
    hook_failed,
    type_path,
)
from hookscope._fold import failure_message as _failure_message
from hookscope.hooks import HookEvent
from hookscope.types import (
    Answer,
    Decision,
    HookResult,
    PolicyDecision,
    Recovery,
    RequestAction,
    RequestDecision,
    ResponseAction,
    ResponseDecision,
    ToolCall,
    holds_only_immutables,
)

__all__ = [
    "ALLOW",
    "GO_ON",
    "RULES",
    "SKIPPED_GUARDS",
    "STOP",
    "TENTATIVE",
    "Fold",
    "HookFailure",
    "HookKind",
    "HookTimeoutError",
    "Rule",
    "freeze_call",
    "hook_failed",
    "type_path",
]

_REQUEST_ACTIONS: Final = frozenset(get_args(RequestAction))
_RESPONSE_ACTIONS: Final = frozenset(get_args(ResponseAction))


@final
class _CallState:
    """What a ``pre_tool_call`` dispatch remembers beyond its fold: the allow that carries the
    policy's decision, the arguments it was made on, and the first pending ask."""

    __slots__ = ("asked", "bound", "decided")

    def __init__(self) -> None:
        self.decided: HookResult | None = None
        self.bound: Any = None
        self.asked: HookResult | None = None


def _call_state(fold: Fold) -> _CallState:
    state: _CallState | None = fold.extra
    if state is None:
        state = fold.extra = _CallState()
    return state


_NO_CALL_STATE: Final = _CallState()  # read-only: what a dispatch that needed none reads


ALLOW: Final = HookResult()


def _wrong_type(value: Any, expected: type[Any], what: str) -> HookFailure:
    """The failure for a return value of the wrong type, naming both types in full.

    A value whose class has the expected name but comes from elsewhere (another SDK's
    ``HookResult``) is the usual migration slip: say so.
    """
    ours = f"hookscope.{expected.__name__}"
    message = f"returned {type_path(value)}, expected {ours} or None"
    if type(value).__name__ == expected.__name__:
        message += f" ({type_path(value)} is not {ours}; {what})"
    else:
        message += f"; {what}"
    return HookFailure(message)


def _check_result(value: Any) -> None:
    if type(value) is not HookResult:
        raise _wrong_type(
            value, HookResult, "return hookscope.HookResult(...), HookResult.deny(message) or None"
        )
    if type(value.allow) is not bool:  # a truthy "false" must not allow
        # Name the type, never echo the value: a hook's odd value can carry anything.
        raise HookFailure(
            f"returned HookResult(allow=<{type_path(value.allow)}>); allow must be True or False"
        )


def freeze_call(call: ToolCall) -> ToolCall:
    """``call`` with read-only arguments.

    A :class:`ToolCall` freezes its arguments when built; this covers one whose ``args`` were
    swapped in behind its back (``object.__setattr__``), so the runner never trusts that.
    """
    if type(call.args) is MappingProxyType:
        return call
    return ToolCall(call.name, call.args, call.id, call.server)


def _snapshot(args: Mapping[str, Any]) -> Any:
    """What a policy decided on: the read-only mapping itself, or a deep copy when it holds
    mutable values (which a later hook could change in place)."""
    if holds_only_immutables(args):
        return args
    return copy.deepcopy(dict(args))


def _unchanged(args: Mapping[str, Any], bound: Any) -> bool:
    return args is bound or dict(args) == (bound if isinstance(bound, dict) else dict(bound))


class _PreTurnRule(Rule[HookResult]):
    kind = "decide"
    default = ALLOW

    def step(self, fold: Fold, value: Any) -> int:
        _check_result(value)
        if value.confirm:
            raise HookFailure(
                "returned HookResult.ask(...), which only pre_tool_call hooks may return; "
                "allow or deny the turn instead"
            )
        if not value.allow:
            fold.result = value
            return STOP
        return GO_ON

    def fail_closed(self, hook_name: str, event: HookEvent, error: BaseException) -> Any:
        return HookResult.deny(_failure_message(hook_name, event, error))


class _PostTurnRule(Rule[HookResult | None]):
    """Every hook runs (an inspect event: failures are ignored). A hook that returns
    :meth:`HookResult.continue_with` (or ``HookResult.deny(message)``) asks the agent not to
    stop yet but to go on with that text (Claude Code's ``Stop`` block); several requests are
    joined in order. Other values are ignored, as post_turn hooks were only ever expected to
    return ``None``."""

    def step(self, fold: Fold, value: Any) -> int:
        if type(value) is HookResult and not value.allow:
            previous: HookResult | None = fold.result
            text = value.continuation or value.message
            if previous is not None:
                text = f"{previous.message}\n\n{text}"
            fold.result = HookResult.continue_with(text)
            return TENTATIVE
        return GO_ON


class _PostToolCallRule(Rule[HookResult | None]):
    """Every hook runs; a ``HookResult.deny(reason)`` cannot undo the call, but its reason is
    feedback for the model (Claude Code's PostToolUse ``decision: block``), joined in order."""

    def step(self, fold: Fold, value: Any) -> int:
        if type(value) is HookResult and not value.allow and value.message:
            previous: HookResult | None = fold.result
            text = value.message if previous is None else f"{previous.message}\n\n{value.message}"
            fold.result = HookResult.deny(text)
            return TENTATIVE
        return GO_ON


class _PreToolCallRule(_PreTurnRule):
    """pre_turn's rule plus argument merging, asks, and binding the policy's verdict to the
    arguments it saw."""

    confirms = True

    def step(self, fold: Fold, value: Any) -> int:
        _check_result(value)
        if value.confirm:
            # A pending confirmation: later hooks still run (a later deny wins); the runner
            # asks the user once every hook has had its say.
            self._merge(fold, value)
            state = _call_state(fold)
            if state.asked is None:
                state.asked = value
                return TENTATIVE
            return GO_ON
        if not value.allow:
            fold.result = value
            return STOP
        self._merge(fold, value)
        if value.decision is not None:
            state = _call_state(fold)
            state.decided = value  # the allow that carries the policy decision
            state.bound = _snapshot(fold.data.args)
        return GO_ON

    @staticmethod
    def _merge(fold: Fold, value: HookResult) -> None:
        modified = value.modified_args
        call: ToolCall = fold.data
        if value.replace_args and modified is not None:
            fold.data = call.with_args(modified)  # a ToolCall freezes what it is given
        elif modified:
            fold.data = call.with_args({**call.args, **modified})

    def finish(self, fold: Fold) -> HookResult:
        if fold.extra is None and fold.data is fold.original:
            # No policy decision, no ask, no modified arguments: the verdict as folded.
            verdict: HookResult = fold.result
            return verdict
        if fold.result is not ALLOW:  # a hook denied
            result: HookResult = fold.result
            return result
        state: _CallState = fold.extra or _NO_CALL_STATE
        decided = state.decided
        if decided is not None and not _unchanged(fold.data.args, state.bound):
            return _changed_after_policy(fold.data, decided)
        asked = state.asked
        if asked is not None:
            if fold.data is fold.original:
                return asked
            return HookResult(
                allow=False,
                message=asked.message,
                modified_args=dict(fold.data.args),
                decision=asked.decision,
                confirm=True,
            )
        if fold.data is fold.original:
            # Unmodified: pass the policy's own (prebuilt) allow through, or the plain allow.
            return ALLOW if decided is None else decided
        return HookResult(
            allow=True,
            message=decided.message if decided is not None else "",
            modified_args=dict(fold.data.args),
            decision=decided.decision if decided is not None else None,
        )


def _changed_after_policy(call: ToolCall, decided: HookResult) -> HookResult:
    # Deny rather than re-evaluate: the enforcer's verdict covers the arguments it saw, and a
    # hook that rewrites them afterwards (a path, a command) is exactly what a guard exists
    # to stop. Hooks that must change arguments belong before the enforcer.
    decision = decided.decision
    rule = decision.rule if decision is not None else None
    message = (
        f"denied: a hook changed the arguments of {call.name!r} after the policy decided; "
        "register hooks that change arguments before the PolicyEnforcer"
    )
    return HookResult(
        allow=False,
        message=message,
        decision=PolicyDecision(
            decision=Decision.DENY,
            outcome="denied",
            rule=rule,
            bucket=decision.bucket if decision is not None else None,
            reason=message,
        ),
    )


def _check_decision(value: Any, kind: type[Any], actions: frozenset[str], builders: str) -> None:
    if type(value) is not kind:
        raise _wrong_type(value, kind, f"build it with {kind.__name__}{builders}")
    if value.action not in actions:  # an unknown verdict must neither proceed nor accept
        raise HookFailure(
            f"returned {kind.__name__} with an unknown action (a {type_path(value.action)}); "
            "build it with "
            f"{kind.__name__}{builders}"
        )


class _PreLlmRequestRule(Rule[RequestDecision]):
    kind = "decide"
    default = RequestDecision.proceed()

    def step(self, fold: Fold, value: Any) -> int:
        _check_decision(
            value, RequestDecision, _REQUEST_ACTIONS, ".proceed(), .modify() or .block()"
        )
        if value.action == "block":
            fold.result = value
            return STOP
        if value.action == "modify":
            if value.request is None:
                raise HookFailure("returned RequestDecision.modify without a request")
            fold.data = value.request
            fold.result = value
        return GO_ON

    def fail_closed(self, hook_name: str, event: HookEvent, error: BaseException) -> Any:
        return RequestDecision.block(_failure_message(hook_name, event, error))

    def finish(self, fold: Fold) -> RequestDecision:
        if fold.result.action == "modify":  # chained: the last request is what is sent
            return RequestDecision.modify(fold.data)
        result: RequestDecision = fold.result
        return result


class _OnLlmResponseRule(Rule[ResponseDecision]):
    kind = "decide"
    default = ResponseDecision.accept()

    def step(self, fold: Fold, value: Any) -> int:
        _check_decision(
            value,
            ResponseDecision,
            _RESPONSE_ACTIONS,
            ".accept(), .block() or .retry_with_feedback()",
        )
        if value.action != "accept":
            fold.result = value
            return STOP
        return GO_ON

    def fail_closed(self, hook_name: str, event: HookEvent, error: BaseException) -> Any:
        return ResponseDecision.block(_failure_message(hook_name, event, error))


class _OnToolErrorRule(Rule[Recovery | None]):
    kind = "transform"

    def step(self, fold: Fold, value: Any) -> int:
        if type(value) is not Recovery:
            raise _wrong_type(value, Recovery, "return hookscope.Recovery(value) or None")
        fold.result = value
        return STOP


class _OnInteractionRule(Rule[Sequence[Answer] | None]):
    kind = "transform"

    def step(self, fold: Fold, value: Any) -> int:
        # Only a list or tuple of Answer answers: 42, "yes" or True must not count as a reply.
        if not isinstance(value, (list, tuple)) or not all(type(a) is Answer for a in value):
            raise HookFailure(
                f"returned {type_path(value)}, expected a list of hookscope.Answer or None"
            )
        if not value:  # an empty list of answers answers nothing: ask the next hook
            return GO_ON
        fold.result = value
        return STOP


class _PreCompactionRule(Rule[str | None]):
    kind = "transform"

    def step(self, fold: Fold, value: Any) -> int:
        if not isinstance(value, str):
            raise HookFailure(f"returned {type_path(value)}, expected a summary (str) or None")
        fold.result = value
        return STOP


_INSPECT: Final = Rule[None]()
PRE_TURN: Final = _PreTurnRule()
POST_TURN: Final = _PostTurnRule()
POST_TOOL_CALL: Final = _PostToolCallRule()
PRE_TOOL_CALL: Final = _PreToolCallRule()
PRE_LLM_REQUEST: Final = _PreLlmRequestRule()
ON_LLM_RESPONSE: Final = _OnLlmResponseRule()
ON_TOOL_ERROR: Final = _OnToolErrorRule()
ON_INTERACTION: Final = _OnInteractionRule()
PRE_COMPACTION: Final = _PreCompactionRule()
INSPECT: Final = _INSPECT

RULES: Final[dict[HookEvent, Rule[Any]]] = {
    "on_session_start": _INSPECT,
    "on_session_end": _INSPECT,
    "pre_turn": PRE_TURN,
    "post_turn": POST_TURN,
    "pre_llm_request": PRE_LLM_REQUEST,
    "on_llm_response": ON_LLM_RESPONSE,
    "pre_tool_call": PRE_TOOL_CALL,
    "post_tool_call": POST_TOOL_CALL,
    "on_tool_error": ON_TOOL_ERROR,
    "on_interaction": ON_INTERACTION,
    "pre_compaction": PRE_COMPACTION,
    "on_compaction": _INSPECT,
}
