"""Adapters for agents hookscope does not run itself.

* :mod:`hookscope.integrations.antigravity`: ``AntigravityInstrumentor`` and plain hooks for
  the google-antigravity SDK (loads OpenTelemetry and the SDK when used).
* :mod:`hookscope.integrations.openai_agents`: ``govern(agent, runner)`` and
  ``OpenAIAgentsInstrumentor`` for the OpenAI Agents SDK (loads the SDK when used).
* :mod:`hookscope.integrations.wrap`: :func:`wrap_tool` and :func:`wrap_agent` for agents
  written without any hook SDK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hookscope.integrations.wrap import ToolCallDenied, TurnBlocked, wrap_agent, wrap_tool

if TYPE_CHECKING:
    from hookscope.integrations.antigravity import AntigravityInstrumentor
    from hookscope.integrations.openai_agents import OpenAIAgentsInstrumentor

__all__ = [
    "AntigravityInstrumentor",
    "OpenAIAgentsInstrumentor",
    "ToolCallDenied",
    "TurnBlocked",
    "wrap_agent",
    "wrap_tool",
]


def __getattr__(name: str) -> Any:
    # Lazy: importing hookscope.integrations (for wrap_tool) must not load the OTel SDK.
    if name == "AntigravityInstrumentor":
        from hookscope.integrations.antigravity import AntigravityInstrumentor

        return AntigravityInstrumentor
    if name == "OpenAIAgentsInstrumentor":
        from hookscope.integrations.openai_agents import OpenAIAgentsInstrumentor

        return OpenAIAgentsInstrumentor
    raise AttributeError(f"module 'hookscope.integrations' has no attribute {name!r}")
