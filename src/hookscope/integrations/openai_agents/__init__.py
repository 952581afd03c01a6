"""Govern and trace OpenAI Agents SDK (``openai-agents``) agents with a hookscope runner.

Two ways, one behaviour (DESIGN §10):

* ``govern(agent, runner)`` returns a governed clone of an ``agents.Agent``; run it with
  ``Runner.run`` / ``run_streamed`` / ``run_sync`` as before.
* ``OpenAIAgentsInstrumentor().instrument(runner=...)`` governs every run (zero-code:
  ``HOOKSCOPE_CONFIG=hookscope.toml opentelemetry-instrument python app.py``).

One run is one turn; runs sharing an SDK ``Session`` are one session (``end_session(session)``
ends it), a run without one is a session of its own. Importing this module loads the SDK.
"""

from __future__ import annotations

from hookscope.integrations.openai_agents.governed import AskMode, end_session, govern
from hookscope.integrations.openai_agents.instrumentor import INSTRUMENTS, OpenAIAgentsInstrumentor
from hookscope.integrations.openai_agents.values import ModelRequestBlocked, ModelResponseBlocked

__all__ = [
    "INSTRUMENTS",
    "AskMode",
    "ModelRequestBlocked",
    "ModelResponseBlocked",
    "OpenAIAgentsInstrumentor",
    "end_session",
    "govern",
]
