"""Every telemetry name hookscope emits, once.

Dashboards, alert rules and tests use these names (or their Prometheus forms, see
:data:`PROMETHEUS_NAMES` and :data:`PROCESS_METRIC_NAMES`); nothing else in hookscope spells an
attribute or metric name as a literal. Names from the OpenTelemetry GenAI semantic conventions
(semantic-conventions v1.41 and the GenAI conventions repository after it) and from
OpenInference are written out here rather than imported from the semantic-conventions
package's ``_incubating`` modules, which deprecate and move them between releases.
"""

from __future__ import annotations

from typing import Final

from hookscope.hooks import HookEvent

#: The semantic-conventions schema the names below follow (tracer and meter ``schema_url``).
SCHEMA_URL: Final = "https://opentelemetry.io/schemas/1.41.0"

# --- OpenTelemetry semantic conventions: general and GenAI ---
ERROR_TYPE: Final = "error.type"
SESSION_ID: Final = "session.id"
GEN_AI_OPERATION_NAME: Final = "gen_ai.operation.name"
GEN_AI_PROVIDER_NAME: Final = "gen_ai.provider.name"
GEN_AI_AGENT_NAME: Final = "gen_ai.agent.name"
GEN_AI_CONVERSATION_ID: Final = "gen_ai.conversation.id"
GEN_AI_REQUEST_MODEL: Final = "gen_ai.request.model"
GEN_AI_RESPONSE_MODEL: Final = "gen_ai.response.model"
GEN_AI_RESPONSE_FINISH_REASONS: Final = "gen_ai.response.finish_reasons"
GEN_AI_INPUT_MESSAGES: Final = "gen_ai.input.messages"
GEN_AI_OUTPUT_MESSAGES: Final = "gen_ai.output.messages"
GEN_AI_TOKEN_TYPE: Final = "gen_ai.token.type"
GEN_AI_TOOL_NAME: Final = "gen_ai.tool.name"
GEN_AI_TOOL_TYPE: Final = "gen_ai.tool.type"
GEN_AI_TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
GEN_AI_TOOL_CALL_ARGUMENTS: Final = "gen_ai.tool.call.arguments"
GEN_AI_TOOL_CALL_RESULT: Final = "gen_ai.tool.call.result"
GEN_AI_USAGE_INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
GEN_AI_USAGE_OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: Final = "gen_ai.usage.cache_read.input_tokens"
GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS: Final = "gen_ai.usage.cache_creation.input_tokens"
GEN_AI_USAGE_REASONING_OUTPUT_TOKENS: Final = "gen_ai.usage.reasoning.output_tokens"
#: What a model call (on ``chat``), a turn or a session (totals) cost, in
#: :data:`COST_CURRENCY_VALUE` (DESIGN §11).
GEN_AI_USAGE_COST: Final = "gen_ai.usage.cost"
#: The currency of ``gen_ai.usage.cost``.
COST_CURRENCY: Final = "hookscope.cost.currency"
COST_CURRENCY_VALUE: Final = "USD"
#: The log event carrying a model call's (or turn's) messages when capture includes events.
EVENT_INFERENCE_DETAILS: Final = "gen_ai.client.inference.operation.details"
#: ``gen_ai.tool.type`` of a tool the agent's own code runs (the conventions' client-side kind).
TOOL_TYPE_FUNCTION: Final = "function"
#: MCP semantic conventions: the JSON-RPC method of an MCP call. On an ``execute_tool`` span of
#: a tool an MCP server provides it is ``tools/call``; the span and ``gen_ai.tool.name`` name
#: the tool as policies and timelines do, ``server/tool`` (with ``hookscope.tool.server``).
MCP_METHOD_NAME: Final = "mcp.method.name"
MCP_TOOLS_CALL: Final = "tools/call"

# --- OpenInference (Arize Phoenix) ---
INPUT_VALUE: Final = "input.value"
OUTPUT_VALUE: Final = "output.value"
TOOL_NAME: Final = "tool.name"
LLM_MODEL_NAME: Final = "llm.model_name"
LLM_PROVIDER: Final = "llm.provider"
LLM_TOKEN_COUNT_PROMPT: Final = "llm.token_count.prompt"
LLM_TOKEN_COUNT_COMPLETION: Final = "llm.token_count.completion"
LLM_TOKEN_COUNT_TOTAL: Final = "llm.token_count.total"
LLM_TOKEN_COUNT_CACHE_READ: Final = "llm.token_count.prompt_details.cache_read"
LLM_TOKEN_COUNT_CACHE_WRITE: Final = "llm.token_count.prompt_details.cache_write"
LLM_TOKEN_COUNT_REASONING: Final = "llm.token_count.completion_details.reasoning"
#: A JSON object Phoenix shows and filters on (``metadata['outcome'] == 'denied'``): a tool
#: call's, turn's or session's outcome and who decided it, so no custom query is needed.
METADATA: Final = "metadata"
#: Keys of :data:`METADATA`.
META_OUTCOME: Final = "outcome"
META_RULE: Final = "rule"
META_DECIDED_BY: Final = "decided_by"
META_ERROR_TYPE: Final = "error_type"
META_RECOVERED_BY: Final = "recovered_by"
META_TURNS: Final = "turns"
META_TOOL_CALLS: Final = "tool_calls"
META_DENIED_CALLS: Final = "denied_calls"
META_TOOL_ERRORS: Final = "tool_errors"

INSTRUMENTATION_SCOPE: Final = "hookscope"

# --- span names (formatted with the agent, tool or model name) ---
SPAN_SESSION: Final = "session {}"
SPAN_TURN: Final = "invoke_agent {}"
SPAN_TOOL: Final = "execute_tool {}"
SPAN_INTERACTION: Final = "interaction {}"
SPAN_CHAT: Final = "chat {}"
SPAN_HOOK: Final = "execute_hook {}"

# --- gen_ai.operation.name values ---
OPERATION_INVOKE_AGENT: Final = "invoke_agent"
OPERATION_EXECUTE_TOOL: Final = "execute_tool"
OPERATION_CHAT: Final = "chat"

# --- OpenInference span kinds, so Phoenix groups spans well ---
OPENINFERENCE_SPAN_KIND: Final = "openinference.span.kind"
KIND_AGENT: Final = "AGENT"
KIND_CHAIN: Final = "CHAIN"
KIND_TOOL: Final = "TOOL"
KIND_LLM: Final = "LLM"

# --- hookscope attributes ---
#: The session id on a ``trace_layout="turn"`` session span, which carries neither
#: ``session.id`` nor ``gen_ai.conversation.id`` (Phoenix would list its lone-span trace as
#: an empty first turn of the session).
SESSION_KEY: Final = "hookscope.session.id"
SESSION_OUTCOME: Final = "hookscope.session.outcome"
SESSION_TURNS: Final = "hookscope.session.turns"
SESSION_TOOL_CALLS: Final = "hookscope.session.tool_calls"
SESSION_DENIED_CALLS: Final = "hookscope.session.denied_calls"
SESSION_TOOL_ERRORS: Final = "hookscope.session.tool_errors"
TURN_INDEX: Final = "hookscope.turn.index"
TURN_OUTCOME: Final = "hookscope.turn.outcome"
TURN_ALLOWED: Final = "hookscope.turn.allowed"
TURN_DECIDED_BY: Final = "hookscope.turn.decided_by"
TURN_MESSAGE: Final = "hookscope.turn.message"
TOOL_SERVER: Final = "hookscope.tool.server"
TOOL_OUTCOME: Final = "hookscope.tool.outcome"
POLICY_DECISION: Final = "hookscope.policy.decision"
POLICY_OUTCOME: Final = "hookscope.policy.outcome"
POLICY_RULE: Final = "hookscope.policy.rule"
POLICY_BUCKET: Final = "hookscope.policy.bucket"
POLICY_REASON: Final = "hookscope.policy.reason"
POLICY_DECIDED_BY: Final = "hookscope.policy.decided_by"
RECOVERY_RECOVERED: Final = "hookscope.recovery.recovered"
RECOVERY_HOOK: Final = "hookscope.recovery.hook"
INTERACTION_OUTCOME: Final = "hookscope.interaction.outcome"
INTERACTION_ANSWERED_BY: Final = "hookscope.interaction.answered_by"
INTERACTION_QUESTIONS: Final = "hookscope.interaction.questions"
COMPACTION_SUMMARY_LENGTH: Final = "hookscope.compaction.summary_length"
#: Messages a ``pre_compaction`` dispatch was asked to summarize.
COMPACTION_MESSAGES: Final = "hookscope.compaction.messages"
#: The hook whose summary a ``pre_compaction`` dispatch used.
COMPACTION_SUMMARIZED_BY: Final = "hookscope.compaction.summarized_by"
#: The lifecycle point a compaction was reported at: ``pre`` (hooks asked for a summary)
#: or ``post`` (the agent compacted its context).
COMPACTION_STAGE: Final = "hookscope.compaction.stage"
GUARDRAIL_STAGE: Final = "hookscope.guardrail.stage"
GUARDRAIL_VERDICT: Final = "hookscope.guardrail.verdict"
GUARDRAIL_REQUEST: Final = "hookscope.guardrail.request"
GUARDRAIL_RESPONSE: Final = "hookscope.guardrail.response"
GUARDRAIL_DECIDED_BY: Final = "hookscope.guardrail.decided_by"
GUARDRAIL_REASON: Final = "hookscope.guardrail.reason"
HOOK_NAME: Final = "hookscope.hook.name"
HOOK_EVENT: Final = "hookscope.hook.event"
#: How a hook runs: ``python``, ``command`` or ``prompt`` (DESIGN §7); also a label of
#: ``hookscope.hook.duration`` (three values), so a slow-hook alert can hold each kind to
#: its own threshold.
HOOK_TYPE: Final = "hookscope.hook.type"
HOOK_TYPE_PYTHON: Final = "python"
#: What a command or prompt hook run said: ``allow``, ``deny``, ``ask`` or ``none``.
HOOK_VERDICT: Final = "hookscope.hook.verdict"
#: The signal a telemetry export carried: ``traces`` or ``metrics``.
TELEMETRY_SIGNAL: Final = "hookscope.telemetry.signal"

# --- attribute values ---
TOOL_SUCCEEDED: Final = "succeeded"
TOOL_FAILED: Final = "failed"
TOOL_RECOVERED: Final = "recovered"
TOOL_DENIED: Final = "denied"
POLICY_ALLOWED: Final = "allowed"
POLICY_DENIED: Final = "denied"
INTERACTION_ANSWERED: Final = "answered"
INTERACTION_UNANSWERED: Final = "unanswered"
TOKEN_INPUT: Final = "input"
TOKEN_OUTPUT: Final = "output"
COMPACTION_PRE: Final = "pre"
COMPACTION_POST: Final = "post"
STAGE_REQUEST: Final = "request"
STAGE_RESPONSE: Final = "response"
#: What a guarded value becomes when it would exceed an instrument's cardinality limit.
OVERFLOW_VALUE: Final = "_other"

# --- span events: one per lifecycle method, plus hook failures ---
EVENT_NAMES: Final[dict[HookEvent, str]] = {
    "on_session_start": "hookscope.session_start",
    "on_session_end": "hookscope.session_end",
    "pre_turn": "hookscope.pre_turn",
    "post_turn": "hookscope.post_turn",
    "pre_llm_request": "hookscope.pre_llm_request",
    "on_llm_response": "hookscope.llm_response",
    "pre_tool_call": "hookscope.pre_tool_call",
    "post_tool_call": "hookscope.post_tool_call",
    "on_tool_error": "hookscope.tool_error",
    "on_interaction": "hookscope.interaction",
    "pre_compaction": "hookscope.pre_compaction",
    "on_compaction": "hookscope.compaction",
}
EVENT_HOOK_FAILURE: Final = "hookscope.hook_failure"
#: The GenAI conventions' evaluation event: a prompt hook's verdict or a scored HookResult,
#: on the judged span (DESIGN §11), with the attributes below.
EVENT_EVALUATION_RESULT: Final = "gen_ai.evaluation.result"
GEN_AI_EVALUATION_NAME: Final = "gen_ai.evaluation.name"
GEN_AI_EVALUATION_SCORE_VALUE: Final = "gen_ai.evaluation.score.value"
GEN_AI_EVALUATION_SCORE_LABEL: Final = "gen_ai.evaluation.score.label"
GEN_AI_EVALUATION_EXPLANATION: Final = "gen_ai.evaluation.explanation"

# --- metrics ---
METRIC_TOOL_CALLS: Final = "hookscope.tool.calls"
METRIC_POLICY_DECISIONS: Final = "hookscope.policy.decisions"
METRIC_TOOL_ERRORS: Final = "hookscope.tool.errors"
METRIC_TURNS: Final = "hookscope.turns"
METRIC_SESSIONS: Final = "hookscope.sessions"
METRIC_SESSIONS_ACTIVE: Final = "hookscope.sessions.active"
METRIC_TOOL_DURATION: Final = "gen_ai.execute_tool.duration"
METRIC_TURN_DURATION: Final = "gen_ai.invoke_agent.duration"
METRIC_TOKEN_USAGE: Final = "gen_ai.client.token.usage"
METRIC_OPERATION_DURATION: Final = "gen_ai.client.operation.duration"
METRIC_HOOK_DURATION: Final = "hookscope.hook.duration"
METRIC_HOOK_FAILURES: Final = "hookscope.hook.failures"
METRIC_INTERACTIONS: Final = "hookscope.interactions"
METRIC_COMPACTIONS: Final = "hookscope.compactions"
METRIC_GUARDRAIL_VERDICTS: Final = "hookscope.guardrail.verdicts"
#: Seconds a call waited for a person's approval (``builtins.Approvals``), by agent, outcome
#: and channel; the wait is also a ``blocked_on_user`` span under the tool span.
METRIC_APPROVAL_DURATION: Final = "hookscope.approval.duration"
SPAN_BLOCKED_ON_USER: Final = "blocked_on_user"
APPROVAL_ID: Final = "hookscope.approval.id"
APPROVAL_CHANNEL: Final = "hookscope.approval.channel"
#: ``approved``, ``denied`` or ``timed_out``.
APPROVAL_OUTCOME: Final = "hookscope.approval.outcome"
APPROVAL_APPROVER: Final = "hookscope.approval.approver"
#: Counter of spend (``{USD}``) by agent, model and provider.
METRIC_COST: Final = "hookscope.cost"
#: Counter of model calls whose model has no known price (``{call}``): never guessed.
METRIC_COST_UNPRICED: Final = "hookscope.cost.unpriced"

# --- process-level metrics: hookscope's own export pipeline ---
# Exports happen per process (one batch holds spans of every agent the process runs), so these
# are the exception to "every metric carries gen_ai.agent.name": their only attribute is
# TELEMETRY_SIGNAL.
#: Counter of export calls that failed, one per batch (``{batch}``): the exporter failed, the
#: endpoint was unreachable, or the circuit breaker dropped the batch while open.
METRIC_EXPORT_FAILURES: Final = "hookscope.telemetry.export.failures"
#: Counter of the items those failed batches held (``{item}``): spans for ``traces``, metric
#: data points for ``metrics``.
METRIC_EXPORT_DROPPED: Final = "hookscope.telemetry.export.dropped"

#: The name each metric has in Prometheus (scrape endpoint or Collector), as dashboards and
#: alert rules use it. Histograms expose ``_bucket``, ``_sum`` and ``_count`` series.
PROMETHEUS_NAMES: Final[dict[str, str]] = {
    METRIC_TOOL_CALLS: "hookscope_tool_calls_total",
    METRIC_POLICY_DECISIONS: "hookscope_policy_decisions_total",
    METRIC_TOOL_ERRORS: "hookscope_tool_errors_total",
    METRIC_TURNS: "hookscope_turns_total",
    METRIC_SESSIONS: "hookscope_sessions_total",
    METRIC_SESSIONS_ACTIVE: "hookscope_sessions_active",
    METRIC_TOOL_DURATION: "gen_ai_execute_tool_duration_seconds",
    METRIC_TURN_DURATION: "gen_ai_invoke_agent_duration_seconds",
    METRIC_TOKEN_USAGE: "gen_ai_client_token_usage",
    METRIC_OPERATION_DURATION: "gen_ai_client_operation_duration_seconds",
    METRIC_HOOK_DURATION: "hookscope_hook_duration_seconds",
    METRIC_HOOK_FAILURES: "hookscope_hook_failures_total",
    METRIC_INTERACTIONS: "hookscope_interactions_total",
    METRIC_COMPACTIONS: "hookscope_compactions_total",
    METRIC_GUARDRAIL_VERDICTS: "hookscope_guardrail_verdicts_total",
    METRIC_COST: "hookscope_cost_total",
    METRIC_COST_UNPRICED: "hookscope_cost_unpriced_total",
}

#: Prometheus names of the process-level metrics. Kept apart from :data:`PROMETHEUS_NAMES`:
#: these carry no ``gen_ai.agent.name`` and exist only once an export has failed.
PROCESS_METRIC_NAMES: Final[dict[str, str]] = {
    METRIC_EXPORT_FAILURES: "hookscope_telemetry_export_failures_total",
    METRIC_EXPORT_DROPPED: "hookscope_telemetry_export_dropped_total",
}

# fmt: off
#: Explicit bucket boundaries in seconds: the SDK's defaults (0 … 10000) suit milliseconds.
#: Tool calls span sub-millisecond lookups to multi-second commands. Not the conventions'
#: client-operation advice (which starts at 10 ms): most local tools finish well under it,
#: and a histogram whose every value falls in its first bucket says nothing.
DURATION_BUCKETS_S: Final = (
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
    60.0,
)
#: Python hooks take microseconds to milliseconds (a slow one is above ~25 ms); command and
#: prompt hooks spawn a process or call a model, so the buckets reach on to 30 s.
HOOK_DURATION_BUCKETS_S: Final = (
    0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
    0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
)
#: Turns include model calls and tools: seconds to minutes. The conventions give no advice
#: for ``gen_ai.invoke_agent.duration``; these reach down to 10 ms for scripted turns.
TURN_DURATION_BUCKETS_S: Final = (
    0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 40.0, 80.0, 160.0, 320.0,
)
#: ``gen_ai.client.operation.duration``: the conventions' advice, doubling from 10 ms.
OPERATION_DURATION_BUCKETS_S: Final = tuple(0.01 * 2**i for i in range(14))
# fmt: on
#: ``gen_ai.client.token.usage``: the conventions' advice, powers of four from 1 to 4**13.
TOKEN_BUCKETS: Final = tuple(float(4**i) for i in range(14))
