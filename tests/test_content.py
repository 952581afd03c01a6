"""Content capture: what a captured value looks like, and what never appears in it."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from hookscope.hooks import Hook
from hookscope.runner import HookRunner
from hookscope.telemetry import OTelHook
from hookscope.telemetry.content import (
    ContentCapture,
    capture_from_env,
    input_messages,
    output_messages,
    render,
)
from hookscope.testing import recording, span_tree
from hookscope.types import (
    ChatResponse,
    HookResult,
    LlmRequest,
    LlmResponse,
    RequestDecision,
    ToolCall,
    Usage,
)


@dataclasses.dataclass
class Creds:
    user: str
    api_key: str


class Session:
    def __init__(self) -> None:
        self.cookie = "c=1"
        self.host = "h"
        self._private = "p"


class Opaque:
    __slots__ = ("secret",)

    def __init__(self) -> None:
        self.secret = "s3"

    def __repr__(self) -> str:
        return "Opaque(secret='s3')"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"password": "hunter2", "n": 1}, '{"password": "[REDACTED]", "n": 1}'),
        (
            [("Authorization", "Bearer x"), ("Accept", "json")],
            '[["Authorization", "[REDACTED]"], ["Accept", "json"]]',
        ),
        ({"login": Creds("ada", "k-1")}, '{"login": {"user": "ada", "api_key": "[REDACTED]"}}'),
        (Session(), '{"cookie": "[REDACTED]", "host": "h"}'),
        (Opaque(), '"<Opaque>"'),
        ({b"raw": 1, 2: "two"}, """{"b'raw'": 1, "2": "two"}"""),
        (
            {"nested": [{"x": {"secret_token": "t"}}]},
            '{"nested": [{"x": {"secret_token": "[REDACTED]"}}]}',
        ),
        ("plain text", "plain text"),
    ],
    ids=[
        "secret-key",
        "header-pairs",
        "dataclass-field",
        "object-attribute",
        "opaque-object",
        "non-str-keys",
        "nested",
        "string",
    ],
)
def test_render_redacts_and_never_leaks_a_repr(value: Any, expected: str) -> None:
    assert render(value) == expected


def test_render_never_raises() -> None:
    looped: list[Any] = []
    looped.append(looped)
    assert render(looped).startswith("[[[[")
    assert render(float("nan")) == "NaN"


def test_capture_mode_values(monkeypatch: pytest.MonkeyPatch) -> None:
    assert capture_from_env({}) is ContentCapture.NO_CONTENT
    assert (
        capture_from_env({"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "span_only"})
        is ContentCapture.SPAN_ONLY
    )
    assert (
        capture_from_env({"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": " NO_CONTENT "})
        is ContentCapture.NO_CONTENT
    )


@pytest.mark.parametrize(
    ("raw", "mode"),
    [
        ("true", ContentCapture.SPAN_AND_EVENT),
        ("TRUE", ContentCapture.SPAN_AND_EVENT),
        ("false", ContentCapture.NO_CONTENT),
        ("False", ContentCapture.NO_CONTENT),
        ("event_only", ContentCapture.EVENT_ONLY),
        ("SPAN_AND_EVENT", ContentCapture.SPAN_AND_EVENT),
    ],
)
def test_capture_mode_accepts_true_false_and_the_four_modes(raw: str, mode: ContentCapture) -> None:
    assert capture_from_env({"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": raw}) is mode


@pytest.mark.parametrize("raw", ["yes", "1", "on", "SPAN"])
def test_any_other_capture_mode_is_an_error_at_start_up(
    monkeypatch: pytest.MonkeyPatch, raw: str
) -> None:
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", raw)
    with pytest.raises(
        ValueError,
        match=f"'{raw}' is not a capture mode; use true, false or one of NO_CONTENT, SPAN_ONLY",
    ):
        OTelHook()


def test_messages_follow_the_conventions_schema() -> None:
    assert input_messages("hello") == [
        {"role": "user", "parts": [{"type": "text", "content": "hello"}]}
    ]
    chat = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": [{"type": "text", "text": "weather?"}]},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
    ]
    assert input_messages(chat) == [
        {"role": "system", "parts": [{"type": "text", "content": "be brief"}]},
        {"role": "user", "parts": [{"type": "text", "content": "weather?"}]},
        {
            "role": "assistant",
            "parts": [
                {
                    "type": "tool_call",
                    "name": "get_weather",
                    "arguments": '{"city": "Oslo"}',
                    "id": "c1",
                }
            ],
        },
        {
            "role": "tool",
            "parts": [{"type": "tool_call_response", "response": "sunny", "id": "c1"}],
        },
    ]
    assert output_messages("done", (ToolCall("f", {"x": 1}, id="c2"),), ("tool_calls",)) == [
        {
            "role": "assistant",
            "parts": [
                {"type": "text", "content": "done"},
                {"type": "tool_call", "name": "f", "arguments": '{"x": 1}', "id": "c2"},
            ],
            "finish_reason": "tool_calls",
        }
    ]


SECRET_ARGS = {
    "url": "https://x",
    "headers": {"Authorization": "Bearer s3cr3t", "n": [{"api_key": "k"}]},
}
EXPECTED_ARGS = (
    '{"url": "https://x", "headers": {"Authorization": "[REDACTED]", "n": [{"api_key": '
    '"[REDACTED]"}]}}'
)
EXPECTED_RESULT = '{"body": "ok", "token": "[REDACTED]"}'


async def _converse(hook: OTelHook) -> None:
    runner = HookRunner([hook])
    async with runner.session(provider="openai") as session, session.turn("hello") as turn:
        await turn.llm_request(LlmRequest("m1", [{"role": "user", "content": "hello"}]))
        await turn.llm_response(
            LlmResponse("m1", "calling fetch", usage=Usage(3, 2), finish_reasons=("stop",))
        )
        await turn.call_tool(
            ToolCall("fetch", SECRET_ARGS), lambda url, headers: {"body": "ok", "token": "t0k"}
        )
        turn.respond(ChatResponse("bye"))


def _user(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "parts": [{"type": "text", "content": text}]}]


def _assistant(text: str) -> list[dict[str, Any]]:
    return [
        {"role": "assistant", "parts": [{"type": "text", "content": text}], "finish_reason": "stop"}
    ]


@pytest.mark.parametrize(
    ("mode", "on_span", "on_event"),
    [("SPAN_ONLY", True, False), ("EVENT_ONLY", False, True), ("SPAN_AND_EVENT", True, True)],
)
async def test_captured_content_goes_where_the_mode_says_with_secrets_redacted(
    mode: str, on_span: bool, on_event: bool
) -> None:
    with recording(capture_content=ContentCapture(mode)) as rec:
        await _converse(rec.hook)
    spans = {s.name: dict(s.attributes or {}) for s in rec.spans}
    tool, chat, turn = spans["execute_tool fetch"], spans["chat m1"], spans["invoke_agent agent"]
    on = (lambda value: value) if on_span else (lambda value: None)
    assert tool.get("gen_ai.tool.call.arguments") == on(EXPECTED_ARGS)
    assert tool.get("input.value") == on(EXPECTED_ARGS)
    assert tool.get("gen_ai.tool.call.result") == on(EXPECTED_RESULT)
    assert tool.get("output.value") == on(EXPECTED_RESULT)
    assert chat.get("gen_ai.input.messages") == on(json.dumps(_user("hello")))
    assert chat.get("gen_ai.output.messages") == on(json.dumps(_assistant("calling fetch")))
    assert chat.get("output.value") == on("calling fetch")
    assert turn.get("gen_ai.input.messages") == on(json.dumps(_user("hello")))
    assert turn.get("input.value") == on("hello")
    assert turn.get("gen_ai.output.messages") == on(json.dumps(_assistant("bye")))
    # Span events never carry content: events go through the Logs API.
    for span in rec.spans:
        for event in span.events:
            assert not {"gen_ai.tool.call.arguments", "gen_ai.input.messages"} & set(
                event.attributes or {}
            )
    events = [
        (log.log_record.event_name, dict(log.log_record.attributes or {})) for log in rec.logs
    ]
    if not on_event:
        assert events == []
        return
    chat_span = next(s for s in rec.spans if s.name == "chat m1")
    assert rec.logs[0].log_record.span_id == chat_span.context.span_id
    assert events == [
        (
            "gen_ai.client.inference.operation.details",
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "m1",
                "gen_ai.response.model": "m1",
                "gen_ai.provider.name": "openai",
                "gen_ai.response.finish_reasons": ("stop",),
                "gen_ai.input.messages": _user_event("hello"),
                "gen_ai.output.messages": _assistant_event("calling fetch"),
            },
        ),
        (
            "gen_ai.client.inference.operation.details",
            {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": "agent",
                "gen_ai.provider.name": "openai",
                "gen_ai.input.messages": _user_event("hello"),
                "gen_ai.output.messages": _assistant_event("bye"),
            },
        ),
    ]


def _user_event(text: str) -> Any:
    return tuple(_freeze(m) for m in _user(text))


def _assistant_event(text: str) -> Any:
    return tuple(_freeze(m) for m in _assistant(text))


def _freeze(value: Any) -> Any:
    """Log attributes as the SDK stores them: sequences become tuples."""
    if isinstance(value, dict):
        return {k: _freeze(v) for k, v in value.items()}
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value


async def test_no_secret_reaches_any_signal_with_capture_on() -> None:
    with recording(capture_content=ContentCapture.SPAN_AND_EVENT) as rec:
        await _converse(rec.hook)
    dumped = json.dumps(span_tree(rec.spans), default=str) + repr(
        [log.log_record.attributes for log in rec.logs]
    )
    assert "s3cr3t" not in dumped
    assert "t0k" not in dumped


async def test_long_content_is_truncated() -> None:
    with recording(capture_content=ContentCapture.SPAN_ONLY) as rec:
        async with HookRunner([rec.hook]).session() as session, session.turn() as turn:
            await turn.call_tool(ToolCall("big"), lambda: "x" * 5000)
    result = rec.spans[0].attributes["gen_ai.tool.call.result"]  # type: ignore[index]
    assert result == "x" * 2048 + "…[truncated 2952 chars]"


class ReadOnlyPaths(Hook):
    def pre_tool_call(self, context: Any, call: ToolCall) -> HookResult | None:
        return HookResult.deny("/etc is read-only")


async def test_odd_arguments_under_content_capture_keep_a_denial_recorded_as_denied() -> None:
    odd = {b"raw": object(), ("k", 1): {1, 2}}
    with recording(capture_content=ContentCapture.SPAN_AND_EVENT) as rec:
        runner = HookRunner([rec.hook, ReadOnlyPaths()])
        async with runner.session() as session, session.turn() as turn:
            outcome = await turn.call_tool(
                ToolCall("write_file", {"path": "/etc/x", "odd": odd}), lambda **_: None
            )
    assert outcome.allowed is False
    (tool,) = [s for s in rec.spans if s.name == "execute_tool write_file"]
    attributes = tool.attributes or {}
    assert attributes["hookscope.tool.outcome"] == "denied"
    assert attributes["gen_ai.tool.call.arguments"] == (
        """{"path": "/etc/x", "odd": {"b'raw'": "<object>", "('k', 1)": [1, 2]}}"""
    )


class BlockEverything(Hook):
    def pre_llm_request(self, context: Any, request: LlmRequest) -> RequestDecision:
        return RequestDecision.block("no")


async def test_a_blocked_model_request_keeps_its_messages_on_the_chat_span() -> None:
    with recording(capture_content=ContentCapture.SPAN_ONLY) as rec:
        runner = HookRunner([rec.hook, BlockEverything()])
        async with runner.session(provider="openai") as session, session.turn() as turn:
            decision = await turn.llm_request(LlmRequest("m1", [{"role": "user", "content": "hi"}]))
    assert decision.action == "block"
    (chat,) = [s for s in rec.spans if s.name == "chat m1"]
    attributes = dict(chat.attributes or {})
    assert attributes["gen_ai.input.messages"] == json.dumps(_user("hi"))
    assert attributes["hookscope.guardrail.request"] == "block"
    assert "gen_ai.output.messages" not in attributes
    # The model was never called: no operation duration for it.
    assert "gen_ai.client.operation.duration" not in rec.metric_points()


async def test_a_hooks_own_redaction_patterns_apply_to_everything_it_captures() -> None:
    with recording(capture_content=ContentCapture.SPAN_AND_EVENT) as rec:
        hook = OTelHook(
            rec.tracer_provider,
            rec.meter_provider,
            capture_content=ContentCapture.SPAN_AND_EVENT,
            logger_provider=rec.logger_provider,
            redact_patterns=[r"EMP-\d{6}"],
        )
        runner = HookRunner([hook])
        async with runner.session() as session, session.turn("ask EMP-123456") as turn:
            await turn.llm_request(LlmRequest("m", [{"role": "user", "content": "EMP-123456"}]))
            await turn.llm_response(LlmResponse("m", "EMP-654321 found"))
            await turn.call_tool(ToolCall("lookup", {"id": "EMP-111111"}), lambda id: "EMP-222222")
            turn.respond(ChatResponse("EMP-333333"))
    dumped = json.dumps(span_tree(rec.spans), default=str) + repr(
        [log.log_record.attributes for log in rec.logs]
    )
    assert "EMP-" not in dumped
    assert "[REDACTED]" in dumped
    # Another hook without the pattern is not affected by it.
    with recording(capture_content=ContentCapture.SPAN_ONLY) as plain:
        async with HookRunner([plain.hook]).session() as session, session.turn("EMP-123456"):
            pass
    assert "EMP-123456" in json.dumps(span_tree(plain.spans), default=str)
