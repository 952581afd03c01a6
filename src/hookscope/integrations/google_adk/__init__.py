"""Govern and trace Google ADK agents (``google-adk`` 2.x): ``hookscope[google-adk]``.

The one-line way, ``govern(runner, hooks_runner)``; the zero-code way, ``GoogleAdkInstrumentor``
(``opentelemetry-instrument`` entry point ``hookscope_google_adk``). Both add one ``BasePlugin``
(:mod:`.plugin`).

==================  =================================  ========================================
hookscope event     ADK point                          enforced there / cannot express
==================  =================================  ========================================
session start/end   first run of an ADK session id     ends at ``runner.close()``,
                                                       ``end_sessions()`` or when idle
pre_turn            ``before_run_callback``            block → the message is the run's answer,
                                                       no model call
post_turn           ``after_run_callback``             observed; ADK cannot continue a run
pre_llm_request     ``before_model_callback``          block → the message replaces the model;
                                                       a modified request is not applied
on_llm_response     ``after_model_callback``           block → the message replaces the
                                                       answer; a retry is a block (no re-ask)
pre_tool_call       ``before_tool_callback``           deny → ``{"error": message}`` as the
                                                       result; args changed in place; ask →
                                                       confirm path or ``request_confirmation``
post_tool_call      ``after_tool_callback``            observed
on_tool_error       ``on_tool_error_callback``         ``Recovery`` → the tool's result (a dict,
                                                       or ``{"result": value}``)
subagents           ``before/after_agent_callback``,   ``invoke_agent`` for a transfer (under
                    ``AgentTool`` (plugins inherited)  the turn) and an AgentTool (under its
                                                       call)
==================  =================================  ========================================
"""

from hookscope.integrations.google_adk.govern import (
    INSTRUMENTS,
    GoogleAdkInstrumentor,
    end_sessions,
    govern,
)
from hookscope.integrations.google_adk.plugin import HookscopePlugin

__all__ = ["INSTRUMENTS", "GoogleAdkInstrumentor", "HookscopePlugin", "end_sessions", "govern"]
