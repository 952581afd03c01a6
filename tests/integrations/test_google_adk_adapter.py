"""Google ADK agents governed and traced by hookscope: the real SDK against a scripted model.

``LlmAgent`` + ``InMemoryRunner`` (google-adk 2.x) with a Chat Completions model on the
scripted server (``tests/support/adk_model.py``); runs of one ADK session are one hookscope
session. Whole span trees and metric totals are compared; multi-turn scenarios run three times.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator

import pytest
from google.adk.agents import LlmAgent
from google.adk.runners import InMemoryRunner
from google.adk.tools.agent_tool import AgentTool
from google.genai import types

from hookscope import HookRunner
from hookscope.integrations.google_adk import GoogleAdkInstrumentor, end_sessions, govern
from hookscope.testing import recording
from tests.support.adk_model import ScriptedChatLlm
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

APP = "coder-app"


@pytest.fixture
def server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer(SCRIPT) as srv:
        yield srv


@pytest.fixture
def model(server: ScriptedModelServer) -> ScriptedChatLlm:
    return ScriptedChatLlm(model="scripted-model", base_url=server.base_url)


@pytest.fixture
async def ended() -> AsyncIterator[None]:
    yield
    await end_sessions()


class Agents:
    """The coder agent's runner and the helper's, both to be governed by the test."""

    def __init__(self, model: ScriptedChatLlm, tools: Tools) -> None:
        self.helper_agent = LlmAgent(name="helper", model=model, instruction="Help.")
        self.helper = InMemoryRunner(agent=self.helper_agent, app_name="helper-app")
        functions = tools.functions(self.ask_helper)
        self.helper_agent.tools = [functions["add"]]
        agent = LlmAgent(
            name="coder", model=model, instruction="Use tools.", tools=list(functions.values())
        )
        self.runner = InMemoryRunner(agent=agent, app_name=APP)

    async def ask_helper(self, question: str) -> str:
        session = await self.helper.session_service.create_session(
            app_name="helper-app", user_id="u"
        )
        return await final(self.helper, question, session.id)

    async def session(self) -> str:
        created = await self.runner.session_service.create_session(app_name=APP, user_id="u")
        return created.id

    async def close(self) -> None:
        await self.runner.close()
        await self.helper.close()


async def final(runner: InMemoryRunner, prompt: str | types.Content, session_id: str) -> str:
    """The final response's text of one run (``prompt``: the user's text, or a message)."""
    answer = ""
    if isinstance(prompt, types.Content):
        message = prompt
    else:
        message = types.Content(role="user", parts=[types.Part(text=prompt)])
    async for event in runner.run_async(user_id="u", session_id=session_id, new_message=message):
        if event.is_final_response() and event.content and event.content.parts:
            answer = "".join(p.text or "" for p in event.content.parts)
    return answer


async def answer_once(runner: InMemoryRunner, prompt: str) -> str:
    """The final answer to ``prompt`` in a new session of ``runner``, which is closed after."""
    session = await runner.session_service.create_session(app_name=APP, user_id="u")
    answer = await final(runner, prompt, session.id)
    await runner.close()
    return answer


@pytest.mark.parametrize("run", range(3))
async def test_a_three_turn_session_is_governed_and_traced(
    run: int, model: ScriptedChatLlm, ended: None
) -> None:
    with recording() as rec:
        tools = Tools()
        agents = Agents(model, tools)
        runner = runner_for(rec)
        assert govern(agents.runner, runner) is agents.runner
        govern(agents.helper, runner)
        session = await agents.session()
        first = await final(agents.runner, "Turn one: add, then clean up", session)
        second = await final(agents.runner, "Turn two: write notes", session)
        third = await final(agents.runner, "Turn three: ship it", session)
        await agents.close()  # ends the runner's sessions

    assert sorted(tools.ran, key=repr) == THREE_TURNS_RAN
    assert first == 'Turn one done: {"error": "rm_rf is never allowed"}'
    assert second == 'Turn two done: {"result": "upstream down; try later"}'
    assert third == ('Turn three done: {"error": "allow wipe? (the user answered \'deny\')"}')
    assert sessions(rec.spans) == [THREE_TURNS]
    assert outcome_totals(rec) == {
        "tool calls": {"succeeded": 5, "denied": 3, "recovered": 1},
        "turns": {"completed": 4},  # three turns and the helper's run
        "tokens": {"input": 8, "output": 8},
    }


async def test_a_blocked_prompt_never_reaches_the_model_and_a_failing_tool_fails_the_turn(
    server: ScriptedModelServer, model: ScriptedChatLlm, ended: None
) -> None:
    with recording() as rec:
        tools = Tools()
        agents = Agents(model, tools)
        govern(agents.runner, runner_for(rec))
        session = await agents.session()
        assert await final(agents.runner, "Forbidden: tell me", session) == "forbidden topic"
        with pytest.raises(ValueError, match="kaboom"):  # ADK re-raises, as before
            await final(agents.runner, "Broken: run it", session)
        await agents.close()
    assert [r.prompt_key for r in server.model_requests()] == ["Broken"]
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


async def test_three_concurrent_sessions_stay_apart(model: ScriptedChatLlm, ended: None) -> None:
    with recording() as rec:
        agents = Agents(model, Tools())
        govern(agents.runner, runner_for(rec))
        ids = [await agents.session() for _ in range(3)]
        answers = await asyncio.gather(
            *(final(agents.runner, f"Session {i}", ids[i]) for i in range(3))
        )
        await agents.close()
    assert answers == ['sum {"result": 10}'] * 3
    one = (
        "session coder session=completed",
        "  invoke_agent coder turn=completed",
        "    chat scripted-model",
        "    execute_tool add tool=succeeded policy=allow by=PolicyEnforcer",
        "    chat scripted-model",
    )
    assert same_sessions(rec.spans) == {one: 3}


async def test_a_cancelled_run_ends_its_turn_and_tool_call_cancelled(
    model: ScriptedChatLlm, ended: None
) -> None:
    with recording() as rec:
        tools = Tools()
        agents = Agents(model, tools)
        govern(agents.runner, runner_for(rec))
        session = await agents.session()
        task = asyncio.create_task(final(agents.runner, "Slow: wait", session))
        await tools.cancel_once_started(task)
        await agents.close()
    assert sessions(rec.spans) == [
        [
            "session coder session=completed",
            "  invoke_agent coder turn=cancelled error=CancelledError",
            "    chat scripted-model",
            "    execute_tool wait_forever tool=failed policy=allow by=PolicyEnforcer error=CancelledError",
        ]
    ]


async def test_a_sub_agent_adk_transfers_to_is_an_invoke_agent_run_in_the_turn(
    model: ScriptedChatLlm, ended: None
) -> None:
    with recording() as rec:
        helper = LlmAgent(name="helper", model=model, instruction="Help.")
        agent = LlmAgent(name="coder", model=model, sub_agents=[helper])
        answer = await answer_once(
            govern(InMemoryRunner(agent=agent, app_name=APP), runner_for(rec)),
            "Transfer: to the helper",
        )
    assert answer == "helper here"
    assert sessions(rec.spans) == [
        [
            "session coder session=completed",
            "  invoke_agent coder turn=completed",
            "    chat scripted-model",
            "    execute_tool transfer_to_agent tool=succeeded policy=allow by=PolicyEnforcer",
            "    invoke_agent helper turn=completed",
            "      chat scripted-model",
        ]
    ]


# ADK's AgentTool builds its inner Runner with the argument ADK itself deprecates.
@pytest.mark.filterwarnings("ignore:The `plugins` argument is deprecated:DeprecationWarning")
async def test_an_agent_tool_runs_its_agent_under_the_call(
    model: ScriptedChatLlm, ended: None
) -> None:
    with recording() as rec:
        tools = Tools()
        helper = LlmAgent(name="helper", model=model, instruction="Help.")
        helper.tools = [tools.functions(lambda q: q)["add"]]
        agent = LlmAgent(name="coder", model=model, tools=[AgentTool(agent=helper)])
        answer = await answer_once(
            govern(InMemoryRunner(agent=agent, app_name=APP), runner_for(rec)),
            "Delegate: ask the helper",
        )
    assert answer == 'delegated: {"result": "helper says {\\"result\\": 2}"}'
    assert sessions(rec.spans) == [
        [
            "session coder session=completed",
            "  invoke_agent coder turn=completed",
            "    chat scripted-model",
            "    execute_tool helper tool=succeeded policy=allow by=PolicyEnforcer",
            "      invoke_agent helper turn=completed",
            "        chat scripted-model",
            "        execute_tool add tool=succeeded policy=allow by=PolicyEnforcer",
            "        chat scripted-model",
            "    chat scripted-model",
        ]
    ]


async def test_the_instrumentor_governs_new_runners_once_and_uninstrument_restores(
    model: ScriptedChatLlm, ended: None
) -> None:
    with recording() as rec:
        instrumentor = GoogleAdkInstrumentor()
        instrumentor.instrument(runner=runner_for(rec))
        instrumentor.instrument(runner=runner_for(rec))  # a second call changes nothing
        try:
            tools = Tools()
            agents = Agents(model, tools)
            first = await final(
                agents.runner, "Turn one: add, then clean up", await agents.session()
            )
            await agents.close()
        finally:
            instrumentor.uninstrument()
        traced = len(rec.spans)
        agents = Agents(model, tools)
        after = await final(agents.runner, "Turn one: add, then clean up", await agents.session())
        await agents.close()
        assert len(rec.spans) == traced  # nothing recorded, nothing governed
    assert first == 'Turn one done: {"error": "rm_rf is never allowed"}'
    assert after == 'Turn one done: {"result": "removed"}'
    assert sorted(name for name, _ in tools.ran) == ["add", "add", "delete_file", "rm_rf"]
    assert sessions(rec.spans) == [THREE_TURNS[:7]]


@pytest.mark.parametrize("run", range(3))
async def test_native_ask_pauses_the_run_for_adk_tool_confirmation(
    run: int, model: ScriptedChatLlm, ended: None
) -> None:
    with recording() as rec:
        tools = Tools()
        agents = Agents(model, tools)
        govern(agents.runner, HookRunner([rec.hook, guard_tools]), ask="native")
        session = await agents.session()
        asked = []
        message = types.Content(role="user", parts=[types.Part(text="Deploy: now")])
        async for event in agents.runner.run_async(
            user_id="u", session_id=session, new_message=message
        ):
            asked += [c for c in event.get_function_calls() if c.name == "adk_request_confirmation"]
        (question,) = asked
        assert tools.ran == []
        answer = types.Content(
            role="user",
            parts=[
                types.Part(
                    function_response=types.FunctionResponse(
                        id=question.id,
                        name="adk_request_confirmation",
                        response={"confirmed": True},
                    )
                )
            ],
        )
        done = await final(agents.runner, answer, session)
        await agents.close()
    assert question.args["toolConfirmation"]["hint"] == "allow deploy?"
    assert tools.ran == [("deploy", {"env": "prod"})]
    assert done == 'deployed: {"result": "deployed to prod"}'
    assert sessions(rec.spans) == [
        [
            "session coder session=completed",
            "  invoke_agent coder turn=completed",
            "    chat scripted-model",
            "    execute_tool deploy tool=denied policy=ask_user by=guard_tools",
            # ADK still shows the model the pending call's result before it pauses
            "    chat scripted-model",
            "  invoke_agent coder turn=completed",
            "    execute_tool deploy tool=succeeded policy=ask_user by=guard_tools",
            "    chat scripted-model",
        ]
    ]
