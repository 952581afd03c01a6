"""LangGraph agents governed and traced by hookscope: the real SDK against a scripted model.

Graphs are langchain's ``create_agent`` (a ``ToolNode`` inside, ``ChatOpenAI`` on the scripted
server, an in-memory checkpointer); turns of one ``thread_id`` are one session. Whole span
trees and metric totals are compared; multi-turn scenarios run three times.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from langchain.agents import create_agent
from langchain_core.tools import StructuredTool
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from hookscope import HookRunner
from hookscope.integrations.langgraph import LangGraphInstrumentor, end_sessions, govern
from hookscope.integrations.wrap import TurnBlocked
from hookscope.testing import recording
from tests.support.model_server import ScriptedModelServer

from .sdk_scenario import (
    SCRIPT,
    THREE_TURNS,
    THREE_TURNS_RAN,
    Tools,
    guard_tools,
    runner_for,
)
from .sdk_trees import outcome_totals, same_sessions, sessions


@pytest.fixture
def server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer(SCRIPT) as srv:
        yield srv


@pytest.fixture
async def model(server: ScriptedModelServer) -> AsyncIterator[ChatOpenAI]:
    sync_client, async_client = httpx.Client(), httpx.AsyncClient()
    yield ChatOpenAI(
        model="scripted-model",
        base_url=server.base_url + "/v1",
        api_key="sk-test",  # type: ignore[arg-type]
        max_retries=0,
        http_client=sync_client,
        http_async_client=async_client,
    )
    sync_client.close()  # noqa: ASYNC212 (closing a client does no I/O worth a thread)
    await async_client.aclose()  # an unclosed socket is a test error here


@pytest.fixture
async def ended() -> AsyncIterator[None]:
    yield
    await end_sessions()


def graphs(model: ChatOpenAI, tools: Tools) -> tuple[Any, Any]:
    helper = create_agent(model, [], name="helper")

    async def ask(question: str) -> str:
        state = await helper.ainvoke({"messages": [("user", question)]})
        return str(state["messages"][-1].content)

    functions = tools.functions(ask)
    helper = create_agent(model, [_tool(functions["add"])], name="helper")
    agent = create_agent(
        model,
        [_tool(f) for f in functions.values()],
        checkpointer=InMemorySaver(),
        name="coder",
    )
    return agent, helper


def _tool(function: Any) -> StructuredTool:
    if asyncio.iscoroutinefunction(function):
        return StructuredTool.from_function(coroutine=function)
    return StructuredTool.from_function(function)


def thread(name: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": name}}


async def answer(graph: Any, prompt: str, name: str) -> str:
    state = await graph.ainvoke({"messages": [("user", prompt)]}, thread(name))
    return str(state["messages"][-1].content)


@pytest.mark.parametrize("run", range(3))
async def test_a_three_turn_thread_is_governed_and_traced(
    run: int, model: ChatOpenAI, ended: None
) -> None:
    with recording() as rec:
        tools = Tools()
        agent, helper = graphs(model, tools)
        runner = runner_for(rec)
        assert govern(agent, runner) is agent
        govern(helper, runner)
        first = await answer(agent, "Turn one: add, then clean up", "t")
        second = await answer(agent, "Turn two: write notes", "t")
        third = await answer(agent, "Turn three: ship it", "t")
        assert await end_sessions() == 1

    assert sorted(tools.ran, key=repr) == THREE_TURNS_RAN
    assert first == "Turn one done: rm_rf is never allowed"
    assert second == "Turn two done: upstream down; try later"
    assert third == "Turn three done: allow wipe? (the user answered 'deny')"
    assert sessions(rec.spans) == [THREE_TURNS]
    assert outcome_totals(rec) == {
        "tool calls": {"succeeded": 5, "denied": 3, "recovered": 1},
        "turns": {"completed": 4},  # three turns and the helper's run
        "tokens": {"input": 8, "output": 8},
    }


def test_a_synchronous_invoke_is_governed_the_same_way(model: ChatOpenAI) -> None:
    with recording() as rec:
        tools = Tools()
        agent, _ = graphs(model, tools)
        govern(agent, runner_for(rec))
        state = agent.invoke({"messages": [("user", "Session sync")]}, thread("s"))
        asyncio.run(end_sessions())
    assert state["messages"][-1].content == "sum 10"
    assert sessions(rec.spans) == [
        [
            "session coder session=completed",
            "  invoke_agent coder turn=completed",
            "    chat scripted-model",
            "    execute_tool add tool=succeeded policy=allow by=PolicyEnforcer",
            "    chat scripted-model",
        ]
    ]


async def test_a_blocked_prompt_never_starts_the_graph_and_a_failing_tool_fails_the_turn(
    server: ScriptedModelServer, model: ChatOpenAI, ended: None
) -> None:
    with recording() as rec:
        tools = Tools()
        agent, _ = graphs(model, tools)
        govern(agent, runner_for(rec))
        with pytest.raises(TurnBlocked, match="forbidden topic"):
            await answer(agent, "Forbidden: tell me", "b")
        with pytest.raises(ValueError, match="kaboom"):  # ToolNode re-raises, as before
            await answer(agent, "Broken: run it", "b")
        await end_sessions()
    assert not any("Forbidden" in str(r.body) for r in server.requests)
    assert tools.ran == [("explode", {})]
    assert sessions(rec.spans) == [
        [
            "session coder session=completed",
            "  invoke_agent coder turn=blocked",
            "  invoke_agent coder turn=failed error=ValueError",
            "    chat scripted-model",
            "    execute_tool explode tool=failed policy=allow by=PolicyEnforcer recovered=False error=ValueError",
        ]
    ]


async def test_three_concurrent_threads_stay_apart(model: ChatOpenAI, ended: None) -> None:
    with recording() as rec:
        agent, _ = graphs(model, Tools())
        govern(agent, runner_for(rec))
        answers = await asyncio.gather(*(answer(agent, f"Session {i}", f"c{i}") for i in range(3)))
        await end_sessions()
    assert answers == ["sum 10"] * 3
    one = (
        "session coder session=completed",
        "  invoke_agent coder turn=completed",
        "    chat scripted-model",
        "    execute_tool add tool=succeeded policy=allow by=PolicyEnforcer",
        "    chat scripted-model",
    )
    assert same_sessions(rec.spans) == {one: 3}


async def test_a_cancelled_run_ends_its_turn_and_tool_call_cancelled(
    model: ChatOpenAI, ended: None
) -> None:
    with recording() as rec:
        tools = Tools()
        agent, _ = graphs(model, tools)
        govern(agent, runner_for(rec))
        task = asyncio.create_task(answer(agent, "Slow: wait", "x"))
        await tools.cancel_once_started(task)
        await end_sessions()
    assert sessions(rec.spans) == [
        [
            "session coder session=completed",
            "  invoke_agent coder turn=cancelled error=CancelledError",
            "    chat scripted-model",
            "    execute_tool wait_forever tool=failed policy=allow by=PolicyEnforcer error=CancelledError",
        ]
    ]


@pytest.mark.parametrize("run", range(3))
async def test_native_ask_interrupts_the_graph_until_resumed(
    run: int, model: ChatOpenAI, ended: None
) -> None:
    with recording() as rec:
        tools = Tools()
        agent, _ = graphs(model, tools)
        govern(agent, HookRunner([rec.hook, guard_tools]), ask="native")
        paused = await agent.ainvoke({"messages": [("user", "Deploy: now")]}, thread("n"))
        (question,) = paused["__interrupt__"]
        assert question.value == {
            "kind": "hookscope.ask",
            "question": "allow deploy?",
            "tool": "deploy",
        }
        assert tools.ran == []
        done = await agent.ainvoke(Command(resume=True), thread("n"))
        await end_sessions()
    assert done["messages"][-1].content == "deployed: deployed to prod"
    assert tools.ran == [("deploy", {"env": "prod"})]
    assert sessions(rec.spans) == [
        [
            "session coder session=completed",
            "  invoke_agent coder turn=completed",
            "    chat scripted-model",
            "    execute_tool deploy tool=denied policy=ask_user by=guard_tools",
            "  invoke_agent coder turn=completed",
            "    execute_tool deploy tool=succeeded policy=ask_user by=guard_tools",
            "    chat scripted-model",
        ]
    ]


async def test_the_instrumentor_governs_new_graphs_once_and_uninstrument_restores(
    model: ChatOpenAI, ended: None
) -> None:
    with recording() as rec:
        instrumentor = LangGraphInstrumentor()
        instrumentor.instrument(runner=runner_for(rec))
        instrumentor.instrument(runner=runner_for(rec))  # a second call changes nothing
        try:
            tools = Tools()
            agent, _ = graphs(model, tools)
            first = await answer(agent, "Turn one: add, then clean up", "i")
            await end_sessions()
        finally:
            instrumentor.uninstrument()
        traced = len(rec.spans)
        agent, _ = graphs(model, tools)
        after = await answer(agent, "Turn one: add, then clean up", "j")
        assert len(rec.spans) == traced  # nothing recorded, nothing governed
    assert first == "Turn one done: rm_rf is never allowed"
    assert after == "Turn one done: removed"
    assert sorted(name for name, _ in tools.ran) == ["add", "add", "delete_file", "rm_rf"]
    assert sessions(rec.spans) == [THREE_TURNS[:7]]
