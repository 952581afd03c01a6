"""hookscope: OpenTelemetry-native lifecycle hooks, policy and tracing for AI agents."""

from hookscope._version import __version__
from hookscope.context import HookContext, OperationContext, SessionContext, TurnContext
from hookscope.hooks import Hook
from hookscope.types import (
    Answer,
    ChatResponse,
    HookResult,
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

__all__ = [
    "Answer",
    "ChatResponse",
    "Hook",
    "HookContext",
    "HookResult",
    "LlmRequest",
    "LlmResponse",
    "OperationContext",
    "Question",
    "Recovery",
    "RequestDecision",
    "ResponseDecision",
    "SessionContext",
    "ToolCall",
    "ToolResult",
    "TurnContext",
    "Usage",
    "__version__",
]
