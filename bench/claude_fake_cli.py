"""An in-process stand-in for the Claude Code CLI, for timing what instrumentation costs.

The real CLI spends tens of milliseconds per step; hook overhead is microseconds. To time the
instrumentation alone, :class:`FakeCli` speaks the CLI's stream-JSON control protocol inside
the process: it answers ``initialize``, and for every prompt sends the hook callbacks
(UserPromptSubmit, PreToolUse, PostToolUse, Stop) to every callback the SDK registered, and the
messages (assistant tool uses with usage, tool results, the final text and the result). It
subclasses the SDK's subprocess transport (without starting a process), so everything that
reads the CLI's messages where the real transport yields them sees them as with the real CLI.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncIterator
from typing import Any

from claude_agent_sdk._internal.transport.subprocess_cli import SubprocessCLITransport

MODEL = "claude-sonnet-4-5"
_ids = itertools.count(1)


class FakeCli(SubprocessCLITransport):
    """Each prompt: ``calls`` Bash tool uses, one model message each, then an answer."""

    def __init__(
        self, calls: int, session_id: str = "fake-session"
    ) -> None:  # no super(): no process
        self.calls = calls
        self.session_id = session_id
        self._queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self._hooks: dict[str, list[str]] = {}
        self._pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._ready = False

    async def connect(self) -> None:
        self._ready = True

    def is_ready(self) -> bool:
        return self._ready

    async def end_input(self) -> None:
        return None

    async def close(self) -> None:
        self._ready = False
        for task in self._tasks:
            task.cancel()
        await self._queue.put(None)

    async def write(self, data: str) -> None:
        for line in data.splitlines():
            if line.strip():
                self._receive(json.loads(line))

    async def _read_messages_impl(self) -> AsyncIterator[dict[str, Any]]:
        while (message := await self._queue.get()) is not None:
            yield message

    # --- the CLI's side ---

    def _receive(self, message: dict[str, Any]) -> None:
        kind = message.get("type")
        if kind == "control_request":
            request = message["request"]
            if request.get("subtype") == "initialize":
                for event, matchers in (request.get("hooks") or {}).items():
                    self._hooks[event] = [i for m in matchers for i in m["hookCallbackIds"]]
            self._send(
                {
                    "type": "control_response",
                    "response": {
                        "subtype": "success",
                        "request_id": message["request_id"],
                        "response": {"hook_on_failure_supported": True, "commands": []},
                    },
                }
            )
        elif kind == "control_response":
            response = message["response"]
            future = self._pending.pop(response["request_id"], None)
            if future is not None and not future.done():
                future.set_result(response.get("response") or {})
        elif kind == "user":
            task = asyncio.get_running_loop().create_task(self._turn(message))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def _send(self, message: dict[str, Any]) -> None:
        self._queue.put_nowait(message)

    async def _hook(self, event: str, data: dict[str, Any], tool_use_id: str | None = None) -> None:
        base = {
            "session_id": self.session_id,
            "transcript_path": "",
            "cwd": "/",
            "hook_event_name": event,
        }
        for callback in self._hooks.get(event, ()):
            request_id = f"req_{next(_ids)}"
            future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
            self._pending[request_id] = future
            self._send(
                {
                    "type": "control_request",
                    "request_id": request_id,
                    "request": {
                        "subtype": "hook_callback",
                        "callback_id": callback,
                        "input": {**base, **data},
                        "tool_use_id": tool_use_id,
                    },
                }
            )
            await future

    def _assistant(self, content: list[dict[str, Any]]) -> None:
        self._send(
            {
                "type": "assistant",
                "message": {
                    "id": f"msg_{next(_ids)}",
                    "type": "message",
                    "role": "assistant",
                    "model": MODEL,
                    "content": content,
                    "stop_reason": None,
                    "usage": {"input_tokens": 100, "output_tokens": 1},
                },
                "parent_tool_use_id": None,
                "session_id": self.session_id,
            }
        )

    async def _turn(self, message: dict[str, Any]) -> None:
        content = message.get("message", {}).get("content")
        prompt = content if isinstance(content, str) else json.dumps(content)
        await self._hook("UserPromptSubmit", {"prompt": prompt})
        self._send(
            {"type": "system", "subtype": "init", "session_id": self.session_id, "model": MODEL}
        )
        for _ in range(self.calls):
            tool_use_id = f"toolu_{next(_ids)}"
            tool_input = {"command": "echo hi"}
            self._assistant(
                [{"type": "tool_use", "id": tool_use_id, "name": "Bash", "input": tool_input}]
            )
            call = {"tool_name": "Bash", "tool_input": tool_input, "tool_use_id": tool_use_id}
            await self._hook("PreToolUse", call, tool_use_id)
            await self._hook(
                "PostToolUse", {**call, "tool_response": {"stdout": "hi"}}, tool_use_id
            )
            self._send(
                {
                    "type": "user",
                    "message": {
                        "role": "user",
                        "content": [
                            {"type": "tool_result", "tool_use_id": tool_use_id, "content": "hi"}
                        ],
                    },
                    "parent_tool_use_id": None,
                    "session_id": self.session_id,
                }
            )
        self._assistant([{"type": "text", "text": "done"}])
        await self._hook("Stop", {"stop_hook_active": False, "last_assistant_message": "done"})
        self._send(
            {
                "type": "result",
                "subtype": "success",
                "duration_ms": 1,
                "duration_api_ms": 1,
                "is_error": False,
                "num_turns": self.calls + 1,
                "session_id": self.session_id,
                "result": "done",
                "usage": {"input_tokens": 100 * (self.calls + 1), "output_tokens": self.calls + 1},
                "terminal_reason": "completed",
            }
        )
