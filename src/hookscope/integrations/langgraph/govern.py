"""``govern(graph | tool_node | tools, runner)`` and ``LangGraphInstrumentor``.

Why ``ToolNode`` wrappers and callbacks rather than ``create_agent`` middleware: middleware
exists only for graphs built by langchain's ``create_agent`` and must be passed when the graph
is built, while ``govern()`` receives a graph already compiled, and many graphs are
``create_react_agent`` ones or hand-built ``StateGraph``s. Every one of them runs its tools
through a ``ToolNode`` (``create_agent`` too) and every run through ``Pregel.stream``/
``astream``, so those two seams cover all of them; the price is that model calls are only
observed (callbacks cannot change them), which middleware's ``wrap_model_call`` could do.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, ClassVar, Final, TypeVar

from wrapt import wrap_function_wrapper

from hookscope.integrations._kit import Governor, SessionBinder, Target
from hookscope.integrations._kit.keyed import DEFAULT_IDLE_S
from hookscope.integrations._kit.keyed_govern import GovernedSet, KeyedInstrumentor
from hookscope.integrations.langgraph.runs import (
    AskMode,
    Governed,
    astream_governed,
    stream_governed,
)
from hookscope.integrations.langgraph.tools import wrappers
from hookscope.runner import HookRunner

__all__ = ["INSTRUMENTS", "LangGraphInstrumentor", "end_sessions", "govern"]

#: The versions this adapter is written against (the ``langgraph`` extra).
INSTRUMENTS: Final = ("langgraph >= 1.2.24, < 2",)
_SDK: Final = "langgraph"

T = TypeVar("T")

_ALL: Final = GovernedSet(_SDK, Governed)
#: Graphs governed explicitly (compiled graphs are unhashable pydantic-free objects: by identity).
_GRAPHS: SessionBinder[Any, Governed] = SessionBinder()
_PATCHED: list[bool] = []


def govern(
    target: T,
    runner: HookRunner,
    *,
    agent_name: str | None = None,
    ask: AskMode = "hookscope",
    session_idle_s: float | None = DEFAULT_IDLE_S,
) -> T:
    """Govern and trace a LangGraph graph, ``ToolNode`` or tool list with ``runner``.

    Args:
        target: A compiled graph (``create_react_agent``, ``create_agent``,
            ``StateGraph.compile()``): its runs become turns of the session of their
            ``thread_id`` and its ``ToolNode``s are governed; returned as it is. A ``ToolNode``:
            governed in place and returned. A list of tools: a governed ``ToolNode`` of them.
        runner: The hooks, policy and observers (an ``OTelHook`` traces).
        agent_name: ``gen_ai.agent.name`` (the graph's ``name`` when ``None``).
        ask: ``"native"`` asks through ``interrupt()`` in async runs (resume the thread with
            ``Command(resume=True)`` to approve); ``"hookscope"`` uses ``on_interaction``.
        session_idle_s: A thread with no run for this long is ended when another run starts
            (``None``: only :func:`end_sessions`).

    Raises:
        TypeError: ``target`` is none of these, or ``runner`` is not a ``HookRunner``.
    """
    from langgraph.prebuilt import ToolNode
    from langgraph.pregel import Pregel

    governed = _ALL.govern(runner, agent_name=agent_name, ask=ask, session_idle_s=session_idle_s)
    if isinstance(target, Pregel):
        for node in _tool_nodes(target):
            _govern_tool_node(node, governed)
        _GRAPHS.bind(target, governed)
        if not _PATCHED:  # once per process; inert for graphs nobody governs
            _PATCHED.append(True)
            wrap_function_wrapper("langgraph.pregel.main", "Pregel.stream", _stream(None))
            wrap_function_wrapper("langgraph.pregel.main", "Pregel.astream", _astream(None))
        return target
    if isinstance(target, ToolNode):
        _govern_tool_node(target, governed)
        return target
    if isinstance(target, Sequence) and not isinstance(target, str):
        wrap, awrap = wrappers(governed, None, None)
        return ToolNode(list(target), wrap_tool_call=wrap, awrap_tool_call=awrap)  # type: ignore[return-value]
    raise TypeError(
        f"govern needs a compiled LangGraph graph, a ToolNode or a list of tools, got "
        f"{type(target).__name__}"
    )


def _tool_nodes(graph: Any) -> list[Any]:
    from langgraph.prebuilt import ToolNode

    nodes = []
    for node in graph.nodes.values():
        bound = getattr(node, "bound", None)
        if isinstance(bound, ToolNode):
            nodes.append(bound)
    return nodes


def _govern_tool_node(node: Any, governed: Governed) -> None:
    # A ToolNode takes its wrappers only when built; a compiled graph's are set here, around
    # the application's own (langgraph 1.x keeps them in these two attributes).
    wrap, awrap = node._wrap_tool_call, node._awrap_tool_call
    original = getattr(wrap, "__hookscope_wrapped__", (wrap, awrap))
    wrap, awrap = wrappers(governed, *original)
    node._wrap_tool_call, node._awrap_tool_call = wrap, awrap


def _run_seam(run_governed: Callable[..., Any], default: Governed | None) -> Any:
    """A ``Pregel.stream``/``astream`` wrapper: runs of a graph ``govern()`` bound, or else
    of ``default`` (the instrumentation's), go through ``run_governed``; others pass."""

    def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        governed = _GRAPHS.get(instance) or default
        if governed is None:
            return wrapped(*args, **kwargs)
        return run_governed(governed, instance, wrapped, args, kwargs)

    return wrapper


def _stream(default: Governed | None) -> Any:
    return _run_seam(stream_governed, default)


def _astream(default: Governed | None) -> Any:
    return _run_seam(astream_governed, default)


async def end_sessions() -> int:
    """End every open LangGraph thread session (``on_session_end`` runs); how many.

    A thread has no end LangGraph knows of: its session runs until this is called or it is
    idle for ``session_idle_s``.
    """
    return await _ALL.end_sessions()


class LangGraphInstrumentor(KeyedInstrumentor[Governed]):
    """The zero-code way: every LangGraph graph run is a governed, traced turn.

    ``instrument(runner=None, tracer_provider=None, meter_provider=None, agent_name=None,
    ask="hookscope", session_idle_s=1800)``: every ``Pregel.stream``/``astream`` run and every
    ``ToolNode`` built afterwards; graphs passed to :func:`govern` keep their own runner.
    ``uninstrument()`` restores both; :func:`end_sessions` ends the threads still open.
    """

    sdk: ClassVar[str] = _SDK
    instruments: ClassVar[tuple[str, ...]] = INSTRUMENTS
    governed_set = _ALL

    def targets(self, governor: Governor) -> Iterable[Target]:
        governed = self.governed(governor)

        def tool_node_init(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
            wrap, awrap = wrappers(
                governed, kwargs.get("wrap_tool_call"), kwargs.get("awrap_tool_call")
            )
            kwargs = {**kwargs, "wrap_tool_call": wrap, "awrap_tool_call": awrap}
            return wrapped(*args, **kwargs)

        yield ("langgraph.pregel.main", "Pregel.stream", _stream(governed))
        yield ("langgraph.pregel.main", "Pregel.astream", _astream(governed))
        yield ("langgraph.prebuilt.tool_node", "ToolNode.__init__", tool_node_init)
