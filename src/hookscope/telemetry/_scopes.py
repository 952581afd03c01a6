"""Span records: OTelHook's state for one scope, model call or hook run.

One record per span, in the manner of ``opentelemetry-util-genai``'s invocation objects: the
span, the OTel context that carries it, the token that made it current, its start time and the
bookkeeping its end needs. A scope's record is stored on the scope's own
:class:`~hookscope.context.HookContext` (under a key private to one OTelHook), so it is found
from the context, lives exactly as long as the scope, and is never keyed by ``id()``.

A record is made current with :meth:`SpanRecord.activate` and detached with
:meth:`SpanRecord.deactivate`, which is safe in any task: a scope closed in another task than
the one that opened it never raises or logs there, and the opening task detaches the ended
span's context the next time it opens a scope (:func:`reap_stale`).
"""

from __future__ import annotations

from contextvars import Token
from time import time_ns
from typing import TYPE_CHECKING, Any, Final, final

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, Status, StatusCode

from hookscope.telemetry import semconv as sc
from hookscope.types import Usage

if TYPE_CHECKING:
    from hookscope.types import LlmRequest

__all__ = [
    "ChatRecord",
    "HookRunRecord",
    "OperationRecord",
    "SessionRecord",
    "SpanRecord",
    "ToolShape",
    "TurnRecord",
    "error_type",
    "fail",
    "usage_attributes",
]


def error_type(error: BaseException) -> str:
    """The low-cardinality ``error.type`` of ``error``: its class name, never its message."""
    return type(error).__name__


def fail(span: Span, error: BaseException) -> str:
    """Mark ``span`` as ended by ``error`` (never its message: it may carry secrets)."""
    kind = error_type(error)
    span.set_attribute(sc.ERROR_TYPE, kind)
    span.set_status(Status(StatusCode.ERROR, kind))
    return kind


def usage_attributes(usage: Usage, *, openinference: bool = False) -> dict[str, int]:
    """``gen_ai.usage.*`` for one model response or turn.

    Cache and reasoning counts appear only when the provider reported them (non-zero): the
    conventions count them inside the input and output totals. ``openinference`` adds
    ``llm.token_count.*``, for LLM spans only: Phoenix sums those over a trace, and a turn
    carrying its model calls' counts again would double them.
    """
    attributes = {
        sc.GEN_AI_USAGE_INPUT_TOKENS: usage.input_tokens,
        sc.GEN_AI_USAGE_OUTPUT_TOKENS: usage.output_tokens,
    }
    if usage.cache_read_tokens:
        attributes[sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS] = usage.cache_read_tokens
    if usage.cache_creation_tokens:
        attributes[sc.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS] = usage.cache_creation_tokens
    if usage.reasoning_tokens:
        attributes[sc.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS] = usage.reasoning_tokens
    if openinference:
        attributes[sc.LLM_TOKEN_COUNT_PROMPT] = usage.input_tokens
        attributes[sc.LLM_TOKEN_COUNT_COMPLETION] = usage.output_tokens
        attributes[sc.LLM_TOKEN_COUNT_TOTAL] = usage.input_tokens + usage.output_tokens
        if usage.cache_read_tokens:
            attributes[sc.LLM_TOKEN_COUNT_CACHE_READ] = usage.cache_read_tokens
        if usage.cache_creation_tokens:
            attributes[sc.LLM_TOKEN_COUNT_CACHE_WRITE] = usage.cache_creation_tokens
        if usage.reasoning_tokens:
            attributes[sc.LLM_TOKEN_COUNT_REASONING] = usage.reasoning_tokens
    return attributes


#: Contexts made current whose span was ended where they could not be detached (another task,
#: or with a context attached on top of them): each is detached by :func:`reap_stale` once it
#: is the current context again. Bounded: a task that never opens another scope keeps its
#: entry until newer ones push it out.
STALE: list[tuple[Token[Context], Context]] = []
_MAX_STALE: Final = 64


def reap_stale() -> None:
    """Detach the ended spans' contexts that are current here, innermost first.

    Only a context that is the current one is detached, so a later attachment is never undone.
    """
    for entry in reversed(STALE[:]):
        token, context = entry
        if otel_context.get_current() is context:
            try:
                token.var.reset(token)
            except ValueError:  # current here only as a copy: another task's to detach
                continue
            except AttributeError:  # a runtime context other than contextvars
                otel_context.detach(token)
            STALE.remove(entry)


class SpanRecord:
    """One span and what its end needs.

    Args:
        span: The started span.
        start_ns: Its start time (``time.time_ns()``), also the start of its duration metric:
            a span and its histogram report one measured duration.
        agent: The agent name as spans show it.
        metric_agent: The agent name as metrics label it (past the cardinality guard).
    """

    __slots__ = (
        "agent",
        "context",
        "metric_agent",
        "recording",
        "span",
        "start_ns",
        "token",
    )

    def __init__(
        self,
        span: Span,
        start_ns: int,
        agent: str,
        metric_agent: str,
        context: Context | None = None,
    ) -> None:
        self.span = span
        #: False for a sampled-out span: nothing is built for it beyond what metrics need.
        self.recording = span.is_recording()
        self.start_ns = start_ns
        self.agent = agent
        self.metric_agent = metric_agent
        #: The OTel context carrying this span: made current while the span is, and the context
        #: its histogram values are recorded in (so exemplars point at this span). Given when
        #: the span is its sampled-out parent's, whose context already carries it.
        self.context: Context = context if context is not None else trace.set_span_in_context(span)
        self.token: Token[Context] | None = None

    def activate(self) -> None:
        """Make the span current in this task until :meth:`deactivate` (once: a second call,
        e.g. a model call whose request report was interrupted, changes nothing)."""
        if self.token is None:
            self.token = otel_context.attach(self.context)

    def deactivate(self) -> None:
        """Undo :meth:`activate`; safe from another task, and when never activated."""
        token, self.token = self.token, None
        if token is None:
            return
        if otel_context.get_current() is self.context:  # innermost: this task, or a copy of it
            try:
                # The token's own ContextVar, so that a token of another task's context (a task
                # created inside this scope shares its values) fails quietly: otel_context.detach
                # would log a ValueError.
                token.var.reset(token)
                return
            except ValueError:
                pass
            except AttributeError:  # a runtime context other than contextvars
                otel_context.detach(token)
                return
        # Ended from another task, or below a context attached later and not detached yet:
        # the task that made it current detaches it once it is current there (reap_stale).
        STALE.append((token, self.context))
        del STALE[:-_MAX_STALE]

    def end(self, error: BaseException | None = None, end_ns: int | None = None) -> int:
        """Detach and end the span (as failed when ``error``); return its end time."""
        end_ns = end_ns or time_ns()
        try:
            if error is not None and self.recording:
                fail(self.span, error)
        finally:
            try:
                self.deactivate()
            finally:
                self.span.end(end_time=end_ns)
        return end_ns

    def seconds(self, end_ns: int) -> float:
        """The span's duration in seconds, had it ended at ``end_ns``."""
        return (end_ns - self.start_ns) / 1e9


@final
class SessionRecord(SpanRecord):
    """A session span and the counts its end reports."""

    __slots__ = ("cost", "denied_calls", "priced", "provider", "tool_calls", "tool_errors", "turns")

    def __init__(
        self, span: Span, start_ns: int, agent: str, metric_agent: str, provider: str | None
    ) -> None:
        super().__init__(span, start_ns, agent, metric_agent)
        self.provider = provider
        self.turns = self.tool_calls = self.denied_calls = self.tool_errors = 0
        #: Spend so far (USD) and the model calls priced, for the span's total.
        self.cost = 0.0
        self.priced = 0


#: What every call of one tool in a turn shares: its span's name, its span's attributes less
#: the call id (``None`` when the span would not be recorded) and its metric tool name.
ToolShape = tuple[str, "dict[str, Any] | None", str]


@final
class TurnRecord(SpanRecord):
    """An ``invoke_agent`` span, with its model call in flight and its blocking hook."""

    __slots__ = (
        "blocked_by",
        "chat",
        "cost",
        "model_calls",
        "priced",
        "prompt",
        "provider",
        "session",
        "tools",
    )

    def __init__(
        self,
        span: Span,
        start_ns: int,
        agent: str,
        metric_agent: str,
        session: SessionRecord | None,
        provider: str | None,
        prompt: Any = None,
        context: Context | None = None,
    ) -> None:
        super().__init__(span, start_ns, agent, metric_agent, context)
        self.session = session
        self.provider = provider
        self.prompt = prompt
        self.blocked_by: str | None = None
        self.chat: ChatRecord | None = None
        #: Spend (USD), the model calls priced and reported, for the turn's total.
        self.cost = 0.0
        self.priced = self.model_calls = 0
        #: Each tool's :data:`ToolShape` by (name, server), once a call of it opened here.
        self.tools: dict[tuple[str, str | None], ToolShape] = {}


@final
class ChatRecord(SpanRecord):
    """A ``chat {model}`` span: one model call, current while its request and response are
    reported."""

    __slots__ = ("model", "provider", "request")

    def __init__(
        self,
        span: Span,
        start_ns: int,
        agent: str,
        metric_agent: str,
        request: LlmRequest,
        provider: str | None,
        context: Context | None = None,
    ) -> None:
        super().__init__(span, start_ns, agent, metric_agent, context)
        self.request = request
        self.model = request.model
        self.provider = provider


@final
class OperationRecord(SpanRecord):
    """A tool call's ``execute_tool`` span or an interaction's span."""

    __slots__ = (
        "decided_by",
        "error_type",
        "metric_tool",
        "outcome",
        "policy",
        "policy_hook",
        "ran",
        "recovered_by",
        "rule",
        "session",
        "turn",
    )

    def __init__(
        self,
        span: Span,
        start_ns: int,
        agent: str,
        metric_agent: str,
        turn: TurnRecord | None,
        metric_tool: str,
        context: Context | None = None,
    ) -> None:
        super().__init__(span, start_ns, agent, metric_agent, context)
        self.turn = turn
        self.session = turn.session if turn is not None else None
        #: The tool's name as metrics label it (past the cardinality guard); "" for an
        #: interaction.
        self.metric_tool = metric_tool
        self.outcome: str | None = None
        #: The ``hookscope.policy.*`` attributes of the decision, set on the span with its
        #: outcome when it ends (one attribute write per call instead of two).
        self.policy: dict[str, Any] | None = None
        self.policy_hook: str | None = None
        #: The deciding rule and hook, and the hook that recovered an error: for metadata.
        self.rule: str | None = None
        self.decided_by: str | None = None
        self.recovered_by: str | None = None
        self.error_type: str | None = None
        #: The tool was allowed to run: its duration is recorded.
        self.ran = False


@final
class HookRunRecord(SpanRecord):
    """An ``execute_hook`` span around one command or prompt hook run."""

    __slots__ = ()
