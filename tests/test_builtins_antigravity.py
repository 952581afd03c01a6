"""AuditLog under a real google-antigravity agent (its Go harness, a scripted model): the
instrumentor's adapter reports the SDK's tool calls as scopes, and every one becomes a line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from google.antigravity.hooks import policy
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import TracerProvider

from hookscope.builtins import AuditLog
from hookscope.integrations.antigravity import AntigravityInstrumentor
from tests.e2e.test_antigravity import AGENT, Weather, agent_config, chat
from tests.support.openai_server import Call, Reply, ScriptedOpenAIServer

SCRIPT = {
    "audit the weather": [
        Reply(
            tool_calls=[
                Call("get_weather", {"city": "Oslo"}, id="call_1"),
                Call("get_weather", {"city": "Rome"}, id="call_2"),
            ]
        ),
        Reply(text="Sunny in Rome."),
        Reply(tool_calls=[Call("get_weather", {"city": "Atlantis"}, id="call_3")]),
        Reply(text="No report for Atlantis."),
    ]
}


@pytest.fixture
def model() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(SCRIPT) as server:
        yield server
    assert server.errors == []


@pytest.mark.e2e
async def test_audit_log_records_every_call_of_a_real_antigravity_session(
    model: ScriptedOpenAIServer,
    tmp_path: Path,
    tracer_provider: TracerProvider,
    meter_provider: MeterProvider,
) -> None:
    path = tmp_path / "audit" / "audit.jsonl"
    audit = AuditLog(path)
    instrumentor = AntigravityInstrumentor()
    instrumentor.instrument(
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
        agent_name=AGENT,
        observers=[audit],
    )
    try:
        policies = [
            policy.deny("get_weather", when=lambda args: args["city"] == "Oslo", name="no_oslo"),
            policy.allow_all(),
        ]
        weather = Weather(tracer_provider)
        config = agent_config(model, tmp_path, [weather.tool()], policies=policies)
        answers = await chat(config, "audit the weather", "and Atlantis?")
    finally:
        instrumentor.uninstrument()
    assert answers == ["Sunny in Rome.", "No report for Atlantis."]
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert audit.failed_lines == 0
    assert len({line.pop("session_id") for line in lines}) == 1
    for line in lines:
        assert line.pop("time").endswith("+00:00")
        assert line.pop("duration_s") > 0
    assert lines == [
        {
            "agent_name": AGENT,
            "turn_index": 0,
            "call_id": "call_1",
            "tool": "get_weather",
            "server": None,
            "outcome": "denied",
            "decided_by": "antigravity.policy",
            "message": "Denied by policy 'no_oslo'.",
            "decision": "deny",
            "rule": "no_oslo",
            "bucket": 0,
            "args": {"city": "Oslo"},
        },
        {
            "agent_name": AGENT,
            "turn_index": 0,
            "call_id": "call_2",
            "tool": "get_weather",
            "server": None,
            "outcome": "succeeded",
            "decided_by": None,
            "message": None,
            "args": {"city": "Rome"},
        },
        {
            "agent_name": AGENT,
            "turn_index": 1,
            "call_id": "call_3",
            "tool": "get_weather",
            "server": None,
            "outcome": "failed",
            "decided_by": None,
            "message": None,
            "error_type": "LookupError",
            "args": {"city": "Atlantis"},
        },
    ]
