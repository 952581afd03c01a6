"""Govern and trace LangGraph / LangChain agents (``langgraph`` 1.x): ``hookscope[langgraph]``.

The one-line way, ``govern(graph, runner)``; the zero-code way, ``LangGraphInstrumentor``
(``opentelemetry-instrument`` entry point ``langgraph``). Seams: ``Pregel.stream``/``astream``
(turns), a callback handler per run (chat spans), ``ToolNode`` wrappers (tool calls); why these
rather than ``create_agent`` middleware: :mod:`.govern`.

==================  ================================  =========================================
hookscope event     LangGraph point                   enforced there / cannot express
==================  ================================  =========================================
session start/end   first run of a ``thread_id``      ends by ``end_sessions()`` or when idle
                                                      (LangGraph has no end of a thread); a run
                                                      without thread_id is a session of its own
pre_turn/post_turn  ``Pregel.stream``/``astream``     block → ``TurnBlocked``, the graph never
                                                      starts; post_turn cannot resume a run
pre_llm_request,    callbacks ``on_chat_model_start``  observed only (a callback cannot change
on_llm_response     / ``on_llm_end``                  the call): chat spans, no LLM hooks
pre_tool_call       ``ToolNode`` wrap_tool_call       deny → error ``ToolMessage``; args →
                                                      ``request.override``; ask → confirm path,
                                                      or ``interrupt()`` (``ask="native"``,
                                                      async runs)
post_tool_call      ``ToolNode`` wrap_tool_call       observed
on_tool_error       ``ToolNode`` wrap_tool_call       ``Recovery`` → the ``ToolMessage``
subagents           a governed graph run in a tool    ``invoke_agent`` under the call; subgraph
                                                      nodes are part of their turn
==================  ================================  =========================================
"""

from hookscope.integrations.langgraph.govern import (
    INSTRUMENTS,
    LangGraphInstrumentor,
    end_sessions,
    govern,
)
from hookscope.integrations.langgraph.tools import ToolError

__all__ = ["INSTRUMENTS", "LangGraphInstrumentor", "ToolError", "end_sessions", "govern"]
