"""One hook makes a hand-written agent loop observable: a trace per session, metrics, decisions.

Run it, then `hookscope view` (or set OTEL_EXPORTER_OTLP_ENDPOINT to send it to a collector).
"""

from __future__ import annotations

import asyncio

import hookscope
from hookscope import ChatResponse, HookRunner, OTelHook, ToolCall, policy


def view_file(path: str) -> str:
    return f"<contents of {path}>"


async def main() -> None:
    with hookscope.configure(service_name="one-hook-example"):  # OTLP, or ./.hookscope/ files
        runner = HookRunner([OTelHook(), policy.enforce([policy.deny("run_command")])])
        async with runner.session(agent_name="coder") as session, session.turn("tidy up") as turn:
            for call in [ToolCall("view_file", {"path": "README.md"}), ToolCall("run_command")]:
                outcome = await turn.call_tool(call, view_file)
                print(f"{call.name}: {outcome.value if outcome.allowed else outcome.message}")
            turn.respond(ChatResponse("Done."))
    print(f"session {session.session_id} {session.context.outcome}")


if __name__ == "__main__":
    asyncio.run(main())
