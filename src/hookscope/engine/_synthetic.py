"""One synthetic event for ``hookscope hooks run``: contexts, data, and what each hook said."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hookscope.context import HookContext, OperationContext, SessionContext, TurnContext
from hookscope.engine.config import HookTable
from hookscope.engine.envelope import TOOL_EVENTS
from hookscope.engine.transcript import TranscriptWriter
from hookscope.hooks import HookEvent
from hookscope.runner import DispatchObserver, HookRunner
from hookscope.types import (
    ChatResponse,
    HookResult,
    HookscopeError,
    LlmRequest,
    LlmResponse,
    Question,
    RequestDecision,
    ResponseDecision,
    ToolCall,
    ToolResult,
)

__all__ = ["SyntheticInputError", "run_event"]


class SyntheticInputError(HookscopeError, ValueError):
    """The event cannot be built from the given tool and input."""


class _Lines(DispatchObserver):
    def __init__(self) -> None:
        self.lines: list[str] = []

    def hook_finished(
        self,
        event: HookEvent,
        hook_name: str,
        context: HookContext,
        result: Any,
        error: BaseException | None,
        duration_s: float,
    ) -> None:
        if hook_name == TranscriptWriter.name:
            return  # the transcript the hooks read, not one of them
        verdict, message = _verdict(result, error)
        self.lines.append(f"{hook_name}\t{verdict}\t{message or '-'}\t{duration_s * 1000:.1f} ms")


def _verdict(result: Any, error: BaseException | None) -> tuple[str, str]:
    if error is not None:
        return "failed", f"{type(error).__name__}: {error}"
    if result is None:
        return "none", ""
    if isinstance(result, HookResult):
        if getattr(result, "confirm", False):
            return "ask", result.message
        return ("allow" if result.allow else "deny"), result.message
    if isinstance(result, RequestDecision):
        return ("deny" if result.action == "block" else "allow"), result.message
    if isinstance(result, ResponseDecision):
        return ("allow" if result.action == "accept" else "deny"), result.message
    return "answered", repr(result)[:200]


def _data(
    event: HookEvent, turn: TurnContext, tool: str | None, given: Any
) -> tuple[HookContext, Any]:
    if event in TOOL_EVENTS:
        if not tool:
            raise SyntheticInputError(f"{event} needs --tool NAME")
        args = {} if given is None else given
        if event != "on_tool_error" and not isinstance(args, dict):
            raise SyntheticInputError("--input must be a JSON object: the tool's arguments")
        call = ToolCall(tool, args if isinstance(args, dict) else {}, id="hooks-run")
        operation = OperationContext(turn, "tool", call, call.id)
        if event == "pre_tool_call":
            return operation, call
        if event == "post_tool_call":
            return operation, ToolResult(call, given)
        return operation, RuntimeError(str(given) if given is not None else "tool failed")
    text = "" if given is None else given if isinstance(given, str) else str(given)
    data: dict[str, Any] = {
        "on_session_start": None,
        "on_session_end": None,
        "pre_turn": given,
        "post_turn": ChatResponse(text),
        "pre_llm_request": LlmRequest(
            "hooks-run", messages=given if isinstance(given, list) else ()
        ),
        "on_llm_response": LlmResponse("hooks-run", text=text),
        "on_interaction": (Question(text or "Proceed?"),),
        "pre_compaction": given if isinstance(given, list) else [given],
        "on_compaction": text,
    }
    if event == "on_interaction":
        return OperationContext(turn, "interaction", None, "hooks-run"), data[event]
    if event in ("on_session_start", "on_session_end"):
        return turn.session, None
    return turn, data[event]


def _allowed(result: Any) -> bool:
    if isinstance(result, HookResult):
        return result.allow
    if isinstance(result, RequestDecision):
        return result.action != "block"
    if isinstance(result, ResponseDecision):
        return result.action == "accept"
    return True


async def run_event(
    table: HookTable,
    event: HookEvent,
    tool: str | None,
    given: Any,
    session_id: str = "hooks-run",
) -> tuple[Sequence[str], bool]:
    """Run ``table``'s hooks for one synthetic ``event``; (one line per hook, then what the
    hooks asked for, allowed?)."""
    runner = HookRunner(table)
    lines = _Lines()
    runner.observe(lines)
    session = SessionContext(session_id, "hookscope-cli")
    turn = TurnContext(session, 0, given if event == "pre_turn" else None)
    context, data = _data(event, turn, tool, given)
    dispatch = await runner.dispatch(event, context, data)
    result = dispatch.result
    asked = list(lines.lines)
    if isinstance(result, HookResult) and result.continuation:
        asked.append(f"continue:\t{result.continuation}")
    if event == "post_tool_call" and isinstance(result, HookResult) and result.message:
        asked.append(f"feedback:\t{result.message}")
    asked.extend(
        f"context:\t{text}" for text in [*session.context_additions, *turn.context_additions]
    )
    return asked, _allowed(result) if event != "post_tool_call" else True
