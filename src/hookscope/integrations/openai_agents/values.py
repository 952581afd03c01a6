"""openai-agents values → hookscope values, and hookscope verdicts → the SDK's answers.

Stateless conversions only; nothing here keeps a session, a turn or a call.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

from agents import (
    GuardrailFunctionOutput,
    InputGuardrail,
    InputGuardrailResult,
    InputGuardrailTripwireTriggered,
    ModelResponse,
    ToolGuardrailFunctionOutput,
)
from agents.run_config import ModelInputData
from agents.tool_context import ToolContext

from hookscope.integrations._kit import ToolVerdict
from hookscope.types import (
    HookscopeError,
    LlmRequest,
    LlmResponse,
    ToolCall,
    Usage,
    holds_only_immutables,
)

__all__ = [
    "PROVIDER",
    "ModelRequestBlocked",
    "ModelResponseBlocked",
    "Proposed",
    "agent_model_name",
    "call_from_tool_context",
    "input_data",
    "llm_request",
    "llm_response",
    "prompt_text",
    "tool_guardrail_output",
    "tripwire",
    "turn_blocker",
]

#: ``gen_ai.provider.name`` of every model call: the SDK speaks OpenAI's APIs.
PROVIDER: Final = "openai"


class ModelRequestBlocked(HookscopeError):
    """A ``pre_llm_request`` hook blocked a model call.

    The SDK has no way to skip one model call, so the run ends with this exception (the model
    is never called); :attr:`message` says why.
    """

    def __init__(self, message: str) -> None:
        self.message = message or "a pre_llm_request hook blocked the model call"
        super().__init__(self.message)


class ModelResponseBlocked(HookscopeError):
    """An ``on_llm_response`` hook blocked (or asked to retry) a model response.

    The SDK cannot discard a response it received, so the run ends with this exception before
    the response is acted on; :attr:`message` says why.
    """

    def __init__(self, message: str) -> None:
        self.message = message or "an on_llm_response hook blocked the model response"
        super().__init__(self.message)


#: A model response's function calls by call id: the raw JSON arguments and the parsed call.
Proposed = dict[str, tuple[str, ToolCall]]


def call_from_tool_context(
    context: ToolContext[Any], arguments: str | None = None, proposed: Proposed | None = None
) -> ToolCall:
    """The :class:`ToolCall` a tool context describes (its JSON arguments parsed).

    Arguments that are no JSON object (the model sent garbage) are kept under ``_raw`` so a
    policy still sees them; the SDK rejects them itself when it parses them. ``proposed``:
    the calls :func:`llm_response` parsed from the response that asked for this one; the
    call is taken from there when it is the same call (name, id and arguments), so the
    arguments are not parsed twice.
    """
    raw = context.tool_arguments if arguments is None else arguments
    if proposed:
        known = proposed.pop(context.tool_call_id, None)
        if known is not None:
            text, call = known
            # Only a call nothing can have changed in place since (an on_llm_response hook
            # holds the same object) stands for a fresh one.
            if text == raw and call.name == context.tool_name and holds_only_immutables(call.args):
                return call
    return ToolCall(context.tool_name, _parse_args(raw), context.tool_call_id)


def _parse_args(raw: str) -> dict[str, Any]:
    try:
        parsed = json.loads(raw) if raw else {}
    except ValueError:
        return {"_raw": raw}
    return parsed if isinstance(parsed, dict) else {"_raw": raw}


def agent_model_name(agent: Any, fallback: str = "unknown") -> str:
    """The model an agent calls: its ``model`` string, or its Model object's ``model``."""
    model = getattr(agent, "model", None)
    if isinstance(model, str) and model:
        return model
    name = getattr(model, "model", None)
    return name if isinstance(name, str) and name else fallback


def prompt_text(value: Any) -> Any:
    """A run's input as a turn's prompt: the text itself, or the last user message's text."""
    if isinstance(value, str):
        return value
    if isinstance(value, Sequence):
        for item in reversed(value):
            if isinstance(item, Mapping) and item.get("role") == "user":
                content = item.get("content")
                return content if isinstance(content, str) else str(content)
    return None


def llm_request(model: str, data: ModelInputData, tools: Sequence[str]) -> LlmRequest:
    """A model call's request as ``pre_llm_request`` hooks see it (the instructions first)."""
    # Input items are dicts (or the SDK's pydantic items, which hooks see as they are); a
    # plain type check, not an ABC one: this runs for every item of every model call.
    items = [item for item in data.input if isinstance(item, dict)]
    if data.instructions:
        items.insert(0, {"role": "system", "content": data.instructions})
    messages: Sequence[Mapping[str, Any]] = items
    return LlmRequest(model=model, messages=messages, tools=tuple(tools), provider=PROVIDER)


def input_data(request: LlmRequest, original: ModelInputData) -> ModelInputData:
    """The SDK's model input for a request a hook modified.

    The agent's instructions stay instructions while their message is still in the request
    (a hook that removes it removes them); every other message is an input item, in order.
    """
    instructions = original.instructions
    marker = {"role": "system", "content": instructions} if instructions else None
    kept = False
    items: list[Any] = []
    for message in request.messages:
        if not kept and marker is not None and dict(message) == marker:
            kept = True
            continue
        items.append(dict(message))
    return ModelInputData(input=items, instructions=instructions if kept else None)


def llm_response(
    model: str, response: ModelResponse, proposed: Proposed | None = None
) -> LlmResponse:
    """A model response as ``on_llm_response`` hooks see it, with its usage.

    ``proposed``: filled with the response's function calls by call id (for
    :func:`call_from_tool_context`).
    """
    texts: list[str] = []
    calls: list[ToolCall] = []
    for item in response.output:
        kind = getattr(item, "type", None)
        if kind == "message":
            for part in getattr(item, "content", ()) or ():
                text = getattr(part, "text", None)
                if isinstance(text, str):
                    texts.append(text)
        elif kind == "function_call":
            raw = str(getattr(item, "arguments", "") or "")
            call = ToolCall(
                str(getattr(item, "name", "")),
                _parse_args(raw),
                str(getattr(item, "call_id", "") or ""),
            )
            calls.append(call)
            if proposed is not None and call.id:
                proposed[call.id] = (raw, call)
    usage = response.usage
    details = usage.input_tokens_details
    return LlmResponse(
        model=model,
        text="".join(texts),
        tool_calls=tuple(calls),
        usage=Usage(
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cache_read_tokens=getattr(details, "cached_tokens", 0) or 0,
            reasoning_tokens=getattr(usage.output_tokens_details, "reasoning_tokens", 0) or 0,
        ),
        provider=PROVIDER,
        finish_reasons=("tool_calls",) if calls else ("stop",),
    )


def tool_guardrail_output(verdict: ToolVerdict) -> ToolGuardrailFunctionOutput:
    """``to_openai_agents``: a tool input guardrail's answer for a verdict, allow or reject
    with the message (the model reads it as the tool's output)."""
    if verdict.allowed:
        return ToolGuardrailFunctionOutput.allow(output_info=None)
    return ToolGuardrailFunctionOutput.reject_content(
        message=verdict.message or "the call was denied", output_info=None
    )


def turn_blocker(message: str) -> InputGuardrail[Any]:
    """A blocking input guardrail that trips with ``message``: how a turn a ``pre_turn`` hook
    blocked ends the SDK's own way (``InputGuardrailTripwireTriggered``, whose
    ``guardrail_result.output.output_info`` is the message), before any model call."""
    text = message or "a pre_turn hook blocked the turn"

    def hookscope_pre_turn(_context: Any, _agent: Any, _input: Any) -> GuardrailFunctionOutput:
        return GuardrailFunctionOutput(output_info=text, tripwire_triggered=True)

    return InputGuardrail(
        guardrail_function=hookscope_pre_turn, name="hookscope_pre_turn", run_in_parallel=False
    )


def tripwire(blocker: InputGuardrail[Any], message: str) -> InputGuardrailTripwireTriggered:
    """The exception ``blocker`` would raise had the SDK run it (a resumed run runs none)."""
    return InputGuardrailTripwireTriggered(
        InputGuardrailResult(
            guardrail=blocker,
            output=GuardrailFunctionOutput(
                output_info=message or "a pre_turn hook blocked the turn", tripwire_triggered=True
            ),
        )
    )
