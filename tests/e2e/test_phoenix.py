"""OTLP end to end: a hookscope session exported to a real Arize Phoenix, read back over REST.

Phoenix is installed into its own venv on first use and started on free loopback ports (see
``conftest.py``). Spans go over OTLP/HTTP protobuf to ``/v1/traces``; Phoenix takes no OTLP
metrics, so metrics go to the embedded files. Phoenix files spans under the project named by
the resource attribute ``openinference.project.name`` (else ``default``): each test uses its
own project so it reads only its own spans.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from hookscope.hooks import Hook
from hookscope.policy import deny, enforce
from hookscope.runner import HookRunner
from hookscope.telemetry import OTelHook
from hookscope.telemetry.setup import configure
from hookscope.types import ChatResponse, LlmRequest, LlmResponse, Recovery, ToolCall, Usage

if TYPE_CHECKING:
    from tests.e2e.conftest import Phoenix

pytestmark = pytest.mark.e2e

READ_BACK_DEADLINE_S = 30.0


class RecoverMissingFiles(Hook):
    def on_tool_error(self, context: Any, error: Exception) -> Recovery | None:
        if isinstance(error, FileNotFoundError):
            return Recovery("(no such file)", message="told the model the file is missing")
        return None


def view_file(path: str) -> str:
    if path.endswith("missing.txt"):
        raise FileNotFoundError(path)
    return f"contents of {path}"


async def run_session(telemetry: Any) -> None:
    """One session, one turn: an allowed call, a call denied by a rule, a recovered call."""
    runner = HookRunner(
        [
            OTelHook(telemetry.tracer_provider, telemetry.meter_provider),
            enforce([deny("run_command", name="no-shell", reason="shell is off")]),
            RecoverMissingFiles(),
        ]
    )
    async with (
        runner.session(agent_name="coder", session_id="e2e-session") as session,
        session.turn("fix the bug") as turn,
    ):
        ok = await turn.call_tool(ToolCall("view_file", {"path": "a.py"}, id="c1"), view_file)
        denied = await turn.call_tool(
            ToolCall("run_command", {"cmd": "ls"}, id="c2"), lambda cmd: cmd
        )
        recovered = await turn.call_tool(
            ToolCall("view_file", {"path": "missing.txt"}, id="c3"), view_file
        )
        turn.respond(ChatResponse(text="done", usage=Usage(input_tokens=12, output_tokens=5)))
    assert (ok.value, denied.allowed, recovered.value) == (
        "contents of a.py",
        False,
        "(no such file)",
    )


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.load(response)


def read_spans(phoenix: Phoenix, project: str, expected: int) -> list[dict[str, Any]]:
    """The project's spans once ``expected`` of them arrived (ingestion is asynchronous)."""
    url = f"{phoenix.url}/v1/projects/{project}/spans?limit=100"
    deadline = time.monotonic() + READ_BACK_DEADLINE_S
    spans: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        try:
            spans = get_json(url)["data"]
        except urllib.error.HTTPError as error:
            if error.code != 404:  # 404: the project does not exist until its first span
                raise
        if len(spans) >= expected:
            return spans
        time.sleep(0.2)
    raise AssertionError(
        f"Phoenix holds {len(spans)} of {expected} spans after {READ_BACK_DEADLINE_S:.0f}s"
    )


def only(attributes: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    return {key: attributes[key] for key in keys if key in attributes}


TOOL_KEYS = (
    "session.id",
    "gen_ai.tool.name",
    "gen_ai.tool.call.id",
    "hookscope.tool.outcome",
    "hookscope.policy.decision",
    "hookscope.policy.outcome",
    "hookscope.policy.rule",
    "hookscope.policy.bucket",
    "hookscope.policy.reason",
    "hookscope.policy.decided_by",
    "error.type",
    "hookscope.recovery.recovered",
    "hookscope.recovery.hook",
)


async def test_a_session_exported_over_otlp_http_reads_back_from_phoenix(
    phoenix: Phoenix, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = f"hookscope-e2e-{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", f"openinference.project.name={project}")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", f"{phoenix.url}/v1/traces")
    print(f"Phoenix: install check {phoenix.install_s:.1f}s, ready in {phoenix.startup_s:.1f}s")
    telemetry = configure(service_name="hookscope-e2e", directory=tmp_path, set_global=False)
    await run_session(telemetry)
    assert telemetry.shutdown(timeout_s=10.0)

    spans = read_spans(phoenix, project, expected=5)
    by_id = {span["context"]["span_id"]: span for span in spans}
    tree = sorted(
        (
            span["name"],
            by_id[span["parent_id"]]["name"] if span["parent_id"] else None,
            span["span_kind"],
            span["status_code"],
            span["attributes"].get("gen_ai.tool.call.id"),
        )
        for span in spans
    )
    assert tree == [
        # A denied call is ERROR, never shown as a success (README: span status).
        ("execute_tool run_command", "invoke_agent coder", "TOOL", "ERROR", "c2"),
        ("execute_tool view_file", "invoke_agent coder", "TOOL", "UNSET", "c1"),
        ("execute_tool view_file", "invoke_agent coder", "TOOL", "UNSET", "c3"),
        ("invoke_agent coder", "session coder", "AGENT", "UNSET", None),
        ("session coder", None, "CHAIN", "UNSET", None),
    ]
    assert len({span["context"]["trace_id"] for span in spans}) == 1

    tools = {
        span["attributes"]["gen_ai.tool.call.id"]: span
        for span in spans
        if span["span_kind"] == "TOOL"
    }
    assert only(tools["c2"]["attributes"], TOOL_KEYS) == {
        "session.id": "e2e-session",
        "gen_ai.tool.name": "run_command",
        "gen_ai.tool.call.id": "c2",
        "hookscope.tool.outcome": "denied",
        "hookscope.policy.decision": "deny",
        "hookscope.policy.outcome": "denied",
        "hookscope.policy.rule": "no-shell",
        "hookscope.policy.bucket": 0,
        "hookscope.policy.reason": "shell is off",
        "hookscope.policy.decided_by": "PolicyEnforcer",
    }
    # Phoenix's Metadata tab: outcome and who decided, without a custom query.
    metadata = {  # Phoenix flattens the JSON object into metadata.* attributes
        key: {
            name.removeprefix("metadata."): value
            for name, value in tools[key]["attributes"].items()
            if name.startswith("metadata.")
        }
        for key in ("c1", "c2", "c3")
    }
    assert metadata == {
        "c1": {"outcome": "succeeded", "decided_by": "PolicyEnforcer"},
        "c2": {"outcome": "denied", "rule": "no-shell", "decided_by": "PolicyEnforcer"},
        "c3": {
            "outcome": "recovered",
            "decided_by": "PolicyEnforcer",
            "error_type": "FileNotFoundError",
            "recovered_by": "RecoverMissingFiles",
        },
    }
    assert [(e["name"], e["attributes"]) for e in tools["c2"]["events"]] == [
        (
            "hookscope.pre_tool_call",
            {
                "hookscope.policy.decision": "deny",
                "hookscope.policy.outcome": "denied",
                "hookscope.policy.reason": "shell is off",
                "hookscope.policy.rule": "no-shell",
                "hookscope.policy.bucket": 0,
                "hookscope.policy.decided_by": "PolicyEnforcer",
            },
        )
    ]
    assert only(tools["c3"]["attributes"], TOOL_KEYS) == {
        "session.id": "e2e-session",
        "gen_ai.tool.name": "view_file",
        "gen_ai.tool.call.id": "c3",
        "hookscope.tool.outcome": "recovered",
        "hookscope.policy.decision": "allow",
        "hookscope.policy.outcome": "allowed",
        "hookscope.policy.reason": "no policy rule matches; allowed",
        "hookscope.policy.decided_by": "PolicyEnforcer",
        "error.type": "FileNotFoundError",
        "hookscope.recovery.recovered": True,
        "hookscope.recovery.hook": "RecoverMissingFiles",
    }
    assert [e["name"] for e in tools["c3"]["events"]] == [
        "hookscope.pre_tool_call",
        "hookscope.tool_error",
    ]
    assert [e["name"] for e in tools["c1"]["events"]] == [
        "hookscope.pre_tool_call",
        "hookscope.post_tool_call",
    ]

    session = next(span for span in spans if span["parent_id"] is None)
    assert only(
        session["attributes"],
        (
            "session.id",
            "gen_ai.conversation.id",
            "gen_ai.agent.name",
            "hookscope.session.outcome",
            "hookscope.session.turns",
            "hookscope.session.tool_calls",
            "hookscope.session.denied_calls",
            "hookscope.session.tool_errors",
        ),
    ) == {
        "session.id": "e2e-session",
        "gen_ai.conversation.id": "e2e-session",
        "gen_ai.agent.name": "coder",
        "hookscope.session.outcome": "completed",
        "hookscope.session.turns": 1,
        "hookscope.session.tool_calls": 3,
        "hookscope.session.denied_calls": 1,
        "hookscope.session.tool_errors": 1,
    }
    assert [e["name"] for e in session["events"]] == [
        "hookscope.session_start",
        "hookscope.session_end",
    ]
    turn = next(span for span in spans if span["span_kind"] == "AGENT")
    assert only(
        turn["attributes"],
        (
            "session.id",
            "hookscope.turn.index",
            "hookscope.turn.outcome",
            "gen_ai.usage.input_tokens",
        ),
    ) == {
        "session.id": "e2e-session",
        "hookscope.turn.index": 0,
        "hookscope.turn.outcome": "completed",
        "gen_ai.usage.input_tokens": 12,
    }


def read_sessions(phoenix: Phoenix, project: str, expected: int) -> dict[str, dict[str, Any]]:
    """Phoenix's sessions view of the project (``session_id`` → session) once complete."""
    url = f"{phoenix.url}/v1/projects/{project}/sessions?limit=100"
    deadline = time.monotonic() + READ_BACK_DEADLINE_S
    sessions: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        try:
            sessions = get_json(url)["data"]
        except urllib.error.HTTPError as error:
            if error.code != 404:
                raise
        if len(sessions) >= expected:
            return {session["session_id"]: session for session in sessions}
        time.sleep(0.2)
    raise AssertionError(f"Phoenix lists {len(sessions)} of {expected} sessions")


async def test_phoenix_sessions_view_groups_our_sessions_by_session_id(
    phoenix: Phoenix, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = f"hookscope-sessions-{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", f"openinference.project.name={project}")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", f"{phoenix.url}/v1/traces")
    telemetry = configure(service_name="hookscope-e2e", directory=tmp_path, set_global=False)
    # "turn" layout: each turn is its own trace, so one session spans several traces and only
    # session.id ties them together; the other session keeps the default, one trace.
    layouts = {"long-lived": ("turn", 2), "short": ("session", 1)}
    for session_id, (layout, turns) in layouts.items():
        runner = HookRunner(
            [OTelHook(telemetry.tracer_provider, telemetry.meter_provider, trace_layout=layout)]
        )
        async with runner.session(agent_name="coder", session_id=session_id) as session:
            for index in range(turns):
                async with session.turn(f"prompt {index}") as turn:
                    await turn.call_tool(ToolCall("view_file", {"path": "a.py"}), view_file)
    assert telemetry.shutdown(timeout_s=10.0)

    spans = read_spans(phoenix, project, expected=1 + 2 * 2 + 1 + 1 * 2)
    sessions = read_sessions(phoenix, project, expected=2)
    assert sorted(sessions) == ["long-lived", "short"]
    trace_ids = {
        session_id: {
            span["context"]["trace_id"]
            for span in spans
            if span["attributes"].get("session.id") == session_id
        }
        for session_id in layouts
    }
    # One trace per turn, and no empty first "turn": the session span's own trace carries
    # neither session.id nor gen_ai.conversation.id (which Phoenix reads as a session id), so
    # Phoenix does not list it as one of the session's turns.
    assert len(trace_ids["long-lived"]) == 2
    for session_id, session in sessions.items():
        assert {t["trace_id"] for t in session["traces"]} == trace_ids[session_id]
    roots = {s["context"]["trace_id"]: s for s in spans if not s["parent_id"]}
    for trace in sessions["long-lived"]["traces"]:  # every turn Phoenix lists is a real turn
        assert roots[trace["trace_id"]]["span_kind"] == "AGENT"
    (own,) = [
        s for s in spans if s["attributes"].get("hookscope.session.id") == "long-lived"
    ]  # the session span, found by its own attribute
    assert own["name"] == "session coder"


async def test_openinference_attributes_reach_phoenix_and_its_session_token_counts(
    phoenix: Phoenix, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = f"hookscope-oi-{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", f"openinference.project.name={project}")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", f"{phoenix.url}/v1/traces")
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")
    telemetry = configure(service_name="hookscope-e2e", directory=tmp_path, set_global=False)
    runner = HookRunner([OTelHook(telemetry.tracer_provider, telemetry.meter_provider)])
    async with (
        runner.session(agent_name="coder", session_id="oi-session", provider="openai") as session,
        session.turn("fix the bug") as turn,
    ):
        await turn.llm_request(
            LlmRequest(model="gpt-test", messages=[{"role": "user", "content": "fix the bug"}])
        )
        await turn.llm_response(
            LlmResponse(model="gpt-test", text="reading a.py", usage=Usage(12, 5))
        )
        await turn.call_tool(ToolCall("view_file", {"path": "a.py"}, id="c1"), view_file)
        turn.respond(ChatResponse("done", model="gpt-test"))
    assert telemetry.shutdown(timeout_s=10.0)

    spans = read_spans(phoenix, project, expected=4)
    llm = next(span for span in spans if span["span_kind"] == "LLM")
    assert only(
        llm["attributes"],
        (
            "llm.model_name",
            "llm.token_count.prompt",
            "llm.token_count.completion",
            "llm.token_count.total",
        ),
    ) == {
        "llm.model_name": "gpt-test",
        "llm.token_count.prompt": 12,
        "llm.token_count.completion": 5,
        "llm.token_count.total": 17,
    }
    tool = next(span for span in spans if span["span_kind"] == "TOOL")
    assert tool["attributes"]["tool.name"] == "view_file"
    assert "a.py" in tool["attributes"]["input.value"]
    assert "contents of a.py" in tool["attributes"]["output.value"]
    session = read_sessions(phoenix, project, expected=1)["oi-session"]
    assert (session["token_count_prompt"], session["token_count_completion"]) == (12, 5)


def graphql(phoenix: Phoenix, query: str) -> Any:
    request = urllib.request.Request(
        f"{phoenix.url}/graphql",
        json.dumps({"query": query}).encode(),
        {"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        answer = json.load(response)
    assert "errors" not in answer, answer
    return answer["data"]


def span_count(phoenix: Phoenix, project: str, condition: str) -> int:
    """How many of ``project``'s spans Phoenix's own filter ``condition`` selects."""
    quoted = json.dumps(condition)
    data = graphql(
        phoenix,
        f"{{ projects {{ edges {{ node {{ name recordCount(filterCondition: {quoted}) }} }} }} }}",
    )
    counts = {e["node"]["name"]: e["node"]["recordCount"] for e in data["projects"]["edges"]}
    return int(counts[project])


async def test_the_readmes_phoenix_filters_find_denials(
    phoenix: Phoenix, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = f"hookscope-filters-{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", f"openinference.project.name={project}")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", f"{phoenix.url}/v1/traces")
    telemetry = configure(service_name="hookscope-e2e", directory=tmp_path, set_global=False)
    await run_session(telemetry)
    assert telemetry.shutdown(timeout_s=10.0)
    read_spans(phoenix, project, expected=5)
    # README, "Finding denials": each documented filter, as Phoenix evaluates it.
    assert span_count(phoenix, project, "metadata['outcome'] == 'denied'") == 1
    assert (
        span_count(phoenix, project, "span_kind == 'TOOL' and metadata['outcome'] == 'denied'") == 1
    )
    assert span_count(phoenix, project, "status_code == 'ERROR'") == 1
    assert (
        span_count(phoenix, project, "attributes['hookscope']['tool']['outcome'] == 'denied'") == 1
    )
    # ... and the dotted form, which the README warns matches nothing.
    assert span_count(phoenix, project, "attributes['hookscope.tool.outcome'] == 'denied'") == 0
    assert span_count(phoenix, project, "metadata['outcome'] == 'recovered'") == 1
