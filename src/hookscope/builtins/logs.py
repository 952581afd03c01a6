"""One structured log line per lifecycle event (seed 003's ``LoggingHooks``)."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, Final

from hookscope._registry import same_events
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
)

__all__ = ["LoggingHook"]


class LoggingHook(Hook):
    """Logs one line per lifecycle event: ids, tool, argument *keys*, outcome, duration.

    Argument values, prompts, responses and answers are never logged (they may carry
    secrets); only their keys, sizes and token counts. Each record also carries the fields as
    ``record.hookscope`` (a dict with ``event`` first) for structured handlers. The hook never
    decides anything; register it first to see every requested tool call (a denied call has no
    later line: ``AuditLog`` records who denied it). When the logger is not enabled for
    ``level`` each event costs one check.

    Args:
        logger: A logger name or :class:`logging.Logger`.
        level: A level number or name (``"DEBUG"``, ``"INFO"`` …).

    Example::

        logging.basicConfig(level=logging.DEBUG)
        runner = HookRunner([LoggingHook(level="INFO")])
        # INFO hookscope.agent: pre_tool_call session=4f… turn=0 call=c1 tool=view_file
        #      arg_keys=AbsolutePath
    """

    def __init__(
        self, logger: str | logging.Logger = "hookscope.agent", level: int | str = logging.DEBUG
    ) -> None:
        if isinstance(logger, str) and logger:
            self.logger = logging.getLogger(logger)
        elif isinstance(logger, logging.Logger):
            self.logger = logger
        else:
            raise ValueError(
                f"LoggingHook: logger must be a logger name or a logging.Logger, got {logger!r}"
            )
        self.level = _level(level)
        # Bound once: every event checks it, and an inactive hook does nothing else.
        self._enabled = self.logger.isEnabledFor

    def _hookscope_gate(self) -> LoggerGate | None:
        """While the logger is not enabled for the level, the runner leaves this hook out
        (each method would only check that); a subclass that overrides one is always in."""
        return LoggerGate(self.logger, self.level) if same_events(self, LoggingHook) else None

    def _log(self, event: str, context: HookContext, **fields: Any) -> None:
        ids: dict[str, Any] = {"session": getattr(context, "session_id", None)}
        turn = getattr(context, "turn_index", None)
        if turn is not None:
            ids["turn"] = turn
        call_id = getattr(context, "call_id", None)
        if call_id:
            ids["call"] = call_id
        ids.update(fields)
        text = " ".join(f"{key}={_text(value)}" for key, value in ids.items())
        self.logger.log(
            self.level, "%s %s", event, text, extra={"hookscope": {"event": event, **ids}}
        )

    def on_session_start(self, context: SessionContext) -> None:
        """Log the session's start."""
        if self._enabled(self.level):
            self._log("on_session_start", context, agent=context.agent_name)

    def on_session_end(self, context: SessionContext) -> None:
        """Log the session's end and outcome."""
        if self._enabled(self.level):
            self._log("on_session_end", context, outcome=context.outcome, turns=context.turn_count)

    def pre_turn(self, context: TurnContext, prompt: Any) -> HookResult | None:
        """Log a turn's start."""
        if self._enabled(self.level):
            self._log("pre_turn", context)
        return None

    def post_turn(self, context: TurnContext, response: ChatResponse) -> None:
        """Log a turn's end with its token usage."""
        if self._enabled(self.level):
            usage = response.usage
            self._log(
                "post_turn",
                context,
                model=response.model,
                tokens=None if usage is None else usage.total_tokens,
            )

    def pre_llm_request(self, context: TurnContext, request: LlmRequest) -> RequestDecision | None:
        """Log a model request: model and message count."""
        if self._enabled(self.level):
            self._log(
                "pre_llm_request", context, model=request.model, messages=len(request.messages)
            )
        return None

    def on_llm_response(
        self, context: TurnContext, response: LlmResponse
    ) -> ResponseDecision | None:
        """Log a model response: model, tokens and the tools it calls."""
        if self._enabled(self.level):
            usage = response.usage
            self._log(
                "on_llm_response",
                context,
                model=response.model,
                tokens=None if usage is None else usage.total_tokens,
                tool_calls=[call.qualified_name for call in response.tool_calls],
            )
        return None

    def pre_tool_call(self, context: OperationContext, call: ToolCall) -> HookResult | None:
        """Log a requested tool call: tool and argument keys, never values."""
        if self._enabled(self.level):
            self._log(
                "pre_tool_call",
                context,
                tool=call.qualified_name,
                arg_keys=[str(key) for key in call.args],
            )
        return None

    def post_tool_call(self, context: OperationContext, result: ToolResult) -> None:
        """Log a tool call that returned, with its duration."""
        if self._enabled(self.level):
            self._log(
                "post_tool_call",
                context,
                tool=result.call.qualified_name,
                outcome="succeeded",
                duration_ms=round(result.duration_s * 1000, 3),
            )

    def on_tool_error(self, context: OperationContext, error: Exception) -> Recovery | None:
        """Log a tool call that raised: the exception's type, never its text."""
        if self._enabled(self.level):
            call = context.call
            self._log(
                "on_tool_error",
                context,
                tool=None if call is None else call.qualified_name,
                outcome="failed",
                error_type=type(error).__name__,
            )
        return None

    def on_interaction(
        self, context: OperationContext, questions: Sequence[Question]
    ) -> Sequence[Answer] | None:
        """Log how many questions the agent asks, and of which kinds."""
        if self._enabled(self.level):
            kinds = sorted({getattr(q, "kind", "question") for q in questions})
            self._log("on_interaction", context, questions=len(questions), kinds=kinds)
        return None

    def pre_compaction(self, context: TurnContext, messages: Sequence[Any]) -> str | None:
        """Log that the agent is about to compact ``messages`` (it supplies no summary)."""
        if self._enabled(self.level):
            self._log("pre_compaction", context, messages=len(messages))
        return None

    def on_compaction(self, context: TurnContext, summary: str) -> None:
        """Log a compaction and the summary's length."""
        if self._enabled(self.level):
            self._log("on_compaction", context, summary_chars=len(summary))


class LoggerGate:
    """Open while ``logger`` is enabled for ``level``; a shut one takes the hook out of the
    runner's table (see ``hookscope._registry.Gate``).

    The stamp is the logger's own cache of ``isEnabledFor`` answers: the logging module
    clears it on every change that can alter them (``setLevel`` on any logger,
    ``logging.disable``, ``dictConfig``), so a missing or different entry means "ask again".
    A logger ``disabled`` (by ``dictConfig``) is shut while that flag stays ``True``.
    """

    __slots__ = ("_level", "_logger")

    def __init__(self, logger: logging.Logger, level: int) -> None:
        self._logger = logger
        self._level = level

    def is_open(self) -> bool:
        """Whether the logger is enabled for the level (fills the logger's cache)."""
        return self._logger.isEnabledFor(self._level)

    def stamp(self, was_open: bool) -> tuple[Mapping[Any, Any], Any, object] | None:
        """The logger's cached answer for the level, or its ``disabled`` flag."""
        logger = self._logger
        if not was_open and logger.disabled is True:
            return vars(logger), "disabled", True
        cache = getattr(logger, "_cache", None)  # CPython's; without it, ask every time
        if not isinstance(cache, dict) or type(logger).isEnabledFor is not _IS_ENABLED_FOR:
            return {}, None, True  # never holds: a logger class of its own answers itself
        return cache, self._level, was_open


_IS_ENABLED_FOR: Final = logging.Logger.isEnabledFor


def _level(level: object) -> int:
    if isinstance(level, int) and not isinstance(level, bool) and level >= 0:
        return level
    if isinstance(level, str):
        number = logging.getLevelName(level.strip().upper())
        if isinstance(number, int):
            return number
    raise ValueError(
        f"LoggingHook: level must be a logging level number or name such as 'DEBUG' or "
        f"'INFO', got {level!r}"
    )


def _text(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ",".join(_text(item) for item in value)
    text = str(value)
    # Names come from the model: quote any with spaces or line breaks, so one event stays one
    # line and a crafted tool name cannot forge fields.
    return repr(text) if any(c.isspace() or c in "=,'\"" for c in text) else text
