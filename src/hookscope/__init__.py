"""hookscope: OpenTelemetry-native lifecycle hooks, policy and tracing for AI agents.

The core (hooks, runner, policy) imports without the OpenTelemetry SDK; the telemetry names
re-exported here (``OTelHook``, ``configure`` …) load it on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hookscope import hooks, policy
from hookscope._version import __version__
from hookscope.context import HookContext, OperationContext, SessionContext, TurnContext
from hookscope.hooks import Hook
from hookscope.runner import DispatchObserver, HookRunner, ScopeError, ToolOutcome
from hookscope.types import (
    Answer,
    ChatResponse,
    Continuation,
    HookResult,
    HookscopeError,
    LlmRequest,
    LlmResponse,
    Question,
    Recovery,
    RequestDecision,
    ResponseDecision,
    ToolCall,
    ToolResult,
    Usage,
)

if TYPE_CHECKING:
    from hookscope.telemetry import ContentCapture, OTelHook, Telemetry, configure

_TELEMETRY = {"ContentCapture", "OTelHook", "Telemetry", "configure"}

__all__ = [
    "Answer",
    "ChatResponse",
    "ContentCapture",
    "Continuation",
    "DispatchObserver",
    "Hook",
    "HookContext",
    "HookResult",
    "HookRunner",
    "HookscopeError",
    "LlmRequest",
    "LlmResponse",
    "OTelHook",
    "OperationContext",
    "Question",
    "Recovery",
    "RequestDecision",
    "ResponseDecision",
    "ScopeError",
    "SessionContext",
    "Telemetry",
    "ToolCall",
    "ToolOutcome",
    "ToolResult",
    "TurnContext",
    "Usage",
    "__version__",
    "configure",
    "hooks",
    "policy",
]


def __getattr__(name: str) -> Any:
    # Lazy re-export: importing hookscope (or hookscope.runner) must not load the OTel SDK.
    if name in _TELEMETRY:
        from hookscope import telemetry

        return getattr(telemetry, name)
    raise AttributeError(f"module 'hookscope' has no attribute {name!r}")
