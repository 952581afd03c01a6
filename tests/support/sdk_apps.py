"""Agent applications that know nothing of hookscope (the adapters' zero-code e2e test).

``opentelemetry-instrument python -m tests.support.sdk_apps <sdk>`` with ``HOOKSCOPE_CONFIG``
set: hookscope's instrumentor for that SDK governs it. One turn: the model (the scripted server
at ``SCRIPTED_MODEL_URL``, prompt key ``Zero``) calls ``add`` and ``delete_file``. Prints
``answer: <text>`` and ``ran: <tools>``.
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

RAN: list[str] = []
PROMPT = "Zero: add, then delete"


def add(a: int, b: int) -> int:
    """Add two integers."""
    RAN.append("add")
    return a + b


def delete_file(path: str) -> str:
    """Delete a file."""
    RAN.append("delete_file")
    return "deleted"


async def pydantic_ai(url: str) -> str:
    from openai import AsyncOpenAI
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    from hookscope.integrations.pydantic_ai import end_sessions

    async with AsyncOpenAI(base_url=url + "/v1", api_key="sk-test") as client:
        model = OpenAIChatModel("scripted-model", provider=OpenAIProvider(openai_client=client))
        agent = Agent(model, name="coder", tools=[add, delete_file])
        output = (await agent.run(PROMPT)).output
    await end_sessions()  # pydantic-ai has no end of a conversation: the app says so
    return str(output)


async def langgraph(url: str) -> str:
    from langchain.agents import create_agent
    from langchain_openai import ChatOpenAI

    from hookscope.integrations.langgraph import end_sessions

    model = ChatOpenAI(model="scripted-model", base_url=url + "/v1", api_key="sk-test")
    graph = create_agent(model, [add, delete_file], name="coder")
    state: Any = await graph.ainvoke({"messages": [("user", PROMPT)]})
    await end_sessions()
    return str(state["messages"][-1].content)


async def google_adk(url: str) -> str:
    from google.adk.agents import LlmAgent
    from google.adk.runners import InMemoryRunner
    from google.genai import types

    from tests.support.adk_model import ScriptedChatLlm

    model = ScriptedChatLlm(model="scripted-model", base_url=url)
    runner = InMemoryRunner(agent=LlmAgent(name="coder", model=model, tools=[add, delete_file]))
    session = await runner.session_service.create_session(app_name=runner.app_name, user_id="u")
    message = types.Content(role="user", parts=[types.Part(text=PROMPT)])
    answer = ""
    async for event in runner.run_async(user_id="u", session_id=session.id, new_message=message):
        if event.is_final_response() and event.content and event.content.parts:
            answer = "".join(p.text or "" for p in event.content.parts)
    await runner.close()  # ends its sessions
    return answer


async def main(sdk: str) -> None:
    app = {"pydantic-ai": pydantic_ai, "langgraph": langgraph, "google-adk": google_adk}[sdk]
    print(f"answer: {await app(os.environ['SCRIPTED_MODEL_URL'])}", flush=True)
    print(f"ran: {','.join(RAN)}", flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
