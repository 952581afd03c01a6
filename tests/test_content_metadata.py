"""``capture="metadata"`` (DESIGN §11): where content would be captured, only each value's type
and size are recorded, never the value itself."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from hookscope.runner import HookRunner
from hookscope.telemetry import OTelHook
from hookscope.telemetry.content import ContentCapture, capture_from_env, describe
from hookscope.testing import recording
from hookscope.types import ChatResponse, LlmRequest, LlmResponse, Question, ToolCall, Usage

#: Every value the conversation below carries; none may appear in any signal.
PROMPT = "mail ana@example.org the plan"
SYSTEM = "you are terse"
MODEL_TEXT = "calling send_mail now"
ARGS = {"to": "ana@example.org", "body": "quarterly-plan-XYZ", "cc": ["bob@example.org"]}
RESULT = {"status": "delivered-OK", "id": 4242}
QUESTION = "really send to ana?"
ANSWER_TEXT = "bye for now"
VALUES = (
    "ana@example.org",
    "the plan",
    "terse",
    "calling send_mail",
    "quarterly-plan-XYZ",
    "bob@example.org",
    "delivered-OK",
    "4242",
    "really send",
    "bye for now",
)


@dataclasses.dataclass
class Mail:
    to: str
    size: int


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("héllo", {"type": "str", "length": 5}),
        (b"\x00\x01\x02", {"type": "bytes", "length": 3}),
        ([1, "a", None], {"type": "list", "length": 3}),
        (7, {"type": "int"}),
        (None, {"type": "null"}),
        ((1.5, True), {"type": "list", "length": 2}),
        ({"a", "b"}, {"type": "set", "length": 2}),
        (False, {"type": "bool"}),
        (
            {"path": "/etc/hosts", "n": 3, "flags": ["a", "b"], "opts": {"x": 1}},
            {
                "type": "dict",
                "length": 4,
                "fields": {
                    "path": {"type": "str", "length": 10},
                    "n": {"type": "int"},
                    "flags": {"type": "list", "length": 2},
                    "opts": {"type": "dict", "length": 1},
                },
            },
        ),
        (
            Mail("ana@example.org", 12),
            {
                "type": "Mail",
                "fields": {"to": {"type": "str", "length": 15}, "size": {"type": "int"}},
            },
        ),
        # keys can be data too: redacted like content
        (
            {"ana@example.org": "x"},
            {
                "type": "dict",
                "length": 1,
                "fields": {"[REDACTED EMAIL]": {"type": "str", "length": 1}},
            },
        ),
    ],
    ids=[
        "str",
        "bytes",
        "list",
        "int",
        "none",
        "tuple",
        "set",
        "bool",
        "dict",
        "dataclass",
        "pii-key",
    ],
)
def test_describe_tells_type_and_size_only(value: Any, expected: dict[str, Any]) -> None:
    assert describe(value) == expected


def test_describe_never_raises() -> None:
    class Hostile:
        def __len__(self) -> int:
            raise RuntimeError("no")

    class HostileDict(dict[str, str]):
        def __len__(self) -> int:
            raise RuntimeError("no")

    assert describe(Hostile()) == {"type": "Hostile"}
    assert describe(HostileDict(a="b")) == {"type": "dict"}


@pytest.mark.parametrize("raw", ["metadata", "METADATA", " Metadata "])
def test_metadata_is_a_capture_mode(raw: str) -> None:
    env = {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": raw}
    assert capture_from_env(env) is ContentCapture.METADATA
    mode = ContentCapture.METADATA
    assert (mode.on_spans, mode.on_events, mode.metadata_only) == (True, True, True)
    assert OTelHook(capture_content=raw).capture is ContentCapture.METADATA


def test_an_unknown_capture_content_string_is_an_error() -> None:
    with pytest.raises(ValueError, match="capture_content='sizes' is not a capture mode"):
        OTelHook(capture_content="sizes")


def _text(value: str) -> dict[str, Any]:
    return {"type": "text", "metadata": {"type": "str", "length": len(value)}}


async def _converse(hook: OTelHook) -> None:
    async def ask(questions: Any) -> None:
        return None

    runner = HookRunner([hook])
    async with runner.session(provider="openai") as session, session.turn(PROMPT) as turn:
        messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": PROMPT}]
        await turn.llm_request(LlmRequest("m1", messages))
        await turn.llm_response(
            LlmResponse(
                "m1",
                MODEL_TEXT,
                tool_calls=[ToolCall("send_mail", ARGS, id="c1")],
                usage=Usage(3, 2),
                finish_reasons=("tool_calls",),
            )
        )
        await turn.call_tool(ToolCall("send_mail", ARGS), lambda to, body, cc: RESULT)
        await turn.ask([Question(QUESTION)])
        turn.respond(ChatResponse(ANSWER_TEXT))


async def test_metadata_capture_records_sizes_and_types_and_no_value() -> None:
    with recording(capture_content=ContentCapture.METADATA) as rec:
        await _converse(rec.hook)
    spans = {s.name: dict(s.attributes or {}) for s in rec.spans}
    tool, chat = spans["execute_tool send_mail"], spans["chat m1"]
    turn, interaction = spans["invoke_agent agent"], spans["interaction agent"]
    args_shape = {
        "type": "dict",
        "length": 3,
        "fields": {
            "to": {"type": "str", "length": 15},
            "body": {"type": "str", "length": 18},
            "cc": {"type": "list", "length": 1},
        },
    }
    result_shape = {
        "type": "dict",
        "length": 2,
        "fields": {"status": {"type": "str", "length": 12}, "id": {"type": "int"}},
    }
    assert json.loads(tool["gen_ai.tool.call.arguments"]) == args_shape
    assert json.loads(tool["input.value"]) == args_shape
    assert json.loads(tool["gen_ai.tool.call.result"]) == result_shape
    assert json.loads(tool["output.value"]) == result_shape
    assert json.loads(chat["gen_ai.input.messages"]) == [
        {"role": "system", "parts": [_text(SYSTEM)]},
        {"role": "user", "parts": [_text(PROMPT)]},
    ]
    assert json.loads(chat["gen_ai.output.messages"]) == [
        {
            "role": "assistant",
            "parts": [
                _text(MODEL_TEXT),
                {"type": "tool_call", "name": "send_mail", "arguments": args_shape, "id": "c1"},
            ],
            "finish_reason": "tool_calls",
        }
    ]
    assert json.loads(chat["output.value"]) == {"type": "str", "length": len(MODEL_TEXT)}
    assert json.loads(turn["gen_ai.input.messages"]) == [{"role": "user", "parts": [_text(PROMPT)]}]
    assert json.loads(turn["input.value"]) == {"type": "str", "length": len(PROMPT)}
    assert json.loads(turn["output.value"]) == {"type": "str", "length": len(ANSWER_TEXT)}
    question_shape = json.loads(interaction["hookscope.interaction.questions"])
    assert question_shape == {"type": "list", "length": 1}
    # The log events carry the same shapes, structured.
    events = [dict(log.log_record.attributes or {}) for log in rec.logs]
    assert [e["gen_ai.operation.name"] for e in events] == ["chat", "invoke_agent"]
    assert json.loads(json.dumps(events[1]["gen_ai.output.messages"])) == [
        {"role": "assistant", "parts": [_text(ANSWER_TEXT)], "finish_reason": "stop"}
    ]
    # No value, anywhere: span attributes, span events, log records.
    dumped = _dump(rec)
    for value in VALUES:
        assert value not in dumped, value


async def test_the_same_conversation_with_content_on_shows_those_values() -> None:
    """The check above can fail: with full capture, the (non-secret) values are there."""
    with recording(capture_content=ContentCapture.SPAN_AND_EVENT) as rec:
        await _converse(rec.hook)
    dumped = _dump(rec)
    assert [value for value in VALUES if value not in dumped] == [
        "ana@example.org",
        "bob@example.org",
    ]


def _dump(rec: Any) -> str:
    return json.dumps(
        [
            {
                "name": s.name,
                "attributes": dict(s.attributes or {}),
                "events": [dict(e.attributes or {}) for e in s.events],
            }
            for s in rec.spans
        ],
        default=str,
    ) + repr([(log.log_record.body, log.log_record.attributes) for log in rec.logs])
