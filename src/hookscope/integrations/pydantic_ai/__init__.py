"""Govern and trace pydantic-ai agents (``pydantic-ai-slim`` 2.x): ``hookscope[pydantic-ai]``.

The one-line way, ``govern(agent, runner)``; the zero-code way, ``PydanticAIInstrumentor``
(``opentelemetry-instrument`` entry point ``pydantic_ai``). Both add one capability to every run
of the agent (:mod:`.capability`).

========================  ================================  =====================================
hookscope event           pydantic-ai point                 enforced there / cannot express
========================  ================================  =====================================
session start/end         first run of a ``conversation_id``  sessions end by ``end_sessions()``
                          (explicit, from the message         or when idle; pydantic-ai has no
                          history, else a fresh one)          session object
pre_turn / post_turn      ``wrap_run``                      block → ``TurnBlocked`` raised from
                                                            ``agent.run``; post_turn cannot make
                                                            a finished run go on (recorded only)
pre_llm_request           ``wrap_model_request``            block → the model is not called, the
                                                            message is its answer; a modified
                                                            request is not applied
on_llm_response           ``wrap_model_request``            block → the message replaces the
                                                            answer; retry → ``ModelRetry``
pre_tool_call             ``wrap_tool_execute``             deny → ``SkipToolExecution``; args →
                                                            handler; ask → confirm path or
                                                            ``ApprovalRequired`` (``ask="native"``)
post_tool_call            ``wrap_tool_execute``             observed
on_tool_error             ``wrap_tool_execute``             ``Recovery`` → the tool's result
subagents                 an agent run inside a tool        ``invoke_agent`` under the call
========================  ================================  =====================================
"""

from hookscope.integrations.pydantic_ai.capability import HookscopeCapability
from hookscope.integrations.pydantic_ai.govern import (
    INSTRUMENTS,
    PydanticAIInstrumentor,
    end_sessions,
    govern,
)

__all__ = ["INSTRUMENTS", "HookscopeCapability", "PydanticAIInstrumentor", "end_sessions", "govern"]
