"""The envelope: the JSON object a command or prompt hook receives, and what it answers.

The envelope is a superset of Claude Code's hook input, so hook scripts written for Claude Code
run unchanged: ``hook_event_name`` carries Claude Code's event name (``PreToolUse`` …) and
``hookscope_event`` ours (``pre_tool_call`` …). Values that are not JSON travel as their
``repr``.

Besides Claude Code's own fields (``transcript_path``, ``permission_mode``, ``prompt_id``,
``tool_use_id``, ``duration_ms``, ``last_assistant_message`` … as its CLI sends them, DESIGN
§7a), hookscope adds ``hookscope_event``, ``turn_index``, ``agent_name`` and ``tool_server``.
What a hook answers is read by :mod:`hookscope.engine.verdicts` (re-exported here).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import uuid
from collections.abc import Mapping
from typing import Any, Final

from hookscope._scopes import PROMPT_ID_KEY, TOOL_DURATION_KEY
from hookscope.context import SUBAGENT_KEY, HookContext, TurnContext
from hookscope.engine.claude import CLAUDE_EVENTS, WIRE_NAMES, ClaudeNames
from hookscope.engine.verdicts import Verdict, event_result, parse_verdict, verdict_from
from hookscope.hooks import HookEvent
from hookscope.types import ChatResponse, LlmRequest, LlmResponse, ToolCall, ToolResult

__all__ = [
    "CLAUDE_EVENTS",
    "TOOL_EVENTS",
    "Verdict",
    "build_envelope",
    "encode_envelope",
    "event_result",
    "jsonable",
    "parse_verdict",
    "prompt_id",
    "tool_use_id",
    "verdict_from",
    "wire_event_name",
]

#: Events whose data is (or names) a tool call.
TOOL_EVENTS: Final = frozenset({"pre_tool_call", "post_tool_call", "on_tool_error"})
#: The context key of a tool call's id when the model gave none (shared by its Pre and Post).
TOOL_USE_ID_KEY: Final = "hookscope.tool_use_id"
_LATEST_PROMPT_ID: Final = "hookscope.latest_prompt_id"
#: Set on a turn whose Stop hook asked to go on: the next Stop carries stop_hook_active.
STOP_HOOK_ACTIVE_KEY: Final = "hookscope.stop_hook_active"
#: What hookscope tells hook programs about permissions: it has no permission modes, so the
#: one that asks before anything not allowed (Claude Code's ``default``).
PERMISSION_MODE: Final = "default"


def wire_event_name(event: HookEvent) -> str:
    """Claude Code's name for ``event`` (``PreToolUse``), or ours in CamelCase where it has none."""
    return WIRE_NAMES.get(event) or "".join(part.title() for part in event.split("_"))


def jsonable(value: Any, depth: int = 0) -> Any:
    """``value`` as JSON-compatible data; anything that is not JSON becomes its ``repr``."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if depth > 20:  # a self-referencing structure: stop, readable
        return repr(value)
    if isinstance(value, Mapping):
        return {str(k): jsonable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v, depth + 1) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: jsonable(getattr(value, f.name), depth + 1) for f in dataclasses.fields(value)
        }
    return repr(value)


def tool_use_id(context: HookContext, call: ToolCall) -> str:
    """``call``'s id, or one made up once per operation so PreToolUse and PostToolUse agree."""
    if call.id:
        return call.id
    made = context.get(TOOL_USE_ID_KEY)
    if not isinstance(made, str):
        made = f"toolu_hs_{uuid.uuid4().hex[:24]}"
        context.set(TOOL_USE_ID_KEY, made)
    return made


def _tool_fields(context: HookContext, call: ToolCall | None, names: ClaudeNames) -> dict[str, Any]:
    if call is None:
        return {}
    return {
        "tool_name": names.tool_name(call),
        "tool_server": call.server,
        "tool_input": jsonable(names.tool_input(call)),
        "tool_use_id": tool_use_id(context, call),
    }


def _turn_of(context: HookContext) -> TurnContext | None:
    found: HookContext | None = context
    while found is not None and not isinstance(found, TurnContext):
        found = found.parent
    return found


def prompt_id(context: HookContext) -> str | None:
    """The id of the user prompt the context's turn answers (made once per turn); outside a
    turn, the session's latest one, or ``None`` before the first prompt (as Claude Code)."""
    turn = _turn_of(context)
    if turn is None:
        latest = context.get(_LATEST_PROMPT_ID)
        return latest if isinstance(latest, str) else None
    made = turn.get(PROMPT_ID_KEY)
    if not isinstance(made, str):
        made = str(getattr(turn.prompt, "prompt_id", "") or uuid.uuid4())
        turn.set(PROMPT_ID_KEY, made)
        turn.session.set(_LATEST_PROMPT_ID, made)
    return made


def build_envelope(
    event: HookEvent,
    context: HookContext,
    data: Any,
    tool_names: Mapping[str, str] | ClaudeNames | None = None,
    *,
    wire_event: str | None = None,
    project_dir: str | None = None,
    transcript_path: str = "",
    source: str | None = None,
) -> dict[str, Any]:
    """The envelope for one hook run: Claude Code's hook input, plus hookscope's fields.

    Args:
        event: The event being dispatched.
        context: Its context (session, turn or operation).
        data: The event's data, as the dispatch passes it.
        tool_names: Agent tool name → the name the hook program knows (the reverse of a
            settings file's ``tool_aliases``), or a :class:`ClaudeNames` with argument maps.
        wire_event: The Claude Code event the hook was configured for, when ``event`` serves
            several (``SubagentStop`` on ``post_turn``, ``Notification`` on ``on_interaction``).
        project_dir: ``cwd`` (the project directory); the current directory when ``None``.
        transcript_path: The session's transcript file (``transcript_path``).
        source: SessionStart's ``source`` (``startup``; ``compact`` after a compaction).
    """
    names = ClaudeNames.of(tool_names)
    wire = wire_event or wire_event_name(event)
    envelope: dict[str, Any] = {
        "session_id": getattr(context, "session_id", None),
        "transcript_path": transcript_path,
        "cwd": project_dir or os.getcwd(),
    }
    asked = prompt_id(context)
    if asked is not None:
        envelope["prompt_id"] = asked
    if event not in ("on_session_start", "on_session_end", "pre_compaction", "on_compaction"):
        envelope["permission_mode"] = PERMISSION_MODE
    envelope["hook_event_name"] = wire
    subagent = context.get(SUBAGENT_KEY) if wire in ("SubagentStart", "SubagentStop") else None
    if isinstance(subagent, tuple) and len(subagent) == 2:
        envelope["agent_id"], envelope["agent_type"] = str(subagent[1]), str(subagent[0])
    envelope["hookscope_event"] = event
    envelope["turn_index"] = getattr(context, "turn_index", None)
    envelope["agent_name"] = getattr(context, "agent_name", None)
    call = getattr(context, "call", None)
    if event == "pre_tool_call" and isinstance(data, ToolCall):
        envelope.update(_tool_fields(context, data, names))
    elif event == "post_tool_call" and isinstance(data, ToolResult):
        envelope.update(_tool_fields(context, data.call, names))
        envelope["tool_response"] = jsonable(data.value)
        envelope["duration_ms"] = round(data.duration_s * 1000)
    elif event == "on_tool_error":
        envelope.update(_tool_fields(context, call, names))
        envelope["error"] = str(data)  # Claude Code's shape: the message
        envelope["error_type"] = type(data).__name__
        envelope["is_interrupt"] = False
        took = context.get(TOOL_DURATION_KEY)
        if isinstance(took, float):
            envelope["duration_ms"] = round(took * 1000)
    elif event == "pre_turn" and wire != "SubagentStart":
        envelope["prompt"] = jsonable(data)
    elif event == "post_turn":
        response = data if isinstance(data, ChatResponse) else None
        turn = _turn_of(context)
        envelope["stop_hook_active"] = bool(
            turn is not None and (turn.continues or turn.get(STOP_HOOK_ACTIVE_KEY))
        )
        envelope["last_assistant_message"] = response.text if response is not None else ""
        envelope["response"] = jsonable(response)
    elif event in ("pre_llm_request", "on_llm_response"):
        if isinstance(data, (LlmRequest, LlmResponse)):
            envelope["model"] = data.model
        key = "request" if event == "pre_llm_request" else "response"
        envelope[key] = jsonable(data)
    elif event == "pre_compaction":
        envelope["trigger"] = "auto"
        envelope["custom_instructions"] = None
        envelope["messages"] = jsonable(data)
    elif event == "on_compaction":
        if source is not None:  # SessionStart again, after the compaction (as Claude Code)
            envelope["source"] = source
        else:
            envelope["trigger"] = "auto"
            envelope["compact_summary"] = jsonable(data)
        envelope["summary"] = jsonable(data)
    elif event == "on_interaction":
        envelope.update(_tool_fields(context, call, names))
        questions = list(data) if isinstance(data, (list, tuple)) else []
        text = "; ".join(str(getattr(q, "text", q)) for q in questions)
        envelope["message"] = text
        envelope["notification_type"] = "permission_prompt"
        envelope["questions"] = jsonable(data)
    elif event == "on_session_start":
        envelope["source"] = source or "startup"
    elif event == "on_session_end":
        envelope["reason"] = "other"  # Claude Code's reason when its SDK session closes
        envelope["outcome"] = getattr(context, "outcome", None)
    return envelope


def encode_envelope(envelope: Mapping[str, Any]) -> bytes:
    """The envelope as UTF-8 JSON bytes (one line).

    Any string survives: a lone surrogate (``"\\ud800"``, which ``json.loads`` of model
    output produces) can only stand inside a JSON string, where ``backslashreplace`` writes it
    as the JSON escape ``\\ud800`` — escaped, never dropped, and still valid JSON.
    """
    text = json.dumps(envelope, ensure_ascii=False, separators=(",", ":"))
    return text.encode("utf-8", "backslashreplace")
