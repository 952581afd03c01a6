"""Conformance: every span, span event, log record and metric of the demo workload, against
the OpenTelemetry GenAI semantic conventions (and OpenInference where Phoenix reads it).

The tables below are written from the conventions (semantic-conventions v1.41 and the GenAI
conventions repository's ``model/gen-ai/{spans,metrics,events,registry}.yaml`` and message
JSON schemas): span name pattern and kind, the attributes they require, and each attribute's
value type. hookscope's own ``hookscope.*`` attributes are checked for type only.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import pytest
from opentelemetry.sdk.metrics.export import Histogram, MetricsData, Sum

from hookscope.demo import DemoAgent
from hookscope.telemetry import ContentCapture
from hookscope.telemetry import semconv as sc
from hookscope.testing import Recording, recording

STR, INT, FLOAT, BOOL = str, int, float, bool
STRS = "string[]"
MESSAGES_JSON = "messages as JSON"
METADATA_JSON = "OpenInference metadata: a JSON object"

#: Attribute → value type, for every attribute the conventions define that we emit.
TYPES: Final[dict[str, Any]] = {
    "session.id": STR,
    "error.type": STR,
    "gen_ai.operation.name": STR,
    "gen_ai.provider.name": STR,
    "gen_ai.agent.name": STR,
    "gen_ai.conversation.id": STR,
    "gen_ai.request.model": STR,
    "gen_ai.response.model": STR,
    "gen_ai.response.finish_reasons": STRS,
    "gen_ai.token.type": STR,
    "gen_ai.tool.name": STR,
    "gen_ai.tool.type": STR,
    "gen_ai.tool.call.id": STR,
    "gen_ai.tool.call.arguments": STR,
    "gen_ai.tool.call.result": STR,
    "gen_ai.input.messages": MESSAGES_JSON,
    "gen_ai.output.messages": MESSAGES_JSON,
    "gen_ai.usage.input_tokens": INT,
    "gen_ai.usage.output_tokens": INT,
    "gen_ai.usage.cache_read.input_tokens": INT,
    "gen_ai.usage.cache_creation.input_tokens": INT,
    "gen_ai.usage.reasoning.output_tokens": INT,
    # DESIGN §11: what a model call, turn or session cost, with hookscope.cost.currency
    "gen_ai.usage.cost": FLOAT,
    # the gen_ai.evaluation.result event (prompt-hook verdicts, scored HookResults)
    "gen_ai.evaluation.name": STR,
    "gen_ai.evaluation.score.value": FLOAT,
    "gen_ai.evaluation.score.label": STR,
    "gen_ai.evaluation.explanation": STR,
    # MCP conventions (on the execute_tool span of a tool an MCP server provides)
    "mcp.method.name": STR,
    # OpenInference
    "openinference.span.kind": STR,
    "input.value": STR,
    "output.value": STR,
    "tool.name": STR,
    "metadata": METADATA_JSON,
    "llm.model_name": STR,
    "llm.provider": STR,
    "llm.token_count.prompt": INT,
    "llm.token_count.completion": INT,
    "llm.token_count.total": INT,
}

#: Span name pattern (operation, the attribute naming it), kind, required attributes with
#: their fixed value where the conventions fix one.
SPANS: Final[dict[str, dict[str, Any]]] = {
    "session": {
        "named_by": "gen_ai.agent.name",
        "kind": "INTERNAL",
        "required": {"session.id": None, "gen_ai.agent.name": None, "gen_ai.conversation.id": None},
        "openinference": "CHAIN",
    },
    "invoke_agent": {  # gen_ai.invoke_agent.internal
        "named_by": "gen_ai.agent.name",
        "kind": "INTERNAL",
        "required": {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.provider.name": None,
            "gen_ai.agent.name": None,
            "gen_ai.conversation.id": None,
        },
        "openinference": "AGENT",
    },
    "chat": {  # gen_ai.inference.client
        "named_by": "gen_ai.request.model",
        "kind": "CLIENT",
        "required": {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": None,
            "gen_ai.request.model": None,
            "llm.model_name": None,
            # the fixture prices the demo's model: every chat span says what it cost
            "gen_ai.usage.cost": None,
            "hookscope.cost.currency": "USD",
        },
        "openinference": "LLM",
    },
    "execute_tool": {  # gen_ai.execute_tool.internal
        "named_by": "gen_ai.tool.name",
        "kind": "INTERNAL",
        "required": {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": None,
            "gen_ai.tool.type": "function",
            "tool.name": None,
        },
        "openinference": "TOOL",
    },
    "interaction": {
        "named_by": "gen_ai.agent.name",
        "kind": "INTERNAL",
        "required": {"gen_ai.agent.name": None},
        "openinference": "CHAIN",
    },
}

#: Metric → instrument, unit, required attributes (fixed values where the conventions fix
#: them), and whether ``error.type`` may appear. Every metric also requires gen_ai.agent.name.
METRICS: Final[dict[str, dict[str, Any]]] = {
    "gen_ai.client.token.usage": {
        "instrument": "histogram",
        "unit": "{token}",
        "required": {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": None,
            "gen_ai.token.type": ("input", "output"),
        },
    },
    "gen_ai.client.operation.duration": {
        "instrument": "histogram",
        "unit": "s",
        "required": {"gen_ai.operation.name": "chat", "gen_ai.provider.name": None},
    },
    "gen_ai.execute_tool.duration": {
        "instrument": "histogram",
        "unit": "s",
        "required": {"gen_ai.tool.name": None},
    },
    "gen_ai.invoke_agent.duration": {"instrument": "histogram", "unit": "s", "required": {}},
    "hookscope.hook.duration": {
        "instrument": "histogram",
        "unit": "s",
        "required": {"hookscope.hook.name": None, "hookscope.hook.event": None},
    },
    "hookscope.tool.calls": {
        "instrument": "counter",
        "unit": "{call}",
        "required": {"gen_ai.tool.name": None, "hookscope.tool.outcome": None},
    },
    "hookscope.policy.decisions": {
        "instrument": "counter",
        "unit": "{decision}",
        "required": {"hookscope.policy.decision": None, "hookscope.policy.outcome": None},
    },
    "hookscope.tool.errors": {
        "instrument": "counter",
        "unit": "{error}",
        "required": {"error.type": None, "hookscope.recovery.recovered": None},
    },
    "hookscope.turns": {
        "instrument": "counter",
        "unit": "{turn}",
        "required": {"hookscope.turn.outcome": None},
    },
    "hookscope.sessions": {"instrument": "counter", "unit": "{session}", "required": {}},
    "hookscope.sessions.active": {
        "instrument": "updowncounter",
        "unit": "{session}",
        "required": {},
    },
    "hookscope.interactions": {
        "instrument": "counter",
        "unit": "{interaction}",
        "required": {"hookscope.interaction.outcome": None},
    },
    "hookscope.compactions": {
        "instrument": "counter",
        "unit": "{compaction}",
        "required": {"hookscope.compaction.stage": ("pre", "post")},
    },
    "hookscope.guardrail.verdicts": {
        "instrument": "counter",
        "unit": "{verdict}",
        "required": {"hookscope.guardrail.stage": ("request", "response")},
    },
    "hookscope.hook.failures": {
        "instrument": "counter",
        "unit": "{failure}",
        "required": {"hookscope.hook.name": None, "error.type": None},
    },
    "hookscope.cost": {
        "instrument": "counter",
        "unit": "{USD}",
        "required": {"gen_ai.request.model": None, "gen_ai.provider.name": None},
    },
    "hookscope.cost.unpriced": {
        "instrument": "counter",
        "unit": "{call}",
        "required": {"gen_ai.request.model": None},
    },
}
#: Never on a metric: per-session or per-call values would make every series unique.
HIGH_CARDINALITY: Final = {"session.id", "gen_ai.conversation.id", "gen_ai.tool.call.id"}
#: The conventions' message JSON schema: part types we emit and the fields each needs.
PARTS: Final = {
    "text": {"content"},
    "tool_call": {"name"},
    "tool_call_response": {"response"},
}
ROLES: Final = {"system", "user", "assistant", "tool"}


def check_messages(messages: Any, *, output: bool) -> None:
    """``[{role, parts: [{type, ...}]}]``; output messages also carry ``finish_reason``."""
    assert isinstance(messages, Sequence)
    assert messages
    for message in messages:
        assert isinstance(message, Mapping)
        assert message["role"] in ROLES, message
        if output:
            assert isinstance(message["finish_reason"], str), message
        for part in message["parts"]:
            assert part["type"] in PARTS, part
            assert PARTS[part["type"]] <= set(part), part


def check_type(key: str, value: Any) -> None:
    expected = TYPES.get(key)
    if expected is None:
        assert key.startswith(("hookscope.", "process.", "llm.token_count.")), f"unknown {key}"
        assert isinstance(value, (str, bool, int, float)), (key, value)
    elif expected == STRS:
        assert isinstance(value, tuple), (key, value)
        assert all(isinstance(item, str) for item in value), (key, value)
    elif expected == METADATA_JSON:
        assert isinstance(value, str), (key, value)
        decoded = json.loads(value)
        assert isinstance(decoded, dict), (key, value)
        assert all(isinstance(v, (str, int)) for v in decoded.values()), (key, value)
    elif expected == MESSAGES_JSON:
        assert isinstance(value, str), (key, value)
        check_messages(json.loads(value), output=key == "gen_ai.output.messages")
    else:
        assert isinstance(value, expected), (key, value)
        assert not (expected is INT and isinstance(value, bool)), (key, value)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Recording]:
    """Three demo sessions, content capture on spans and events."""
    import asyncio

    from hookscope.demo.agent import MODEL
    from hookscope.telemetry.cost import set_prices

    set_prices({MODEL: {"input": 3.0, "output": 15.0}})
    try:
        with recording(capture_content=ContentCapture.SPAN_AND_EVENT) as rec:
            agent = DemoAgent(Path(tmp_path_factory.mktemp("workspace")), hooks=[rec.hook], seed=3)
            asyncio.run(agent.run(3))
            yield rec
    finally:
        set_prices(None)


def test_every_span_has_its_conventional_name_kind_and_required_attributes(
    demo: Recording,
) -> None:
    seen: set[str] = set()
    for span in demo.spans:
        operation, _, named = span.name.partition(" ")
        assert operation in SPANS, span.name
        table = SPANS[operation]
        attributes = dict(span.attributes or {})
        assert attributes[table["named_by"]] == named, span.name
        assert span.kind.name == table["kind"], span.name
        for key, value in table["required"].items():
            assert key in attributes, f"{span.name}: no {key}"
            if value is not None:
                assert attributes[key] == value, (span.name, key)
        assert attributes["openinference.span.kind"] == table["openinference"]
        assert isinstance(attributes["session.id"], str)
        for key, value in attributes.items():
            check_type(key, value)
        refused = {attributes.get(sc.TOOL_OUTCOME), attributes.get(sc.TURN_OUTCOME)}
        if span.status.status_code.name == "ERROR" and not refused & {"denied", "blocked"}:
            # A refusal is ERROR without error.type (it raised nothing: README, span status).
            assert "error.type" in attributes, span.name
        seen.add(operation)
    assert seen == set(SPANS)  # the workload exercises every kind of span


def test_every_span_event_is_a_lifecycle_event_with_typed_attributes(demo: Recording) -> None:
    names = {*sc.EVENT_NAMES.values(), sc.EVENT_HOOK_FAILURE}
    count = 0
    for span in demo.spans:
        for event in span.events:
            assert event.name in names, event.name
            for key, value in (event.attributes or {}).items():
                assert key not in ("gen_ai.input.messages", "gen_ai.output.messages")
                check_type(key, value)
            count += 1
    assert count > 0


def test_every_log_record_is_an_inference_details_event(demo: Recording) -> None:
    spans = {span.context.span_id: span for span in demo.spans}
    operations = set()
    for log in demo.logs:
        record = log.log_record
        assert record.event_name == "gen_ai.client.inference.operation.details"
        attributes = dict(record.attributes or {})
        operations.add(attributes["gen_ai.operation.name"])
        assert isinstance(attributes["gen_ai.provider.name"], str)
        check_messages(attributes["gen_ai.input.messages"], output=False)
        check_messages(attributes["gen_ai.output.messages"], output=True)
        span = spans[record.span_id]  # linked to the span of its operation
        assert span.attributes is not None
        assert span.attributes["gen_ai.operation.name"] == attributes["gen_ai.operation.name"]
        if attributes["gen_ai.operation.name"] == "chat":
            assert attributes["gen_ai.request.model"] == span.attributes["gen_ai.request.model"]
    assert operations == {"chat", "invoke_agent"}
    assert len(demo.logs) == 2 * sum(  # one per model call and one per answered turn
        1 for span in demo.spans if span.name.startswith("chat ")
    )


def _instrument(metric: Any) -> str:
    data = metric.data
    if isinstance(data, Histogram):
        return "histogram"
    assert isinstance(data, Sum)
    return "counter" if data.is_monotonic else "updowncounter"


def test_every_metric_has_its_instrument_unit_and_required_attributes(demo: Recording) -> None:
    data = demo.metrics()
    assert isinstance(data, MetricsData)
    seen = set()
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            assert scope.scope.name == "hookscope"
            assert scope.scope.schema_url == sc.SCHEMA_URL
            for metric in scope.metrics:
                table = METRICS[metric.name]
                assert _instrument(metric) == table["instrument"], metric.name
                assert metric.unit == table["unit"], metric.name
                for point in metric.data.data_points:
                    attributes = dict(point.attributes or {})
                    assert isinstance(attributes.get("gen_ai.agent.name"), str), metric.name
                    assert not HIGH_CARDINALITY & set(attributes), metric.name
                    for key, value in table["required"].items():
                        assert key in attributes, f"{metric.name}: no {key}"
                        if isinstance(value, tuple):
                            assert attributes[key] in value, (metric.name, key)
                        elif value is not None:
                            assert attributes[key] == value, (metric.name, key)
                    for key, value in attributes.items():
                        check_type(key, value)
                seen.add(metric.name)
    # Everything but the hook failure counter (the demo's hooks never fail) and the unpriced
    # counter (the fixture prices the demo's model).
    assert seen == set(METRICS) - {"hookscope.hook.failures", "hookscope.cost.unpriced"}


def test_the_tracer_names_its_schema(demo: Recording) -> None:
    assert {span.instrumentation_scope.schema_url for span in demo.spans} == {sc.SCHEMA_URL}


# --- lifecycle events as log records (OTEP 4430): OTelHook(events=...), HOOKSCOPE_EVENTS -----


def _play(rec: Recording, workspace: Path) -> None:
    import asyncio

    asyncio.run(DemoAgent(workspace, hooks=[rec.hook], seed=3).run(2))


def _span_events(rec: Recording) -> list[tuple[int, int, str, dict[str, Any]]]:
    return sorted(
        (span.context.trace_id, span.context.span_id, event.name, dict(event.attributes or {}))
        for span in rec.spans
        for event in span.events
    )


def _log_events(rec: Recording) -> list[tuple[int, int, str, dict[str, Any]]]:
    return sorted(
        (
            log.log_record.trace_id or 0,
            log.log_record.span_id or 0,
            str(log.log_record.event_name),
            dict(log.log_record.attributes or {}),
        )
        for log in rec.logs
    )


def test_events_both_emits_every_lifecycle_event_as_a_span_event_and_a_log_record(
    tmp_path: Path,
) -> None:
    with recording(events="both") as rec:
        _play(rec, tmp_path)
        span_events, log_events = _span_events(rec), _log_events(rec)
    names = {*sc.EVENT_NAMES.values(), sc.EVENT_HOOK_FAILURE}
    assert {name for _, _, name, _ in log_events} <= names
    assert len(log_events) > 50
    # The same events, each in the context of the span it belongs to.
    assert log_events == span_events
    for _, _, _, attributes in log_events:
        for key, value in attributes.items():
            check_type(key, value)


def test_events_log_emits_log_records_only(tmp_path: Path) -> None:
    with recording(events="span") as spans_only:
        _play(spans_only, tmp_path / "a")
        expected = [(name, attributes) for _, _, name, attributes in _span_events(spans_only)]
    with recording(events="log") as logs_only:
        _play(logs_only, tmp_path / "b")
        assert all(not span.events for span in logs_only.spans)
        seen = [(name, attributes) for _, _, name, attributes in _log_events(logs_only)]
        spans = {span.context.span_id for span in logs_only.spans}
        assert {log.log_record.span_id for log in logs_only.logs} <= spans
    assert sorted(seen, key=repr) == sorted(expected, key=repr)


@pytest.mark.parametrize(("value", "form"), [("log", "log"), (" BOTH ", "both"), ("", "span")])
def test_hookscope_events_selects_the_form(
    monkeypatch: pytest.MonkeyPatch, value: str, form: str
) -> None:
    from hookscope.telemetry import OTelHook

    monkeypatch.setenv("HOOKSCOPE_EVENTS", value)
    assert OTelHook().events == form
    assert OTelHook(events="span").events == "span"  # the argument wins


def test_an_unknown_event_form_is_an_error_that_names_the_choices(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from hookscope.telemetry import OTelHook

    monkeypatch.setenv("HOOKSCOPE_EVENTS", "spans")
    with pytest.raises(ValueError, match="HOOKSCOPE_EVENTS") as raised:
        OTelHook()
    assert str(raised.value) == (
        "HOOKSCOPE_EVENTS='spans' is not an event form; use 'span', 'log' or 'both'"
    )
