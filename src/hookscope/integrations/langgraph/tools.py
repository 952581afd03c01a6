"""Tool calls: ``ToolNode(wrap_tool_call=…, awrap_tool_call=…)`` around every call.

The wrapper runs outside the application's own wrapper (which still runs, inside): decide
(``pre_tool_call``), then the application's wrapper or the tool, then ``post_tool_call``; a
raising tool goes to ``on_tool_error``. A deny answers with an error ``ToolMessage`` carrying
the message (the tool never runs); modified arguments go in through ``request.override``; a
``Recovery`` becomes the ``ToolMessage``; an ask is settled by hookscope's confirm path, or with
``ask="native"`` by LangGraph's ``interrupt()`` (resume with ``Command(resume=True)``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any, Final

from langchain_core.messages import ToolMessage
from langgraph.errors import GraphBubbleUp
from langgraph.types import interrupt

from hookscope.integrations._kit import ToolOp, ToolVerdict, Turn
from hookscope.integrations._kit.calls import run_now
from hookscope.integrations.langgraph.runs import RUN, Governed, GraphRun
from hookscope.types import HookscopeError, ToolCall

__all__ = ["ToolError", "wrappers"]

Execute = Callable[[Any], Any]
AsyncExecute = Callable[[Any], Awaitable[Any]]
Wrapper = Callable[[Any, Execute], Any]
AsyncWrapper = Callable[[Any, AsyncExecute], Awaitable[Any]]

#: What the interrupt of a native ask carries, for the application's approver.
ASK_KIND: Final = "hookscope.ask"


class ToolError(HookscopeError):
    """A tool's failure that ``ToolNode(handle_tool_errors=…)`` already turned into an error
    ``ToolMessage``: ``on_tool_error`` hooks receive it (its text is the message's)."""


def wrappers(
    fallback: Governed | None, wrap: Wrapper | None, awrap: AsyncWrapper | None
) -> tuple[Wrapper, AsyncWrapper]:
    """The governed ``(wrap_tool_call, awrap_tool_call)`` around the application's own.

    Args:
        fallback: Governs calls made outside a governed graph run (a turn per call in the
            thread's session); ``None`` lets them through ungoverned.
        wrap: The application's sync wrapper, if any.
        awrap: The application's async wrapper, if any (else ``wrap`` in async runs too).
    """

    def governed_wrap(request: Any, execute: Execute) -> Any:
        def inner(r: Any) -> Any:
            return wrap(r, execute) if wrap is not None else execute(r)

        graph_run = RUN.get()
        if graph_run is None:
            if fallback is None:
                return inner(request)
            turn = run_now(_loose_turn(fallback, request))
            try:
                return _sync_call(fallback, turn, None, request, inner)
            finally:
                run_now(turn.end())
        return _sync_call(graph_run.governed, graph_run.turn, graph_run, request, inner)

    async def governed_awrap(request: Any, execute: AsyncExecute) -> Any:
        async def inner(r: Any) -> Any:
            if awrap is not None:
                return await awrap(r, execute)
            if wrap is not None:  # ToolNode falls back to the sync wrapper in async runs
                return wrap(r, _sync_execute_unavailable)
            return await execute(r)

        graph_run = RUN.get()
        if graph_run is None:
            if fallback is None:
                return await inner(request)
            turn = await _loose_turn(fallback, request)
            try:
                return await _async_call(fallback, turn, None, request, inner)
            finally:
                await turn.end()
        return await _async_call(graph_run.governed, graph_run.turn, graph_run, request, inner)

    # Marked, so that governing an already governed ToolNode replaces the wrappers.
    governed_wrap.__hookscope_wrapped__ = (wrap, awrap)  # type: ignore[attr-defined]
    return governed_wrap, governed_awrap


def _sync_execute_unavailable(request: Any) -> Any:
    raise RuntimeError(
        "this ToolNode's wrap_tool_call is synchronous and the graph runs async; give the "
        "ToolNode an awrap_tool_call too"
    )


async def _loose_turn(governed: Governed, request: Any) -> Turn:
    """A turn for a call made outside a governed graph run, in its thread's session."""
    config = getattr(request.runtime, "config", None) or {}
    thread = (config.get("configurable") or {}).get("thread_id")
    session = await governed.sessions.session_for(
        str(thread) if thread is not None else "langgraph-tools",
        agent_name=governed.governor.agent_name or "LangGraph",
    )
    return await session.start_turn(None)


def _call(request: Any) -> ToolCall:
    call = request.tool_call
    return ToolCall(call["name"], call.get("args") or {}, id=call.get("id") or "")


def _reply(request: Any, content: Any, status: str = "success") -> ToolMessage:
    call = request.tool_call
    return ToolMessage(
        content=content if isinstance(content, str) else str(content),
        name=call["name"],
        tool_call_id=call.get("id") or "",
        status=status,
    )


def _effective(request: Any, verdict: ToolVerdict) -> Any:
    if verdict.args is None:
        return request
    return request.override(tool_call={**request.tool_call, "args": dict(verdict.args)})


def _open(turn: Turn, graph_run: GraphRun | None, request: Any) -> ToolOp:
    return turn.open_tool(_call(request), graph_run.run if graph_run is not None else None)


def _refused(governed: Governed, op: ToolOp, request: Any, error: Exception) -> ToolMessage:
    """Fail closed: deciding raised, so the tool does not run; the model is told why."""
    op.close(error)
    return _reply(request, governed.governor.guard.failed("pre_tool_call", error), "error")


@contextmanager
def _calling(graph_run: GraphRun | None, op: ToolOp) -> Iterator[None]:
    """While the tool runs: a graph run inside it is a subagent run under this call."""
    token = RUN.set(replace(graph_run, calling=op)) if graph_run is not None else None
    try:
        yield
    finally:
        if token is not None:
            RUN.reset(token)


def _approved(answer: Any) -> bool:
    if isinstance(answer, dict):
        answer = answer.get("approved", answer.get("answer"))
    return answer is True or answer == "allow"


async def _async_call(
    governed: Governed,
    turn: Turn,
    graph_run: GraphRun | None,
    request: Any,
    inner: Callable[[Any], Awaitable[Any]],
) -> Any:
    op = _open(turn, graph_run, request)
    try:
        verdict = await op.decide(native_ask=governed.ask == "native")
        if verdict.pending:
            # Pauses the graph the first time; on resume, interrupt() returns the answer.
            question = {"kind": ASK_KIND, "question": verdict.message, "tool": op.call.name}
            try:
                answer = interrupt(question)
            except GraphBubbleUp:
                await op.answer(None)
                raise
            verdict = await op.answer(_approved(answer))
    except GraphBubbleUp:
        raise
    except Exception as error:
        return _refused(governed, op, request, error)
    except BaseException as error:
        op.close(error)
        raise
    if not verdict.allowed:
        return _reply(request, verdict.message, "error")
    with _calling(graph_run, op):
        try:
            result = await inner(_effective(request, verdict))
        except GraphBubbleUp:
            op.close()
            raise
        except Exception as error:
            recovery = await op.failed(error)
            if recovery is None:
                raise
            return _reply(request, recovery.value)
        except BaseException as error:
            op.close(error)
            raise
    return await _returned(op, request, result)


async def _returned(op: ToolOp, request: Any, result: Any) -> Any:
    if isinstance(result, ToolMessage) and result.status == "error":
        recovery = await op.failed(ToolError(str(result.content)))
        return result if recovery is None else _reply(request, recovery.value)
    await op.returned(result.content if isinstance(result, ToolMessage) else result)
    return result


def _sync_call(
    governed: Governed,
    turn: Turn,
    graph_run: GraphRun | None,
    request: Any,
    inner: Callable[[Any], Any],
) -> Any:
    # A synchronous graph run cannot wait: hooks run to completion here (see _kit.calls.run_now),
    # and asks go to hookscope's confirm path (interrupt-based native asks need async runs).
    op = _open(turn, graph_run, request)
    try:
        verdict = run_now(op.decide())
    except Exception as error:
        return _refused(governed, op, request, error)
    except BaseException as error:
        op.close(error)
        raise
    if not verdict.allowed:
        return _reply(request, verdict.message, "error")
    with _calling(graph_run, op):
        try:
            result = inner(_effective(request, verdict))
        except GraphBubbleUp:
            op.close()
            raise
        except Exception as error:
            recovery = run_now(op.failed(error))
            if recovery is None:
                raise
            return _reply(request, recovery.value)
        except BaseException as error:
            op.close(error)
            raise
    return run_now(_returned(op, request, result))
