"""The scripted model server the SDK adapters' e2e tests run against."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest

from tests.support.model_server import INPUT_TOKENS, OUTPUT_TOKENS, ScriptedModelServer

SCRIPT: dict[str, list[Any]] = {
    "add please": [
        {"tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 3}}]},
        {"text": "sum is {tool_result}", "usage": {"input_tokens": 7, "output_tokens": 3}},
    ],
    "fail please": [{"status": 500, "error": "scripted outage"}],
}


def post(url: str, body: dict[str, Any]) -> tuple[int, bytes]:
    request = urllib.request.Request(
        url, json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def test_openai_json_walks_the_script_and_quotes_the_tool_result() -> None:
    with ScriptedModelServer(SCRIPT) as srv:
        url = srv.base_url + "/v1/chat/completions"
        first = json.loads(post(url, {"messages": [{"role": "user", "content": "add please"}]})[1])
        call = first["choices"][0]["message"]["tool_calls"][0]
        second = json.loads(
            post(
                url,
                {
                    "messages": [
                        {"role": "user", "content": "add please"},
                        {"role": "assistant", "content": None, "tool_calls": [call]},
                        {"role": "tool", "tool_call_id": call["id"], "content": "5"},
                    ]
                },
            )[1]
        )
    assert call["function"] == {"name": "add", "arguments": '{"a": 2, "b": 3}'}
    assert first["usage"]["prompt_tokens"] == INPUT_TOKENS
    assert second["choices"][0]["message"]["content"] == "sum is 5"
    assert second["usage"] == {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}
    assert [r.step for r in srv.model_requests()] == [0, 1]


def test_anthropic_sse_streams_tool_use_and_usage() -> None:
    with ScriptedModelServer(SCRIPT) as srv:
        status, raw = post(
            srv.base_url + "/v1/messages?beta=true",
            {"stream": True, "messages": [{"role": "user", "content": "add please"}]},
        )
    events = [
        json.loads(line[len("data: ") :])
        for line in raw.decode().splitlines()
        if line.startswith("data: ")
    ]
    assert status == 200
    kinds = [e["type"] for e in events]
    assert kinds[0] == "message_start"
    assert kinds[-1] == "message_stop"
    start = next(e for e in events if e["type"] == "content_block_start")
    assert start["content_block"]["name"] == "add"
    delta = next(e for e in events if e["type"] == "message_delta")
    assert delta["usage"] == {"output_tokens": OUTPUT_TOKENS}
    assert delta["delta"]["stop_reason"] == "tool_use"


@pytest.mark.parametrize("path", ["/v1/messages", "/v1/chat/completions"])
def test_a_scripted_failure_is_an_http_error(path: str) -> None:
    with ScriptedModelServer(SCRIPT) as srv:
        status, raw = post(
            srv.base_url + path, {"messages": [{"role": "user", "content": "fail please"}]}
        )
    assert status == 500
    assert b"scripted outage" in raw


def test_only_loopback_addresses_are_served() -> None:
    with pytest.raises(ValueError, match="loopback"):
        ScriptedModelServer({}, host="0.0.0.0")
