"""The Google ADK mapping: one ``BasePlugin`` whose callbacks run hookscope's lifecycle.

ADK calls a plugin before and after each step (split seams, the table is in the package
docstring): a run (``before_run``/``after_run``/``on_run_error``) is a turn of the session of
its ADK session id; a model call (``before_model``/``after_model``/``on_model_error``) a ``chat``
span with the LLM hooks; a tool call (``before_tool``/``after_tool``/``on_tool_error``) an
``execute_tool`` span. A sub-agent ADK transfers to is an ``invoke_agent`` run in the turn; an
``AgentTool``'s run (the plugins are inherited) is one under the calling tool.
"""

from __future__ import annotations

import asyncio
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from google.adk.models.llm_response import LlmResponse as AdkResponse
from google.adk.plugins.base_plugin import BasePlugin
from google.genai import types

from hookscope._scopes import is_cancellation
from hookscope.integrations._kit import (
    Governor,
    SubagentRun,
    ToolOp,
    Turn,
    ambient_session_id,
    current_parent,
)
from hookscope.integrations._kit.keyed_govern import AskMode
from hookscope.integrations._kit.keyed_govern import Governed as KeyedGoverned
from hookscope.integrations._kit.lazy import LazyMessages
from hookscope.types import (
    ChatResponse,
    LlmRequest,
    LlmResponse,
    ResponseDecision,
    ToolCall,
    Usage,
)

if TYPE_CHECKING:
    from google.adk.agents.invocation_context import InvocationContext
    from google.adk.models.llm_request import LlmRequest as AdkRequest

__all__ = ["PLUGIN_NAME", "AskMode", "Governed", "HookscopePlugin"]

#: The plugin's name in ADK (plugin names are unique per runner).
PLUGIN_NAME: Final = "hookscope"
_PROVIDER: Final = "gcp.gen_ai"


class Governed(KeyedGoverned):
    """One ``govern()`` (or instrumentation): the governor, its sessions, its invocations."""

    __slots__ = ("invocations",)

    def __init__(self, governor: Governor, ask: AskMode, idle_s: float | None) -> None:
        super().__init__(governor, ask, idle_s)
        self.invocations: dict[str, Invocation] = {}


@dataclass(eq=False)
class Invocation:
    """One ADK invocation: a turn, or a subagent run when an ``AgentTool`` made it."""

    turn: Turn
    root_agent: str
    task: asyncio.Task[Any] | None
    run: SubagentRun | None = None
    #: Runs of agents ADK transferred to, by agent name.
    agents: dict[str, SubagentRun] = field(default_factory=dict)
    ops: dict[str, ToolOp] = field(default_factory=dict)
    answer: str = ""
    model: str | None = None

    def run_of(self, agent_name: str) -> SubagentRun | None:
        return self.agents.get(agent_name, self.run)


#: The governed tool call running in this task: an AgentTool's run here is its subagent run.
_CALLING: Final[ContextVar[tuple[Governed, Invocation, ToolOp] | None]] = ContextVar(
    "hookscope_google_adk_calling", default=None
)


class HookscopePlugin(BasePlugin):
    """The plugin :func:`~hookscope.integrations.google_adk.govern` adds to a runner or app."""

    def __init__(self, governed: Governed) -> None:
        super().__init__(name=PLUGIN_NAME)
        self.governed = governed

    # --- turns ---

    async def before_run_callback(
        self, *, invocation_context: InvocationContext
    ) -> types.Content | None:
        governed, context = self.governed, invocation_context
        agent_name = context.agent.name if context.agent is not None else ""
        calling = _CALLING.get()
        if calling is not None and calling[0].governor.runner is governed.governor.runner:
            _, outer, op = calling
            run = outer.turn.start_subagent(context.invocation_id, agent_name, op)
            governed.invocations[context.invocation_id] = Invocation(
                outer.turn, agent_name, None, run
            )
            return None
        governor = governed.governor
        try:
            session = await governed.sessions.session_for(
                context.session.id,
                agent_name=governor.agent_name or agent_name,
                ambient_id=ambient_session_id(),
                parent=current_parent(),
            )
            turn = await session.start_turn(_text(context.user_content))
        except Exception as error:  # fail closed: no turn runs ungoverned
            return _content(governor.guard.failed("pre_turn", error))
        if not turn.allowed:  # ADK ends the run with this answer, before any model call
            return _content(turn.verdict.message)
        governed.invocations[context.invocation_id] = Invocation(
            turn, agent_name, asyncio.current_task()
        )
        return None

    async def on_event_callback(self, *, invocation_context: Any, event: Any) -> None:
        invocation = self.governed.invocations.get(invocation_context.invocation_id)
        if invocation is not None and event.is_final_response() and event.content:
            invocation.answer = _text(event.content) or invocation.answer

    async def after_run_callback(self, *, invocation_context: InvocationContext) -> None:
        await self._end(invocation_context.invocation_id, None)

    async def on_run_error_callback(
        self, *, invocation_context: InvocationContext, error: Exception
    ) -> None:
        await self._end(invocation_context.invocation_id, error)

    async def _end(self, invocation_id: str, error: BaseException | None) -> None:
        invocation = self.governed.invocations.pop(invocation_id, None)
        if invocation is None:
            return
        turn = invocation.turn
        for name in list(invocation.agents):
            turn.end_subagent(invocation.agents.pop(name).run_id, error)
        if invocation.run is not None:
            turn.end_subagent(invocation.run.run_id, error)
            return
        if error is None:
            turn.respond(ChatResponse(text=invocation.answer, model=invocation.model))
        await turn.end(error)

    async def end_cancelled(self, task: asyncio.Task[Any] | None, error: BaseException) -> None:
        """End the turns a cancelled run left open (ADK calls no plugin then)."""
        for invocation_id, invocation in list(self.governed.invocations.items()):
            if invocation.task is task and invocation.run is None:
                await self._end(invocation_id, error)

    async def close(self) -> None:
        await self.governed.sessions.end_all()

    # --- agents ADK transfers to ---

    async def before_agent_callback(self, *, agent: Any, callback_context: Any) -> None:
        invocation = self.governed.invocations.get(callback_context.invocation_id)
        if invocation is None or agent.name == invocation.root_agent:
            return
        if agent.name not in invocation.agents:
            run_id = f"{callback_context.invocation_id}:{agent.name}"
            invocation.agents[agent.name] = invocation.turn.start_subagent(run_id, agent.name)

    async def after_agent_callback(self, *, agent: Any, callback_context: Any) -> None:
        invocation = self.governed.invocations.get(callback_context.invocation_id)
        run = invocation.agents.pop(agent.name, None) if invocation is not None else None
        if invocation is not None and run is not None:
            invocation.turn.end_subagent(run.run_id)

    # --- model calls ---

    async def before_model_callback(
        self, *, callback_context: Any, llm_request: AdkRequest
    ) -> AdkResponse | None:
        invocation = self.governed.invocations.get(callback_context.invocation_id)
        if invocation is None:
            return None
        request = LlmRequest(
            model=llm_request.model or "unknown",
            messages=LazyMessages(_messages, llm_request.contents),
            tools=tuple(llm_request.tools_dict),
            provider=_PROVIDER,
        )
        run = invocation.run_of(callback_context.agent_name)
        try:
            decided = await _dispatch(invocation.turn, run, "pre_llm_request", request)
        except Exception as error:
            return _response(self.governed.governor.guard.failed("pre_llm_request", error))
        if decided.action == "block":  # ADK skips the model; the chat span has ended
            return _response(decided.message)
        invocation.model = request.model
        return None

    async def after_model_callback(
        self, *, callback_context: Any, llm_response: AdkResponse
    ) -> AdkResponse | None:
        invocation = self.governed.invocations.get(callback_context.invocation_id)
        if invocation is None or llm_response.partial:
            return None
        response = _llm_response(llm_response, invocation.model)
        run = invocation.run_of(callback_context.agent_name)
        try:
            verdict = await _dispatch(invocation.turn, run, "on_llm_response", response)
        except Exception as error:
            return _response(self.governed.governor.guard.failed("on_llm_response", error))
        if verdict.action in ("block", "retry_with_feedback"):
            # ADK cannot ask the model again from here: a retry is a block with its message.
            return _response(verdict.message)
        return None

    async def on_model_error_callback(
        self, *, callback_context: Any, llm_request: Any, error: Exception
    ) -> None:
        invocation = self.governed.invocations.get(callback_context.invocation_id)
        if invocation is not None:
            run = invocation.run_of(callback_context.agent_name)
            _close_chat(invocation.turn, run, type(error).__name__, invocation.model or "")

    # --- tool calls ---

    async def before_tool_callback(
        self, *, tool: Any, tool_args: dict[str, Any], tool_context: Any
    ) -> dict[str, Any] | None:
        governed = self.governed
        invocation = governed.invocations.get(tool_context.invocation_id)
        if invocation is None:
            return None
        call_id = tool_context.function_call_id or ""
        run = invocation.run_of(tool_context.agent_name)
        op = invocation.turn.open_tool(ToolCall(tool.name, tool_args, id=call_id), run)
        invocation.ops[call_id] = op
        native = governed.ask == "native"
        try:
            verdict = await op.decide(native_ask=native)
            if verdict.pending:  # ADK's own confirmation: the run pauses until answered
                confirmation = tool_context.tool_confirmation
                if confirmation is None:
                    tool_context.request_confirmation(hint=verdict.message)
                    await op.answer(None)
                    return {"error": f"{verdict.message} (waiting for the user's confirmation)"}
                verdict = await op.answer(bool(confirmation.confirmed))
        except Exception as error:  # fail closed: the tool does not run
            op.close(error)
            return {"error": governed.governor.guard.failed("pre_tool_call", error)}
        if not verdict.allowed:
            return {"error": verdict.message}
        if verdict.args is not None:  # ADK runs the tool with this very dict
            tool_args.clear()
            tool_args.update(verdict.args)
        _CALLING.set((governed, invocation, op))  # this call's own task: an AgentTool run in it
        return None

    async def after_tool_callback(
        self, *, tool: Any, tool_args: dict[str, Any], tool_context: Any, result: Any
    ) -> dict[str, Any] | None:
        op = self._op(tool_context)
        if op is not None and op.phase == "allowed":  # ADK calls this for a refused call too
            _CALLING.set(None)  # the call is over (ADK may run the next step in this task)
            await op.returned(result)
        return None

    async def on_tool_error_callback(
        self, *, tool: Any, tool_args: dict[str, Any], tool_context: Any, error: Exception
    ) -> dict[str, Any] | None:
        op = self._op(tool_context)
        if op is None:
            return None
        _CALLING.set(None)
        if is_cancellation(error):  # ADK reports a cancelled call here too: no tool error
            op.close(error)
            return None
        recovery = await op.failed(error)
        if recovery is None:
            return None
        value = recovery.value
        return value if isinstance(value, dict) else {"result": value}

    def _op(self, tool_context: Any) -> ToolOp | None:
        invocation = self.governed.invocations.get(tool_context.invocation_id)
        if invocation is None:
            return None
        return invocation.ops.pop(tool_context.function_call_id or "", None)


async def _dispatch(turn: Turn, run: SubagentRun | None, event: str, data: Any) -> Any:
    if run is None:
        if event == "pre_llm_request":
            return await turn.llm_request(data)
        return await turn.llm_response(data)
    with run.scope.current():
        decided = await turn.runner.dispatch(event, run.context, data)  # type: ignore[arg-type]
    return decided.result


def _close_chat(turn: Turn, run: SubagentRun | None, text: str, model: str) -> None:
    """End the chat span of a model call that failed: reported, no hooks run."""
    context = run.context if run is not None else turn.context
    response = LlmResponse(model or "unknown", text=text)
    notifier = turn.runner.notifier
    notifier.dispatch_started("on_llm_response", context, response)
    notifier.dispatch_finished("on_llm_response", context, response, ResponseDecision(), None)


def _text(content: Any) -> str:
    parts = getattr(content, "parts", None) or ()
    return "".join(p.text or "" for p in parts if getattr(p, "text", None))


def _content(message: str) -> types.Content:
    return types.Content(role="model", parts=[types.Part(text=message)])


def _response(message: str) -> AdkResponse:
    return AdkResponse(content=_content(message))


def _messages(contents: list[types.Content]) -> list[dict[str, Any]]:
    return [{"role": c.role or "user", "content": _text(c)} for c in contents]


def _llm_response(response: AdkResponse, model: str | None) -> LlmResponse:
    usage = response.usage_metadata
    calls = [
        ToolCall(
            p.function_call.name or "", p.function_call.args or {}, id=p.function_call.id or ""
        )
        for p in (response.content.parts or [] if response.content else [])
        if p.function_call is not None
    ]
    finish = response.finish_reason
    return LlmResponse(
        model=response.model_version or model or "unknown",
        text=_text(response.content),
        tool_calls=tuple(calls),
        usage=Usage(
            input_tokens=usage.prompt_token_count or 0,
            output_tokens=usage.candidates_token_count or 0,
            cache_read_tokens=usage.cached_content_token_count or 0,
        )
        if usage is not None
        else None,
        provider=_PROVIDER,
        finish_reasons=(str(finish.value).lower(),) if finish is not None else (),
    )
