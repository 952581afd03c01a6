"""Per-scope state of :class:`~hookscope.telemetry.otel_hook.OTelHook`: a span and its bookkeeping.

Each scope's span is made current (attached) when the scope opens and detached when it closes;
the runner opens and closes a scope in the same task, so the context token is always valid.
"""

from __future__ import annotations

from time import perf_counter
from typing import final

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, Status, StatusCode

from hookscope.telemetry import semconv as sc
from hookscope.types import Usage

__all__ = ["OperationScope", "Scope", "SessionScope", "TurnScope", "fail", "usage_attributes"]


def fail(span: Span, error: BaseException) -> str:
    """Mark ``span`` as ended by ``error`` (never its message: it may carry secrets)."""
    error_type = type(error).__name__
    span.set_attribute(sc.ERROR_TYPE, error_type)
    span.set_status(Status(StatusCode.ERROR, error_type))
    return error_type


def usage_attributes(usage: Usage) -> dict[str, int]:
    return {
        sc.GEN_AI_USAGE_INPUT_TOKENS: usage.input_tokens,
        sc.GEN_AI_USAGE_OUTPUT_TOKENS: usage.output_tokens,
    }


class Scope:
    __slots__ = ("agent", "metric_agent", "span", "token")

    def __init__(self, span: Span, agent: str, metric_agent: str) -> None:
        self.span = span
        self.agent = agent  # as spans name it
        self.metric_agent = metric_agent  # as metrics label it: past the cardinality guard
        self.token = otel_context.attach(trace.set_span_in_context(span))

    def close(self) -> None:
        try:
            otel_context.detach(self.token)
        finally:
            self.span.end()


@final
class SessionScope(Scope):
    __slots__ = ("denied_calls", "tool_calls", "tool_errors", "turns")

    def __init__(self, span: Span, agent: str, metric_agent: str) -> None:
        super().__init__(span, agent, metric_agent)
        self.turns = self.tool_calls = self.denied_calls = self.tool_errors = 0


@final
class TurnScope(Scope):
    __slots__ = ("blocked_by", "chat", "model", "session", "started", "usage", "usage_recorded")

    def __init__(
        self, span: Span, agent: str, metric_agent: str, session: SessionScope | None
    ) -> None:
        super().__init__(span, agent, metric_agent)
        self.session = session
        self.started = perf_counter()
        self.blocked_by: str | None = None
        self.chat: Span | None = None
        self.usage: Usage | None = None
        self.model: str | None = None
        self.usage_recorded = False


@final
class OperationScope(Scope):
    __slots__ = (
        "error_type",
        "executed_s",
        "outcome",
        "policy_hook",
        "run_started",
        "session",
        "tool",
        "turn",
    )

    def __init__(
        self, span: Span, agent: str, metric_agent: str, turn: TurnScope | None, tool: str
    ) -> None:
        super().__init__(span, agent, metric_agent)
        self.turn = turn
        self.session = turn.session if turn is not None else None
        self.tool = tool
        self.outcome: str | None = None
        self.policy_hook: str | None = None
        self.error_type: str | None = None
        self.run_started = 0.0
        self.executed_s: float | None = None
