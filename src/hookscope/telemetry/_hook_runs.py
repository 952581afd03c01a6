"""``execute_hook {name}`` spans: each run of a command or prompt hook, and a prompt hook's
model call as its ``chat {model}`` child (DESIGN §7 Telemetry).

A mixin of :class:`~hookscope.telemetry.otel_hook.OTelHook`, fed by the runner's
``hook_run_started`` / ``hook_run_finished`` reports.
"""

from __future__ import annotations

from time import time_ns
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from hookscope.context import HookContext
from hookscope.runner import HookRun
from hookscope.telemetry import semconv as sc
from hookscope.telemetry._handlers import records_below
from hookscope.telemetry._scopes import HookRunRecord, SpanRecord, error_type
from hookscope.telemetry.instruments import Instruments

__all__ = ["HookRunSpans"]


class HookRunSpans:
    """The hook-run side of :class:`~hookscope.telemetry.otel_hook.OTelHook`."""

    instruments: Instruments
    agent_name: str

    def record(self, context: HookContext) -> SpanRecord | None:
        raise NotImplementedError  # provided by OTelHook

    def child_span(
        self,
        parent: SpanRecord | None,
        name: str,
        argument: str,
        start_ns: int,
        kind: SpanKind = SpanKind.INTERNAL,
        attributes: dict[str, Any] | None = None,
    ) -> tuple[Span, Context | None]:
        raise NotImplementedError  # provided by EventHandlers

    def hook_run_started(self, run: HookRun, context: HookContext) -> None:
        """Open ``execute_hook {name}`` under the scope's span and make it current.

        Current, so that a command hook's ``TRACEPARENT`` (or a prompt hook's HTTP client)
        continues this span's trace.
        """
        scope = self.record(context)
        attributes: dict[str, Any] | None = None
        if records_below(scope):
            attributes = {
                sc.HOOK_NAME: run.hook_name,
                sc.HOOK_EVENT: run.event,
                sc.HOOK_TYPE: run.hook_type,
                sc.OPENINFERENCE_SPAN_KIND: sc.KIND_CHAIN,
            }
            session_id = getattr(context, "session_id", None)
            if session_id is not None:
                attributes[sc.SESSION_ID] = session_id
        start_ns = time_ns()
        span, reused = self.child_span(
            scope, sc.SPAN_HOOK, run.hook_name, start_ns, attributes=attributes
        )
        agent = scope.agent if scope is not None else self.agent_name
        metric_agent = scope.metric_agent if scope is not None else agent
        record = HookRunRecord(span, start_ns, agent, metric_agent, reused)
        try:
            record.activate()
            states = run.state if isinstance(run.state, dict) else {}
            # Keyed by observer: two OTelHooks on one runner each keep their own span.
            states[self] = record
            run.state = states
        except BaseException:
            record.end()
            raise

    def hook_run_finished(self, run: HookRun, context: HookContext) -> None:
        """End the run's span with the hook's attributes, its verdict and any error."""
        states = run.state
        record = states.pop(self, None) if isinstance(states, dict) else None
        if record is None:
            return
        error: BaseException | None = None
        try:
            error = run.error
            attributes = dict(run.attributes)
            if run.hook_type == "prompt" and sc.GEN_AI_REQUEST_MODEL in attributes:
                self._prompt_chat(record, attributes, error)
            if record.recording:
                record.span.set_attributes(attributes)
                record.span.set_attribute(sc.HOOK_VERDICT, run.verdict)
        finally:
            record.end(error)

    def _prompt_chat(
        self, run: HookRunRecord, attributes: dict[str, Any], error: BaseException | None
    ) -> None:
        """Record a prompt hook's model call as a ``chat {model}`` CLIENT span under its
        ``execute_hook`` span, with its per-call metrics.

        The hook reports the call's gen_ai attributes on its run; they move to the chat span
        (the execute_hook span keeps what is not about the model call). The call is nearly all
        of the run, so the span shares the run's start; it ends now.
        """
        chat = {k: attributes.pop(k) for k in list(attributes) if k.startswith("gen_ai.")}
        model = str(chat[sc.GEN_AI_REQUEST_MODEL])
        end_ns = time_ns()
        seconds = max(0.0, (end_ns - run.start_ns) / 1e9)
        instruments = self.instruments
        kind = error_type(error) if error is not None else None
        span, reused = self.child_span(
            run,
            sc.SPAN_CHAT,
            model,
            run.start_ns,
            SpanKind.CLIENT,
            {
                **chat,
                sc.GEN_AI_OPERATION_NAME: sc.OPERATION_CHAT,
                sc.OPENINFERENCE_SPAN_KIND: sc.KIND_LLM,
                sc.LLM_MODEL_NAME: model,
                **{k: v for k, v in attributes.items() if k.startswith("server.")},
            }
            if run.recording
            else None,
        )
        context = trace.set_span_in_context(span)
        instruments.operation_duration.record(
            seconds,
            (
                run.metric_agent,
                sc.OPERATION_CHAT,
                None,
                instruments.model_name(model),
                instruments.error_type(kind) if kind is not None else None,
            ),
            context,
        )
        tokens = (
            (sc.TOKEN_INPUT, chat.get(sc.GEN_AI_USAGE_INPUT_TOKENS)),
            (sc.TOKEN_OUTPUT, chat.get(sc.GEN_AI_USAGE_OUTPUT_TOKENS)),
        )
        for token_type, count in tokens:
            if isinstance(count, int):
                instruments.token_usage.record(
                    count,
                    (
                        run.metric_agent,
                        sc.OPERATION_CHAT,
                        None,
                        token_type,
                        instruments.model_name(model),
                    ),
                    context,
                )
        if reused is None:
            if kind is not None:
                span.set_status(Status(StatusCode.ERROR))
                span.set_attribute(sc.ERROR_TYPE, kind)
            span.end(end_time=end_ns)
