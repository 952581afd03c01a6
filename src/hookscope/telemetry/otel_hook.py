"""OTelHook: every lifecycle event as nested spans, span events and metrics.

``OTelHook`` is a :class:`~hookscope.runner.DispatchObserver`: ``HookRunner([OTelHook(), ...])``
observes with it wherever it stands, so it sees every hook's result and the final decision.
Each scope gets one span, kept in a table keyed by the scope's context and made current for
the scope's duration (so libraries instrumented inside a tool nest under its span):

* session → ``session {agent}`` (a root span: one trace per session), or with
  ``trace_layout="turn"`` each turn starts its own trace linked to the session span;
* turn → ``invoke_agent {agent}``; model calls → ``chat {model}``;
* tool call → ``execute_tool {tool}``; question to the user → ``interaction {agent}``.

Nothing here ever raises into the agent: the runner isolates observer failures, and every
scope's span is ended in a ``finally``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from time import perf_counter
from typing import Any, Final, Literal, final

from opentelemetry import metrics, trace
from opentelemetry.context import Context
from opentelemetry.trace import Link, Span, SpanKind, Status, StatusCode

from hookscope._version import __version__
from hookscope.context import HookContext, OperationContext, SessionContext, TurnContext
from hookscope.hooks import HookEvent
from hookscope.runner import DispatchObserver
from hookscope.telemetry import semconv as sc
from hookscope.telemetry._scopes import (
    OperationScope,
    SessionScope,
    TurnScope,
    fail,
    usage_attributes,
)
from hookscope.telemetry.content import ContentCapture, capture_from_env, render
from hookscope.telemetry.instruments import DEFAULT_CARDINALITY_LIMIT, instruments_for
from hookscope.types import ChatResponse, HookResult, LlmRequest, LlmResponse, ToolCall, Usage

__all__ = ["LAYOUT_ENV", "OTelHook", "TraceLayout"]

TraceLayout = Literal["session", "turn"]
LAYOUT_ENV: Final = "HOOKSCOPE_TRACE_LAYOUT"
_LAYOUTS: Final = ("session", "turn")
_ROOT: Final = Context()  # an empty context: spans started in it begin a new trace
_MAX_REASON: Final = 256


@final
class OTelHook(DispatchObserver):
    """Record a runner's sessions, turns, tool calls and decisions with OpenTelemetry.

    Args:
        tracer_provider: Where spans go; the global provider when ``None``.
        meter_provider: Where metrics go; the global provider when ``None``.
        agent_name: The agent name used when a session does not give one.
        trace_layout: ``"session"`` (one trace per session) or ``"turn"`` (one trace per turn,
            linked to the session span: for long sessions whose root span would stay
            invisible until the end). ``None`` reads ``HOOKSCOPE_TRACE_LAYOUT``, else session.
        capture_content: Where to record prompts, arguments, results and responses; ``None``
            reads ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` (off when unset).
        cardinality_limit: Distinct tool, rule, model, hook and error-type values per metric
            before further ones are reported as ``_other``.

    Raises:
        ValueError: an unknown trace layout or content capture mode.
    """

    def __init__(
        self,
        tracer_provider: trace.TracerProvider | None = None,
        meter_provider: metrics.MeterProvider | None = None,
        agent_name: str | None = None,
        trace_layout: TraceLayout | None = None,
        *,
        capture_content: ContentCapture | None = None,
        cardinality_limit: int = DEFAULT_CARDINALITY_LIMIT,
    ) -> None:
        layout = trace_layout or os.environ.get(LAYOUT_ENV, "").strip() or "session"
        if layout not in _LAYOUTS:
            source = "trace_layout" if trace_layout else LAYOUT_ENV
            raise ValueError(f"{source}={layout!r} is not a trace layout; use 'session' or 'turn'")
        self.trace_layout: TraceLayout = layout  # type: ignore[assignment]
        self.agent_name = agent_name or "agent"
        self.capture = capture_content if capture_content is not None else capture_from_env()
        self._tracer = trace.get_tracer(
            sc.INSTRUMENTATION_SCOPE, __version__, tracer_provider=tracer_provider
        )
        self.instruments = instruments_for(
            meter_provider or metrics.get_meter_provider(), cardinality_limit
        )
        # Scope state by id(context): contexts are alive for exactly as long as their scope.
        self._scopes: dict[int, Any] = {}
        self._finished: dict[HookEvent, Callable[[Any, Any, Any, str | None], None]] = {
            "on_session_start": self._session_started,
            "on_session_end": self._session_ending,
            "pre_turn": self._pre_turn,
            "post_turn": self._post_turn,
            "pre_llm_request": self._pre_llm_request,
            "on_llm_response": self._on_llm_response,
            "pre_tool_call": self._pre_tool_call,
            "post_tool_call": self._post_tool_call,
            "on_tool_error": self._on_tool_error,
            "on_interaction": self._on_interaction,
            "on_compaction": self._on_compaction,
        }

    # --- scopes ---

    def scope_started(self, context: HookContext) -> None:
        kind = type(context)
        if kind is OperationContext:
            self._start_operation(context)  # type: ignore[arg-type]
        elif kind is TurnContext:
            self._start_turn(context)  # type: ignore[arg-type]
        elif kind is SessionContext:
            self._start_session(context)  # type: ignore[arg-type]

    def scope_ended(self, context: HookContext, error: BaseException | None) -> None:
        scope = self._scopes.pop(id(context), None)
        if scope is None:
            return
        try:
            if type(scope) is OperationScope:
                self._end_operation(context, scope, error)  # type: ignore[arg-type]
            elif type(scope) is TurnScope:
                self._end_turn(context, scope, error)  # type: ignore[arg-type]
            else:
                self._end_session(context, scope, error)  # type: ignore[arg-type]
        finally:
            scope.close()

    def _start_session(self, context: SessionContext) -> None:
        agent = context.agent_name or self.agent_name
        session_id = context.session_id
        ambient = trace.get_current_span().get_span_context()
        span = self._tracer.start_span(
            sc.SPAN_SESSION.format(agent),
            context=_ROOT,
            kind=SpanKind.INTERNAL,
            attributes={
                sc.SESSION_ID: session_id,
                sc.GEN_AI_CONVERSATION_ID: session_id,
                sc.GEN_AI_AGENT_NAME: agent,
                sc.OPENINFERENCE_SPAN_KIND: sc.KIND_CHAIN,
            },
            # A session run inside a traced request starts its own trace, linked to it.
            links=[Link(ambient)] if ambient.is_valid else None,
        )
        metric_agent = self.instruments.agent_name(agent)
        self._scopes[id(context)] = SessionScope(span, agent, metric_agent)
        key = (metric_agent,)
        self.instruments.sessions.add(key)
        self.instruments.sessions_active.add(key)

    def _end_session(
        self, context: SessionContext, scope: SessionScope, error: BaseException | None
    ) -> None:
        span = scope.span
        span.set_attributes(
            {
                sc.SESSION_OUTCOME: context.outcome or "completed",
                sc.SESSION_TURNS: scope.turns,
                sc.SESSION_TOOL_CALLS: scope.tool_calls,
                sc.SESSION_DENIED_CALLS: scope.denied_calls,
                sc.SESSION_TOOL_ERRORS: scope.tool_errors,
                sc.GEN_AI_CONVERSATION_ID: context.conversation_id or context.session_id,
            }
        )
        if error is not None:
            fail(span, error)
        self.instruments.sessions_active.add((scope.metric_agent,), -1)

    def _start_turn(self, context: TurnContext) -> None:
        session: SessionScope | None = self._scopes.get(id(context.session))
        agent = session.agent if session is not None else context.agent_name or self.agent_name
        session_id = context.session_id
        attributes: dict[str, Any] = {
            sc.GEN_AI_OPERATION_NAME: sc.OPERATION_INVOKE_AGENT,
            sc.GEN_AI_AGENT_NAME: agent,
            sc.GEN_AI_CONVERSATION_ID: context.session.conversation_id or session_id,
            sc.SESSION_ID: session_id,
            sc.TURN_INDEX: context.turn_index,
            sc.OPENINFERENCE_SPAN_KIND: sc.KIND_AGENT,
        }
        if self.capture.on_spans and context.prompt is not None:
            attributes[sc.GEN_AI_INPUT_MESSAGES] = render(context.prompt)
        parent, links = None, None
        if session is not None:
            session_context = session.span.get_span_context()
            if self.trace_layout == "turn":
                parent, links = _ROOT, [Link(session_context)]
            else:
                parent = trace.set_span_in_context(session.span)
        span = self._tracer.start_span(
            sc.SPAN_TURN.format(agent), context=parent, attributes=attributes, links=links
        )
        metric_agent = session.metric_agent if session else self.instruments.agent_name(agent)
        self._scopes[id(context)] = TurnScope(span, agent, metric_agent, session)

    def _end_turn(
        self, context: TurnContext, scope: TurnScope, error: BaseException | None
    ) -> None:
        span, agent = scope.span, scope.metric_agent
        outcome = context.outcome or ("failed" if error is not None else "completed")
        if scope.chat is not None:  # a model call the agent never reported back
            scope.chat.end()
        span.set_attribute(sc.TURN_OUTCOME, outcome)
        conversation_id = context.session.conversation_id
        if conversation_id is not None:  # learned while the turn ran (google-antigravity)
            span.set_attribute(sc.GEN_AI_CONVERSATION_ID, conversation_id)
        if scope.usage is not None:
            span.set_attributes(usage_attributes(scope.usage))
            if not scope.usage_recorded:
                self._record_tokens(agent, scope.model, scope.usage)
        if error is not None:
            fail(span, error)
        elif outcome == "blocked":
            span.set_status(Status(StatusCode.ERROR, f"turn blocked by {scope.blocked_by}"))
        instruments = self.instruments
        instruments.turns.add((agent, outcome))
        instruments.turn_duration.record(perf_counter() - scope.started, (agent, outcome))
        if scope.session is not None:
            scope.session.turns += 1

    def _start_operation(self, context: OperationContext) -> None:
        turn: TurnScope | None = self._scopes.get(id(context.turn))
        agent = turn.agent if turn is not None else context.agent_name or self.agent_name
        parent = trace.set_span_in_context(turn.span) if turn is not None else None
        session_id = context.session_id
        call = context.call
        if context.kind == "tool" and call is not None:
            attributes: dict[str, Any] = {
                sc.GEN_AI_OPERATION_NAME: sc.OPERATION_EXECUTE_TOOL,
                sc.GEN_AI_TOOL_NAME: call.name,
                sc.GEN_AI_AGENT_NAME: agent,
                sc.SESSION_ID: session_id,
                sc.OPENINFERENCE_SPAN_KIND: sc.KIND_TOOL,
            }
            if context.call_id:
                attributes[sc.GEN_AI_TOOL_CALL_ID] = context.call_id
            if call.server is not None:
                attributes[sc.TOOL_SERVER] = call.server
            name, tool = sc.SPAN_TOOL.format(call.name), call.name
        else:
            attributes = {
                sc.GEN_AI_AGENT_NAME: agent,
                sc.SESSION_ID: session_id,
                sc.OPENINFERENCE_SPAN_KIND: sc.KIND_CHAIN,
            }
            name, tool = sc.SPAN_INTERACTION.format(agent), ""
        span = self._tracer.start_span(name, context=parent, attributes=attributes)
        metric_agent = turn.metric_agent if turn else self.instruments.agent_name(agent)
        self._scopes[id(context)] = OperationScope(span, agent, metric_agent, turn, tool)

    def _end_operation(
        self, context: OperationContext, scope: OperationScope, error: BaseException | None
    ) -> None:
        span, agent = scope.span, scope.metric_agent
        if context.kind == "interaction":
            if error is not None:
                fail(span, error)
            return
        outcome = scope.outcome or (sc.TOOL_FAILED if error is not None else sc.TOOL_SUCCEEDED)
        span.set_attribute(sc.TOOL_OUTCOME, outcome)
        raised = scope.error_type  # set when the tool raised (recovered or not)
        error_type = fail(span, error) if error is not None else raised
        instruments = self.instruments
        tool = instruments.tool_name(scope.tool)
        instruments.tool_calls.add((tool, agent, outcome))
        if scope.executed_s is None and scope.run_started and error is not None:
            scope.executed_s = perf_counter() - scope.run_started  # cancelled while running
        if scope.executed_s is not None:
            guarded_error = instruments.error_type(error_type) if error_type else None
            instruments.tool_duration.record(
                scope.executed_s, (agent, tool, guarded_error, outcome)
            )
        session = scope.session
        if session is not None:
            session.tool_calls += 1
            if outcome == sc.TOOL_DENIED:
                session.denied_calls += 1
            elif raised is not None:
                session.tool_errors += 1

    # --- dispatches ---

    def dispatch_started(self, event: HookEvent, context: HookContext, data: Any) -> None:
        if event == "post_tool_call" or event == "on_tool_error":
            scope: OperationScope | None = self._scopes.get(id(context))
            if scope is not None and scope.run_started:
                scope.executed_s = perf_counter() - scope.run_started
        elif event == "pre_llm_request":
            self._start_chat(context, data)

    def hook_finished(
        self,
        event: HookEvent,
        hook_name: str,
        context: HookContext,
        result: Any,
        error: BaseException | None,
        duration_s: float,
    ) -> None:
        instruments = self.instruments
        agent = instruments.agent_name(context.agent_name or self.agent_name)  # type: ignore[attr-defined]
        hook = instruments.hook_name(hook_name)
        instruments.hook_duration.record(duration_s, (agent, hook, event))
        if error is None:
            if event == "pre_tool_call" and result is not None and result.decision is not None:
                scope = self._scopes.get(id(context))
                if scope is not None:  # remember the policy hook: it is named on allows too
                    scope.policy_hook = hook_name
            return
        error_type = instruments.error_type(type(error).__name__)
        instruments.hook_failures.add((agent, hook, event, error_type))
        scope = self._scopes.get(id(context))
        if scope is not None:
            scope.span.add_event(
                sc.EVENT_HOOK_FAILURE,
                {
                    sc.HOOK_NAME: hook_name,
                    sc.HOOK_EVENT: event,
                    sc.ERROR_TYPE: type(error).__name__,
                },
            )

    def dispatch_finished(
        self,
        event: HookEvent,
        context: HookContext,
        data: Any,
        result: Any,
        decided_by: str | None,
    ) -> None:
        scope = self._scopes.get(id(context))
        if scope is not None:
            self._finished[event](scope, data, result, decided_by)

    def _session_started(self, scope: SessionScope, data: Any, result: Any, by: Any) -> None:
        scope.span.add_event(sc.EVENT_NAMES["on_session_start"])

    def _session_ending(self, scope: SessionScope, data: Any, result: Any, by: Any) -> None:
        scope.span.add_event(sc.EVENT_NAMES["on_session_end"])

    def _pre_turn(self, scope: TurnScope, prompt: Any, result: HookResult, by: str | None) -> None:
        attributes: dict[str, Any] = {sc.TURN_ALLOWED: result.allow}
        if not result.allow:
            scope.blocked_by = by
            attributes[sc.TURN_DECIDED_BY] = by
            attributes[sc.TURN_MESSAGE] = result.message[:_MAX_REASON]
            scope.span.set_attributes(attributes)
        if self.capture.on_events and prompt is not None:
            attributes[sc.GEN_AI_INPUT_MESSAGES] = render(prompt)
        scope.span.add_event(sc.EVENT_NAMES["pre_turn"], attributes)

    def _post_turn(self, scope: TurnScope, response: ChatResponse, result: Any, by: Any) -> None:
        if response.usage is not None:
            scope.usage, scope.model = response.usage, response.model
        attributes: dict[str, Any] = {}
        if response.text:
            self._capture(scope.span, sc.GEN_AI_OUTPUT_MESSAGES, response.text, attributes)
        scope.span.add_event(sc.EVENT_NAMES["post_turn"], attributes)

    def _pre_tool_call(
        self, scope: OperationScope, call: ToolCall, result: HookResult, by: str | None
    ) -> None:
        decision = result.decision
        if decision is not None:
            attributes: dict[str, Any] = {
                sc.POLICY_DECISION: decision.decision.value,
                sc.POLICY_OUTCOME: decision.outcome,
                sc.POLICY_REASON: decision.reason[:_MAX_REASON],
            }
            rule, bucket = decision.rule, decision.bucket
            if rule is not None:
                attributes[sc.POLICY_RULE] = rule
            if bucket is not None:
                attributes[sc.POLICY_BUCKET] = bucket
        else:  # no policy spoke, or a plain decide hook denied
            attributes = {
                sc.POLICY_DECISION: "allow" if result.allow else "deny",
                sc.POLICY_OUTCOME: sc.POLICY_ALLOWED if result.allow else sc.POLICY_DENIED,
            }
            if not result.allow:
                attributes[sc.POLICY_REASON] = result.message[:_MAX_REASON]
            rule = bucket = None
        decided_by = by or (scope.policy_hook if decision is not None else None)
        if decided_by is not None:
            attributes[sc.POLICY_DECIDED_BY] = decided_by
        if result.allow:
            scope.run_started = perf_counter()
        else:
            scope.outcome = sc.TOOL_DENIED
        instruments = self.instruments
        instruments.policy_decisions.add(
            (
                scope.metric_agent,
                instruments.tool_name(scope.tool),
                attributes[sc.POLICY_DECISION],
                attributes[sc.POLICY_OUTCOME],
                instruments.rule_name(rule) if rule is not None else None,
                bucket,
            )
        )
        span = scope.span
        span.set_attributes(attributes)
        self._capture(span, sc.GEN_AI_TOOL_CALL_ARGUMENTS, call.args, attributes)
        span.add_event(sc.EVENT_NAMES["pre_tool_call"], attributes)

    def _post_tool_call(self, scope: OperationScope, data: Any, result: Any, by: Any) -> None:
        scope.outcome = sc.TOOL_SUCCEEDED
        attributes: dict[str, Any] = {}
        self._capture(scope.span, sc.GEN_AI_TOOL_CALL_RESULT, data.value, attributes)
        scope.span.add_event(sc.EVENT_NAMES["post_tool_call"], attributes)

    def _on_tool_error(
        self, scope: OperationScope, error: BaseException, recovery: Any, by: str | None
    ) -> None:
        error_type = type(error).__name__
        recovered = recovery is not None
        scope.error_type = error_type
        scope.outcome = sc.TOOL_RECOVERED if recovered else sc.TOOL_FAILED
        attributes: dict[str, Any] = {sc.ERROR_TYPE: error_type, sc.RECOVERY_RECOVERED: recovered}
        if recovered and by is not None:
            attributes[sc.RECOVERY_HOOK] = by
        scope.span.set_attributes(attributes)
        scope.span.add_event(sc.EVENT_NAMES["on_tool_error"], attributes)
        instruments = self.instruments
        instruments.tool_errors.add(
            (
                scope.metric_agent,
                instruments.tool_name(scope.tool),
                instruments.error_type(error_type),
                recovered,
            )
        )

    def _on_interaction(self, scope: OperationScope, questions: Any, answers: Any, by: Any) -> None:
        answered = answers is not None
        outcome = sc.INTERACTION_ANSWERED if answered else sc.INTERACTION_UNANSWERED
        attributes: dict[str, Any] = {sc.INTERACTION_OUTCOME: outcome}
        if answered and by is not None:
            attributes[sc.INTERACTION_ANSWERED_BY] = by
        scope.span.set_attributes(attributes)
        if self.capture.on_events:
            attributes = {**attributes, sc.INTERACTION_QUESTIONS: render(questions)}
        scope.span.add_event(sc.EVENT_NAMES["on_interaction"], attributes)
        self.instruments.interactions.add((scope.metric_agent, outcome))

    def _on_compaction(self, scope: TurnScope, summary: str, result: Any, by: Any) -> None:
        scope.span.add_event(
            sc.EVENT_NAMES["on_compaction"], {sc.COMPACTION_SUMMARY_LENGTH: len(summary)}
        )
        self.instruments.compactions.add((scope.metric_agent,))

    def _capture(self, span: Span, key: str, value: Any, event_attributes: dict[str, Any]) -> None:
        """Record ``value`` under ``key`` on the span and/or the event, as the mode says."""
        capture = self.capture
        if capture is ContentCapture.NO_CONTENT:
            return
        rendered = render(value)
        if capture.on_spans:
            span.set_attribute(key, rendered)
        if capture.on_events:
            event_attributes[key] = rendered

    # --- model calls ---

    def _start_chat(self, context: HookContext, request: LlmRequest) -> None:
        scope: TurnScope | None = self._scopes.get(id(context))
        if scope is None:
            return
        if scope.chat is not None:
            scope.chat.end()
        model = request.model
        scope.chat = self._tracer.start_span(
            sc.SPAN_CHAT.format(model),
            context=trace.set_span_in_context(scope.span),
            attributes={
                sc.GEN_AI_OPERATION_NAME: sc.OPERATION_CHAT,
                sc.GEN_AI_REQUEST_MODEL: model,
                sc.GEN_AI_AGENT_NAME: scope.agent,
                sc.SESSION_ID: context.session_id,  # type: ignore[attr-defined]
                sc.OPENINFERENCE_SPAN_KIND: sc.KIND_LLM,
            },
        )

    def _guardrail(
        self, scope: TurnScope, stage: str, verdict: str, by: str | None, reason: str
    ) -> dict[str, Any]:
        attributes: dict[str, Any] = {sc.GUARDRAIL_STAGE: stage, sc.GUARDRAIL_VERDICT: verdict}
        if by is not None:
            attributes[sc.GUARDRAIL_DECIDED_BY] = by
        if reason:
            attributes[sc.GUARDRAIL_REASON] = reason[:_MAX_REASON]
        self.instruments.guardrail_verdicts.add((scope.metric_agent, stage, verdict))
        return attributes

    def _pre_llm_request(
        self, scope: TurnScope, request: LlmRequest, decision: Any, by: Any
    ) -> None:
        attributes = self._guardrail(scope, sc.STAGE_REQUEST, decision.action, by, decision.message)
        chat = scope.chat
        if chat is None:
            return
        chat.set_attribute(sc.GUARDRAIL_REQUEST, decision.action)
        chat.add_event(sc.EVENT_NAMES["pre_llm_request"], attributes)
        if decision.action == "block":  # the model is not called: the chat span ends here
            chat.end()
            scope.chat = None

    def _on_llm_response(
        self, scope: TurnScope, response: LlmResponse, decision: Any, by: Any
    ) -> None:
        attributes = self._guardrail(
            scope, sc.STAGE_RESPONSE, decision.action, by, decision.message
        )
        chat = scope.chat
        if response.usage is not None:
            self._record_tokens(scope.metric_agent, response.model, response.usage)
            scope.usage_recorded = True
        if chat is None:
            return
        chat.set_attribute(sc.GUARDRAIL_RESPONSE, decision.action)
        if response.usage is not None:
            chat.set_attributes(usage_attributes(response.usage))
        chat.add_event(sc.EVENT_NAMES["on_llm_response"], attributes)
        chat.end()
        scope.chat = None

    def _record_tokens(self, agent: str, model: str | None, usage: Usage) -> None:
        histogram = self.instruments.token_usage
        model_name = self.instruments.model_name(model) if model else None
        histogram.record(usage.input_tokens, (agent, sc.TOKEN_INPUT, model_name))
        histogram.record(usage.output_tokens, (agent, sc.TOKEN_OUTPUT, model_name))
