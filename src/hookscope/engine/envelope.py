"""The envelope: the JSON object a command or prompt hook receives, and what it answers.

The envelope is a superset of Claude Code's hook input, so hook scripts written for Claude Code
run unchanged: ``hook_event_name`` carries Claude Code's event name (``PreToolUse`` …) and
``hookscope_event`` ours (``pre_tool_call`` …). Values that are not JSON travel as their
``repr``.

A hook answers with a verdict (:func:`parse_verdict`) in any of the forms DESIGN §7 lists:
hookscope's ``{"allow", "message", "modified_args"}``, Claude Code's ``hookSpecificOutput``
(``permissionDecision`` …), its older ``{"decision": "approve"|"block"}`` and
``{"continue": false}``. :func:`event_result` turns a verdict into what the event's hooks
return (a :class:`~hookscope.types.HookResult`, a ``RequestDecision`` …).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from hookscope._reader import InputError, read_json
from hookscope.context import HookContext
from hookscope.hooks import HookEvent
from hookscope.runner import HookFailure
from hookscope.types import (
    ChatResponse,
    HookResult,
    LlmRequest,
    LlmResponse,
    RequestDecision,
    ResponseDecision,
    ToolCall,
    ToolResult,
)

__all__ = [
    "CLAUDE_EVENTS",
    "TOOL_EVENTS",
    "Verdict",
    "build_envelope",
    "event_result",
    "parse_verdict",
    "wire_event_name",
]

#: Claude Code's hook event names and the hookscope events they correspond to.
CLAUDE_EVENTS: Final[Mapping[str, HookEvent]] = {
    "PreToolUse": "pre_tool_call",
    "PostToolUse": "post_tool_call",
    "PostToolUseFailure": "on_tool_error",
    "UserPromptSubmit": "pre_turn",
    "Stop": "post_turn",
    "SessionStart": "on_session_start",
    "SessionEnd": "on_session_end",
    "PreCompact": "pre_compaction",
}
_WIRE_NAMES: Final[Mapping[str, str]] = {ours: theirs for theirs, ours in CLAUDE_EVENTS.items()}

#: Events whose data is (or names) a tool call.
TOOL_EVENTS: Final = frozenset({"pre_tool_call", "post_tool_call", "on_tool_error"})


def wire_event_name(event: HookEvent) -> str:
    """Claude Code's name for ``event`` (``PreToolUse``), or ours in CamelCase where it has none."""
    return _WIRE_NAMES.get(event) or "".join(part.title() for part in event.split("_"))


def _jsonable(value: Any, depth: int = 0) -> Any:
    """``value`` as JSON-compatible data; anything that is not JSON becomes its ``repr``."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if depth > 20:  # a self-referencing structure: stop, readable
        return repr(value)
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v, depth + 1) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: _jsonable(getattr(value, f.name), depth + 1) for f in dataclasses.fields(value)
        }
    return repr(value)


def _tool_fields(call: ToolCall | None, tool_names: Mapping[str, str]) -> dict[str, Any]:
    if call is None:
        return {}
    return {
        "tool_name": tool_names.get(call.name, call.name),
        "tool_server": call.server,
        "tool_input": _jsonable(call.args),
        "tool_use_id": call.id,
    }


def build_envelope(
    event: HookEvent,
    context: HookContext,
    data: Any,
    tool_names: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The envelope for one hook run.

    Args:
        event: The event being dispatched.
        context: Its context (session, turn or operation).
        data: The event's data, as the dispatch passes it.
        tool_names: Agent tool name → the name the hook program knows (the reverse of a
            settings file's ``tool_aliases``), so a Claude Code script sees ``Bash``.
    """
    names = tool_names or {}
    envelope: dict[str, Any] = {
        "hook_event_name": wire_event_name(event),
        "hookscope_event": event,
        "session_id": getattr(context, "session_id", None),
        "turn_index": getattr(context, "turn_index", None),
        "agent_name": getattr(context, "agent_name", None),
        "cwd": os.getcwd(),
    }
    if event == "pre_tool_call" and isinstance(data, ToolCall):
        envelope.update(_tool_fields(data, names))
    elif event == "post_tool_call" and isinstance(data, ToolResult):
        envelope.update(_tool_fields(data.call, names))
        envelope["tool_response"] = _jsonable(data.value)
    elif event == "on_tool_error":
        envelope.update(_tool_fields(getattr(context, "call", None), names))
        envelope["error"] = {"type": type(data).__name__, "message": str(data)}
    elif event == "pre_turn":
        envelope["prompt"] = _jsonable(data)
    elif event == "post_turn":
        envelope["response"] = _jsonable(data) if isinstance(data, ChatResponse) else None
        envelope["stop_hook_active"] = False  # Claude Code's Stop input; we never re-run a turn
    elif event in ("pre_llm_request", "on_llm_response"):
        if isinstance(data, (LlmRequest, LlmResponse)):
            envelope["model"] = data.model
        key = "request" if event == "pre_llm_request" else "response"
        envelope[key] = _jsonable(data)
    elif event == "pre_compaction":
        envelope["messages"] = _jsonable(data)
        envelope["trigger"] = "auto"
    elif event == "on_compaction":
        envelope["summary"] = _jsonable(data)
    elif event == "on_interaction":
        envelope["questions"] = _jsonable(data)
    elif event == "on_session_start":
        envelope["source"] = "startup"
    elif event == "on_session_end":
        envelope["reason"] = getattr(context, "outcome", None) or "other"
    return envelope


def encode_envelope(envelope: Mapping[str, Any]) -> bytes:
    """The envelope as UTF-8 JSON bytes (one line).

    Any string survives: a lone surrogate (``"\\ud800"``, which ``json.loads`` of model
    output produces) can only stand inside a JSON string, where ``backslashreplace`` writes it
    as the JSON escape ``\\ud800`` — escaped, never dropped, and still valid JSON.
    """
    text = json.dumps(envelope, ensure_ascii=False, separators=(",", ":"))
    return text.encode("utf-8", "backslashreplace")


# --- verdicts ---------------------------------------------------------------------------

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
    """

    kind: VerdictKind = "none"
    message: str = ""
    modified_args: Mapping[str, Any] | None = None
    replace: bool = False


NO_OPINION: Final = Verdict()
_PERMISSION: Final[Mapping[str, VerdictKind]] = {"allow": "allow", "deny": "deny", "ask": "ask"}
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


def parse_verdict(stdout: str) -> Verdict:
    """The verdict in a hook program's stdout (after exit status 0).

    Empty output or text that does not start with ``{`` is no opinion. Output that starts with
    ``{`` must be a JSON object in one of the accepted forms; when forms disagree, the
    strictest wins (deny over ask over allow).

    Raises:
        HookFailure: malformed JSON, a non-object, or an unknown decision.
    """
    text = stdout.strip()
    if not text.startswith("{"):
        return NO_OPINION
    try:
        answer = read_json(text, "stdout")
    except InputError as error:
        raise HookFailure(f"printed malformed JSON ({error.problem})") from None
    if not isinstance(answer, dict):
        raise HookFailure("printed JSON that is not one object")
    return verdict_from(answer)


def verdict_from(answer: Mapping[str, Any]) -> Verdict:
    """The verdict in a decoded JSON answer (see :func:`parse_verdict`)."""
    found: list[Verdict] = []
    if _expect(answer.get("continue"), bool, '"continue"') is False:
        reason = _expect(answer.get("stopReason"), str, '"stopReason"') or ""
        found.append(Verdict("deny", reason))
    allow = answer.get("allow")
    if "allow" in answer and not isinstance(allow, bool):
        raise HookFailure(f'answered "allow" with {_odd(allow)}; it must be true or false')
    modified = _expect(answer.get("modified_args"), dict, '"modified_args"')
    message = _expect(answer.get("message"), str, '"message"') or ""
    if allow is not None:
        found.append(Verdict("allow" if allow else "deny", message, modified))
    elif modified is not None:
        found.append(Verdict("allow", message, modified))
    specific = _expect(answer.get("hookSpecificOutput"), dict, '"hookSpecificOutput"')
    if specific is not None:
        decision = specific.get("permissionDecision")
        updated = _expect(specific.get("updatedInput"), dict, '"updatedInput"')
        reason = _expect(specific.get("permissionDecisionReason"), str, "a reason") or ""
        if decision is not None:
            if decision not in _PERMISSION:
                raise HookFailure(
                    f"answered an unknown permissionDecision ({_odd(decision)}); expected allow, "
                    "deny or ask"
                )
            found.append(Verdict(_PERMISSION[decision], reason, updated, updated is not None))
        elif updated is not None:
            found.append(Verdict("allow", reason, updated, replace=True))
    decision = answer.get("decision")
    if decision is not None:
        if decision not in _DECISION:
            raise HookFailure(
                f"answered an unknown decision ({_odd(decision)}); expected approve or block"
            )
        reason = _expect(answer.get("reason"), str, '"reason"') or ""
        found.append(Verdict(_DECISION[decision], reason))
    if not found:
        return NO_OPINION
    return max(found, key=lambda verdict: _RANK[verdict.kind])


def event_result(
    event: HookEvent, verdict: Verdict, hook_name: str, call: ToolCall | None = None
) -> Any:
    """What a hook of ``event`` returns for ``verdict`` (``None`` for no opinion).

    Decide events get their own result type; a verdict on an inspect or transform event has
    nothing to decide and is dropped (Claude Code's ``PostToolUse`` block only informs its
    model, which hookscope leaves to the agent).
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
            tool = call.qualified_name if call is not None else "this"
            return HookResult.ask(message or f"hook {hook_name!r} asks to confirm {tool} call")
        what = "call" if event == "pre_tool_call" else "turn"
        return HookResult.deny(message or f"hook {hook_name!r} denied the {what}")
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
