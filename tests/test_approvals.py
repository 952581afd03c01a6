"""builtins.Approvals: a person answers confirm questions from another process or over HTTP,
with a deadline; the wait is a blocked_on_user span and a duration histogram (DESIGN §11)."""

from __future__ import annotations

import asyncio
import json
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from hookscope import HookResult, HookRunner, ToolCall, hooks
from hookscope.builtins import Approvals
from hookscope.builtins import approvals as module
from hookscope.telemetry import semconv as sc
from hookscope.testing import recording

HOOKSCOPE = str(Path(sys.executable).with_name("hookscope"))


@hooks.pre_tool_call_decide
def confirm_deploys(call: ToolCall) -> HookResult | None:
    return HookResult.ask(f"deploy to {call.args['env']}?") if call.name == "deploy" else None


async def cli(*argv: str) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        HOOKSCOPE,
        "approvals",
        *argv,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def waiting_id(directory: Path) -> str:
    """The one request waiting, polled through the CLI with a deadline."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        status, out, _ = await cli("--dir", str(directory), "list")
        assert status == 0
        if not out.startswith("no approval requests"):
            return out.split()[0]
        await asyncio.sleep(0.05)
    raise AssertionError("no approval request appeared")


async def deploy(runner: HookRunner) -> Any:
    async with runner.session(agent_name="ops") as session, session.turn("ship it") as turn:
        return await turn.call_tool(
            ToolCall("deploy", {"env": "prod"}), lambda env: f"deployed {env}"
        )


def providers(rec: Any) -> dict[str, Any]:
    return {"tracer_provider": rec.tracer_provider, "meter_provider": rec.meter_provider}


def blocked_span(rec: Any) -> dict[str, Any]:
    (span,) = [s for s in rec.spans if s.name == sc.SPAN_BLOCKED_ON_USER]
    (tool,) = [s for s in rec.spans if s.name == "execute_tool deploy"]
    assert span.parent is not None
    assert span.parent.span_id == tool.context.span_id  # the wait sits under the tool call
    return dict(span.attributes or {})


def test_semconv_names_the_approval_telemetry() -> None:
    assert (module.SPAN_BLOCKED, module.METRIC_DURATION) == (
        sc.SPAN_BLOCKED_ON_USER,
        sc.METRIC_APPROVAL_DURATION,
    )
    assert (module.ATTR_ID, module.ATTR_CHANNEL, module.ATTR_OUTCOME, module.ATTR_APPROVER) == (
        sc.APPROVAL_ID,
        sc.APPROVAL_CHANNEL,
        sc.APPROVAL_OUTCOME,
        sc.APPROVAL_APPROVER,
    )


def test_another_process_approves_through_the_queue_directory(tmp_path: Path) -> None:
    queue = tmp_path / "approvals"
    with recording() as rec:

        async def run() -> Any:
            runner = HookRunner(
                [rec.hook, confirm_deploys, Approvals(queue, timeout_s=30, **providers(rec))]
            )
            task = asyncio.create_task(deploy(runner))
            request = await waiting_id(queue)
            status, out, _ = await cli("--dir", str(queue), "approve", request, "--as", "alice")
            assert (status, out) == (0, f"{request}: approved by alice\n")
            # A second answer, or one for an unknown request, is refused with a message.
            status, _, err = await cli("--dir", str(queue), "deny", request)
            assert status == 1
            assert "already answered (approved by alice)" in err or "no pending" in err
            status, _, err = await cli("--dir", str(queue), "approve", "nope")
            assert (status, err) == (
                1,
                f"hookscope: error: no pending approval request 'nope' in {queue}\n",
            )
            return await task

        outcome = asyncio.run(run())
        assert (outcome.allowed, outcome.value) == (True, "deployed prod")
        attributes = blocked_span(rec)
        assert (attributes[sc.APPROVAL_OUTCOME], attributes[sc.APPROVAL_APPROVER]) == (
            "approved",
            "alice",
        )
        assert attributes[sc.APPROVAL_CHANNEL] == "directory"
        points = rec.metric_points([sc.METRIC_APPROVAL_DURATION])[sc.METRIC_APPROVAL_DURATION]
        assert points == {
            frozenset(
                {
                    "gen_ai.agent.name": "ops",
                    sc.APPROVAL_OUTCOME: "approved",
                    sc.APPROVAL_CHANNEL: "directory",
                }.items()
            ): 1
        }


def test_a_denial_from_the_cli_denies_the_call(tmp_path: Path) -> None:
    queue = tmp_path / "q"

    async def run() -> Any:
        runner = HookRunner([confirm_deploys, Approvals(queue, timeout_s=30)])
        task = asyncio.create_task(deploy(runner))
        request = await waiting_id(queue)
        assert (await cli("--dir", str(queue), "deny", request, "--as", "bob"))[0] == 0
        return await task

    outcome = asyncio.run(run())
    assert outcome.allowed is False
    assert outcome.decision.user_approved is False


@pytest.mark.parametrize(("on_timeout", "allowed"), [("deny", False), ("allow", True)])
def test_no_answer_in_time_is_on_timeout_and_a_late_answer_is_refused(
    tmp_path: Path, on_timeout: Any, allowed: bool
) -> None:
    queue = tmp_path / "q"
    with recording() as rec:
        approvals = Approvals(
            queue, timeout_s=0.3, poll_s=0.05, on_timeout=on_timeout, **providers(rec)
        )
        outcome = asyncio.run(deploy(HookRunner([rec.hook, confirm_deploys, approvals])))
        assert outcome.allowed is allowed
        assert blocked_span(rec)[sc.APPROVAL_OUTCOME] == "timed_out"
    (answered,) = list((queue / "answers").glob("*.json"))
    with pytest.raises(module.ApprovalError, match="no pending approval request"):
        module.answer(queue, answered.stem, approve=True, approver="late")
    assert module.pending(queue) == []


class _Webhook(BaseHTTPRequestHandler):
    requests: ClassVar[list[dict[str, Any]]] = []
    polls: ClassVar[int] = 0

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _send(self, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        length = int(self.headers["Content-Length"])
        type(self).requests.append(json.loads(self.rfile.read(length)))
        host, port = self.server.server_address[:2]
        self._send({"status": "pending", "poll_url": f"http://{host}:{port}/answer"})

    def do_GET(self) -> None:
        type(self).polls += 1
        if type(self).polls < 3:  # nobody has answered yet
            host, port = self.server.server_address[:2]
            self._send({"status": "pending", "poll_url": f"http://{host}:{port}/answer"})
            return
        self._send({"decision": "approve", "approver": "carol"})


@pytest.fixture
def webhook() -> Iterator[str]:
    _Webhook.requests, _Webhook.polls = [], 0
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Webhook)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/approvals"
    finally:
        server.shutdown()
        thread.join()
        server.server_close()


def test_a_webhook_is_posted_the_question_and_polled_for_the_answer(webhook: str) -> None:
    with recording() as rec:
        approvals = Approvals(webhook, timeout_s=30, poll_s=0.05, **providers(rec))
        outcome = asyncio.run(deploy(HookRunner([rec.hook, confirm_deploys, approvals])))
        assert outcome.allowed is True
        attributes = blocked_span(rec)
        assert (attributes[sc.APPROVAL_OUTCOME], attributes[sc.APPROVAL_APPROVER]) == (
            "approved",
            "carol",
        )
    (request,) = _Webhook.requests
    assert (request["question"], request["tool"], request["args"]) == (
        "deploy to prod?",
        "deploy",
        {"env": "prod"},
    )


def test_bad_options_are_refused() -> None:
    with pytest.raises(ValueError, match="on_timeout='maybe'"):
        Approvals("terminal", on_timeout="maybe")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="timeout_s=0"):
        Approvals("terminal", timeout_s=0)
