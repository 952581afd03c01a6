"""OTelHook: every lifecycle event as nested spans, span events, metrics and log events.

``OTelHook`` is a :class:`~hookscope.runner.DispatchObserver`: ``HookRunner([OTelHook(), ...])``
observes with it wherever it stands, so it sees every hook's result and the final decision.
Each scope gets one span record (:mod:`hookscope.telemetry._scopes`), stored on the scope's
context and made current for the scope's duration (so libraries instrumented inside a tool
nest under its span):

* session → ``session {agent}`` (a root span: one trace per session), or with
  ``trace_layout="turn"`` each turn starts its own trace linked to the session span;
* turn → ``invoke_agent {agent}``; model call → ``chat {model}`` (kind CLIENT, current while
  its request and its response are reported);
* tool call → ``execute_tool {tool}``; question to the user → ``interaction {agent}``;
* command or prompt hook run → ``execute_hook {hook}``.

A sampled-out span costs no attributes, events or content: only what metrics need is built.
Nothing here ever raises into the agent: the runner isolates observer failures, and every
record's span is ended in a ``finally``.
"""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Callable, Iterable, Mapping
from time import time_ns
from typing import Any, Final, Literal, cast, final

from opentelemetry import metrics, trace
from opentelemetry._logs import LoggerProvider, get_logger_provider
from opentelemetry.context import Context
from opentelemetry.trace import Link, SpanKind, Status, StatusCode

from hookscope._version import __version__
from hookscope.context import (
    NEST_SESSION_KEY,
    SUBAGENT_KEY,
    HookContext,
    OperationContext,
    SessionContext,
    TurnContext,
)
from hookscope.hooks import HookEvent
from hookscope.redaction import DEFAULT as DEFAULT_REDACTOR
from hookscope.redaction import Redactor
from hookscope.runner import DispatchObserver, HookRun
from hookscope.telemetry import semconv as sc
from hookscope.telemetry._handlers import EventHandlers, records_below
from hookscope.telemetry._hook_runs import HookRunSpans
from hookscope.telemetry._metadata import call_metadata, session_metadata, turn_metadata
from hookscope.telemetry._scopes import (
    STALE,
    OperationRecord,
    SessionRecord,
    SpanRecord,
    ToolShape,
    TurnRecord,
    error_type,
    reap_stale,
)
from hookscope.telemetry.content import ContentCapture, Messages, capture_from_env
from hookscope.telemetry.cost import CostRecorder, Pricer, total_attributes
from hookscope.telemetry.instruments import DEFAULT_CARDINALITY_LIMIT, instruments_for
from hookscope.types import HookResult, ToolCall

__all__ = [
    "EVENTS_ENV",
    "LAYOUT_ENV",
    "NEST_SESSION_KEY",
    "SUBAGENT_KEY",
    "EventForm",
    "OTelHook",
    "TraceLayout",
]

TraceLayout = Literal["session", "turn"]
LAYOUT_ENV: Final = "HOOKSCOPE_TRACE_LAYOUT"
_LAYOUTS: Final = ("session", "turn")
#: How lifecycle events are emitted: span events, log-based events (OTEP 4430), or both.
EventForm = Literal["span", "log", "both"]
EVENTS_ENV: Final = "HOOKSCOPE_EVENTS"
_EVENT_FORMS: Final = ("span", "log", "both")
_ROOT: Final = Context()  # an empty context: spans started in it begin a new trace
_HOOK_KEYS = itertools.count()
#: The events whose start OTelHook acts on: a model call's span opens or becomes current.
_STARTED_EVENTS: Final = frozenset({"pre_llm_request", "on_llm_response"})
#: Command and prompt hook names remembered for the hook-type label; hooks are configured,
#: so this is never reached in practice, but a runaway generator of names stays bounded.
_MAX_HOOK_TYPES: Final = 1000
#: Tools whose shape (span name, attributes, metric name) a turn remembers; a turn calling
#: more distinct tools builds the rest per call.
_MAX_TOOL_SHAPES: Final = 64


@final
class OTelHook(EventHandlers, HookRunSpans, DispatchObserver):
    """Record a runner's sessions, turns, tool calls and decisions with OpenTelemetry.

    Args:
        tracer_provider: Where spans go; the global provider when ``None``.
        meter_provider: Where metrics go; the global provider when ``None``.
        agent_name: The agent name used when a session does not give one.
        trace_layout: ``"session"`` (one trace per session) or ``"turn"`` (one trace per turn,
            linked to the session span: for long sessions whose root span would stay
            invisible until the end). ``None`` reads ``HOOKSCOPE_TRACE_LAYOUT``, else session.
        capture_content: Where to record prompts, arguments, results and responses (a
            :class:`ContentCapture` or its name in any case, e.g. ``"metadata"`` for types and
            sizes only); ``None`` reads ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``
            (off when unset).
        cardinality_limit: Distinct tool, rule, model, hook and error-type values per metric
            before further ones are reported as ``_other``.
        logger_provider: Where ``gen_ai.client.inference.operation.details`` events go when
            content capture includes events, and lifecycle events with ``events="log"`` or
            ``"both"``; the global provider when ``None``.
        redact_patterns: Regular expressions (strings or compiled) whose matches in captured
            content are redacted, besides the built-in rules and those added process-wide
            with :func:`hookscope.telemetry.add_redaction_pattern`.
        events: How each lifecycle event (``hookscope.<event>``, ``hookscope.hook_failure``)
            is emitted: ``"span"`` as a span event, ``"log"`` as a log record through the
            Logs API in its span's context (the form OpenTelemetry moves to, OTEP 4430), or
            ``"both"``. ``None`` reads ``HOOKSCOPE_EVENTS``, else ``"span"``.
        prices: Model name → USD per million tokens (``{"input": 3.0, "output": 15.0}``,
            optional ``cache_read``/``cache_write``) for ``gen_ai.usage.cost``, over
            genai-prices' data; ``None`` uses the process-wide table (``configure(prices=...)``).

    Raises:
        ValueError: an unknown trace layout, event form or content capture mode.
    """

    def __init__(
        self,
        tracer_provider: trace.TracerProvider | None = None,
        meter_provider: metrics.MeterProvider | None = None,
        agent_name: str | None = None,
        trace_layout: TraceLayout | None = None,
        *,
        capture_content: ContentCapture | str | None = None,
        cardinality_limit: int = DEFAULT_CARDINALITY_LIMIT,
        logger_provider: LoggerProvider | None = None,
        redact_patterns: Iterable[str | re.Pattern[str]] = (),
        events: EventForm | None = None,
        prices: Mapping[str, Any] | None = None,
    ) -> None:
        layout = trace_layout or os.environ.get(LAYOUT_ENV, "").strip() or "session"
        if layout not in _LAYOUTS:
            source = "trace_layout" if trace_layout else LAYOUT_ENV
            raise ValueError(f"{source}={layout!r} is not a trace layout; use 'session' or 'turn'")
        form = events or os.environ.get(EVENTS_ENV, "").strip().lower() or "span"
        if form not in _EVENT_FORMS:
            source = "events" if events else EVENTS_ENV
            raise ValueError(f"{source}={form!r} is not an event form; use 'span', 'log' or 'both'")
        self.events: EventForm = "log" if form == "log" else "both" if form == "both" else "span"
        self.trace_layout: TraceLayout = "turn" if layout == "turn" else "session"
        self.agent_name = agent_name or "agent"
        if isinstance(capture_content, str):
            capture_content = ContentCapture.parse(capture_content, "capture_content")
        self.capture = capture_content if capture_content is not None else capture_from_env()
        self._tracer = trace.get_tracer(
            sc.INSTRUMENTATION_SCOPE,
            __version__,
            tracer_provider=tracer_provider,
            schema_url=sc.SCHEMA_URL,
        )
        self.instruments = instruments_for(
            meter_provider or metrics.get_meter_provider(), cardinality_limit
        )
        self.costs = CostRecorder(
            meter_provider or metrics.get_meter_provider(),
            self.instruments,
            None if prices is None else Pricer(prices),
        )
        patterns = tuple(redact_patterns)
        logger = (logger_provider or get_logger_provider()).get_logger(
            sc.INSTRUMENTATION_SCOPE, __version__, schema_url=sc.SCHEMA_URL
        )
        self._messages = Messages(
            self.capture, logger, Redactor(patterns) if patterns else DEFAULT_REDACTOR
        )
        self._span_events = self.events != "log"
        self._event_logger = logger if self.events != "span" else None
        #: Command and prompt hooks seen running (name → type), for the hook-type label of
        #: hook durations; any other hook is a Python hook.
        self._hook_types: dict[str, str] = {}
        # Each scope's record is stored on its context under a key private to this hook, so
        # two OTelHooks on one runner never see each other's records. One key per kind: an
        # operation's context finds its turn's record under the turn key (through its parent).
        prefix = f"hookscope.telemetry.{next(_HOOK_KEYS)}"
        self._session_key = f"{prefix}.session"
        self._turn_key = f"{prefix}.turn"
        self._operation_key = f"{prefix}.operation"
        self._keys: dict[type[HookContext], str] = {
            SessionContext: self._session_key,
            TurnContext: self._turn_key,
            OperationContext: self._operation_key,
        }
        self._openers: dict[type[HookContext], Callable[[Any], None]] = {
            SessionContext: self._open_session,
            TurnContext: self._open_turn,
            OperationContext: self._open_operation,
        }
        self._closers: dict[type[HookContext], Callable[[Any, Any, Any, int], None]] = {
            SessionContext: self._close_session,
            TurnContext: self._close_turn,
            OperationContext: self._close_operation,
        }
        self._routes = self.event_routes(self._session_key, self._turn_key, self._operation_key)

    # --- scopes ---

    def record(self, context: HookContext) -> SpanRecord | None:
        """The span record this hook keeps for ``context``'s scope, if it saw the scope open."""
        key = self._keys.get(type(context))
        return context.get(key) if key is not None else None

    def scope_started(self, context: HookContext) -> None:
        if STALE:  # spans ended in another task, still current in this one
            reap_stale()
        opener = self._openers.get(type(context))
        if opener is not None:
            opener(context)

    def scope_ended(self, context: HookContext, error: BaseException | None) -> None:
        kind = type(context)
        key = self._keys.get(kind)
        if key is None:
            return
        record = context.get(key)
        if record is None:
            return
        context.set(key, None)  # ended once, even if told twice
        end_ns = time_ns()
        try:
            self._closers[kind](context, record, error, end_ns)
        finally:
            record.end(error, end_ns)

    def _open(self, context: HookContext, key: str, record: SpanRecord) -> None:
        """Make ``record`` current and store it on ``context``; end its span if that fails."""
        try:
            record.activate()
            context.set(key, record)
        except BaseException:
            record.end()
            raise

    def _open_session(self, context: SessionContext) -> None:
        agent = context.agent_name or self.agent_name
        session_id = context.session_id
        ambient = trace.get_current_span().get_span_context()
        # A session run inside a traced request starts its own trace, linked to it, unless
        # its adapter asks to nest it there (NEST_SESSION_KEY, e.g. an agent run in a tool).
        nested = ambient.is_valid and context.get(NEST_SESSION_KEY) is True
        start_ns = time_ns()
        attributes = {sc.GEN_AI_AGENT_NAME: agent, sc.OPENINFERENCE_SPAN_KIND: sc.KIND_CHAIN}
        # With a trace per turn, the session span is a trace of its own: carrying session.id
        # (or gen_ai.conversation.id, which Phoenix reads as one) it would be the session's
        # first "turn" in Phoenix, an empty one. Its turns carry both; it names its session
        # with hookscope.session.id.
        if self.trace_layout == "session":
            attributes[sc.SESSION_ID] = attributes[sc.GEN_AI_CONVERSATION_ID] = session_id
        else:
            attributes[sc.SESSION_KEY] = session_id
        span = self._tracer.start_span(
            sc.SPAN_SESSION.format(agent),
            context=None if nested else _ROOT,
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            links=[Link(ambient)] if ambient.is_valid and not nested else None,
            start_time=start_ns,
        )
        metric_agent = self.instruments.agent_name(agent)
        provider = context.provider
        self._open(
            context,
            self._session_key,
            SessionRecord(span, start_ns, agent, metric_agent, provider),
        )
        # Counted last: a failure above leaves no session counted as active.
        key = (metric_agent,)
        self.instruments.sessions.add(key)
        self.instruments.sessions_active.add(key)

    def _close_session(
        self,
        context: SessionContext,
        record: SessionRecord,
        error: BaseException | None,
        end_ns: int,
    ) -> None:
        self.instruments.sessions_active.add((record.metric_agent,), -1)
        if record.recording:
            outcome = context.outcome or ("failed" if error is not None else "completed")
            record.span.set_attributes(
                {
                    sc.SESSION_OUTCOME: outcome,
                    sc.SESSION_TURNS: record.turns,
                    sc.SESSION_TOOL_CALLS: record.tool_calls,
                    sc.SESSION_DENIED_CALLS: record.denied_calls,
                    sc.SESSION_TOOL_ERRORS: record.tool_errors,
                    **(
                        {sc.GEN_AI_CONVERSATION_ID: context.conversation_id or context.session_id}
                        if self.trace_layout == "session"
                        else {}
                    ),
                    sc.METADATA: session_metadata(outcome, record),
                    **total_attributes(record.cost, record.priced),
                }
            )

    def _open_turn(self, context: TurnContext) -> None:
        session: SessionRecord | None = context.get(self._session_key)
        agent = session.agent if session is not None else context.agent_name or self.agent_name
        # A subagent's run (SUBAGENT_KEY: its name and conversation id) is an invoke_agent span
        # under the span current when it starts: the tool call that delegated to it.
        subagent: tuple[str, str] | None = context.get(SUBAGENT_KEY)
        if subagent is not None:
            agent = subagent[0]
        provider = session.provider if session is not None else None
        own_trace = session is not None and self.trace_layout == "turn" and subagent is None
        attributes: dict[str, Any] | None = None
        parent = session if subagent is None else None
        if own_trace or records_below(parent):  # built before the span, to start it with them
            session_id = context.session_id
            conversation = subagent[1] if subagent is not None else None
            attributes = {
                sc.GEN_AI_OPERATION_NAME: sc.OPERATION_INVOKE_AGENT,
                sc.GEN_AI_AGENT_NAME: agent,
                sc.GEN_AI_CONVERSATION_ID: conversation
                or context.session.conversation_id
                or session_id,
                sc.SESSION_ID: session_id,
                sc.TURN_INDEX: context.turn_index,
                sc.OPENINFERENCE_SPAN_KIND: sc.KIND_AGENT,
            }
            if provider is not None:
                attributes[sc.GEN_AI_PROVIDER_NAME] = provider
        start_ns = time_ns()
        reused: Context | None = None
        if own_trace and session is not None:  # a trace of its own, linked to the session's
            span = self._tracer.start_span(
                sc.SPAN_TURN.format(agent),
                context=_ROOT,
                links=[Link(session.span.get_span_context())],
                attributes=attributes,
                start_time=start_ns,
            )
        else:
            span, reused = self.child_span(
                parent, sc.SPAN_TURN, agent, start_ns, attributes=attributes
            )
        if reused is None and context.prompt is not None and span.is_recording():
            self._messages.prompt(span, context.prompt)
        metric_agent = (
            session.metric_agent
            if session is not None and subagent is None
            else self.instruments.agent_name(agent)
        )
        self._open(
            context,
            self._turn_key,
            TurnRecord(
                span, start_ns, agent, metric_agent, session, provider, context.prompt, reused
            ),
        )

    def _close_turn(
        self, context: TurnContext, record: TurnRecord, error: BaseException | None, end_ns: int
    ) -> None:
        agent = record.metric_agent
        subagent = context.get(SUBAGENT_KEY) is not None
        outcome = context.outcome or ("failed" if error is not None else "completed")
        if record.chat is not None:  # a model call the agent never reported back
            self.end_chat(record, error, end_ns)
        kind = error_type(error) if error is not None else None
        if record.recording:
            span = record.span
            blocked = error is None and outcome == "blocked"
            attributes: dict[str, Any] = {sc.TURN_OUTCOME: outcome}
            conversation_id = context.session.conversation_id
            if conversation_id is not None and not subagent:  # learned while the turn ran
                attributes[sc.GEN_AI_CONVERSATION_ID] = conversation_id
            attributes[sc.METADATA] = turn_metadata(
                outcome, record.blocked_by if blocked else None, kind
            )
            if record.priced:
                attributes.update(total_attributes(record.cost, record.priced))
            span.set_attributes(attributes)  # one write
            if blocked:  # refused, like a denied call (README: span status)
                span.set_status(Status(StatusCode.ERROR, f"turn blocked by {record.blocked_by}"))
        instruments = self.instruments
        instruments.turns.add((agent, outcome))
        guarded = instruments.error_type(kind) if kind is not None else None
        instruments.turn_duration.record(
            record.seconds(end_ns), (agent, outcome, guarded), record.context
        )
        if record.session is not None and not subagent:  # a subagent's run is no session turn
            record.session.turns += 1

    def _open_operation(self, context: OperationContext) -> None:
        turn: TurnRecord | None = context.turn.get(self._turn_key)  # one step up, not a search
        agent = turn.agent if turn is not None else context.agent_name or self.agent_name
        call = context.call
        attributes: dict[str, Any] | None = None
        if context.kind == "tool" and call is not None:
            # What every call of this tool in this turn shares: looked up once per turn.
            shape = turn.tools.get((call.name, call.server)) if turn is not None else None
            if shape is None:
                shape = self._tool_shape(turn, agent, context, call)
            name, template, metric_tool = shape
            if template is not None:
                attributes = template.copy()
                if context.call_id:
                    attributes[sc.GEN_AI_TOOL_CALL_ID] = context.call_id
        else:
            name, metric_tool = sc.SPAN_INTERACTION.format(agent), ""
            if records_below(turn):  # built before the span, to start it with them
                attributes = {
                    sc.GEN_AI_AGENT_NAME: agent,
                    sc.SESSION_ID: context.session_id,
                    sc.OPENINFERENCE_SPAN_KIND: sc.KIND_CHAIN,
                }
        start_ns = time_ns()
        span, reused = self.child_span(turn, name, None, start_ns, attributes=attributes)
        metric_agent = turn.metric_agent if turn is not None else self.instruments.agent_name(agent)
        record = OperationRecord(span, start_ns, agent, metric_agent, turn, metric_tool, reused)
        self._open(context, self._operation_key, record)

    def _tool_shape(
        self, turn: TurnRecord | None, agent: str, context: OperationContext, call: ToolCall
    ) -> ToolShape:
        """The span name, span attributes (less the call id; ``None`` when the span would not
        be recorded) and metric tool name every call of ``call``'s tool in ``turn`` shares."""
        # server/tool for an MCP tool, as policies, timelines and metric labels name it.
        tool = call.qualified_name
        template: dict[str, Any] | None = None
        if records_below(turn):
            template = {
                sc.GEN_AI_AGENT_NAME: agent,
                sc.SESSION_ID: context.session_id,
                sc.GEN_AI_OPERATION_NAME: sc.OPERATION_EXECUTE_TOOL,
                sc.GEN_AI_TOOL_NAME: tool,
                sc.TOOL_NAME: tool,
                sc.GEN_AI_TOOL_TYPE: sc.TOOL_TYPE_FUNCTION,
                sc.OPENINFERENCE_SPAN_KIND: sc.KIND_TOOL,
            }
            if call.server is not None:
                template[sc.TOOL_SERVER] = call.server
                template[sc.MCP_METHOD_NAME] = sc.MCP_TOOLS_CALL
        shape = (sc.SPAN_TOOL.format(tool), template, self.instruments.tool_name(tool))
        if turn is not None and len(turn.tools) < _MAX_TOOL_SHAPES:
            turn.tools[call.name, call.server] = shape
        return shape

    def _close_operation(
        self,
        context: OperationContext,
        record: OperationRecord,
        error: BaseException | None,
        end_ns: int,
    ) -> None:
        if context.kind != "tool":
            return
        agent = record.metric_agent
        outcome = record.outcome or (sc.TOOL_FAILED if error is not None else sc.TOOL_SUCCEEDED)
        raised = record.error_type  # set when the tool raised (recovered or not)
        kind = error_type(error) if error is not None else raised
        if record.recording:
            self._describe_call(record, outcome, kind)
        instruments = self.instruments
        tool = record.metric_tool
        instruments.tool_calls.add((tool, agent, outcome))
        if record.ran:  # one duration: the span's own, recorded in the span's context
            guarded = instruments.error_type(kind) if kind else None
            instruments.tool_duration.record(
                record.seconds(end_ns), (agent, tool, guarded, outcome), record.context
            )
        session = record.session
        if session is not None:
            session.tool_calls += 1
            if outcome == sc.TOOL_DENIED:
                session.denied_calls += 1
            elif raised is not None:
                session.tool_errors += 1

    @staticmethod
    def _describe_call(record: OperationRecord, outcome: str, kind: str | None) -> None:
        """A tool call's outcome on its span, as attributes and as OpenInference metadata; a
        denied call's status is ERROR, as a blocked turn's is (README: span status)."""
        span = record.span
        # The decision's attributes (kept since pre_tool_call) and the outcome, in one write.
        # (A copy: the pre_tool_call event's log record may still hold the decision's dict.)
        described = {
            sc.TOOL_OUTCOME: outcome,
            sc.METADATA: call_metadata(
                outcome, record.rule, record.decided_by, kind, record.recovered_by
            ),
        }
        span.set_attributes(described if record.policy is None else record.policy | described)
        if outcome == sc.TOOL_DENIED:
            by = f"rule {record.rule}" if record.rule else record.decided_by or "a hook"
            span.set_status(Status(StatusCode.ERROR, f"denied by {by}"))

    def hook_run_started(self, run: HookRun, context: HookContext) -> None:
        if len(self._hook_types) < _MAX_HOOK_TYPES:
            self._hook_types[run.hook_name] = run.hook_type
        super().hook_run_started(run, context)

    # --- dispatches ---

    @property
    def _hookscope_started_events(self) -> frozenset[str] | None:
        """The events :meth:`dispatch_started` acts on, so the notifier calls it for no other
        (every event for a subclass that overrides it)."""
        if type(self).dispatch_started is OTelHook.dispatch_started:
            return _STARTED_EVENTS
        return None

    def dispatch_started(self, event: HookEvent, context: HookContext, data: Any) -> None:
        if event == "pre_llm_request":
            self.start_chat(context.get(self._turn_key), context, data)
        elif event == "on_llm_response":
            turn: TurnRecord | None = context.get(self._turn_key)
            if turn is not None and turn.chat is not None:
                turn.chat.activate()  # current while the response is reported

    def _evaluation(self, record: SpanRecord, hook_name: str, result: HookResult) -> None:
        """A scored verdict as the conventions' ``gen_ai.evaluation.result`` event on the
        judged span (the tool call's for pre_tool_call, the turn's for turn events)."""
        if not record.recording:
            return
        attributes: dict[str, Any] = {
            sc.GEN_AI_EVALUATION_NAME: hook_name,
            sc.GEN_AI_EVALUATION_SCORE_VALUE: float(cast(float, result.score)),
            sc.GEN_AI_EVALUATION_SCORE_LABEL: "pass" if result.allow else "fail",
        }
        if result.message:
            attributes[sc.GEN_AI_EVALUATION_EXPLANATION] = self._reason(result.message)
        self.event(record, sc.EVENT_EVALUATION_RESULT, attributes)

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
        route = self._routes.get(event)
        record: SpanRecord | None = context.get(route[0]) if route is not None else None
        if record is not None:
            agent = record.metric_agent
        else:
            agent = instruments.agent_name(getattr(context, "agent_name", "") or self.agent_name)
        # No exemplar: a hook has no span of its own, and with several hooks per event the
        # exemplar reservoir would cost more than the rest of the measurement. The hook type
        # is looked up only once a command or prompt hook has run (usually there is none).
        types = self._hook_types
        hook_type = types.get(hook_name, sc.HOOK_TYPE_PYTHON) if types else sc.HOOK_TYPE_PYTHON
        instruments.hook_ran(agent, hook_name, event, duration_s, hook_type)
        if error is None:
            if event == "pre_tool_call" and isinstance(record, OperationRecord):
                decision = getattr(result, "decision", None)
                if decision is not None:  # the policy hook: named on allows too
                    record.policy_hook = hook_name
            if type(result) is HookResult and result.score is not None and record is not None:
                self._evaluation(record, hook_name, result)
            return
        kind = error_type(error)
        hook = instruments.hook_name(hook_name)
        instruments.hook_failures.add((agent, hook, event, instruments.error_type(kind)))
        if record is not None and record.recording:
            self.event(
                record,
                sc.EVENT_HOOK_FAILURE,
                {sc.HOOK_NAME: hook_name, sc.HOOK_EVENT: event, sc.ERROR_TYPE: kind},
            )

    def dispatch_finished(
        self,
        event: HookEvent,
        context: HookContext,
        data: Any,
        result: Any,
        decided_by: str | None,
    ) -> None:
        route = self._routes.get(event)
        if route is None:
            return
        key, handler = route
        record = context.get(key)
        if record is not None:
            handler(record, data, result, decided_by)
