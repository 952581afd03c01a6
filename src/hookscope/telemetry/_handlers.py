"""What OTelHook records when a dispatch finishes, one handler per lifecycle event.

:class:`EventHandlers` is OTelHook's half that turns each event's final result into span
attributes, span events, content and metrics, and that runs model-call (``chat``) spans.
Each handler receives the span record of the scope the event belongs to; nothing here looks
a record up by type.
"""

from __future__ import annotations

from collections.abc import Callable, Sized
from time import time_ns
from typing import Any, Final

from opentelemetry._logs import Logger
from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind, Tracer

from hookscope.context import HookContext
from hookscope.hooks import HookEvent
from hookscope.telemetry import semconv as sc
from hookscope.telemetry._scopes import (
    ChatRecord,
    OperationRecord,
    SessionRecord,
    SpanRecord,
    TurnRecord,
    error_type,
    usage_attributes,
)
from hookscope.telemetry.content import Messages
from hookscope.telemetry.cost import CostRecorder, cost_attributes
from hookscope.telemetry.instruments import Instruments
from hookscope.types import ChatResponse, HookResult, LlmRequest, LlmResponse, ToolCall, Usage

__all__ = ["EventHandlers", "Handler", "records_below"]

_MAX_REASON: Final = 256
_PRE_TOOL_CALL: Final = sc.EVENT_NAMES["pre_tool_call"]
_POST_TOOL_CALL: Final = sc.EVENT_NAMES["post_tool_call"]

Handler = Callable[[Any, Any, Any, "str | None"], None]


def records_below(parent: SpanRecord | None) -> bool:
    """Whether a span started under ``parent`` may be recorded, so its attributes are worth
    building: there is no parent, or the parent is recorded."""
    return parent is None or parent.recording


class EventHandlers:
    """Per-event recording for :class:`~hookscope.telemetry.otel_hook.OTelHook`."""

    costs: CostRecorder

    _tracer: Tracer
    _messages: Messages
    instruments: Instruments
    #: Where lifecycle events go (``OTelHook(events=...)``): span events, log records, both.
    _span_events: bool
    _event_logger: Logger | None

    def event(
        self, record: SpanRecord, name: str, attributes: dict[str, Any] | None = None
    ) -> None:
        """Report lifecycle event ``name`` of ``record``'s span: as a span event, as a log
        record through the Logs API in the span's context (OTEP 4430's log-based events), or
        both. Callers check ``record.recording`` first: a sampled-out span gets neither."""
        if self._span_events:
            record.span.add_event(name, attributes)
        if self._event_logger is not None:
            self._event_logger.emit(
                timestamp=time_ns(), event_name=name, context=record.context, attributes=attributes
            )

    def event_routes(
        self, session_key: str, turn_key: str, operation_key: str
    ) -> dict[HookEvent, tuple[str, Handler]]:
        """Each event → the context key of its scope's record, and its handler."""
        return {
            "on_session_start": (session_key, self._session_started),
            "on_session_end": (session_key, self._session_ending),
            "pre_turn": (turn_key, self._pre_turn),
            "post_turn": (turn_key, self._post_turn),
            "pre_llm_request": (turn_key, self._pre_llm_request),
            "on_llm_response": (turn_key, self._on_llm_response),
            "pre_tool_call": (operation_key, self._pre_tool_call),
            "post_tool_call": (operation_key, self._post_tool_call),
            "on_tool_error": (operation_key, self._on_tool_error),
            "on_interaction": (operation_key, self._on_interaction),
            "pre_compaction": (turn_key, self._pre_compaction),
            "on_compaction": (turn_key, self._on_compaction),
        }

    def child_span(
        self,
        parent: SpanRecord | None,
        name: str,
        argument: str | None,
        start_ns: int,
        kind: SpanKind = SpanKind.INTERNAL,
        attributes: dict[str, Any] | None = None,
    ) -> tuple[Span, Context | None]:
        """Start span ``name.format(argument)`` (``name`` itself when ``argument`` is ``None``)
        under ``parent``'s span, or reuse a sampled-out parent's span.

        Below a span nobody records, hookscope starts none (as parent-based samplers, the
        SDK's default, decide anyway), so a sampled-out session costs no span objects, names
        or attributes: callers build ``attributes`` only when :func:`records_below` says so.
        Returns the span and, when reused, the parent's context that carries it.
        """
        if parent is not None and not parent.recording:
            return parent.span, parent.context
        span = self._tracer.start_span(
            name if argument is None else name.format(argument),
            context=parent.context if parent is not None else None,
            kind=kind,
            attributes=attributes,
            start_time=start_ns,
        )
        return span, None

    # --- sessions and turns ---

    def _session_started(self, record: SessionRecord, data: Any, result: Any, by: Any) -> None:
        if record.recording:
            self.event(record, sc.EVENT_NAMES["on_session_start"])

    def _session_ending(self, record: SessionRecord, data: Any, result: Any, by: Any) -> None:
        if record.recording:
            self.event(record, sc.EVENT_NAMES["on_session_end"])

    def _pre_turn(self, record: TurnRecord, prompt: Any, result: HookResult, by: Any) -> None:
        if not result.allow:
            record.blocked_by = by
        if not record.recording:
            return
        attributes: dict[str, Any] = {sc.TURN_ALLOWED: result.allow}
        if not result.allow:
            if by is not None:
                attributes[sc.TURN_DECIDED_BY] = by
            attributes[sc.TURN_MESSAGE] = result.message[:_MAX_REASON]
            record.span.set_attributes(attributes)
        self.event(record, sc.EVENT_NAMES["pre_turn"], attributes)

    def _post_turn(self, record: TurnRecord, response: ChatResponse, result: Any, by: Any) -> None:
        if not record.recording:
            return
        span = record.span
        attributes: dict[str, Any] = {}
        provider = response.provider
        if provider is not None and record.provider is None:
            attributes[sc.GEN_AI_PROVIDER_NAME] = provider
        if response.usage is not None:  # the turn's totals: on its span, not in the metric
            attributes.update(usage_attributes(response.usage))
            if not record.model_calls:  # no model call reported: price the turn's usage
                self.costs.charge(
                    record, provider or record.provider, response.model, response.usage
                )
        if attributes:
            span.set_attributes(attributes)
        if response.text and (self._messages.on_spans or self._messages.on_events):
            finish_reasons = tuple(response.finish_reasons)
            self._messages.exchange(
                span,
                record.context,
                record.prompt,
                self._messages.output(response.text, (), finish_reasons),
                response.text,
                {
                    sc.GEN_AI_OPERATION_NAME: sc.OPERATION_INVOKE_AGENT,
                    sc.GEN_AI_AGENT_NAME: record.agent,
                    **({sc.GEN_AI_PROVIDER_NAME: p} if (p := provider or record.provider) else {}),
                },
                inputs_on_span=False,
            )
        self.event(record, sc.EVENT_NAMES["post_turn"])

    # --- tool calls and interactions ---

    def _pre_tool_call(
        self, record: OperationRecord, call: ToolCall, result: HookResult, by: str | None
    ) -> None:
        decision = result.decision
        if decision is not None:
            action, outcome = decision.decision.value, decision.outcome
            rule, bucket = decision.rule, decision.bucket
        else:  # no policy spoke, or a plain decide hook denied
            action = "allow" if result.allow else "deny"
            outcome = sc.POLICY_ALLOWED if result.allow else sc.POLICY_DENIED
            rule = bucket = None
        if result.allow:
            record.ran = True
        else:
            record.outcome = sc.TOOL_DENIED
        # The hook that stopped the dispatch, else the policy hook that decided: a denial by a
        # plain decide hook has no rule, and this is what names it (on panels too).
        decided_by = by or (record.policy_hook if decision is not None else None)
        record.rule, record.decided_by = rule, decided_by
        instruments = self.instruments
        instruments.policy_decisions.add(
            (
                record.metric_agent,
                record.metric_tool,
                action,
                outcome,
                instruments.rule_name(rule) if rule is not None else None,
                bucket,
                instruments.hook_name(decided_by) if decided_by is not None else None,
            )
        )
        if not record.recording:
            return
        attributes: dict[str, Any] = {sc.POLICY_DECISION: action, sc.POLICY_OUTCOME: outcome}
        if decision is not None:
            attributes[sc.POLICY_REASON] = self._reason(decision.reason)
            if rule is not None:
                attributes[sc.POLICY_RULE] = rule
            if bucket is not None:
                attributes[sc.POLICY_BUCKET] = bucket
        elif not result.allow:
            attributes[sc.POLICY_REASON] = self._reason(result.message)
        if decided_by is not None:
            attributes[sc.POLICY_DECIDED_BY] = decided_by
        record.policy = attributes  # on the span with its outcome, when it ends
        if self._messages.on_spans:
            self._messages.value(
                record.span, sc.GEN_AI_TOOL_CALL_ARGUMENTS, sc.INPUT_VALUE, call.args
            )
        self.event(record, _PRE_TOOL_CALL, attributes)

    def _post_tool_call(self, record: OperationRecord, data: Any, result: Any, by: Any) -> None:
        record.outcome = sc.TOOL_SUCCEEDED
        if record.recording:
            if self._messages.on_spans:
                self._messages.value(
                    record.span, sc.GEN_AI_TOOL_CALL_RESULT, sc.OUTPUT_VALUE, data.value
                )
            self.event(record, _POST_TOOL_CALL)

    def _on_tool_error(
        self, record: OperationRecord, error: BaseException, recovery: Any, by: str | None
    ) -> None:
        kind = error_type(error)
        recovered = recovery is not None
        record.error_type = kind
        record.outcome = sc.TOOL_RECOVERED if recovered else sc.TOOL_FAILED
        instruments = self.instruments
        instruments.tool_errors.add(
            (
                record.metric_agent,
                record.metric_tool,
                instruments.error_type(kind),
                recovered,
            )
        )
        if record.recording:
            attributes: dict[str, Any] = {sc.ERROR_TYPE: kind, sc.RECOVERY_RECOVERED: recovered}
            if recovered and by is not None:
                attributes[sc.RECOVERY_HOOK] = by
                record.recovered_by = by
            record.span.set_attributes(attributes)
            self.event(record, sc.EVENT_NAMES["on_tool_error"], attributes)

    def _on_interaction(
        self, record: OperationRecord, questions: Any, answers: Any, by: Any
    ) -> None:
        answered = answers is not None
        outcome = sc.INTERACTION_ANSWERED if answered else sc.INTERACTION_UNANSWERED
        self.instruments.interactions.add((record.metric_agent, outcome))
        if not record.recording:
            return
        attributes: dict[str, Any] = {sc.INTERACTION_OUTCOME: outcome}
        if answered and by is not None:
            attributes[sc.INTERACTION_ANSWERED_BY] = by
        span = record.span
        span.set_attributes(attributes)
        self._messages.value(span, sc.INTERACTION_QUESTIONS, sc.INPUT_VALUE, questions)
        self.event(record, sc.EVENT_NAMES["on_interaction"], attributes)

    # --- compaction ---

    def _pre_compaction(
        self, record: TurnRecord, messages: Any, summary: Any, by: str | None
    ) -> None:
        self.instruments.compactions.add((record.metric_agent, sc.COMPACTION_PRE))
        if not record.recording:
            return
        attributes: dict[str, Any] = {}
        if isinstance(messages, Sized):
            attributes[sc.COMPACTION_MESSAGES] = len(messages)
        if isinstance(summary, str):
            attributes[sc.COMPACTION_SUMMARY_LENGTH] = len(summary)
            if by is not None:
                attributes[sc.COMPACTION_SUMMARIZED_BY] = by
        self.event(record, sc.EVENT_NAMES["pre_compaction"], attributes)

    def _on_compaction(self, record: TurnRecord, summary: str, result: Any, by: Any) -> None:
        self.instruments.compactions.add((record.metric_agent, sc.COMPACTION_POST))
        if record.recording:
            self.event(
                record,
                sc.EVENT_NAMES["on_compaction"],
                {sc.COMPACTION_SUMMARY_LENGTH: len(summary)},
            )

    # --- model calls ---

    def start_chat(self, turn: TurnRecord | None, context: HookContext, request: Any) -> None:
        """Open the ``chat {model}`` span of a model call and make it current while its
        request is reported (``pre_llm_request``)."""
        if turn is None or not isinstance(request, LlmRequest):
            return
        if turn.chat is not None:  # the previous call was never reported back
            self.end_chat(turn, None, time_ns())
        provider = request.provider or turn.provider
        model = request.model
        attributes: dict[str, Any] | None = None
        if turn.recording:  # built before the span, to start it with them
            attributes = {
                sc.GEN_AI_OPERATION_NAME: sc.OPERATION_CHAT,
                sc.GEN_AI_REQUEST_MODEL: model,
                sc.GEN_AI_AGENT_NAME: turn.agent,
                sc.SESSION_ID: getattr(context, "session_id", ""),
                sc.OPENINFERENCE_SPAN_KIND: sc.KIND_LLM,
                sc.LLM_MODEL_NAME: model,
            }
            if provider is not None:
                attributes[sc.GEN_AI_PROVIDER_NAME] = provider
                attributes[sc.LLM_PROVIDER] = provider
        start_ns = time_ns()
        span, reused = self.child_span(
            turn, sc.SPAN_CHAT, model, start_ns, SpanKind.CLIENT, attributes
        )
        chat = ChatRecord(span, start_ns, turn.agent, turn.metric_agent, request, provider, reused)
        if chat.recording:
            # The request's messages now: a blocked or unanswered call still shows them.
            self._messages.prompt(span, request.messages)
        turn.chat = chat
        chat.activate()

    def end_chat(
        self, turn: TurnRecord, error: BaseException | None, end_ns: int, *, called: bool = True
    ) -> None:
        """End the turn's model call; record its duration unless the model was never called."""
        chat, turn.chat = turn.chat, None
        if chat is None:
            return
        try:
            if called:
                instruments = self.instruments
                kind = error_type(error) if error is not None else None
                instruments.operation_duration.record(
                    chat.seconds(end_ns),
                    (
                        chat.metric_agent,
                        sc.OPERATION_CHAT,
                        instruments.provider_name(chat.provider) if chat.provider else None,
                        instruments.model_name(chat.model),
                        instruments.error_type(kind) if kind is not None else None,
                    ),
                    chat.context,
                )
        finally:
            chat.end(error, end_ns)

    def _reason(self, text: str) -> str:
        # Reasons come from hooks and policies, and a hook's message may quote what the model
        # sent (a token in a command line): redacted like captured content, always.
        return self._messages.redactor.redact_text(text, _MAX_REASON)

    def _guardrail(
        self, record: TurnRecord, stage: str, verdict: str, by: str | None, reason: str
    ) -> dict[str, Any]:
        self.instruments.guardrail_verdicts.add((record.metric_agent, stage, verdict))
        attributes: dict[str, Any] = {sc.GUARDRAIL_STAGE: stage, sc.GUARDRAIL_VERDICT: verdict}
        if by is not None:
            attributes[sc.GUARDRAIL_DECIDED_BY] = by
        if reason:
            attributes[sc.GUARDRAIL_REASON] = self._reason(reason)
        return attributes

    def _pre_llm_request(
        self, record: TurnRecord, request: LlmRequest, decision: Any, by: Any
    ) -> None:
        if decision is None:  # reported by an adapter whose SDK has no model hook: no guardrail
            if record.chat is not None:
                record.chat.deactivate()
            return
        attributes = self._guardrail(
            record, sc.STAGE_REQUEST, decision.action, by, decision.message
        )
        chat = record.chat
        if chat is None:
            return
        chat.deactivate()  # current only while reported: the model call happens outside
        if chat.recording:
            chat.span.set_attribute(sc.GUARDRAIL_REQUEST, decision.action)
            self.event(chat, sc.EVENT_NAMES["pre_llm_request"], attributes)
        if decision.action == "block":  # the model is not called: the chat span ends here
            self.end_chat(record, None, time_ns(), called=False)

    def _on_llm_response(
        self, record: TurnRecord, response: LlmResponse, decision: Any, by: Any
    ) -> None:
        # ``None``: reported by an adapter whose SDK has no model hook, so no guardrail ran.
        attributes = (
            self._guardrail(record, sc.STAGE_RESPONSE, decision.action, by, decision.message)
            if decision is not None
            else None
        )
        chat = record.chat
        if chat is None:
            if response.usage is not None:  # a response without its request: still counted
                self._record_tokens(record.metric_agent, None, response.model, response.usage)
            return
        provider = response.provider or chat.provider
        if provider is not None and chat.provider is None:
            chat.provider = provider
        end_ns = time_ns()
        try:
            if response.usage is not None:  # per model call, while the chat span is current
                self._record_tokens(
                    chat.metric_agent, provider, chat.model, response.usage, chat.context
                )
                record.model_calls += 1
                cost = self.costs.charge(
                    record, provider, response.model or chat.model, response.usage
                )
            else:
                cost = None
            if chat.recording:
                self._describe_response(chat, response, provider, attributes, cost)
        finally:
            self.end_chat(record, None, end_ns)

    def _describe_response(
        self,
        chat: ChatRecord,
        response: LlmResponse,
        provider: str | None,
        event: dict[str, Any] | None,
        cost: float | None = None,
    ) -> None:
        span = chat.span
        finish_reasons = tuple(response.finish_reasons)
        attributes: dict[str, Any] = {sc.GEN_AI_RESPONSE_MODEL: response.model}
        if event is not None:
            attributes[sc.GUARDRAIL_RESPONSE] = event[sc.GUARDRAIL_VERDICT]
        if provider is not None:
            attributes[sc.GEN_AI_PROVIDER_NAME] = provider
            attributes[sc.LLM_PROVIDER] = provider
        if finish_reasons:
            attributes[sc.GEN_AI_RESPONSE_FINISH_REASONS] = finish_reasons
        if response.usage is not None:
            attributes.update(usage_attributes(response.usage, openinference=True))
        if cost is not None:
            attributes.update(cost_attributes(cost))
        span.set_attributes(attributes)
        self.event(chat, sc.EVENT_NAMES["on_llm_response"], event or {})
        messages = self._messages
        if messages.on_spans or messages.on_events:
            identity: dict[str, Any] = {
                sc.GEN_AI_OPERATION_NAME: sc.OPERATION_CHAT,
                sc.GEN_AI_REQUEST_MODEL: chat.model,
                sc.GEN_AI_RESPONSE_MODEL: response.model,
            }
            if provider is not None:
                identity[sc.GEN_AI_PROVIDER_NAME] = provider
            if finish_reasons:
                identity[sc.GEN_AI_RESPONSE_FINISH_REASONS] = finish_reasons
            messages.exchange(
                span,
                chat.context,
                chat.request.messages,
                messages.output(response.text, response.tool_calls, finish_reasons),
                response.text,
                identity,
                inputs_on_span=False,  # recorded when the request was reported
            )

    def _record_tokens(
        self,
        agent: str,
        provider: str | None,
        model: str | None,
        usage: Usage,
        context: Any = None,
    ) -> None:
        instruments = self.instruments
        histogram = instruments.token_usage
        model_name = instruments.model_name(model) if model else None
        provider_name = instruments.provider_name(provider) if provider else None
        common = (agent, sc.OPERATION_CHAT, provider_name)
        histogram.record(usage.input_tokens, (*common, sc.TOKEN_INPUT, model_name), context)
        histogram.record(usage.output_tokens, (*common, sc.TOKEN_OUTPUT, model_name), context)
