"""Values that cross hookscope's API: tool calls, results, decisions, model traffic.

Every value here is a frozen, slotted dataclass. Hooks receive them and return them; nothing
in hookscope mutates one after it is built. Decisions with more than two outcomes are built
with classmethods (``RequestDecision.block(reason)``) so a reader sees the intent at the call
site.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from hookscope.policy import PolicyDecision

__all__ = [
    "Answer",
    "ChatResponse",
    "HookResult",
    "LlmRequest",
    "LlmResponse",
    "Question",
    "Recovery",
    "RequestDecision",
    "ResponseDecision",
    "ToolCall",
    "ToolResult",
    "Usage",
]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A request from the model to run one tool.

    Args:
        name: The tool's name as the model called it.
        args: Keyword arguments for the tool.
        id: The call id the model gave (empty when it gave none).
        server: The MCP server the tool belongs to, or ``None`` for a local tool. Policies
            match ``server/tool`` rules only against calls that carry a server.
    """

    name: str
    args: Mapping[str, Any] = field(default_factory=dict)
    id: str = ""
    server: str | None = None

    def with_args(self, args: Mapping[str, Any]) -> ToolCall:
        """Return a copy of this call with ``args`` replacing its arguments."""
        return replace(self, args=args)

    @property
    def qualified_name(self) -> str:
        """``server/name`` for an MCP tool, ``name`` otherwise."""
        return self.name if self.server is None else f"{self.server}/{self.name}"


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What a tool returned, given to ``post_tool_call`` hooks.

    Args:
        call: The effective call that ran (after any ``modified_args``).
        value: The tool's return value.
        duration_s: Wall time the tool took, in seconds.
    """

    call: ToolCall
    value: Any = None
    duration_s: float = 0.0


@dataclass(frozen=True, slots=True)
class HookResult:
    """A decide hook's verdict on a turn or a tool call.

    Args:
        allow: ``False`` stops the dispatch: the turn is blocked or the call denied.
        message: Why, for the model or the user. Required in spirit when denying.
        modified_args: For ``pre_tool_call``: arguments merged, in hook order, into the call
            the next hook and the tool see.
        decision: Filled by the :class:`~hookscope.policy.PolicyEnforcer` with the
            :class:`~hookscope.policy.PolicyDecision` behind this result.
    """

    allow: bool = True
    message: str = ""
    modified_args: Mapping[str, Any] | None = None
    decision: PolicyDecision | None = None

    @classmethod
    def deny(cls, message: str) -> HookResult:
        """A denial carrying ``message``."""
        return cls(allow=False, message=message)


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts for one model response."""

    input_tokens: int = 0
    output_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True, slots=True)
class ChatResponse:
    """The agent's answer that ends a turn, given to ``post_turn`` hooks."""

    text: str = ""
    model: str | None = None
    usage: Usage | None = None


@dataclass(frozen=True, slots=True)
class Recovery:
    """An ``on_tool_error`` hook's replacement for a failed tool's result.

    Args:
        value: What the agent receives instead of the exception.
        message: A note on how the error was recovered (recorded, not shown to the model).
    """

    value: Any
    message: str = ""


@dataclass(frozen=True, slots=True)
class Question:
    """A question the agent asks its user, given to ``on_interaction`` hooks."""

    text: str
    options: Sequence[str] = ()
    id: str = ""


@dataclass(frozen=True, slots=True)
class Answer:
    """A reply to one :class:`Question`."""

    text: str
    question_id: str = ""


@dataclass(frozen=True, slots=True)
class LlmRequest:
    """A request about to be sent to the model, given to ``pre_llm_request`` hooks."""

    model: str
    messages: Sequence[Mapping[str, Any]] = ()
    tools: Sequence[str] = ()


@dataclass(frozen=True, slots=True)
class LlmResponse:
    """A model response, given to ``on_llm_response`` hooks."""

    model: str
    text: str = ""
    tool_calls: Sequence[ToolCall] = ()
    usage: Usage | None = None


RequestAction = Literal["proceed", "modify", "block"]
ResponseAction = Literal["accept", "block", "retry_with_feedback"]


@dataclass(frozen=True, slots=True)
class RequestDecision:
    """A ``pre_llm_request`` hook's verdict. Build it with the classmethods."""

    action: RequestAction = "proceed"
    request: LlmRequest | None = None
    reason: str = ""

    @classmethod
    def proceed(cls) -> RequestDecision:
        """Send the request as it is."""
        return _PROCEED

    @classmethod
    def modify(cls, request: LlmRequest) -> RequestDecision:
        """Send ``request`` instead; later hooks see the modified request."""
        return cls(action="modify", request=request)

    @classmethod
    def block(cls, reason: str) -> RequestDecision:
        """Do not send the request; ``reason`` says why."""
        return cls(action="block", reason=reason)


@dataclass(frozen=True, slots=True)
class ResponseDecision:
    """An ``on_llm_response`` hook's verdict. Build it with the classmethods."""

    action: ResponseAction = "accept"
    feedback: str = ""

    @classmethod
    def accept(cls) -> ResponseDecision:
        """Use the response."""
        return _ACCEPT

    @classmethod
    def block(cls, reason: str) -> ResponseDecision:
        """Discard the response; ``reason`` says why."""
        return cls(action="block", feedback=reason)

    @classmethod
    def retry_with_feedback(cls, feedback: str) -> ResponseDecision:
        """Ask the model again, telling it ``feedback``."""
        return cls(action="retry_with_feedback", feedback=feedback)


_PROCEED = RequestDecision()
_ACCEPT = ResponseDecision()
