"""Fixtures of the OpenAI Agents SDK tests: a recording, tidy SDK state between tests."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from agents import set_tracing_disabled
from agents.tracing import get_trace_provider

from hookscope.testing import Recording, recording
from tests.integrations.oai.support import CLIENTS, RAN


@pytest.fixture
def rec() -> Iterator[Recording]:
    """A fresh in-memory recording (an OTelHook on in-memory providers)."""
    with recording() as recorded:
        yield recorded


@pytest.fixture(autouse=True)
async def _sdk_state() -> AsyncIterator[None]:
    # The SDK's own tracing would export to OpenAI's backend: the tests turn it off, as an
    # application would (hookscope itself never touches it; test_tracing_is_left_alone).
    provider = get_trace_provider()
    was_disabled = getattr(provider, "_disabled", False)
    set_tracing_disabled(True)
    RAN.clear()
    yield
    for client in CLIENTS:
        await client.close()
    CLIENTS.clear()
    set_tracing_disabled(was_disabled)
