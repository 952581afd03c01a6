"""What a command, prompt or http hook answered, and what that means for its event.

A hook answers in any of the forms DESIGN §7 lists: hookscope's ``{"allow", "message",
"modified_args"}``, Claude Code's ``hookSpecificOutput`` (``permissionDecision`` …), its older
``{"decision": "approve"|"block"}`` and ``{"continue": false}``. :func:`parse_verdict` reads
one; :func:`event_result` turns it into what the event's hooks return, and
:func:`add_context` files the text a hook wants the model to read (DESIGN §7a).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from hookscope._reader import InputError, read_json
from hookscope.context import HookContext, SessionContext, TurnContext
from hookscope.hooks import HookEvent
from hookscope.runner import HookFailure
from hookscope.types import (
    Answer,
    HookResult,
    RequestDecision,
    ResponseDecision,
    ToolCall,
)

__all__ = [
    "NO_OPINION",
    "Verdict",
    "add_context",
    "event_result",
    "parse_verdict",
    "verdict_from",
]

VerdictKind = Literal["none", "allow", "deny", "ask"]


@dataclass(frozen=True, slots=True)
class Verdict:
    """What a hook program said, before it is applied to an event.

    Args:
        kind: ``none`` (no opinion), ``allow``, ``deny`` (deny a call, block a turn) or ``ask``.
        message: Why, for the model or the user.
        modified_args: Arguments for the call when allowing: merged into it, or replacing
            it when ``replace`` (Claude Code's ``updatedInput``).
        replace: ``modified_args`` replaces the call's arguments.
        context: Text for the model's context (``additionalContext``, ``systemMessage``).
        halt: ``{"continue": false}``: stop, and never continue a turn.
    """

    kind: VerdictKind = "none"
    message: str = ""
    modified_args: Mapping[str, Any] | None = None
    replace: bool = False
    context: str = ""
    halt: bool = False


NO_OPINION: Final = Verdict()
# "defer" hands the call to the host's own permission flow: in hookscope that is the confirm
# question (on_interaction hooks), as for "ask".
_PERMISSION: Final[Mapping[str, VerdictKind]] = {
    "allow": "allow",
    "deny": "deny",
    "ask": "ask",
    "defer": "ask",
}
_DECISION: Final[Mapping[str, VerdictKind]] = {"approve": "allow", "block": "deny"}
_RANK: Final[Mapping[VerdictKind, int]] = {"none": 0, "allow": 1, "ask": 2, "deny": 3}


def _expect(value: Any, kind: type, what: str) -> Any:
    if value is not None and not isinstance(value, kind):
        raise HookFailure(f"answered {what} of type {type(value).__name__}")
    return value


def _odd(value: Any) -> str:
    # Name the type, never echo the value: what a program prints can carry anything, and this
    # text reaches the model and the spans.
    return f"a {type(value).__name__}"


def parse_verdict(stdout: str, plain_is_context: bool = False) -> Verdict:
    """The verdict in a hook program's stdout (after exit status 0).

    Empty output or text that does not start with ``{`` is no opinion (and, with
    ``plain_is_context``, context for the model: Claude Code's SessionStart and
    UserPromptSubmit). Output that starts with ``{`` must be a JSON object in one of the
    accepted forms; when forms disagree, the strictest wins (deny over ask over allow).

    Raises:
        HookFailure: malformed JSON, a non-object, or an unknown decision.
    """
    text = stdout.strip()
    if not text.startswith("{"):
        return Verdict(context=text) if plain_is_context and text else NO_OPINION
    try:
        answer = read_json(text, "stdout")
    except InputError as error:
        raise HookFailure(f"printed malformed JSON ({error.problem})") from None
    if not isinstance(answer, dict):
        raise HookFailure("printed JSON that is not one object")
    return verdict_from(answer)


def _permission_request(specific: Mapping[str, Any]) -> Verdict | None:
    """PermissionRequest's ``{"decision": {"behavior": "allow"|"deny", "message": …}}``."""
    decision = _expect(specific.get("decision"), dict, '"decision"')
    if decision is None:
        return None
    behavior = decision.get("behavior")
    if behavior not in ("allow", "deny"):
        raise HookFailure(
            f"answered an unknown behavior ({_odd(behavior)}); expected allow or deny"
        )
    message = _expect(decision.get("message"), str, '"message"') or ""
    updated = _expect(decision.get("updatedInput"), dict, '"updatedInput"')
    return Verdict(behavior, message, updated, updated is not None)


def verdict_from(answer: Mapping[str, Any]) -> Verdict:
    """The verdict in a decoded JSON answer (see :func:`parse_verdict`)."""
    found: list[Verdict] = []
    halt = _expect(answer.get("continue"), bool, '"continue"') is False
    if halt:
        reason = _expect(answer.get("stopReason"), str, '"stopReason"') or ""
        found.append(Verdict("deny", reason, halt=True))
    allow = answer.get("allow")
    if "allow" in answer and not isinstance(allow, bool):
        raise HookFailure(f'answered "allow" with {_odd(allow)}; it must be true or false')
    modified = _expect(answer.get("modified_args"), dict, '"modified_args"')
    message = _expect(answer.get("message"), str, '"message"') or ""
    if allow is not None:
        found.append(Verdict("allow" if allow else "deny", message, modified))
    elif modified is not None:
        found.append(Verdict("allow", message, modified))
    context = [_expect(answer.get("systemMessage"), str, '"systemMessage"') or ""]
    specific = _expect(answer.get("hookSpecificOutput"), dict, '"hookSpecificOutput"')
    if specific is not None:
        context.append(_expect(specific.get("additionalContext"), str, "additionalContext") or "")
        decision = specific.get("permissionDecision")
        updated = _expect(specific.get("updatedInput"), dict, '"updatedInput"')
        reason = _expect(specific.get("permissionDecisionReason"), str, "a reason") or ""
        if decision is not None:
            if decision not in _PERMISSION:
                raise HookFailure(
                    f"answered an unknown permissionDecision ({_odd(decision)}); expected allow, "
                    "deny, ask or defer"
                )
            found.append(Verdict(_PERMISSION[decision], reason, updated, updated is not None))
        elif updated is not None:
            found.append(Verdict("allow", reason, updated, replace=True))
        requested = _permission_request(specific)
        if requested is not None:
            found.append(requested)
    decision = answer.get("decision")
    if decision is not None:
        if decision not in _DECISION:
            raise HookFailure(
                f"answered an unknown decision ({_odd(decision)}); expected approve or block"
            )
        reason = _expect(answer.get("reason"), str, '"reason"') or ""
        found.append(Verdict(_DECISION[decision], reason))
    text = "\n".join(part for part in context if part)
    if not found:
        return Verdict(context=text) if text else NO_OPINION
    strictest = max(found, key=lambda verdict: _RANK[verdict.kind])
    return Verdict(
        strictest.kind,
        strictest.message,
        strictest.modified_args,
        strictest.replace,
        text,
        halt or strictest.halt,
    )


def add_context(context: HookContext, event: HookEvent, text: str) -> None:
    """File ``text`` for the model: on the session for session events, else on the turn."""
    if not text:
        return
    found: HookContext | None = context
    while found is not None and not isinstance(found, TurnContext):
        if isinstance(found, SessionContext):
            break
        found = found.parent
    if isinstance(found, (TurnContext, SessionContext)):
        found.context_additions.append(text)


def event_result(
    event: HookEvent, verdict: Verdict, hook_name: str, call: ToolCall | None = None
) -> Any:
    """What a hook of ``event`` returns for ``verdict`` (``None`` for no opinion).

    Decide events get their own result type. ``post_turn``: a block continues the turn with
    the reason (:meth:`HookResult.continue_with`), unless the hook also said ``continue:
    false``. ``post_tool_call``: a block is feedback for the model (``HookResult.deny``).
    ``on_interaction``: an allow or deny answers the confirm question. Other events have
    nothing to decide.
    """
    kind = verdict.kind
    if kind == "none":
        return None
    message = verdict.message
    if event in ("pre_tool_call", "pre_turn"):
        if kind == "allow":  # an explicit allow, not None: its run reports verdict "allow"
            args = verdict.modified_args if event == "pre_tool_call" else None
            if args is None or (not args and not verdict.replace):
                return HookResult()
            return HookResult(modified_args=dict(args), replace_args=verdict.replace)
        if kind == "ask":
            if event == "pre_turn":
                raise HookFailure("answered ask, which a prompt (UserPromptSubmit) cannot take")
            tool = call.qualified_name if call is not None else "this"
            return HookResult.ask(message or f"hook {hook_name!r} asks to confirm {tool} call")
        what = "call" if event == "pre_tool_call" else "turn"
        return HookResult.deny(message or f"hook {hook_name!r} denied the {what}")
    if event == "post_turn":
        if kind == "deny" and not verdict.halt:
            return HookResult.continue_with(message or f"hook {hook_name!r} asked to go on")
        return None
    if event == "post_tool_call":
        if kind == "deny":
            return HookResult.deny(message or f"hook {hook_name!r} flagged the result")
        return None
    if event == "on_interaction":
        if kind in ("allow", "deny"):
            return [Answer(question_id="confirm", text=kind)]
        return None
    if event in ("pre_llm_request", "on_llm_response"):
        if kind == "ask":
            raise HookFailure(f"answered ask, which {event} does not support")
        if kind == "allow":
            if event == "pre_llm_request":
                return RequestDecision.proceed()
            return ResponseDecision.accept()
        reason = message or f"hook {hook_name!r} blocked the {event.split('_')[-1]}"
        if event == "pre_llm_request":
            return RequestDecision.block(reason)
        return ResponseDecision.block(reason)
    return None
