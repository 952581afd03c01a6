"""hookscope for google-antigravity: traces, policy decisions and recoveries of real agents.

Two ways in:

* :class:`AntigravityInstrumentor` (recommended) wraps the SDK with ``wrapt`` and observes
  it; the agent's code does not change and its behaviour does not either::

      from hookscope.integrations.antigravity import AntigravityInstrumentor

      AntigravityInstrumentor().instrument(tracer_provider=tp, meter_provider=mp)
      async with Agent(LocalAgentConfig(...)) as agent:   # traced
          ...

  or, with no code at all, ``opentelemetry-instrument python app.py`` (entry point
  ``antigravity``).

* :func:`hooks` returns plain SDK hooks for ``LocalAgentConfig(hooks=[...])``, for those who
  prefer not to patch. Hooks see less than the wrappers do: tool calls appear when they end
  (no durations), and neither policy denials nor recoveries by other hooks are visible.

Both produce hookscope's telemetry (DESIGN §5): ``session {agent}`` → ``invoke_agent {agent}``
→ ``execute_tool {tool}`` spans with their events, and every hookscope metric.
"""

from __future__ import annotations

from hookscope.integrations.antigravity.instrumentor import (
    CONFIG_ENV,
    DEFAULT_AGENT_NAME,
    INSTRUMENTS,
    NEST_SESSIONS_ENV,
    AntigravityInstrumentor,
    govern,
    hooks,
)

__all__ = [
    "CONFIG_ENV",
    "DEFAULT_AGENT_NAME",
    "INSTRUMENTS",
    "NEST_SESSIONS_ENV",
    "AntigravityInstrumentor",
    "govern",
    "hooks",
]
