"""A scripted OpenAI-compatible chat-completions server for end-to-end tests.

Real agent harnesses (google-antigravity's Go harness among them) POST
``{base_url}/chat/completions`` with ``stream: true`` and read server-sent events. This
server answers from a script instead of a model, so a test decides exactly which tool calls
the "model" makes and what it finally says.

A script is a list of :class:`Reply` values, chosen by the conversation's first user message
(the longest script key it contains):
the reply for a request is the script entry at the position equal to the number of assistant
messages already in the request. A conversation therefore walks its script one model call at
a time (tool calls, then a final answer), however many conversations run at once and
whatever else the harness sends in between.

Example::

    script = {"weather": [Reply(tool_calls=[Call("get_weather", {"city": "Oslo"})]),
                          Reply(text="It is sunny.")]}
    with ScriptedOpenAIServer(script) as server:
        config = LocalOpenAIAgentConfig(base_url=server.base_url, model="scripted")
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

__all__ = ["Call", "Reply", "ScriptError", "ScriptedOpenAIServer"]


class ScriptError(LookupError):
    """A request matched no script, or went past the end of its script."""


@dataclass(frozen=True, slots=True)
class Call:
    """One tool call the scripted model makes.

    Args:
        name: The tool's name.
        args: Its arguments (sent JSON-encoded, as OpenAI does).
        id: The call id; ``call_<n>`` (unique per server) when empty. OpenAI-style ids carry
            no trajectory prefix, which is what the integration must cope with.
    """

    name: str
    args: Mapping[str, Any] = field(default_factory=dict)
    id: str = ""


@dataclass(frozen=True, slots=True)
class Reply:
    """One scripted model response: text, tool calls, or both."""

    text: str = ""
    tool_calls: Sequence[Call] = ()
    input_tokens: int = 10
    output_tokens: int = 5


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


class ScriptedOpenAIServer:
    """Serve scripted chat completions on a free loopback port, in a background thread.

    Args:
        scripts: Conversation key → replies. A conversation uses the script whose key occurs
            in its first user message (the longest such key).
        model: The model name reported in responses.

    Use it as a context manager, or call :meth:`start` and :meth:`stop`.
    """

    def __init__(self, scripts: Mapping[str, Sequence[Reply]], model: str = "scripted") -> None:
        self.scripts = dict(scripts)
        self.model = model
        #: Every request body received, in arrival order.
        self.requests: list[dict[str, Any]] = []
        #: Problems met while answering (the harness only sees an HTTP error).
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle ---

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1``: what to pass as the agent's ``base_url``."""
        if self._httpd is None:
            raise RuntimeError("the server is not running; call start() or use `with` first")
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def start(self) -> ScriptedOpenAIServer:
        """Bind a free port and serve in a daemon thread; ready when this returns.

        The socket is bound and listening before ``start`` returns (connections queue in its
        backlog until the thread accepts them), so no readiness polling is needed.
        """
        if self._httpd is not None:
            raise RuntimeError("the server is already running")
        handler = type("_Handler", (_Handler,), {"server_ref": self})
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        httpd.daemon_threads = True
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket; waits for the serving thread to end."""
        httpd, thread = self._httpd, self._thread
        self._httpd = self._thread = None
        if httpd is None:
            return
        httpd.shutdown()
        httpd.server_close()
        if thread is not None:
            thread.join(timeout=5)

    def __enter__(self) -> ScriptedOpenAIServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def record_request(self, body: dict[str, Any]) -> None:
        """Keep a request body (thread-safe: the server answers from several threads)."""
        with self._lock:
            self.requests.append(body)

    def record_error(self, message: str) -> None:
        """Keep a problem met while answering (the harness only sees an HTTP error)."""
        with self._lock:
            self.errors.append(message)

    # --- scripting ---

    def reply_for(self, body: Mapping[str, Any]) -> Reply:
        """The scripted reply for one request body.

        Raises:
            ScriptError: no script matches the conversation, or its script is exhausted.
        """
        messages = list(body.get("messages") or [])
        first_user = next(
            (_content_text(m.get("content")) for m in messages if m.get("role") == "user"), ""
        )
        matching = [key for key in self.scripts if key in first_user]
        if matching:
            key = max(matching, key=len)  # "weather in Oslo, twice" over "weather in Oslo"
            replies = self.scripts[key]
            position = sum(1 for m in messages if m.get("role") == "assistant")
            if position >= len(replies):
                raise ScriptError(
                    f"script {key!r} has {len(replies)} replies; the model was asked for "
                    f"reply {position + 1}. Add a final Reply(text=...) to the script."
                )
            return replies[position]
        raise ScriptError(
            f"no script key occurs in the first user message {first_user[:200]!r}; "
            f"keys: {sorted(self.scripts)}"
        )

    def chunks(self, reply: Reply) -> Iterator[dict[str, Any]]:
        """The streamed ``chat.completion.chunk`` objects for ``reply``."""
        with self._lock:
            completion = f"chatcmpl-{next(self._ids)}"
            call_ids = [call.id or f"call_{next(self._ids)}" for call in reply.tool_calls]

        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {
                "id": completion,
                "object": "chat.completion.chunk",
                "created": 0,
                "model": self.model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }

        yield chunk({"role": "assistant", "content": ""})
        if reply.text:
            yield chunk({"content": reply.text})
        for index, (call, call_id) in enumerate(zip(reply.tool_calls, call_ids, strict=True)):
            yield chunk(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": call_id,
                            "type": "function",
                            "function": {"name": call.name, "arguments": json.dumps(call.args)},
                        }
                    ]
                }
            )
        final = chunk({}, "tool_calls" if reply.tool_calls else "stop")
        final["usage"] = {
            "prompt_tokens": reply.input_tokens,
            "completion_tokens": reply.output_tokens,
            "total_tokens": reply.input_tokens + reply.output_tokens,
        }
        yield final


class _Handler(BaseHTTPRequestHandler):
    server_ref: ScriptedOpenAIServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output quiet

    def do_GET(self) -> None:  # a health or models probe
        self._json(200, {"object": "list", "data": [{"id": self.server_ref.model}]})

    def do_POST(self) -> None:
        scripted = self.server_ref
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except json.JSONDecodeError as error:
            self._json(400, {"error": {"message": f"invalid JSON: {error}"}})
            return
        scripted.record_request(body)
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._json(404, {"error": {"message": f"no route {self.path}"}})
            return
        try:
            reply = scripted.reply_for(body)
        except ScriptError as error:
            scripted.record_error(str(error))
            self._json(500, {"error": {"message": str(error)}})
            return
        chunks = list(scripted.chunks(reply))
        if not body.get("stream"):
            self._json(200, _non_streamed(chunks))
            return
        payload = (
            b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)
            + b"data: [DONE]\n\n"
        )
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _json(self, status: int, value: Any) -> None:
        data = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _non_streamed(chunks: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Fold streamed chunks into one ``chat.completion`` (for clients that do not stream)."""
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)
    calls = [
        {k: v for k, v in call.items() if k != "index"}
        for c in chunks
        for call in c["choices"][0]["delta"].get("tool_calls") or []
    ]
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = calls
    last = chunks[-1]
    return {
        "id": last["id"],
        "object": "chat.completion",
        "created": 0,
        "model": last["model"],
        "choices": [
            {"index": 0, "message": message, "finish_reason": last["choices"][0]["finish_reason"]}
        ],
        "usage": last["usage"],
    }
