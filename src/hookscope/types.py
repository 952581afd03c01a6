"""Values that cross hookscope's API: tool calls, results, decisions, model traffic.

Every value here is a frozen, slotted dataclass. Hooks receive them and return them; nothing
in hookscope mutates one after it is built. Decisions with more than two outcomes are built
with classmethods (``RequestDecision.block(reason)``) so a reader sees the intent at the call
site.
"""

from __future__ import annotations

import copy
import enum
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final, Literal

__all__ = [
    "MAX_CONTINUATIONS",
    "Answer",
    "ChatResponse",
    "Continuation",
    "Decision",
    "HookResult",
    "HookscopeError",
    "LlmRequest",
    "LlmResponse",
    "PolicyDecision",
    "Question",
    "Recovery",
    "RequestDecision",
    "ResponseDecision",
    "ToolCall",
    "ToolResult",
    "Usage",
]


# Values a call's arguments may hold as they are: nothing in them can change.
_IMMUTABLE = (str, int, float, bool, bytes, type(None), frozenset)
_IMMUTABLE_TYPES = frozenset(_IMMUTABLE)


def holds_only_immutables(args: Mapping[str, Any]) -> bool:
    """Whether no value in ``args`` can change in place (so a reference is as good as a copy).

    For the runner; not part of the public API.
    """
    types = _IMMUTABLE_TYPES
    for value in args.values():
        if type(value) not in types and not isinstance(value, _IMMUTABLE):
            return False
    return True


class HookscopeError(Exception):
    """Base class of every exception hookscope raises on its own account.

    Catch it to tell hookscope's errors (a bad policy, a bad configuration file, a scope used
    out of order) from the agent's and the tools' own exceptions, which hookscope always lets
    through unchanged.
    """

    __module__ = "hookscope"


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A request from the model to run one tool.

    Args:
        name: The tool's name as the model called it.
        args: Keyword arguments for the tool; stored read-only (a ``MappingProxyType``),
            with mutable values (lists, dicts) copied.
        id: The call id the model gave (empty when it gave none).
        server: The MCP server the tool belongs to, or ``None`` for a local tool. Policies
            match ``server/tool`` rules only against calls that carry a server.
    """

    name: str
    args: Mapping[str, Any] = field(default_factory=dict)
    id: str = ""
    server: str | None = None

    def __post_init__(self) -> None:
        # Read-only from birth: every hook sees the same call, so none may change it under the
        # others (or under the policy that approved it). Mutable values are copied so the
        # caller's own lists and dicts are not the call's.
        args = self.args
        if type(args) is not MappingProxyType:
            frozen = {
                key: value if type(value) in _IMMUTABLE_TYPES else copy.deepcopy(value)
                for key, value in args.items()
            }
            object.__setattr__(self, "args", MappingProxyType(frozen))

    def with_args(self, args: Mapping[str, Any]) -> ToolCall:
        """Return a copy of this call with ``args`` replacing its arguments."""
        return ToolCall(self.name, args, self.id, self.server)

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


class Decision(str, enum.Enum):
    """What a rule decides when it matches."""

    ALLOW = "allow"
    DENY = "deny"
    ASK_USER = "ask_user"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True)
class PolicyDecision:
    """Why a call was allowed or denied.

    Args:
        decision: What the deciding rule decides (``DENY`` when its condition failed);
            ``ALLOW`` when no rule matched.
        outcome: ``"allowed"`` or ``"denied"``: what happens to the call.
        rule: The deciding rule's name, or ``None`` when no rule matched.
        bucket: The deciding rule's bucket (0 to 8), or ``None`` when no rule matched.
        reason: A sentence saying why.
        asked_user: Whether an ask handler was called.
        user_approved: The handler's answer; ``None`` when not asked or it gave no answer.
    """

    decision: Decision
    outcome: Literal["allowed", "denied"]
    rule: str | None
    bucket: int | None
    reason: str
    asked_user: bool = False
    user_approved: bool | None = None


@dataclass(frozen=True, slots=True)
class HookResult:
    """A decide hook's verdict on a turn or a tool call.

    Args:
        allow: ``False`` stops the dispatch: the turn is blocked or the call denied.
        message: Why, for the model or the user. Required in spirit when denying.
        modified_args: For ``pre_tool_call``: arguments merged, in hook order, into the call
            the next hook and the tool see.
        decision: Filled by the :class:`~hookscope.policy.PolicyEnforcer` with the
            :class:`PolicyDecision` behind this result.
        confirm: The call needs the user's confirmation (build it with :meth:`ask`).
        replace_args: ``modified_args`` replaces the call's arguments instead of merging into
            them (keys it leaves out are dropped; Claude Code's ``updatedInput``).
        continuation: For ``post_turn``: the agent should not stop yet but go on with this
            text as its next prompt (build it with :meth:`continue_with`; Claude Code's Stop
            ``decision: block``).
        score: An evaluation of what the hook judged (0 to 1 by convention; a prompt hook's
            verdict is 1 for ok, 0 for not): recorded as a ``gen_ai.evaluation.result`` event
            on the judged span, named after the hook, labelled ``pass`` or ``fail`` by
            ``allow``, with ``message`` as the explanation (DESIGN §11).
    """

    allow: bool = True
    message: str = ""
    modified_args: Mapping[str, Any] | None = None
    decision: PolicyDecision | None = None
    confirm: bool = False
    replace_args: bool = False
    continuation: str | None = None
    score: float | None = None

    @classmethod
    def continue_with(cls, text: str) -> HookResult:
        """For ``post_turn``: the turn should go on with ``text`` as the next prompt.

        The turn scope offers it as :attr:`TurnScope.continuation <hookscope.runner.TurnScope>`
        (at most :data:`MAX_CONTINUATIONS` times in a row, as Claude Code caps Stop hooks).
        """
        # allow=False: the hook does not let the agent stop (what code reading only allow
        # and message, such as the adapter kit, sees).
        return cls(allow=False, message=text, continuation=text)

    @classmethod
    def deny(cls, message: str) -> HookResult:
        """A denial carrying ``message``."""
        return cls(allow=False, message=message)

    @classmethod
    def ask(cls, message: str) -> HookResult:
        """The call needs the user's confirmation; ``message`` is the question they see.

        The runner puts a confirm :class:`Question` to the ``on_interaction`` hooks: an answer
        ``"allow"`` lets the call run, anything else (or no answer) denies it. Until then the
        result reads as a denial (``allow=False``), so code that ignores ``confirm`` fails
        closed. Only ``pre_tool_call`` hooks may ask.
        """
        return cls(allow=False, message=message, confirm=True)


#: How many turns in a row ``post_turn`` hooks may continue (Claude Code 2.1.332 asks a
#: blocking Stop hook 9 times: the turn and 8 continuations).
MAX_CONTINUATIONS: Final = 8


class Continuation(str):
    """A prompt that continues a turn because a ``post_turn`` hook asked to.

    ``session.turn(turn.continuation)`` opens the continuing turn; ``depth`` counts the
    continuations in a row and ``prompt_id`` keeps the user prompt they continue.
    """

    depth: int
    prompt_id: str

    def __new__(cls, text: str, depth: int = 1, prompt_id: str = "") -> Continuation:
        self = super().__new__(cls, text)
        self.depth = depth
        self.prompt_id = prompt_id
        return self


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts for one model response.

    Args:
        input_tokens: Prompt tokens, cached ones included.
        output_tokens: Completion tokens, reasoning ones included.
        cache_read_tokens: Input tokens served from the provider's prompt cache.
        cache_creation_tokens: Input tokens written to the provider's prompt cache.
        reasoning_tokens: Output tokens the model spent reasoning.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_creation_tokens: int = 0
    reasoning_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True, slots=True)
class ChatResponse:
    """The agent's answer that ends a turn, given to ``post_turn`` hooks.

    Args:
        text: The answer.
        model: The model that produced it.
        usage: Token counts for the whole turn.
        provider: The model's provider (``openai``, ``gcp.gemini`` …; GenAI conventions'
            ``gen_ai.provider.name``); the session's when ``None``.
        finish_reasons: Why the model stopped, one per choice.
    """

    text: str = ""
    model: str | None = None
    usage: Usage | None = None
    provider: str | None = None
    finish_reasons: Sequence[str] = ()


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
    """A question the agent asks its user, given to ``on_interaction`` hooks.

    Args:
        text: The question.
        options: The answers offered, if the question offers any.
        id: The question's id, echoed by :attr:`Answer.question_id`.
        kind: ``"question"``, or ``"confirm"`` when the runner asks on a hook's behalf
            whether a call may run (:meth:`HookResult.ask`): answer ``"allow"`` to let it.
    """

    text: str
    options: Sequence[str] = ()
    id: str = ""
    kind: Literal["question", "confirm"] = "question"


@dataclass(frozen=True, slots=True)
class Answer:
    """A reply to one :class:`Question`."""

    text: str
    question_id: str = ""


@dataclass(frozen=True, slots=True)
class LlmRequest:
    """A request about to be sent to the model, given to ``pre_llm_request`` hooks.

    ``provider`` names the model's provider (``gen_ai.provider.name``); the session's when
    ``None``.
    """

    model: str
    messages: Sequence[Mapping[str, Any]] = ()
    tools: Sequence[str] = ()
    provider: str | None = None


@dataclass(frozen=True, slots=True)
class LlmResponse:
    """A model response, given to ``on_llm_response`` hooks.

    ``usage`` is this one call's token counts; ``provider`` the model's provider (the
    session's when ``None``); ``finish_reasons`` why the model stopped, one per choice.
    """

    model: str
    text: str = ""
    tool_calls: Sequence[ToolCall] = ()
    usage: Usage | None = None
    provider: str | None = None
    finish_reasons: Sequence[str] = ()


RequestAction = Literal["proceed", "modify", "block"]
ResponseAction = Literal["accept", "block", "retry_with_feedback"]


@dataclass(frozen=True, slots=True)
class RequestDecision:
    """A ``pre_llm_request`` hook's verdict. Build it with the classmethods."""

    action: RequestAction = "proceed"
    request: LlmRequest | None = None
    message: str = ""

    @property
    def reason(self) -> str:
        """Deprecated alias of :attr:`message` (removed in 0.3)."""
        _renamed("RequestDecision.reason", "RequestDecision.message")
        return self.message

    @classmethod
    def proceed(cls) -> RequestDecision:
        """Send the request as it is."""
        return _PROCEED

    @classmethod
    def modify(cls, request: LlmRequest) -> RequestDecision:
        """Send ``request`` instead; later hooks see the modified request."""
        return cls(action="modify", request=request)

    @classmethod
    def block(cls, message: str) -> RequestDecision:
        """Do not send the request; ``message`` says why."""
        return cls(action="block", message=message)


@dataclass(frozen=True, slots=True)
class ResponseDecision:
    """An ``on_llm_response`` hook's verdict. Build it with the classmethods."""

    action: ResponseAction = "accept"
    message: str = ""

    @property
    def feedback(self) -> str:
        """Deprecated alias of :attr:`message` (removed in 0.3)."""
        _renamed("ResponseDecision.feedback", "ResponseDecision.message")
        return self.message

    @classmethod
    def accept(cls) -> ResponseDecision:
        """Use the response."""
        return _ACCEPT

    @classmethod
    def block(cls, message: str) -> ResponseDecision:
        """Discard the response; ``message`` says why."""
        return cls(action="block", message=message)

    @classmethod
    def retry_with_feedback(cls, message: str) -> ResponseDecision:
        """Ask the model again, telling it ``message``."""
        return cls(action="retry_with_feedback", message=message)


def _renamed(old: str, new: str) -> None:
    warnings.warn(f"{old} is deprecated; use {new}", DeprecationWarning, stacklevel=3)


_PROCEED = RequestDecision()
_ACCEPT = ResponseDecision()
