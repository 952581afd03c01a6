"""The scripted session every agent-SDK adapter test runs: model script, tools and hooks.

The same three-turn conversation (allowed, policy-denied, hook-denied, hook-modified, failing
and recovered, asked-and-approved, asked-and-rejected calls, a helper agent) runs on each SDK,
so their span trees can be compared line by line.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from hookscope import Answer, HookResult, HookRunner, Recovery, ToolCall, hooks
from hookscope.policy import deny, enforce
from hookscope.testing import Recording

SCRIPT: dict[str, list[Any]] = {
    "Turn one": [
        {
            "tool_calls": [
                {"name": "add", "arguments": {"a": 2, "b": 3}},
                {"name": "delete_file", "arguments": {"path": "/etc/passwd"}},
                {"name": "rm_rf", "arguments": {"path": "/"}},
            ]
        },
        {"text": "Turn one done: {tool_result}"},
    ],
    "Turn two": [
        {
            "tool_calls": [
                {"name": "write_file", "arguments": {"path": "notes.txt", "text": "hi"}},
                {"name": "flaky", "arguments": {}},
            ]
        },
        {"text": "Turn two done: {tool_result}"},
    ],
    "Turn three": [
        {
            "tool_calls": [
                {"name": "ask_helper", "arguments": {"question": "Helper: add 1 and 1"}},
                {"name": "deploy", "arguments": {"env": "prod"}},
                {"name": "wipe", "arguments": {"disk": "sda"}},
            ]
        },
        {"text": "Turn three done: {tool_result}"},
    ],
    "Helper:": [
        {"tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 1}}]},
        {"text": "helper says {tool_result}"},
    ],
    "Forbidden": [{"text": "never sent"}],
    "Broken": [{"tool_calls": [{"name": "explode", "arguments": {}}]}, {"text": "unreached"}],
    "Session": [
        {"tool_calls": [{"name": "add", "arguments": {"a": 5, "b": 5}}]},
        {"text": "sum {tool_result}"},
    ],
    "Slow": [{"tool_calls": [{"name": "wait_forever", "arguments": {}}]}, {"text": "unreached"}],
    "Delegate": [
        {"tool_calls": [{"name": "helper", "arguments": {"request": "Helper: add 1 and 1"}}]},
        {"text": "delegated: {tool_result}"},
    ],
    "Transfer": [lambda ctx: _transfer(ctx), {"text": "unreached"}],
    "Deploy": [
        {"tool_calls": [{"name": "deploy", "arguments": {"env": "prod"}}]},
        {"text": "deployed: {tool_result}"},
    ],
}


#: What the tools of the three turns ("Turn one" to "Turn three") ran, sorted: some SDKs run
#: the calls of one model response concurrently.
THREE_TURNS_RAN = [
    ("add", {"a": 1, "b": 1}),
    ("add", {"a": 2, "b": 3}),
    ("ask_helper", {"question": "Helper: add 1 and 1"}),
    ("deploy", {"env": "prod"}),
    ("flaky", {}),
    ("write_file", {"path": "sandbox/notes.txt", "text": "hi"}),
]

#: The session of the three turns, the same on every SDK: each denial by the rule or hook that
#: made it, the modified call run, the failure recovered, the helper's run under the call that
#: asked it, the ask the operator approved and the one it rejected.
THREE_TURNS = [
    "session coder session=completed",
    "  invoke_agent coder turn=completed",
    "    chat scripted-model",
    "    execute_tool add tool=succeeded policy=allow by=PolicyEnforcer",
    "    execute_tool delete_file tool=denied policy=deny by=PolicyEnforcer",
    "    execute_tool rm_rf tool=denied policy=deny by=guard_tools",
    "    chat scripted-model",
    "  invoke_agent coder turn=completed",
    "    chat scripted-model",
    "    execute_tool write_file tool=succeeded policy=allow by=PolicyEnforcer",
    "    execute_tool flaky tool=recovered policy=allow by=PolicyEnforcer recovered=True error=ConnectionError",
    "    chat scripted-model",
    "  invoke_agent coder turn=completed",
    "    chat scripted-model",
    "    execute_tool ask_helper tool=succeeded policy=allow by=PolicyEnforcer",
    "      invoke_agent helper turn=completed",
    "        chat scripted-model",
    "        execute_tool add tool=succeeded policy=allow by=PolicyEnforcer",
    "        chat scripted-model",
    "    execute_tool deploy tool=succeeded policy=ask_user by=guard_tools",
    "    execute_tool wipe tool=denied policy=ask_user by=guard_tools",
    "    chat scripted-model",
]


class Tools:
    """The tools' side of the story: what really ran, with which arguments."""

    def __init__(self) -> None:
        self.ran: list[tuple[str, dict[str, Any]]] = []
        self.started = asyncio.Event()

    async def cancel_once_started(self, task: asyncio.Task[Any]) -> None:
        """Cancel ``task`` once its ``wait_forever`` tool runs; it must end cancelled."""
        await asyncio.wait_for(self.started.wait(), timeout=30)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    def functions(self, ask_helper: Callable[[str], Any]) -> dict[str, Callable[..., Any]]:
        """The main agent's tools by name; ``ask_helper(question)`` runs the helper agent
        (its one tool is ``functions(...)["add"]``)."""
        ran = self.ran

        def add(a: int, b: int) -> int:
            """Add two integers."""
            ran.append(("add", {"a": a, "b": b}))
            return a + b

        def delete_file(path: str) -> str:
            """Delete a file."""
            ran.append(("delete_file", {"path": path}))
            return "deleted"

        def rm_rf(path: str) -> str:
            """Remove a tree."""
            ran.append(("rm_rf", {"path": path}))
            return "removed"

        def write_file(path: str, text: str) -> str:
            """Write a file."""
            ran.append(("write_file", {"path": path, "text": text}))
            return f"wrote {path}"

        def flaky() -> str:
            """Fails."""
            ran.append(("flaky", {}))
            raise ConnectionError("upstream down")

        def explode() -> str:
            """Fails, with no recovery."""
            ran.append(("explode", {}))
            raise ValueError("kaboom")

        def deploy(env: str) -> str:
            """Deploy."""
            ran.append(("deploy", {"env": env}))
            return f"deployed to {env}"

        def wipe(disk: str) -> str:
            """Wipe a disk."""
            ran.append(("wipe", {"disk": disk}))
            return "wiped"

        async def wait_forever() -> str:
            """Never returns."""
            ran.append(("wait_forever", {}))
            self.started.set()
            await asyncio.Event().wait()
            return "unreached"

        async def helper(question: str) -> str:
            """Ask the helper agent."""
            ran.append(("ask_helper", {"question": question}))
            answer = ask_helper(question)
            return str(await answer if asyncio.iscoroutine(answer) else answer)

        helper.__name__ = "ask_helper"
        tools = (add, delete_file, rm_rf, write_file, flaky, explode, deploy, wipe, wait_forever)
        return {tool.__name__: tool for tool in (*tools, helper)}


@hooks.pre_tool_call_decide
def guard_tools(call: ToolCall) -> HookResult | None:
    if call.name == "rm_rf":
        return HookResult.deny("rm_rf is never allowed")
    if call.name == "write_file":
        return HookResult(modified_args={"path": f"sandbox/{call.args['path']}"})
    if call.name in ("deploy", "wipe"):
        return HookResult.ask(f"allow {call.name}?")
    return None


@hooks.on_interaction
def operator(questions: Any) -> list[Answer]:
    return [Answer("allow" if "deploy" in q.text else "deny", q.id) for q in questions]


@hooks.on_tool_error
def retry_later(error: Exception) -> Recovery | None:
    if isinstance(error, ConnectionError):
        return Recovery("upstream down; try later", message="transient")
    return None


@hooks.pre_turn
def no_forbidden(prompt: Any) -> HookResult | None:
    if "Forbidden" in str(prompt):
        return HookResult.deny("forbidden topic")
    return None


def runner_for(rec: Recording) -> HookRunner:
    return HookRunner(
        [
            rec.hook,
            guard_tools,  # it changes arguments: before the policy, which checks the result
            enforce([deny("delete_file", reason="system files are protected")]),
            operator,
            retry_later,
            no_forbidden,
        ]
    )


def _transfer(ctx: dict[str, Any]) -> dict[str, Any]:
    """ADK: the root agent hands over to ``helper``, which answers (told apart by the system
    prompt ADK writes for each agent, since both see the same user message)."""
    system = " ".join(
        str(m.get("content") or "") for m in ctx["body"]["messages"] if m["role"] == "system"
    )
    if '"helper"' in system:
        return {"text": "helper here"}
    return {"tool_calls": [{"name": "transfer_to_agent", "arguments": {"agent_name": "helper"}}]}
