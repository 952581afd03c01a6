"""A stand-in for google-antigravity's Go harness, for fast unit tests of the instrumentation.

Everything on the Python side is the real SDK (Agent, Conversation, LocalConnection, event
processor, hook router, tool runner, policy evaluation); only the process at the other end of
the websocket is replaced. A test plays the harness: it emits the OutputEvents the real harness
sends (written as the JSON seen on the wire) and awaits the InputEvents the SDK answers with.
The end-to-end tests run the real harness; these cover what it rarely or never does on cue
(cancellations, errors, compactions, questions, wildcard denials).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from google.antigravity import LocalOpenAIAgentConfig
from google.antigravity.connections import connection
from google.antigravity.connections.local.local_connection import LocalConnection
from google.antigravity.hooks import policy as policy_module
from google.antigravity.proto import localharness_pb2 as pb2
from google.protobuf import json_format

#: How long a test waits for the SDK to answer before failing.
ANSWER_DEADLINE_S = 5.0


class FakeHarness:
    """The harness's end of the websocket the SDK reads and writes."""

    def __init__(self) -> None:
        self._to_sdk: asyncio.Queue[str | None] = asyncio.Queue()
        self.received: list[pb2.InputEvent] = []
        self._arrived = asyncio.Event()

    # --- the websocket the SDK sees ---

    def __aiter__(self) -> FakeHarness:
        return self

    async def __anext__(self) -> str:
        message = await self._to_sdk.get()
        if message is None:
            raise StopAsyncIteration
        return message

    async def send(self, raw: str) -> None:
        event = pb2.InputEvent()
        json_format.Parse(raw, event)
        self.received.append(event)
        self._arrived.set()
        if event.HasField("session_end_request"):
            self.emit({"sessionEndResponse": True})

    async def close(self) -> None:
        self._to_sdk.put_nowait(None)

    # --- the test's side ---

    def emit(self, event: dict[str, Any]) -> None:
        """Send one OutputEvent, written as its wire JSON (camelCase field names)."""
        json_format.ParseDict(event, pb2.OutputEvent())  # fail here on a typo, not in the SDK
        self._to_sdk.put_nowait(
            json_format.MessageToJson(json_format.ParseDict(event, pb2.OutputEvent()))
        )

    async def answer(self, field: str) -> pb2.InputEvent:
        """The first not yet awaited InputEvent that has ``field`` (waits for it)."""

        async def first() -> pb2.InputEvent:
            while True:
                for index, event in enumerate(self.received):
                    if event.HasField(field):
                        return self.received.pop(index)
                self._arrived.clear()
                await self._arrived.wait()

        return await asyncio.wait_for(first(), ANSWER_DEADLINE_S)

    # --- common event shapes ---

    def trajectory(self, state: str, trajectory_id: str = "t1", **extra: Any) -> None:
        """A main-trajectory state update: RUNNING, FULLY_IDLE or CANCELLED."""
        update = {"trajectoryId": trajectory_id, "state": f"STATE_{state}", **extra}
        self.emit({"trajectoryStateUpdate": update})

    def step(self, index: int, state: str, trajectory_id: str = "t1", **fields: Any) -> None:
        """A model step update in ``state`` (ACTIVE, DONE, ERROR, WAITING_FOR_USER)."""
        update = {
            "trajectoryId": trajectory_id,
            "stepIndex": index,
            "state": f"STATE_{state}",
            "source": "SOURCE_MODEL",
            "target": "TARGET_USER",
            **fields,
        }
        self.emit({"stepUpdate": update})

    def answer_text(self, index: int, text: str) -> None:
        """The model's final answer of a turn."""
        self.step(index, "DONE", text=text)

    def denied(self, index: int, message: str) -> None:
        """A call the harness denied: an error step naming no tool."""
        text = f'{message} ("denied by pre-tool hook: {message}")'
        self.step(index, "ERROR", errorMessage=message, text=text, error={"errorMessage": text})


class _Strategy(connection.ConnectionStrategy):
    def __init__(
        self, harness: FakeHarness, tool_runner: Any, hook_runner: Any, policies: Sequence[Any]
    ) -> None:
        self._harness = harness
        self._tool_runner = tool_runner
        self._hook_runner = hook_runner
        self._policies = list(policies)
        self._connection: LocalConnection | None = None

    async def __aenter__(self) -> None:
        dynamic: dict[str, Any] = {}
        if self._policies:
            _, dynamic = policy_module._to_policy_config_proto(self._policies)
        self._connection = LocalConnection(
            process=None,
            ws=self._harness,
            tool_runner=self._tool_runner,
            hook_runner=self._hook_runner,
            dynamic_policy_map=dynamic or None,
        )

    async def __aexit__(self, *exc_info: object) -> None:
        if self._connection is not None:
            await self._connection.disconnect()

    def connect(self) -> connection.Connection:
        assert self._connection is not None
        return self._connection


def fake_config(harness: FakeHarness, **kwargs: Any) -> LocalOpenAIAgentConfig:
    """An agent config whose connection talks to ``harness`` instead of spawning one."""

    class FakeHarnessConfig(LocalOpenAIAgentConfig):
        def create_strategy(
            self, *, tool_runner: Any, hook_runner: Any
        ) -> connection.ConnectionStrategy:
            return _Strategy(harness, tool_runner, hook_runner, self.policies)

    return FakeHarnessConfig(base_url="http://127.0.0.1:9/unused", model="fake", **kwargs)
