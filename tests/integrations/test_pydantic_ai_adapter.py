"""pydantic-ai agents governed and traced by hookscope: the real SDK against a scripted model.

Every test runs ``pydantic_ai.Agent`` (pydantic-ai-slim 2.x, OpenAI Chat Completions model) on
the scripted model server, compares whole span trees and metric totals, and checks what the
agent and its tools saw. Multi-turn scenarios run three times.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from openai import AsyncOpenAI
from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from hookscope import HookRunner
from hookscope.integrations.pydantic_ai import PydanticAIInstrumentor, end_sessions, govern
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
from .sdk_trees import outcome_totals, same_sessions, sessions, totals


@pytest.fixture
def server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer(SCRIPT) as srv:
        yield srv


@pytest.fixture
async def model(server: ScriptedModelServer) -> AsyncIterator[OpenAIChatModel]:
    client = AsyncOpenAI(base_url=server.base_url + "/v1", api_key="sk-test", max_retries=0)
    yield OpenAIChatModel("scripted-model", provider=OpenAIProvider(openai_client=client))
    await client.close()  # its connections too: an unclosed socket is a test error here


@pytest.fixture
async def ended() -> AsyncIterator[None]:
    yield
    await end_sessions()  # a failed test leaves no session open for the next


def agents(
    model: OpenAIChatModel, tools: Tools, **options: Any
) -> tuple[Agent[Any, Any], Agent[Any, Any]]:
    helper = Agent(model, name="helper")
    functions = tools.functions(lambda question: _output(helper.run(question)))
    helper.tool_plain(functions["add"])
    agent = Agent(model, name="coder", **options)
    for function in functions.values():
        agent.tool_plain(function)
    return agent, helper


async def _output(run: Any) -> str:
    return str((await run).output)


TOOL_SPAN = "execute_tool {} tool={} policy={} by={}"


@pytest.mark.parametrize("run", range(3))
async def test_a_three_turn_session_is_governed_and_traced(
    run: int, server: ScriptedModelServer, model: OpenAIChatModel, ended: None
) -> None:
    with recording() as rec:
        tools = Tools()
        agent, helper = agents(model, tools)
        runner = runner_for(rec)
        assert govern(agent, runner) is agent
        govern(helper, runner)
        first = await agent.run("Turn one: add, then clean up")
        second = await agent.run("Turn two: write notes", message_history=first.all_messages())
        third = await agent.run("Turn three: ship it", message_history=second.all_messages())
        assert await end_sessions() == 1

        # pydantic-ai runs a response's tool calls concurrently: their order is the SDK's
        assert sorted(tools.ran, key=repr) == THREE_TURNS_RAN
        assert first.output == "Turn one done: rm_rf is never allowed"
        assert second.output == "Turn two done: upstream down; try later"
        assert third.output.startswith("Turn three done: allow wipe? (the user answered 'deny')")
        denial = [
            p.content
            for m in first.all_messages()
            for p in m.parts
            if p.part_kind == "tool-return" and p.tool_name == "delete_file"
        ]
        assert denial == ["denied by policy rule 'deny:delete_file': system files are protected"]
        assert sessions(rec.spans) == [THREE_TURNS]
        assert outcome_totals(rec) == {
            "tool calls": {"succeeded": 5, "denied": 3, "recovered": 1},
            # three turns and the helper's run (an invoke_agent of its own)
            "turns": {"completed": 4},
            "tokens": {"input": 8, "output": 8},
        }
        assert totals(rec, "hookscope.sessions", "gen_ai.agent.name") == {"coder": 1}


@pytest.mark.parametrize("run", range(3))
async def test_the_session_is_the_conversation_and_keeps_the_application_session_id(
    run: int, server: ScriptedModelServer, model: OpenAIChatModel, ended: None
) -> None:
    with recording() as rec:
        agent, _helper = agents(model, Tools())
        govern(agent, runner_for(rec))
        first = await agent.run("Session one")
        async with agent.run_stream("Session two", message_history=first.all_messages()) as run:
            assert await run.get_output() == "sum 10"  # a streamed run: one more turn
        await agent.run("Session three", conversation_id="mine")
        await end_sessions()
    roots = [s for s in rec.spans if s.name == "session coder"]
    assert [s.attributes and s.attributes["gen_ai.conversation.id"] for s in roots] == [
        first.conversation_id,
        "mine",
    ]
    assert [s.attributes and s.attributes["hookscope.session.turns"] for s in roots] == [2, 1]


async def test_a_blocked_prompt_never_reaches_the_model_and_a_failing_tool_fails_the_turn(
    server: ScriptedModelServer, model: OpenAIChatModel, ended: None
) -> None:
    with recording() as rec:
        tools = Tools()
        agent, _helper = agents(model, tools)
        govern(agent, runner_for(rec))
        with pytest.raises(TurnBlocked, match="forbidden topic"):
            await agent.run("Forbidden: tell me")
        with pytest.raises(ValueError, match="kaboom"):  # the SDK's own behaviour, unchanged
            await agent.run("Broken: run it")
        await end_sessions()
    assert not any("Forbidden" in str(r.body) for r in server.requests)
    assert tools.ran == [("explode", {})]
    assert sessions(rec.spans) == [
        ["session coder session=completed", "  invoke_agent coder turn=blocked"],
        [
            "session coder session=completed",
            "  invoke_agent coder turn=failed error=ValueError",
            "    chat scripted-model",
            "    execute_tool explode tool=failed policy=allow by=PolicyEnforcer recovered=False error=ValueError",
        ],
    ]


async def test_three_concurrent_sessions_stay_apart(
    server: ScriptedModelServer, model: OpenAIChatModel, ended: None
) -> None:
    with recording() as rec:
        agent, _helper = agents(model, Tools())
        govern(agent, runner_for(rec))
        results = await asyncio.gather(*(agent.run(f"Session {i}") for i in range(3)))
        await end_sessions()
    assert [r.output for r in results] == ["sum 10"] * 3
    one = (
        "session coder session=completed",
        "  invoke_agent coder turn=completed",
        "    chat scripted-model",
        "    execute_tool add tool=succeeded policy=allow by=PolicyEnforcer",
        "    chat scripted-model",
    )
    assert same_sessions(rec.spans) == {one: 3}
    assert len({s.context.trace_id for s in rec.spans if s.context}) == 3


async def test_a_cancelled_run_ends_its_turn_and_tool_call_cancelled(
    server: ScriptedModelServer, model: OpenAIChatModel, ended: None
) -> None:
    with recording() as rec:
        tools = Tools()
        agent, _helper = agents(model, tools)
        govern(agent, runner_for(rec))
        task = asyncio.create_task(agent.run("Slow: wait"))
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
async def test_native_ask_defers_to_pydantic_ai_approval(
    run: int, server: ScriptedModelServer, model: OpenAIChatModel, ended: None
) -> None:
    with recording() as rec:
        tools = Tools()
        agent, _helper = agents(model, tools, output_type=[str, DeferredToolRequests])
        govern(agent, HookRunner([rec.hook, guard_tools]), ask="native")
        first = await agent.run("Deploy: now")
        assert isinstance(first.output, DeferredToolRequests)
        (approval,) = first.output.approvals
        assert tools.ran == []
        second = await agent.run(
            message_history=first.all_messages(),
            deferred_tool_results=DeferredToolResults(approvals={approval.tool_call_id: True}),
        )
        await end_sessions()
    assert second.output == "deployed: deployed to prod"
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


async def test_the_instrumentor_governs_new_agents_once_and_uninstrument_restores(
    server: ScriptedModelServer, model: OpenAIChatModel, ended: None
) -> None:
    with recording() as rec:
        instrumentor = PydanticAIInstrumentor()
        instrumentor.instrument(runner=runner_for(rec))
        instrumentor.instrument(runner=runner_for(rec))  # a second call changes nothing
        try:
            tools = Tools()
            agent, _helper = agents(model, tools)
            first = await agent.run("Turn one: add, then clean up")
            await end_sessions()
        finally:
            instrumentor.uninstrument()
        assert first.output == "Turn one done: rm_rf is never allowed"
        traced = len(rec.spans)
        after = await agent.run("Turn one: add, then clean up")
        assert len(rec.spans) == traced  # nothing recorded, nothing governed
    assert after.output == "Turn one done: removed"
    # Governed: only add ran. Ungoverned: a response's calls run concurrently, in any order.
    ran = [name for name, _ in tools.ran]
    assert (ran[0], sorted(ran[1:])) == ("add", ["add", "delete_file", "rm_rf"])
    assert sessions(rec.spans) == [THREE_TURNS[:7]]
