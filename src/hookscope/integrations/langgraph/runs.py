"""Graph runs: turns around ``Pregel.stream``/``astream``, chat spans from callbacks.

Every way a compiled LangGraph graph runs (``invoke``, ``ainvoke``, ``stream``, ``astream``)
goes through ``stream`` or ``astream``, so a turn wraps that generator: ``pre_turn`` before the
first step (a block raises :class:`~hookscope.integrations.wrap.TurnBlocked`, the graph never
starts), ``post_turn`` after the last chunk. The session is the run's ``thread_id``. A callback
handler added to the run's config reports each chat model call (model, provider, usage); a
callback cannot change a model call, so LLM request/response hooks do not run here.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final
from uuid import UUID, uuid4

from langchain_core.callbacks import BaseCallbackHandler, BaseCallbackManager

from hookscope.integrations._kit import (
    SubagentRun,
    ToolOp,
    Turn,
    ambient_session_id,
    current_parent,
)
from hookscope.integrations._kit.calls import run_now
from hookscope.integrations._kit.keyed_govern import AskMode, Governed
from hookscope.integrations.wrap import TurnBlocked
from hookscope.types import ChatResponse, HookResult, LlmRequest, LlmResponse, Usage

if TYPE_CHECKING:
    from langchain_core.outputs import LLMResult

__all__ = ["RUN", "AskMode", "Governed", "GraphRun", "astream_governed", "stream_governed"]

logger = logging.getLogger("hookscope.integrations")


@dataclass(eq=False)
class GraphRun:
    """The governed graph run in this context: its turn, and its subagent run when nested."""

    governed: Governed
    turn: Turn
    run: SubagentRun | None = None
    #: The tool call running now (a graph run inside it is a subagent run).
    calling: ToolOp | None = None

    def runs_here(self) -> bool:
        """Whether the code running now belongs to this graph run and not to one nested in
        it (a nested graph's model calls reach its parent's callback handler too)."""
        current = RUN.get()
        return current is not None and current.turn is self.turn and current.run is self.run


#: The governed run the current code belongs to (tools, nested graphs).
RUN: Final[ContextVar[GraphRun | None]] = ContextVar("hookscope_langgraph_run", default=None)


def _config(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """``(input, config)`` of a ``stream``/``astream`` call."""
    config = args[1] if len(args) > 1 else kwargs.get("config")
    return (args[0] if args else kwargs.get("input")), config


def _with_handler(
    args: tuple[Any, ...], kwargs: dict[str, Any], handler: _Callbacks
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    config = dict(_config(args, kwargs)[1] or {})
    callbacks = config.get("callbacks")
    if isinstance(callbacks, BaseCallbackManager):
        callbacks = callbacks.copy()
        callbacks.add_handler(handler, inherit=True)
    else:
        callbacks = [*(callbacks or ()), handler]
    config["callbacks"] = callbacks
    if len(args) > 1:
        return (args[0], config, *args[2:]), kwargs
    return args, {**kwargs, "config": config}


def _thread_id(graph: Any, config: Mapping[str, Any] | None) -> str | None:
    for source in (config, getattr(graph, "config", None)):
        configurable = (source or {}).get("configurable") or {}
        thread = configurable.get("thread_id")
        if thread is not None:
            return str(thread)
    return None


def _prompt(value: Any) -> Any:
    """The user's message in a graph input (``{"messages": [...]}``), else the input."""
    messages = value.get("messages") if isinstance(value, Mapping) else None
    if not messages:
        return value if isinstance(value, str) else None
    last = messages[-1] if isinstance(messages, (list, tuple)) else messages
    if isinstance(last, tuple) and len(last) == 2:
        return last[1]
    if isinstance(last, Mapping):
        return last.get("content")
    return getattr(last, "content", last if isinstance(last, str) else None)


async def _begin(governed: Governed, graph: Any, args: Any, kwargs: Any) -> GraphRun:
    """Open (or join) the session of the run's thread and start the turn: ``pre_turn``."""
    value, config = _config(args, kwargs)
    governor = governed.governor
    thread = _thread_id(graph, config)
    try:
        session = await governed.sessions.session_for(
            thread or f"run-{uuid4()}",
            agent_name=governor.agent_name or _name(graph),
            ambient_id=ambient_session_id(),
            parent=current_parent(),
        )
        turn = await session.start_turn(_prompt(value))
    except Exception as error:  # fail closed: no turn runs ungoverned
        raise TurnBlocked(HookResult.deny(governor.guard.failed("pre_turn", error))) from error
    if not turn.allowed:
        if thread is None:
            await governed.sessions.end(session.context.conversation_id or "")
        raise TurnBlocked(HookResult.deny(turn.verdict.message))
    return GraphRun(governed, turn)


async def _end(graph_run: GraphRun, handler: _Callbacks, error: BaseException | None) -> None:
    turn = graph_run.turn
    if error is None:
        turn.respond(ChatResponse(text=handler.answer, model=handler.model))
    await turn.end(error)
    session = turn.session
    if session.context.conversation_id and session.context.conversation_id.startswith("run-"):
        await graph_run.governed.sessions.end(session.context.conversation_id)


def _nested(outer: GraphRun, governed: Governed, graph: Any) -> GraphRun | None:
    """A graph run inside a governed tool call: a subagent run under that call."""
    if outer.calling is None or outer.governed.governor.runner is not governed.governor.runner:
        return None
    run_id = f"{outer.calling.call_id}:{uuid4()}"
    run = outer.turn.start_subagent(run_id, _name(graph), delegating=outer.calling)
    return GraphRun(governed, outer.turn, run)


def _end_nested(graph_run: GraphRun, error: BaseException | None) -> None:
    run = graph_run.run
    if run is not None:
        graph_run.turn.end_subagent(run.run_id, error)


def _name(graph: Any) -> str:
    name = getattr(graph, "name", None)
    return name if isinstance(name, str) and name else "LangGraph"


def stream_governed(
    governed: Governed, graph: Any, wrapped: Any, args: Any, kwargs: Any
) -> Iterator[Any]:
    """``Pregel.stream`` as one turn (or one subagent run) of ``governed``."""
    outer = RUN.get()
    if outer is not None and outer.calling is None:  # a subgraph node: part of the turn
        yield from wrapped(*args, **kwargs)
        return
    nested = _nested(outer, governed, graph) if outer is not None else None
    graph_run = nested or run_now(_begin(governed, graph, args, kwargs))
    handler = _Callbacks(graph_run)
    args, kwargs = _with_handler(args, kwargs, handler)
    token = RUN.set(graph_run)
    try:
        yield from wrapped(*args, **kwargs)
    except BaseException as error:
        _finish_sync(graph_run, handler, nested is not None, _stopped(error))
        raise
    finally:
        RUN.reset(token)
    _finish_sync(graph_run, handler, nested is not None, None)


def _finish_sync(
    graph_run: GraphRun, handler: _Callbacks, nested: bool, error: BaseException | None
) -> None:
    if nested:
        _end_nested(graph_run, error)
    else:
        run_now(_end(graph_run, handler, error))


async def astream_governed(
    governed: Governed, graph: Any, wrapped: Any, args: Any, kwargs: Any
) -> AsyncIterator[Any]:
    """``Pregel.astream`` as one turn (or one subagent run) of ``governed``."""
    outer = RUN.get()
    if outer is not None and outer.calling is None:
        async for chunk in wrapped(*args, **kwargs):
            yield chunk
        return
    nested = _nested(outer, governed, graph) if outer is not None else None
    graph_run = nested or await _begin(governed, graph, args, kwargs)
    handler = _Callbacks(graph_run)
    args, kwargs = _with_handler(args, kwargs, handler)
    token = RUN.set(graph_run)
    try:
        async for chunk in wrapped(*args, **kwargs):
            yield chunk
    except BaseException as error:
        if nested is not None:
            _end_nested(graph_run, _stopped(error))
        else:
            await _end(graph_run, handler, _stopped(error))
        raise
    finally:
        RUN.reset(token)
    if nested is not None:
        _end_nested(graph_run, None)
    else:
        await _end(graph_run, handler, None)


def _stopped(error: BaseException) -> BaseException:
    # A consumer that stops reading closes the generator: the turn was cut short.
    return asyncio.CancelledError() if isinstance(error, GeneratorExit) else error


class _Callbacks(BaseCallbackHandler):
    """Reports the chat model calls of one graph run (observe only: it never raises)."""

    run_inline = True  # called in the model call's own task: RUN says whose call it is
    # Only model calls matter: without these, LangChain calls the handler for every runnable.
    ignore_chain = True
    ignore_agent = True
    ignore_retriever = True
    ignore_retry = True
    ignore_custom_event = True

    def __init__(self, graph_run: GraphRun) -> None:
        self.graph_run = graph_run
        self.answer = ""
        self.model: str | None = None

    def on_chat_model_start(
        self,
        serialized: Any,
        messages: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        metadata: Mapping[str, Any] | None = None,
        invocation_params: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        if not self.graph_run.runs_here():
            return
        try:
            meta, params = metadata or {}, invocation_params or {}
            model = params.get("model") or params.get("model_name") or meta.get("ls_model_name")
            request = LlmRequest(str(model or "unknown"), provider=meta.get("ls_provider"))
            self.graph_run.turn.model_call_started(request, self.graph_run.run)
        except Exception as error:
            _quietly("on_chat_model_start", error)

    def on_llm_end(
        self, response: LLMResult, *, run_id: UUID, parent_run_id: UUID | None = None, **kw: Any
    ) -> None:
        if not self.graph_run.runs_here():
            return
        try:
            self.graph_run.turn.model_call_finished(_response(response), self.graph_run.run)
            generation = response.generations[0][0] if response.generations else None
            text = getattr(generation, "text", "") if generation is not None else ""
            if text:
                self.answer = text
        except Exception as error:
            _quietly("on_llm_end", error)

    def on_llm_error(
        self, error: BaseException, *, run_id: UUID, parent_run_id: UUID | None = None, **kw: Any
    ) -> None:
        if self.graph_run.runs_here():
            response = LlmResponse("unknown", text=type(error).__name__)
            self.graph_run.turn.model_call_finished(response, self.graph_run.run)


_LOGGED: set[str] = set()


def _quietly(where: str, error: Exception) -> None:
    """A failure in an observe-only callback: logged once, the graph goes on."""
    if where not in _LOGGED:
        _LOGGED.add(where)
        logger.warning("hookscope's langgraph callback %s failed", where, exc_info=error)


def _response(result: LLMResult) -> LlmResponse:
    output = result.llm_output or {}
    generation = result.generations[0][0] if result.generations else None
    message = getattr(generation, "message", None)
    usage = getattr(message, "usage_metadata", None) or {}
    meta = getattr(message, "response_metadata", None) or {}
    info = getattr(generation, "generation_info", None) or {}
    finish = info.get("finish_reason") or meta.get("finish_reason")
    details = usage.get("input_token_details") or {}
    return LlmResponse(
        model=str(output.get("model_name") or meta.get("model_name") or "unknown"),
        text=getattr(generation, "text", "") or "",
        usage=Usage(
            input_tokens=int(usage.get("input_tokens", 0)),
            output_tokens=int(usage.get("output_tokens", 0)),
            cache_read_tokens=int(details.get("cache_read", 0)),
            cache_creation_tokens=int(details.get("cache_creation", 0)),
        )
        if usage
        else None,
        provider=output.get("model_provider") or meta.get("model_provider"),
        finish_reasons=(finish,) if finish else (),
    )
