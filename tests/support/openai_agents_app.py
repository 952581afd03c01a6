"""An openai-agents app with no hookscope in it, for running under ``opentelemetry-instrument``.

Two turns of one conversation against the scripted model server at ``$SCRIPTED_MODEL_URL``:
the model adds numbers, then deletes a file. ``no_deletes`` is the hook the test's
``hookscope.toml`` (``$HOOKSCOPE_CONFIG``) registers by reference.

Run: ``opentelemetry-instrument python -m tests.support.openai_agents_app``.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from agents import (
    Agent,
    OpenAIChatCompletionsModel,
    Runner,
    SQLiteSession,
    function_tool,
    set_tracing_disabled,
)
from openai import AsyncOpenAI

from hookscope import HookResult, hooks

PROMPTS = ("Add 2 and 3", "Delete the notes")


@hooks.pre_tool_call_decide
def no_deletes(call: Any) -> HookResult | None:
    """Denies every delete_file call."""
    if call.name == "delete_file":
        return HookResult.deny("deleting is not allowed here")
    return None


@function_tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@function_tool
def delete_file(path: str) -> str:
    """Delete a file."""
    return "deleted"


async def main() -> None:
    set_tracing_disabled(True)  # the app's choice: no export to OpenAI's tracing backend
    client = AsyncOpenAI(
        base_url=os.environ["SCRIPTED_MODEL_URL"] + "/v1", api_key="sk-test", max_retries=0
    )
    model = OpenAIChatCompletionsModel(model="scripted-model", openai_client=client)
    agent = Agent(name="app", instructions="Use tools.", model=model, tools=[add, delete_file])
    session = SQLiteSession("app-conversation")
    for prompt in PROMPTS:
        result = await Runner.run(agent, prompt, session=session)
        print("answer:", result.final_output, flush=True)
    await client.close()


if __name__ == "__main__":
    asyncio.run(main())
