"""Scripted model server for offline agent-SDK tests (adapted from shared/sdk-recipes).

Speaks, on a loopback address only:
  * OpenAI Chat Completions  POST /v1/chat/completions  (also /chat/completions)
    - non-streaming JSON and streaming SSE (``data: {chunk}`` ... ``data: [DONE]``)
  * Anthropic Messages       POST /v1/messages           (``?beta=true`` is ignored)
    - non-streaming JSON and streaming SSE (message_start, content_block_start/delta/stop,
      message_delta, message_stop)
    - POST /v1/messages/count_tokens returns a rough count
  * GET /v1/models (both shapes, minimal) and a 200 ``{}`` for anything else (logged).

Replies come from a script: ``{prompt_key: [reply, reply, ...]}``.  For every request the
server finds the LAST user message whose text contains a ``prompt_key`` (tool-result messages
normally do not), and counts the assistant messages that follow it in the request: that count
is the index of the reply to send.  The server is therefore stateless per conversation and a
2-turn conversation needs two keys, one per user prompt.

A reply is a dict (or a callable ``f(ctx) -> dict``):
    {"text": "..."}                                  final answer
    {"tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 3}}], "text": "optional"}
``text`` may contain ``{tool_result}``: replaced by the text of the newest tool result in the
request (useful to prove the result reached the model).  ``ctx`` is a dict with ``messages``
(normalised: role, text, tool_results), ``body`` (the raw request), ``api`` and ``step``.

Requests that match no key (an SDK's side requests, e.g. title generation) get
``unmatched_reply`` (default: a short text) and are recorded with ``matched=False``.

Token usage is deterministic, so tests can assert exact totals: every reply reports
``input_tokens``/``prompt_tokens`` = :data:`INPUT_TOKENS` and ``output_tokens`` =
:data:`OUTPUT_TOKENS` unless the reply gives ``"usage": {"input_tokens": n, "output_tokens": m}``.
A reply ``{"status": 500, "error": "message"}`` answers with that HTTP error instead.

Set ``SCRIPTED_SERVER_LOG=/path/file.jsonl`` to append every request (headers, body, the
reply chosen) to a JSON-lines file.

Use in-process:
    with ScriptedModelServer(script) as srv:
        srv.base_url          # http://127.0.0.1:<port>
        srv.requests          # list of RecordedRequest, for assertions
or standalone:  python scripted_server.py --script script.json [--port 8765]
(prints ``LISTENING <url> PID <pid>`` then serves until SIGINT/SIGTERM).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

Reply = dict[str, Any] | Callable[[dict[str, Any]], dict[str, Any]]
Script = dict[str, list[Reply]]

_LOOPBACK = {"127.0.0.1", "localhost", "::1"}
#: The usage every reply reports unless it gives its own.
INPUT_TOKENS = 100
OUTPUT_TOKENS = 10


def _tokens(reply: dict[str, Any]) -> tuple[int, int]:
    usage = reply.get("usage") or {}
    return int(usage.get("input_tokens", INPUT_TOKENS)), int(
        usage.get("output_tokens", OUTPUT_TOKENS)
    )


@dataclass
class RecordedRequest:
    method: str
    path: str
    api: str  # "openai" | "anthropic" | "other"
    body: dict[str, Any]
    stream: bool
    matched: bool
    prompt_key: str | None
    step: int | None
    reply: dict[str, Any] | None
    headers: dict[str, str] = field(default_factory=dict)
    at: float = field(default_factory=time.time)


# ---------------------------------------------------------------- message normalisation


def _content_text(content: Any) -> str:
    """Text of an OpenAI/Anthropic content value, tool results excluded."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and block.get("type") in ("text", "input_text"):
            parts.append(str(block.get("text", "")))
    return "\n".join(parts)


_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.S)


def _tool_result_text(content: Any) -> str:
    """Text of a tool result, minus Claude Code's ``<system-reminder>`` add-ons."""
    if content is None:
        text = ""
    elif isinstance(content, str):
        text = content
    elif isinstance(content, list):
        text = "\n".join(_content_text([b]) if isinstance(b, dict) else str(b) for b in content)
    else:
        text = json.dumps(content)
    return _REMINDER.sub("", text).strip()


def normalise_openai(body: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for m in body.get("messages", []):
        role = m.get("role")
        if role == "tool":
            result = _tool_result_text(m.get("content"))
            out.append({"role": "tool", "text": "", "tool_results": [result]})
        else:
            out.append({"role": role, "text": _content_text(m.get("content")), "tool_results": []})
    return out


def normalise_anthropic(body: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for m in body.get("messages", []):
        content = m.get("content")
        results: list[str] = []
        if isinstance(content, list):
            for b in content:
                if isinstance(b, dict) and b.get("type") == "tool_result":
                    results.append(_tool_result_text(b.get("content")))
        role = m.get("role")
        # A user message carrying only tool results is a tool turn, not a prompt.
        if role == "user" and results:
            role = "tool"
        out.append({"role": role, "text": _content_text(content), "tool_results": results})
    return out


# ---------------------------------------------------------------- script resolution


class ScriptResolver:
    def __init__(self, script: Script, unmatched_reply: Reply | None = None) -> None:
        self.script = script
        self.unmatched_reply: Reply = unmatched_reply or {"text": "OK"}
        self.exhausted_reply: Reply = {"text": "[script exhausted]"}

    def resolve(self, api: str, body: dict[str, Any], messages: list[dict[str, Any]]):
        key, step, anchor = None, None, None
        for i in range(len(messages) - 1, -1, -1):
            m = messages[i]
            if m["role"] != "user":
                continue
            hit = next((k for k in self.script if k in m["text"]), None)
            if hit is not None:
                key, anchor = hit, i
                break
        tool_results = [t for m in messages for t in m["tool_results"]]
        ctx = {
            "api": api,
            "body": body,
            "messages": messages,
            "step": None,
            "last_tool_result": tool_results[-1] if tool_results else "",
        }
        if key is None:
            reply = self.unmatched_reply
        else:
            step = sum(1 for m in messages[anchor + 1 :] if m["role"] == "assistant")
            ctx["step"] = step
            replies = self.script[key]
            reply = replies[step] if step < len(replies) else self.exhausted_reply
        if callable(reply):
            reply = reply(ctx)
        reply = dict(reply)
        if "text" in reply and reply["text"] is not None:
            reply["text"] = reply["text"].replace("{tool_result}", ctx["last_tool_result"])
        return key, step, reply


_ids = itertools.count(1)


def _new_id(prefix: str) -> str:
    return f"{prefix}{next(_ids):06d}"


def _rough_tokens(body: dict[str, Any]) -> int:
    return max(1, len(json.dumps(body)) // 4)


# ---------------------------------------------------------------- OpenAI Chat Completions


def openai_response(body: dict[str, Any], reply: dict[str, Any]) -> dict[str, Any]:
    calls = [
        {
            "id": _new_id("call_"),
            "type": "function",
            "function": {"name": c["name"], "arguments": json.dumps(c.get("arguments", {}))},
        }
        for c in reply.get("tool_calls", [])
    ]
    message: dict[str, Any] = {"role": "assistant", "content": reply.get("text")}
    if calls:
        message["tool_calls"] = calls
    prompt, completion = _tokens(reply)
    return {
        "id": _new_id("chatcmpl-"),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "scripted"),
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": "tool_calls" if calls else "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


def openai_stream(body: dict[str, Any], reply: dict[str, Any]) -> Iterable[bytes]:
    cid, created, model = _new_id("chatcmpl-"), int(time.time()), body.get("model", "scripted")

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
        obj = {
            "id": cid,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }
        obj.update(extra)
        return f"data: {json.dumps(obj)}\n\n".encode()

    yield chunk({"role": "assistant", "content": ""})
    text = reply.get("text")
    if text:
        for piece in _pieces(text):
            yield chunk({"content": piece})
    calls = reply.get("tool_calls", [])
    for idx, c in enumerate(calls):
        args = json.dumps(c.get("arguments", {}))
        yield chunk(
            {
                "tool_calls": [
                    {
                        "index": idx,
                        "id": _new_id("call_"),
                        "type": "function",
                        "function": {"name": c["name"], "arguments": ""},
                    }
                ]
            }
        )
        for piece in _pieces(args):
            yield chunk({"tool_calls": [{"index": idx, "function": {"arguments": piece}}]})
    yield chunk({}, "tool_calls" if calls else "stop")
    if (body.get("stream_options") or {}).get("include_usage"):
        prompt, completion = _tokens(reply)
        obj = {
            "id": cid,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            },
        }
        yield f"data: {json.dumps(obj)}\n\n".encode()
    yield b"data: [DONE]\n\n"


# ---------------------------------------------------------------- Anthropic Messages


def anthropic_blocks(reply: dict[str, Any]) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if reply.get("text"):
        blocks.append({"type": "text", "text": reply["text"]})
    for c in reply.get("tool_calls", []):
        blocks.append(
            {
                "type": "tool_use",
                "id": _new_id("toolu_"),
                "name": c["name"],
                "input": c.get("arguments", {}),
            }
        )
    if not blocks:
        blocks.append({"type": "text", "text": ""})
    return blocks


def _usage(reply: dict[str, Any], output: int | None = None) -> dict[str, Any]:
    prompt, completion = _tokens(reply)
    return {
        "input_tokens": prompt,
        "output_tokens": completion if output is None else output,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }


def anthropic_response(body: dict[str, Any], reply: dict[str, Any]) -> dict[str, Any]:
    blocks = anthropic_blocks(reply)
    return {
        "id": _new_id("msg_"),
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "scripted"),
        "content": blocks,
        "stop_reason": "tool_use" if reply.get("tool_calls") else "end_turn",
        "stop_sequence": None,
        "usage": _usage(reply),
    }


def anthropic_stream(body: dict[str, Any], reply: dict[str, Any]) -> Iterable[bytes]:
    def event(name: str, data: dict[str, Any]) -> bytes:
        return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()

    blocks = anthropic_blocks(reply)
    message = {
        "id": _new_id("msg_"),
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "scripted"),
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": _usage(reply, 1),
    }
    yield event("message_start", {"type": "message_start", "message": message})
    yield event("ping", {"type": "ping"})
    for i, b in enumerate(blocks):
        if b["type"] == "text":
            yield event(
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": i,
                    "content_block": {"type": "text", "text": ""},
                },
            )
            for piece in _pieces(b["text"]):
                yield event(
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": i,
                        "delta": {"type": "text_delta", "text": piece},
                    },
                )
        else:
            start = {"type": "tool_use", "id": b["id"], "name": b["name"], "input": {}}
            yield event(
                "content_block_start",
                {"type": "content_block_start", "index": i, "content_block": start},
            )
            for piece in _pieces(json.dumps(b["input"])):
                yield event(
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": i,
                        "delta": {"type": "input_json_delta", "partial_json": piece},
                    },
                )
        yield event("content_block_stop", {"type": "content_block_stop", "index": i})
    stop = "tool_use" if reply.get("tool_calls") else "end_turn"
    yield event(
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": _tokens(reply)[1]},
        },
    )
    yield event("message_stop", {"type": "message_stop"})


def _pieces(s: str, n: int = 12) -> list[str]:
    return [s[i : i + n] for i in range(0, len(s), n)] or [""]


# ---------------------------------------------------------------- HTTP plumbing


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, fmt: str, *args: Any) -> None:  # quiet
        if self.server.owner.verbose:
            sys.stderr.write("[scripted] " + fmt % args + "\n")

    def _body(self) -> dict[str, Any]:
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        try:
            return json.loads(raw or b"{}")
        except json.JSONDecodeError:
            return {"_raw": raw.decode(errors="replace")}

    def _json(self, obj: Any, status: int = 200) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("request-id", _new_id("req_"))
        self.end_headers()
        self.wfile.write(data)

    def _sse(self, chunks: Iterable[bytes]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("request-id", _new_id("req_"))
        self.end_headers()
        for c in chunks:
            self.wfile.write(f"{len(c):x}\r\n".encode() + c + b"\r\n")
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def do_GET(self) -> None:
        path = urlsplit(self.path).path
        owner = self.server.owner
        owner._record(
            RecordedRequest(
                "GET", path, "other", {}, False, False, None, None, None, dict(self.headers)
            )
        )
        if path.rstrip("/").endswith("/models"):
            self._json(
                {
                    "object": "list",
                    "data": [
                        {
                            "id": "scripted",
                            "object": "model",
                            "type": "model",
                            "owned_by": "scripted",
                        }
                    ],
                    "has_more": False,
                }
            )
        else:
            self._json({})

    def do_HEAD(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self) -> None:
        path = urlsplit(self.path).path
        body = self._body()
        owner = self.server.owner
        headers = dict(self.headers)
        if path.endswith("/chat/completions"):
            api, messages = "openai", normalise_openai(body)
        elif path.endswith("/messages/count_tokens"):
            owner._record(
                RecordedRequest(
                    "POST", path, "anthropic", body, False, False, None, None, None, headers
                )
            )
            self._json({"input_tokens": _rough_tokens(body)})
            return
        elif path.endswith("/messages"):
            api, messages = "anthropic", normalise_anthropic(body)
        else:
            owner._record(
                RecordedRequest(
                    "POST", path, "other", body, False, False, None, None, None, headers
                )
            )
            self._json({})
            return
        key, step, reply = owner.resolver.resolve(api, body, messages)
        stream = bool(body.get("stream"))
        owner._record(
            RecordedRequest(
                "POST", path, api, body, stream, key is not None, key, step, reply, headers
            )
        )
        if "status" in reply:  # a scripted failure of the model service
            message = str(reply.get("error", "scripted failure"))
            error = (
                {"type": "error", "error": {"type": "api_error", "message": message}}
                if api == "anthropic"
                else {"error": {"message": message, "type": "server_error"}}
            )
            self._json(error, int(reply["status"]))
            return
        if api == "openai":
            if stream:
                self._sse(openai_stream(body, reply))
            else:
                self._json(openai_response(body, reply))
        else:
            if stream:
                self._sse(anthropic_stream(body, reply))
            else:
                self._json(anthropic_response(body, reply))


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: ScriptedModelServer


class ScriptedModelServer:
    def __init__(
        self,
        script: Script,
        host: str = "127.0.0.1",
        port: int = 0,
        unmatched_reply: Reply | None = None,
        verbose: bool = False,
    ) -> None:
        if host not in _LOOPBACK:
            raise ValueError("the scripted server only binds loopback addresses")
        self.resolver = ScriptResolver(script, unmatched_reply)
        self.verbose = verbose
        self.log_path = os.environ.get("SCRIPTED_SERVER_LOG")  # JSON lines, for debugging
        self.requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._httpd = _Server((host, port), _Handler)
        self._httpd.owner = self
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def _record(self, r: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(r)
            if self.log_path:
                with open(self.log_path, "a") as f:
                    f.write(
                        json.dumps(
                            {
                                "method": r.method,
                                "path": r.path,
                                "api": r.api,
                                "stream": r.stream,
                                "matched": r.matched,
                                "prompt_key": r.prompt_key,
                                "step": r.step,
                                "reply": r.reply,
                                "headers": r.headers,
                                "body": r.body,
                            }
                        )
                        + "\n"
                    )

    def model_requests(self, matched_only: bool = True) -> list[RecordedRequest]:
        return [
            r
            for r in self.requests
            if r.api in ("openai", "anthropic")
            and r.path.endswith(("/messages", "/chat/completions"))
            and (r.matched or not matched_only)
        ]

    def start(self) -> ScriptedModelServer:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, daemon=True, name="scripted-model-server"
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread:
            self._thread.join(timeout=5)

    def __enter__(self) -> ScriptedModelServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--script", required=True, help="JSON file: {prompt_key: [reply, ...]}")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args(argv)
    with open(args.script) as f:
        script = json.load(f)
    srv = ScriptedModelServer(script, args.host, args.port, verbose=args.verbose)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with srv:
        print(f"LISTENING {srv.base_url} PID {os.getpid()}", flush=True)
        try:
            while not stop.wait(0.5):
                pass
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
