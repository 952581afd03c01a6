"""The pydantic-ai mapping: one capability whose around-hooks run hookscope's lifecycle.

pydantic-ai's capabilities wrap each seam with a ``handler`` to call, so every hookscope event
sits around the SDK's own step (the table is in the package docstring):

* ``wrap_run`` — a turn (``pre_turn`` → run → ``post_turn``), in the session of the run's
  ``conversation_id``; a run started inside a governed tool call is a subagent run instead, an
  ``invoke_agent`` span under that call.
* ``wrap_model_request`` — the ``chat`` span: ``pre_llm_request`` (a block skips the model),
  the model call, ``on_llm_response`` (a block replaces the answer, a retry asks the model again).
* ``wrap_tool_execute`` — one tool call: ``pre_tool_call`` (deny = ``SkipToolExecution`` with
  the message, modified arguments passed to the handler, an ask settled by hookscope's confirm
  path or ``ApprovalRequired``), the tool, ``post_tool_call`` or ``on_tool_error`` (a recovery
  becomes the tool's result).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Final

from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import (
    ApprovalRequired,
    CallDeferred,
    ModelRetry,
    SkipToolExecution,
    ToolRetryError,
)
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    TextPart,
)

from hookscope.integrations._kit import (
    Governor,
    SubagentRun,
    ToolOp,
    Turn,
    ambient_session_id,
    current_parent,
)
from hookscope.integrations._kit.keyed_govern import AskMode, Governed
from hookscope.integrations._kit.lazy import LazyMessages
from hookscope.integrations.wrap import TurnBlocked
from hookscope.types import (
    ChatResponse,
    HookResult,
    LlmRequest,
    LlmResponse,
    RequestDecision,
    ResponseDecision,
    ToolCall,
    Usage,
)

if TYPE_CHECKING:
    from pydantic_ai import RunContext
    from pydantic_ai.models import ModelRequestContext
    from pydantic_ai.tools import ToolDefinition

__all__ = ["AskMode", "Governed", "HookscopeCapability"]

#: The governed tool call running in this task: a run started here is its subagent.
_CALLING: Final[ContextVar[tuple[Governed, Turn, ToolOp] | None]] = ContextVar(
    "hookscope_pydantic_ai_calling", default=None
)


#: The turn (and subagent run) of the run whose hooks run in this task: set around
#: ``handler()`` in ``wrap_run``, inherited by the model-request and tool tasks. (A per-run
#: capability from ``for_run`` would make pydantic-ai re-read every capability each run.)
_RUN: Final[ContextVar[tuple[Turn, SubagentRun | None] | None]] = ContextVar(
    "hookscope_pydantic_ai_run", default=None
)


class HookscopeCapability(AbstractCapability[Any]):
    """The capability :func:`~hookscope.integrations.pydantic_ai.govern` adds to each run."""

    def __init__(self, governed: Governed) -> None:
        self.governed = governed

    # --- turns and subagent runs ---

    async def wrap_run(self, ctx: RunContext[Any], *, handler: Any) -> Any:
        calling = _CALLING.get()
        if calling is not None and calling[0].governor.runner is self.governed.governor.runner:
            return await self._subagent_run(ctx, calling[1], calling[2], handler)
        governed = self.governed
        guard = governed.governor.guard
        try:
            session = await governed.sessions.session_for(
                ctx.conversation_id or ctx.run_id or "",
                agent_name=_agent_name(governed.governor, ctx),
                ambient_id=ambient_session_id(),
                parent=current_parent(),
            )
            turn = await session.start_turn(_prompt(ctx.prompt))
        except Exception as error:  # fail closed: no turn runs ungoverned
            raise TurnBlocked(HookResult.deny(guard.failed("pre_turn", error))) from error
        if not turn.allowed:
            raise TurnBlocked(HookResult.deny(turn.verdict.message))
        token = _RUN.set((turn, None))
        try:
            result = await handler()
        except BaseException as error:
            await turn.end(error)
            raise
        finally:
            _RUN.reset(token)
        turn.respond(_answer(result, ctx))
        await turn.end()  # post_turn; pydantic-ai cannot continue a finished run
        return result

    async def _subagent_run(
        self, ctx: RunContext[Any], turn: Turn, op: ToolOp, handler: Any
    ) -> Any:
        run_id = ctx.run_id or f"{op.call_id}:run"
        name = _agent_name(None, ctx) or "agent"
        token = _RUN.set((turn, turn.start_subagent(run_id, name, delegating=op)))
        try:
            result = await handler()
        except BaseException as error:
            turn.end_subagent(run_id, error)
            raise
        finally:
            _RUN.reset(token)
        turn.end_subagent(run_id)
        return result

    # --- model calls ---

    async def wrap_model_request(
        self, ctx: RunContext[Any], *, request_context: ModelRequestContext, handler: Any
    ) -> ModelResponse:
        state = _RUN.get()  # read once: the turn and the subagent run making the call
        if state is None or state[0].ended:
            return await handler(request_context)  # type: ignore[no-any-return]
        turn, run = state
        guard = self.governed.governor.guard
        model = request_context.model
        request = LlmRequest(
            model=model.model_name,
            messages=LazyMessages(_messages, request_context.messages),
            tools=tuple(t.name for t in request_context.model_request_parameters.function_tools),
            provider=model.system,
        )
        try:
            decided = await _dispatch(turn, run, "pre_llm_request", request)
        except Exception as error:
            decided = RequestDecision.block(guard.failed("pre_llm_request", error))
        if decided.action == "block":
            return _text_response(decided.message, model.model_name)
        response: ModelResponse = await handler(request_context)
        try:
            verdict = await _dispatch(turn, run, "on_llm_response", _response(response))
        except Exception as error:
            verdict = ResponseDecision.block(guard.failed("on_llm_response", error))
        if verdict.action == "block":
            return _text_response(verdict.message, response.model_name)
        if verdict.action == "retry_with_feedback":
            raise ModelRetry(verdict.message)
        return response

    # --- tool calls ---

    async def wrap_tool_execute(
        self,
        ctx: RunContext[Any],
        *,
        call: Any,
        tool_def: ToolDefinition,
        args: Any,
        handler: Any,
    ) -> Any:
        state = _RUN.get()
        # pydantic-ai hands validated arguments as a dict: the ABC check only for anything else.
        if state is None or (type(args) is not dict and not isinstance(args, Mapping)):
            return await handler(args)
        turn, run = state
        if turn.ended:
            return await handler(args)
        governed = self.governed
        op = turn.open_tool(ToolCall(call.tool_name, args, id=call.tool_call_id), run)
        try:
            verdict = await op.decide(native_ask=governed.ask == "native")
            if verdict.pending:
                # The application answers through DeferredToolResults; the resumed run calls
                # the tool again with the answer in ctx.tool_call_approved.
                approved = ctx.tool_call_approved
                verdict = await op.answer(True if approved else None)
                if not approved:
                    raise ApprovalRequired({"question": verdict.message})
        except ApprovalRequired:
            op.close()
            raise
        except Exception as error:  # fail closed: the tool does not run
            op.close(error)
            raise SkipToolExecution(
                governed.governor.guard.failed("pre_tool_call", error)
            ) from error
        except BaseException as error:
            op.close(error)
            raise
        if not verdict.allowed:
            raise SkipToolExecution(verdict.message)
        token = _CALLING.set((governed, turn, op))
        try:
            value = await handler(dict(verdict.args) if verdict.args is not None else args)
        except SkipToolExecution as skipped:  # an inner hook skipped the tool: its result
            await op.returned(skipped.result)
            raise
        except (ApprovalRequired, CallDeferred):
            op.close()
            raise
        except (ModelRetry, ToolRetryError) as retry:  # the tool asks the model to retry
            await op.failed(retry, recoverable=False)
            raise
        except Exception as error:
            recovery = await op.failed(error)
            if recovery is None:
                raise
            return recovery.value
        except BaseException as error:
            op.close(error)
            raise
        finally:
            _CALLING.reset(token)
        await op.returned(value)
        return value


async def _dispatch(turn: Turn, run: SubagentRun | None, event: str, data: Any) -> Any:
    """Run a model event's hooks in the turn, or in the subagent run that made the call."""
    if run is None:
        if event == "pre_llm_request":
            return await turn.llm_request(data)
        return await turn.llm_response(data)
    with run.scope.current():
        decided = await turn.runner.dispatch(event, run.context, data)  # type: ignore[arg-type]
    return decided.result


# --- conversions -------------------------------------------------------------------------


def _agent_name(governor: Governor | None, ctx: RunContext[Any]) -> str:
    if governor is not None and governor.agent_name:
        return governor.agent_name
    agent = ctx.agent
    return (agent.name if agent is not None else None) or ""


def _prompt(prompt: Any) -> Any:
    if prompt is None or isinstance(prompt, str):
        return prompt
    texts = [p for p in prompt if isinstance(p, str)]
    return "\n".join(texts) if texts else None


def _messages(messages: Sequence[ModelMessage]) -> tuple[dict[str, Any], ...]:
    """pydantic-ai's history as role/content pairs (what ``pre_llm_request`` hooks read)."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, ModelResponse):
            text = message.text or ""
            calls = [{"name": c.tool_name, "id": c.tool_call_id} for c in message.tool_calls]
            out.append({"role": "assistant", "content": text, "tool_calls": calls})
            continue
        for part in message.parts:
            kind = part.part_kind
            content: Any = getattr(part, "content", None)
            if kind == "system-prompt":
                out.append({"role": "system", "content": content})
            elif kind == "user-prompt":
                out.append({"role": "user", "content": content if isinstance(content, str) else ""})
            elif kind in ("tool-return", "retry-prompt"):
                out.append({"role": "tool", "content": str(content)})
    return tuple(out)


def _response(response: ModelResponse) -> LlmResponse:
    usage = response.usage
    return LlmResponse(
        model=response.model_name or "",
        text=response.text or "",
        tool_calls=tuple(
            ToolCall(c.tool_name, c.args_as_dict(), id=c.tool_call_id) for c in response.tool_calls
        ),
        usage=Usage(
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cache_read_tokens=usage.cache_read_tokens,
            cache_creation_tokens=usage.cache_write_tokens,
        ),
        provider=response.provider_name,
        finish_reasons=(response.finish_reason,) if response.finish_reason else (),
    )


def _text_response(message: str, model_name: str | None) -> ModelResponse:
    """A model answer hookscope gives in the model's place (a blocked request or response)."""
    return ModelResponse(parts=[TextPart(message)], model_name=model_name)


def _answer(result: Any, ctx: RunContext[Any]) -> ChatResponse:
    output = getattr(result, "output", None)
    usage = ctx.usage
    return ChatResponse(
        text=output if isinstance(output, str) else "",
        model=ctx.model.model_name,
        usage=Usage(input_tokens=usage.input_tokens, output_tokens=usage.output_tokens),
    )
