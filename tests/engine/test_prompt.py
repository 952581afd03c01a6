"""Prompt hooks against a real OpenAI-compatible server on 127.0.0.1 (scripted replies)."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest

from hookscope.engine import PromptHook
from hookscope.runner import HookRunner
from hookscope.types import HookResult
from tests.support.openai_server import Reply, ScriptedOpenAIServer

from .conftest import Runs, dispatch
from .test_command import CALL

SCRIPTS = {
    "JUDGE-DENY": [
        Reply(text='{"ok": false, "reason": "ls lists secrets"}', input_tokens=120, output_tokens=9)
    ],
    "JUDGE-ALLOW": [Reply(text='{"ok": true}')],
    "JUDGE-FENCED": [Reply(text='```json\n{"ok": false, "reason": "fenced"}\n```')],
    "JUDGE-PROSE": [Reply(text="Looks fine to me!")],
    "JUDGE-NO-OK": [Reply(text='{"reason": "forgot ok"}')],
}


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(SCRIPTS, model="judge-1") as running:
        yield running


def judge(server: ScriptedOpenAIServer, key: str, **options: Any) -> PromptHook:
    options.setdefault("prompt", f"{key}: may the agent run this? $ARGUMENTS")
    return PromptHook(
        "pre_tool_call", model="small", base_url=server.base_url, name="judge", **options
    )


async def test_ok_false_denies_with_the_reason_and_reports_the_model_call(
    server: ScriptedOpenAIServer,
) -> None:
    runs = Runs()
    runner = HookRunner([judge(server, "JUDGE-DENY")])
    runner.observe(runs)
    before = len(server.requests)
    result = (await dispatch(runner, "pre_tool_call", CALL)).result
    assert (result.allow, result.message) == (False, "ls lists secrets")
    (body,) = server.requests[before:]
    assert (body["model"], body["stream"]) == ("small", False)
    user = body["messages"][-1]
    assert user["role"] == "user"
    prefix = "JUDGE-DENY: may the agent run this? "
    assert user["content"].startswith(prefix)
    envelope = json.loads(user["content"][len(prefix) :])
    assert (envelope["hook_event_name"], envelope["tool_name"], envelope["tool_input"]) == (
        "PreToolUse",
        "run_command",
        {"CommandLine": "ls", "cwd": "/w"},
    )
    (run,) = runs.runs
    assert (run.hook_type, run.verdict) == ("prompt", "deny")
    port = int(server.base_url.rsplit(":", 1)[1].split("/")[0])
    assert run.attributes == {
        "gen_ai.request.model": "small",
        "gen_ai.response.model": "judge-1",
        "gen_ai.response.finish_reasons": "stop",
        "gen_ai.usage.input_tokens": 120,
        "gen_ai.usage.output_tokens": 9,
        "server.address": "127.0.0.1",
        "server.port": port,
    }


async def test_ok_true_allows_and_reports_an_allow(server: ScriptedOpenAIServer) -> None:
    runs = Runs()
    runner = HookRunner([judge(server, "JUDGE-ALLOW")])
    runner.observe(runs)
    assert (await dispatch(runner, "pre_tool_call", CALL)).result == HookResult()
    assert [run.verdict for run in runs.runs] == ["allow"]


async def test_a_fenced_json_answer_is_read(server: ScriptedOpenAIServer) -> None:
    runner = HookRunner([judge(server, "JUDGE-FENCED")])
    assert (await dispatch(runner, "pre_tool_call", CALL)).result.message == "fenced"


async def test_a_template_without_the_placeholder_gets_the_envelope_appended(
    server: ScriptedOpenAIServer,
) -> None:
    runner = HookRunner([judge(server, "JUDGE-ALLOW", prompt="JUDGE-ALLOW: judge this call.")])
    before = len(server.requests)
    await dispatch(runner, "pre_tool_call", CALL)
    content = server.requests[before]["messages"][-1]["content"]
    head, _, tail = content.partition("\n\n")
    assert head == "JUDGE-ALLOW: judge this call."
    assert json.loads(tail)["hookscope_event"] == "pre_tool_call"


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.parametrize(
    ("key", "detail"),
    [
        ("JUDGE-PROSE", 'the model did not answer {"ok": true|false, "reason": "..."}'),
        ("JUDGE-NO-OK", 'the model did not answer {"ok": true|false, "reason": "..."}'),
        ("NO-SCRIPT", "the model endpoint answered HTTP 500"),
    ],
)
async def test_anything_but_an_ok_verdict_fails_closed(
    server: ScriptedOpenAIServer, key: str, detail: str
) -> None:
    runner = HookRunner([judge(server, key)])
    result = (await dispatch(runner, "pre_tool_call", CALL)).result
    assert (
        result.message
        == f"hook 'judge' failed in pre_tool_call (HookFailure: {detail}); failing closed"
    )


async def test_an_unreachable_endpoint_fails_closed_without_quoting_the_url() -> None:
    hook = PromptHook(
        "pre_tool_call",
        prompt="x",
        model="m",
        base_url=f"http://user:secret@127.0.0.1:{_closed_port()}/v1",
        name="judge",
    )
    result = (await dispatch(HookRunner([hook]), "pre_tool_call", CALL)).result
    assert result.message == (
        "hook 'judge' failed in pre_tool_call (HookFailure: cannot reach the model endpoint "
        "(ConnectError)); failing closed"
    )


async def test_a_missing_api_key_fails_and_on_failure_allow_lets_it_pass(
    server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HOOKSCOPE_TEST_KEY", raising=False)
    closed = HookRunner([judge(server, "JUDGE-DENY", api_key_env="HOOKSCOPE_TEST_KEY")])
    result = (await dispatch(closed, "pre_tool_call", CALL)).result
    assert result.message == (
        "hook 'judge' failed in pre_tool_call (HookFailure: environment variable "
        "HOOKSCOPE_TEST_KEY (api_key_env) is not set); failing closed"
    )
    opened = HookRunner(
        [judge(server, "JUDGE-DENY", api_key_env="HOOKSCOPE_TEST_KEY", fail_open=True)]
    )
    assert (await dispatch(opened, "pre_tool_call", CALL)).result == HookResult()


class _Recording(BaseHTTPRequestHandler):
    """Answers every chat completion with ok, recording the headers it was sent."""

    seen: ClassVar[list[dict[str, str]]] = []
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.seen.append(dict(self.headers.items()))
        message = {"role": "assistant", "content": '{"ok": true}'}
        body = json.dumps({"model": "m", "choices": [{"message": message}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


async def test_the_api_key_is_sent_as_a_bearer_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOOKSCOPE_TEST_KEY", "sk-test")
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Recording)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        hook = PromptHook(
            "pre_tool_call",
            prompt="x",
            model="m",
            base_url=f"http://127.0.0.1:{httpd.server_address[1]}/v1",
            api_key_env="HOOKSCOPE_TEST_KEY",
        )
        assert (await dispatch(HookRunner([hook]), "pre_tool_call", CALL)).result == HookResult()
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()
    assert [headers["Authorization"] for headers in _Recording.seen] == ["Bearer sk-test"]
