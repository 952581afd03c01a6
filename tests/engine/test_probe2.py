"""Issue 19 (the second adversarial probe), engine side: verdicts read at exit, caps that trip
at once, runs ended whole, inputs no string can break, names safe to record."""

from __future__ import annotations

import asyncio
import base64
import logging
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from hookscope.engine import CommandHook, PromptHook
from hookscope.engine.envelope import encode_envelope
from hookscope.engine.prompt import ANSWER_LIMIT
from hookscope.runner import HookRunner, skipped_guards
from hookscope.telemetry.otel_hook import OTelHook
from hookscope.types import ToolCall

from .conftest import dispatch, eventually, pid_alive

Script = Callable[[str], str]
# Generous bounds that only a hang reaches: the test fails instead of stalling the suite.
HANG = 30.0


async def test_a_deny_stands_when_a_background_child_keeps_stdout_open(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    command = f"""sleep 30 & echo $! > {pid_file}; echo '{{"allow": false, "message": "no"}}'"""
    guard = CommandHook("pre_tool_call", command=command, name="g", timeout=20, fail_open=True)
    done = await asyncio.wait_for(
        dispatch(HookRunner([guard]), "pre_tool_call", ToolCall("x")), HANG
    )
    assert (done.result.allow, done.result.message, done.decided_by) == (False, "no", "g")
    child = int(pid_file.read_text())
    assert eventually(lambda: not pid_alive(child))  # killed with the group


async def test_output_past_the_cap_fails_at_once_even_without_a_timeout() -> None:
    # The program never reads its 8 MiB input and floods stdout: the cap must trip now.
    command = "head -c 2000000 /dev/zero; sleep 60"
    guard = CommandHook("pre_tool_call", command=command, name="g", timeout=None)
    call = ToolCall("x", {"blob": "y" * (8 * 1024 * 1024)})
    done = await asyncio.wait_for(dispatch(HookRunner([guard]), "pre_tool_call", call), HANG)
    assert done.result.allow is False
    assert "wrote more than 1 MiB on stdout" in done.result.message


async def test_a_setsid_daemon_is_ended_with_an_abandoned_run(
    tmp_path: Path, script: Script
) -> None:
    pid_file = tmp_path / "daemon.pid"
    command = script(
        f"""
        import os, sys, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                fd = os.open(os.devnull, os.O_RDWR)
                for n in (0, 1, 2):
                    os.dup2(fd, n)
                open({str(pid_file)!r}, "w").write(str(os.getpid()))
                time.sleep(60)
            os._exit(0)
        time.sleep(60)
        """
    )
    guard = CommandHook("pre_tool_call", command=command, name="g", timeout=1)
    done = await dispatch(HookRunner([guard]), "pre_tool_call", ToolCall("x"))
    assert done.result.allow is False  # the timeout fails closed
    assert eventually(lambda: pid_file.exists() and pid_file.read_text() != "")
    daemon = int(pid_file.read_text())
    assert eventually(lambda: not pid_alive(daemon))


async def test_a_lone_surrogate_reaches_the_program_escaped(script: Script) -> None:
    command = script(
        """
        import json, sys
        envelope = json.load(sys.stdin)
        if envelope["tool_input"]["text"] == "a\\ud800b":
            print(json.dumps({"allow": False, "message": "saw the surrogate"}))
        """
    )
    guard = CommandHook("pre_tool_call", command=command, name="judge", fail_open=True)
    call = ToolCall("write_to_file", {"text": "a\ud800b", "\udfff": 1})
    done = await dispatch(HookRunner([guard]), "pre_tool_call", call)
    assert (done.result.allow, done.result.message) == (False, "saw the surrogate")
    assert encode_envelope({"k": "\ud800"}) == b'{"k":"\\ud800"}'


async def test_a_fail_open_guard_that_cannot_judge_is_counted_and_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Unshowable:
        def __repr__(self) -> str:
            raise RuntimeError("no repr")

    guard = CommandHook("pre_tool_call", command="exit 0", name="skipper", fail_open=True)
    before = skipped_guards().get(("skipper", "pre_tool_call"), 0)
    caplog.set_level(logging.WARNING, "hookscope")
    for _ in range(2):
        call = ToolCall("x", {"v": Unshowable()})
        done = await dispatch(HookRunner([guard]), "pre_tool_call", call)
        assert done.result.allow is True  # fail open, as configured ...
    # ... but never silently: counted, and logged every time
    assert skipped_guards()[("skipper", "pre_tool_call")] == before + 2
    skips = [r.getMessage() for r in caplog.records if "guard 'skipper' skipped" in r.getMessage()]
    assert len(skips) == 2
    assert "goes on unjudged" in skips[0]


@pytest.mark.parametrize(
    ("options", "name", "executable"),
    [
        ({"command": "TOKEN=sekret sh -c 'exit 0'", "name": "g"}, "g", "sh"),
        ({"command": "TOKEN=sekret A=b ./guard.py --x"}, "guard.py", "guard.py"),
        ({"command": "env -i TOKEN=sekret /usr/bin/python3 /h/check.py"}, "check.py", "python3"),
        ({"command": "curl -s https://u:sekret@judge/check?token=sekret"}, "check", "curl"),
        ({"args": ["https://u:sekret@judge/run?token=sekret"]}, "run", "run"),
        ({"command": "TOKEN=sekret"}, "sh", "sh"),
        # Shell syntax, not a program: the shell runs it (the demo's no-deploy hook).
        ({"command": "if grep -q 'make deploy'; then exit 2; fi"}, "sh", "sh"),
        ({"command": "{ grep -q x && exit 2; }"}, "sh", "sh"),
        ({"command": "(exit 2)"}, "sh", "sh"),
        ({"command": "! grep -q x"}, "sh", "sh"),
    ],
)
def test_names_and_executables_carry_no_assignment_query_or_userinfo(
    options: dict[str, str], name: str, executable: str
) -> None:
    hook = CommandHook("pre_tool_call", **options)  # type: ignore[arg-type]
    assert (hook.name, hook.executable) == (name, executable)


async def test_no_secret_of_the_command_line_reaches_a_span() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    command = "TOKEN=sekret sh -c 'exit 2' https://u:sekret@h/check?token=sekret"
    runner = HookRunner(
        [OTelHook(tracer_provider=provider), CommandHook("pre_tool_call", command=command)]
    )
    done = await dispatch(runner, "pre_tool_call", ToolCall("x"))
    assert done.result.allow is False
    assert "sekret" not in done.result.message
    exported = repr(
        [(s.name, dict(s.attributes or {}), s.events) for s in exporter.get_finished_spans()]
    )
    assert "check" in exported
    assert "sekret" not in exported


# --- prompt hooks: answers capped, credentials out of logs --------------------------------


class _Flood(BaseHTTPRequestHandler):
    """Answers with more than ANSWER_LIMIT bytes, then holds the connection open."""

    protocol_version = "HTTP/1.1"
    declare_length = False
    release = threading.Event()
    seen: ClassVar[list[dict[str, str]]] = []

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.seen.append(dict(self.headers.items()))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        if self.declare_length:
            self.send_header("Content-Length", str(64 * 1024 * 1024))
        else:
            self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        chunk = b" " * 65536
        try:
            for _ in range(ANSWER_LIMIT // len(chunk) + 2):
                if self.declare_length:
                    self.wfile.write(chunk)
                else:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            self.wfile.flush()
            self.release.wait(HANG)  # never ends the answer on its own
        except OSError:
            pass


@pytest.fixture
def flood() -> Iterator[ThreadingHTTPServer]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Flood)
    httpd.daemon_threads = True
    _Flood.release.clear()
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield httpd
    finally:
        _Flood.release.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join()


@pytest.mark.parametrize("declare_length", [False, True])
async def test_a_judge_answer_past_the_cap_fails_at_once(
    flood: ThreadingHTTPServer, declare_length: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_Flood, "declare_length", declare_length)
    hook = PromptHook(
        "pre_tool_call",
        prompt="x",
        model="m",
        base_url=f"http://127.0.0.1:{flood.server_address[1]}/v1",
        name="judge",
        timeout=None,
    )
    done = await asyncio.wait_for(
        dispatch(HookRunner([hook]), "pre_tool_call", ToolCall("x")), HANG
    )
    assert done.result.message == (
        "hook 'judge' failed in pre_tool_call (HookFailure: the model endpoint answered more "
        f"than {ANSWER_LIMIT} bytes); failing closed"
    )


async def test_a_password_in_base_url_is_sent_as_basic_auth_and_never_logged(
    flood: ThreadingHTTPServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    port = flood.server_address[1]
    hook = PromptHook(
        "pre_tool_call", prompt="x", model="m", base_url=f"http://u:s3cr%40t@127.0.0.1:{port}/v1"
    )
    _Flood.seen.clear()
    await asyncio.wait_for(dispatch(HookRunner([hook]), "pre_tool_call", ToolCall("x")), HANG)
    assert _Flood.seen[0]["Authorization"] == "Basic " + base64.b64encode(b"u:s3cr@t").decode()
    assert "HTTP Request: POST" in caplog.text
    assert "s3cr" not in caplog.text
    assert "s3cr" not in hook.base_url
