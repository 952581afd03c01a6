"""Test your hooks' telemetry the way hookscope's own tests do.

:func:`recording` wires an :class:`~hookscope.telemetry.OTelHook` to in-memory OpenTelemetry
providers and yields what it recorded; :func:`span_tree` turns finished spans into a nested,
comparable (and printable) tree; :func:`metric_points` does the same for metrics::

    from hookscope.testing import recording

    async def test_denied_calls_are_recorded():
        with recording() as rec:
            runner = HookRunner([rec.hook, MyPolicy()])
            async with runner.session(agent_name="a") as s, s.turn("hi") as turn:
                await turn.call_tool(ToolCall("rm"), rm)
        assert rec.span_tree()[0]["children"][0]["children"][0]["attributes"][
            "hookscope.tool.outcome"
        ] == "denied"

With pytest, the ``hookscope_recording`` fixture (registered through the ``pytest11`` entry
point when hookscope is installed) yields a fresh :class:`Recording` per test.

.. versionadded:: 0.2
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Final

from opentelemetry.sdk._logs import LoggerProvider, ReadableLogRecord
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    HistogramDataPoint,
    InMemoryMetricReader,
    MetricsData,
    NumberDataPoint,
)
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import Sampler

from hookscope.telemetry.content import ContentCapture
from hookscope.telemetry.otel_hook import EventForm, OTelHook, TraceLayout

__all__ = ["VOLATILE", "Recording", "format_tree", "metric_points", "recording", "span_tree"]

#: Attributes left out of trees: values that differ run to run or repeat on every span, and
#: OpenInference ``metadata``, which restates a span's outcome attributes as JSON for Phoenix.
VOLATILE: Final = frozenset({"session.id", "gen_ai.conversation.id", "metadata"})


def span_tree(
    spans: Sequence[ReadableSpan],
    *,
    keys: Iterable[str] | None = None,
    exclude: Iterable[str] = VOLATILE,
) -> list[dict[str, Any]]:
    """Finished spans as nested dicts, roots first and siblings in start order.

    Each node holds ``name``, ``attributes`` (all but ``exclude``, or only ``keys``),
    ``events`` (as ``(name, attributes)`` pairs), ``status`` (``UNSET``, ``OK``, ``ERROR``)
    and ``children`` when it has any. A span whose parent is not among ``spans`` is a root.
    """
    wanted = frozenset(keys) if keys is not None else None
    left_out = frozenset(exclude)

    def keep(attributes: Mapping[str, Any] | None) -> dict[str, Any]:
        return {
            key: value
            for key, value in (attributes or {}).items()
            if (key in wanted if wanted is not None else key not in left_out)
        }

    by_parent: dict[int | None, list[ReadableSpan]] = {}
    ids = {span.context.span_id for span in spans if span.context is not None}
    for span in spans:
        parent = span.parent.span_id if span.parent is not None else None
        by_parent.setdefault(parent if parent in ids else None, []).append(span)

    def node(span: ReadableSpan) -> dict[str, Any]:
        result: dict[str, Any] = {
            "name": span.name,
            "attributes": keep(span.attributes),
            "events": [(event.name, keep(event.attributes)) for event in span.events],
            "status": span.status.status_code.name,
        }
        span_id = span.context.span_id if span.context is not None else None
        children = sorted(by_parent.get(span_id, []), key=lambda s: s.start_time or 0)
        if children:
            result["children"] = [node(child) for child in children]
        return result

    roots = sorted(by_parent.get(None, []), key=lambda s: s.start_time or 0)
    return [node(root) for root in roots]


def format_tree(tree: Sequence[Mapping[str, Any]], indent: str = "") -> str:
    """A :func:`span_tree` as indented text: one line per span, its attributes beside it."""
    lines = []
    for node in tree:
        attributes = json.dumps(node["attributes"], default=str, sort_keys=True)
        lines.append(f"{indent}{node['name']} [{node['status']}] {attributes}")
        children = node.get("children")
        if children:
            lines.append(format_tree(children, indent + "  "))
    return "\n".join(lines)


def metric_points(data: MetricsData | None, names: Iterable[str] | None = None) -> dict[str, Any]:
    """Metric name → ``{frozenset(attribute items): value}``; histograms give their count."""
    wanted = set(names) if names is not None else None
    points: dict[str, Any] = {}
    for resource in data.resource_metrics if data is not None else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if wanted is not None and metric.name not in wanted:
                    continue
                series = points.setdefault(metric.name, {})
                for point in metric.data.data_points:
                    key = frozenset((point.attributes or {}).items())
                    if isinstance(point, HistogramDataPoint):
                        series[key] = point.count
                    elif isinstance(point, NumberDataPoint):
                        series[key] = point.value
    return points


@dataclass
class Recording:
    """What an :class:`OTelHook` recorded inside :func:`recording`.

    Attributes:
        hook: The OTelHook to register: ``HookRunner([rec.hook, ...])``.
        span_exporter: Holds every finished span.
        metric_reader: Collects metrics on demand.
        log_exporter: Holds every emitted log record (content events).
    """

    hook: OTelHook
    tracer_provider: TracerProvider
    meter_provider: MeterProvider
    logger_provider: LoggerProvider
    span_exporter: InMemorySpanExporter
    metric_reader: InMemoryMetricReader
    log_exporter: InMemoryLogRecordExporter

    @property
    def spans(self) -> tuple[ReadableSpan, ...]:
        """Finished spans, in end order."""
        return self.span_exporter.get_finished_spans()

    @property
    def logs(self) -> tuple[ReadableLogRecord, ...]:
        """Emitted log records (``gen_ai.client.inference.operation.details`` events)."""
        return self.log_exporter.get_finished_logs()

    def span_tree(self, **options: Any) -> list[dict[str, Any]]:
        """:func:`span_tree` of the finished spans."""
        return span_tree(self.spans, **options)

    def metrics(self) -> MetricsData | None:
        """Collect metrics now (cumulative, so every collection holds everything so far)."""
        return self.metric_reader.get_metrics_data()

    def metric_points(self, names: Iterable[str] | None = None) -> dict[str, Any]:
        """:func:`metric_points` of a collection made now."""
        return metric_points(self.metrics(), names)


@contextmanager
def recording(
    *,
    agent_name: str | None = None,
    trace_layout: TraceLayout | None = None,
    capture_content: ContentCapture = ContentCapture.NO_CONTENT,
    cardinality_limit: int | None = None,
    sampler: Sampler | None = None,
    events: EventForm = "span",
) -> Iterator[Recording]:
    """An OTelHook on in-memory providers; yields the :class:`Recording`.

    Content capture is off unless ``capture_content`` says otherwise, and lifecycle events
    are span events unless ``events`` says otherwise (the environment is not read, so tests
    do not depend on it). Providers are shut down on exit.
    """
    span_exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider(sampler=sampler) if sampler else TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(span_exporter))
    metric_reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[metric_reader])
    log_exporter = InMemoryLogRecordExporter()  # type: ignore[no-untyped-call]
    logger_provider = LoggerProvider()
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(log_exporter))
    options: dict[str, Any] = {}
    if cardinality_limit is not None:
        options["cardinality_limit"] = cardinality_limit
    hook = OTelHook(
        tracer_provider,
        meter_provider,
        agent_name,
        trace_layout,
        capture_content=capture_content,
        logger_provider=logger_provider,
        events=events,
        **options,
    )
    try:
        yield Recording(
            hook,
            tracer_provider,
            meter_provider,
            logger_provider,
            span_exporter,
            metric_reader,
            log_exporter,
        )
    finally:
        tracer_provider.shutdown()
        meter_provider.shutdown()
        logger_provider.shutdown()


try:  # the pytest plugin: only where pytest is installed
    import pytest
except ImportError:  # pragma: no cover - hookscope without its test extra
    pass
else:

    @pytest.fixture
    def hookscope_recording() -> Iterator[Recording]:
        """A fresh :func:`recording` (content capture off) for one test."""
        with recording() as rec:
            yield rec
