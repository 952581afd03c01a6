"""Fixtures for the integration unit tests: in-memory OTel pipelines and the instrumentor."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import TracerProvider

from hookscope.integrations.antigravity import AntigravityInstrumentor


@pytest.fixture
def instrumentor(
    tracer_provider: TracerProvider, meter_provider: MeterProvider
) -> Iterator[AntigravityInstrumentor]:
    """Instrumented for the test, uninstrumented after it (unless the test did so)."""
    instrumentor = AntigravityInstrumentor()
    instrumentor.instrument(
        tracer_provider=tracer_provider, meter_provider=meter_provider, agent_name="bot"
    )
    yield instrumentor
    if instrumentor.is_instrumented_by_opentelemetry:
        instrumentor.uninstrument()
