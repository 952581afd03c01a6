"""Govern and trace Claude Agent SDK agents (``claude-agent-sdk``) with a hookscope runner.

* :func:`govern` — the explicit way: ``ClaudeSDKClient(govern(options, runner))``.
* :class:`ClaudeAgentSdkInstrumentor` — the zero-code way (``opentelemetry-instrument``, entry
  point ``claude_agent_sdk``; ``HOOKSCOPE_CONFIG`` names the hooks and policy to load).

Importing this package imports the SDK; ``import hookscope`` does not.
"""

from hookscope.integrations.claude_agent_sdk.govern import govern
from hookscope.integrations.claude_agent_sdk.instrumentor import (
    INSTRUMENTS,
    ClaudeAgentSdkInstrumentor,
)
from hookscope.integrations.claude_agent_sdk.values import ClaudeToolError, PermissionRefused

__all__ = [
    "INSTRUMENTS",
    "ClaudeAgentSdkInstrumentor",
    "ClaudeToolError",
    "PermissionRefused",
    "govern",
]
