"""The smallest hookscope agent: one hook governs and narrates a hand-written agent loop."""

from __future__ import annotations

import asyncio

from hookscope import ChatResponse, Hook, HookResult, ToolCall
from hookscope.runner import HookRunner


class Guard(Hook):
    """Denies shell commands, logs every tool result."""

    def pre_tool_call(self, context, call):
        if call.name == "run_command":
            return HookResult.deny("shell commands need a human")
        return None

    def post_tool_call(self, context, result):
        print(f"  {result.call.name}{dict(result.call.args)} -> {result.value!r}")


def view_file(path: str) -> str:
    return f"<contents of {path}>"


async def main() -> None:
    runner = HookRunner([Guard()])
    async with runner.session(agent_name="coder") as session, session.turn("tidy up") as turn:
        for call in [
            ToolCall("view_file", {"path": "README.md"}),
            ToolCall("run_command", {"cmd": "rm -rf /"}),
        ]:
            tools = {"view_file": view_file, "run_command": print}
            outcome = await turn.call_tool(call, tools[call.name])
            if not outcome.allowed:
                print(f"  {call.name} denied by {outcome.decided_by}: {outcome.message}")
        turn.respond(ChatResponse("Done."))
    print(f"session {session.session_id[:8]} {session.context.outcome}")


if __name__ == "__main__":
    asyncio.run(main())
