"""The demo's hooks as configuration, and the scripted model its prompt hook asks.

``hookscope demo`` needs no outside server: :class:`ScriptedJudge` serves OpenAI-compatible
chat completions on a free loopback port and judges file changes by a fixed rule (anything
outside the project is refused), so the prompt hook in ``hookscope.toml`` makes a real HTTP
call with real token usage.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, Final

from hookscope.engine import HookTable, load

__all__ = ["CONFIG", "JUDGE_MODEL", "ScriptedJudge", "demo_hooks"]

#: The demo's hook configuration file (shipped with the package).
CONFIG: Final = Path(__file__).with_name("hookscope.toml")
JUDGE_MODEL: Final = "demo-judge-1"
_PLACEHOLDER_URL: Final = "http://127.0.0.1:8765/v1"


def _verdict(envelope_text: str) -> dict[str, Any]:
    if '"/etc/' in envelope_text:
        return {"ok": False, "reason": "changes outside the project are refused"}
    return {"ok": True}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the demo prints timelines, not access logs

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
            prompt = str(body["messages"][-1]["content"])
        except (ValueError, KeyError, IndexError, TypeError):
            self._send(400, {"error": {"message": "expected a chat completion request"}})
            return
        answer = json.dumps(_verdict(prompt))
        self._send(
            200,
            {
                "id": "chatcmpl-demo",
                "object": "chat.completion",
                "created": 0,
                "model": JUDGE_MODEL,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": answer},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {
                    "prompt_tokens": len(prompt) // 4,
                    "completion_tokens": len(answer) // 4,
                    "total_tokens": len(prompt) // 4 + len(answer) // 4,
                },
            },
        )

    def _send(self, status: int, value: Any) -> None:
        data = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class ScriptedJudge:
    """A scripted OpenAI-compatible judge on a free 127.0.0.1 port; a context manager."""

    def __init__(self) -> None:
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1``."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def __enter__(self) -> ScriptedJudge:
        # The socket listens from construction on: requests queue until the thread serves.
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)


def demo_hooks(judge_url: str, directory: Path) -> HookTable:
    """Load the demo's ``hookscope.toml`` with its prompt hook pointed at ``judge_url``.

    The configuration is written into ``directory`` (the demo's workspace) first, so its
    command hooks run there.
    """
    path = directory / "hookscope.toml"
    path.write_text(CONFIG.read_text().replace(_PLACEHOLDER_URL, judge_url))
    return load(path)
