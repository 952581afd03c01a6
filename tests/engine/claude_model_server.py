"""A scripted Anthropic Messages server (SSE) for driving the real Claude Code CLI offline.

Adapted from ``shared/sdk-recipes/scripted_server.py`` (our own code), cut down to what the
Claude Code CLI speaks: ``POST /v1/messages`` (always streamed), ``/v1/messages/count_tokens``
and a ``200 {}`` for anything else. Loopback only, ephemeral port, one daemon thread.

The script is ``{prompt_key: [reply, ...]}``: for each request the server finds the last user
message containing a key and sends reply number *n*, *n* being the assistant messages after it
(stateless, so retries get the same reply). A reply is ``{"text": ...}`` and/or
``{"tool_calls": [{"name": ..., "arguments": {...}}]}``. Requests matching no key (side
requests such as title generation) get ``{"text": "OK"}``.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

Reply = Mapping[str, Any]
Script = Mapping[str, Sequence[Reply]]

_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.S)
_ids = itertools.count(1)


@dataclass
class Request:
    """One model request as the server saw it."""

    body: dict[str, Any]
    key: str | None
    step: int | None

    def texts(self) -> list[str]:
        """Every text the request carries (messages, tool results, system), reminders cut."""
        found: list[str] = []
        for message in self.body.get("messages", []):
            found.extend(_texts(message.get("content")))
        return [_REMINDER.sub("", text).strip() for text in found]


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    out: list[str] = []
    for block in content or ():
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text":
            out.append(str(block.get("text", "")))
        elif block.get("type") == "tool_result":
            out.extend(_texts(block.get("content")))
    return out


def _prompt_texts(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content
    ):
        return ""  # a tool turn, not a prompt
    return "\n".join(_texts(content))


def _resolve(script: Script, body: Mapping[str, Any]) -> tuple[str | None, int | None, Reply]:
    messages = list(body.get("messages", []))
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.get("role") != "user":
            continue
        text = _prompt_texts(message)
        key = next((k for k in script if k in text), None)
        if key is not None:
            step = sum(1 for m in messages[index + 1 :] if m.get("role") == "assistant")
            replies = script[key]
            reply = replies[step] if step < len(replies) else {"text": "[script exhausted]"}
            return key, step, reply
    return None, None, {"text": "OK"}


def _blocks(reply: Reply) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if reply.get("text"):
        blocks.append({"type": "text", "text": reply["text"]})
    for call in reply.get("tool_calls", ()):
        blocks.append(
            {
                "type": "tool_use",
                "id": f"toolu_{next(_ids):06d}",
                "name": call["name"],
                "input": call.get("arguments", {}),
            }
        )
    return blocks or [{"type": "text", "text": ""}]


def _stream(body: Mapping[str, Any], reply: Reply) -> Iterable[bytes]:
    def event(name: str, data: Mapping[str, Any]) -> bytes:
        return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()

    usage = {
        "input_tokens": max(1, len(json.dumps(body)) // 4),
        "output_tokens": 1,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }
    message = {
        "id": f"msg_{next(_ids):06d}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "scripted"),
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }
    yield event("message_start", {"type": "message_start", "message": message})
    for index, block in enumerate(_blocks(reply)):
        if block["type"] == "text":
            start: dict[str, Any] = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            start = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        yield event(
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": start},
        )
        yield event(
            "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        )
        yield event("content_block_stop", {"type": "content_block_stop", "index": index})
    stop = "tool_use" if reply.get("tool_calls") else "end_turn"
    yield event(
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": 10},
        },
    )
    yield event("message_stop", {"type": "message_stop"})


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _json(self, value: Any) -> None:
        data = json.dumps(value).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_HEAD(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self) -> None:
        self._json({})

    def do_POST(self) -> None:
        path = urlsplit(self.path).path
        size = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(size) or b"{}")
        except json.JSONDecodeError:
            body = {}
        if path.endswith("/messages/count_tokens"):
            self._json({"input_tokens": max(1, len(json.dumps(body)) // 4)})
            return
        if not path.endswith("/messages"):
            self._json({})
            return
        owner = self.server.owner
        key, step, reply = _resolve(owner.script, body)
        with owner.lock:
            owner.requests.append(Request(body, key, step))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for chunk in _stream(body, reply):
            self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: ClaudeModelServer


class ClaudeModelServer:
    """``with ClaudeModelServer(script) as server: server.base_url``; ``server.requests``."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.requests: list[Request] = []
        self.lock = threading.Lock()
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.owner = self
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def matched(self) -> list[Request]:
        """The requests that answered a scripted prompt (side requests left out)."""
        with self.lock:
            return [r for r in self.requests if r.key is not None]

    def __enter__(self) -> ClaudeModelServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)
