"""govern() at the edges: blocked turns, concurrency, cancellation, native approval, model
requests, the application's session id, the user's own hooks and the SDK's own tracing."""

from __future__ import annotations

import asyncio
import gc
import threading
import weakref
from typing import Any

import pytest
from agents import (
    AgentHooks,
    InputGuardrailTripwireTriggered,
    ModelSettings,
    Runner,
    SQLiteSession,
)
from agents.tracing import get_trace_provider
from opentelemetry import baggage
from opentelemetry import context as otel_context

from hookscope import Hook, HookResult, HookRunner, hooks
from hookscope.integrations.openai_agents import ModelRequestBlocked, end_session, govern
from hookscope.testing import Recording
from hookscope.types import LlmRequest, RequestDecision
from tests.integrations.oai.support import (
    ATTEMPTS,
    RAN,
    add,
    agent,
    call,
    confirm_transfers,
    lines,
    totals,
    transfer,
    wait_forever,
)
from tests.support.model_server import ScriptedModelServer


@hooks.pre_turn
def no_secrets(prompt: Any) -> HookResult | None:
    if "password" in str(prompt):
        return HookResult.deny("prompts must not carry passwords")
    return None


BLOCK_SCRIPT = {
    "Add please": [call("add", a=1, b=2), {"text": "{tool_result}"}],
    "my password is hunter2": [{"text": "never sent"}],
}


@pytest.mark.parametrize("attempt", ATTEMPTS)
async def test_a_pre_turn_block_stops_the_run_before_any_model_call(
    rec: Recording, attempt: int
) -> None:
    with ScriptedModelServer(BLOCK_SCRIPT) as server:
        governed = govern(agent(server.base_url, tools=[add]), HookRunner([rec.hook, no_secrets]))
        session = SQLiteSession(f"blocking-{attempt}")
        first = await Runner.run(governed, "Add please", session=session)
        with pytest.raises(InputGuardrailTripwireTriggered) as blocked:
            await Runner.run(governed, "my password is hunter2", session=session)
        streamed = Runner.run_streamed(governed, "my password is hunter2", session=session)
        with pytest.raises(InputGuardrailTripwireTriggered):
            async for _ in streamed.stream_events():
                pass
        await end_session(session)
        requests = len(server.model_requests())
    assert first.final_output == "3"
    assert blocked.value.guardrail_result.output.output_info == "prompts must not carry passwords"
    assert requests == 2  # the first turn's two; the blocked turns sent none
    assert lines(rec) == [
        "session assistant session=completed",
        "  invoke_agent assistant turn=completed in=200 out=20",
        "    chat scripted-model in=100 out=10",
        "    execute_tool add tool=succeeded decision=allow",
        "    chat scripted-model in=100 out=10",
        "  invoke_agent assistant ERROR turn=blocked",
        "  invoke_agent assistant ERROR turn=blocked",
    ]
    assert totals(rec, "hookscope.turns", "hookscope.turn.outcome") == {
        ("completed",): 1,
        ("blocked",): 2,
    }


CONCURRENT_SCRIPT = {
    f"Session {n} turn {t}": [call("add", a=n, b=t), {"text": f"s{n}t{t}={{tool_result}}"}]
    for n in range(3)
    for t in range(2)
}


@pytest.mark.parametrize("attempt", ATTEMPTS)
async def test_three_concurrent_sessions_stay_apart(rec: Recording, attempt: int) -> None:
    with ScriptedModelServer(CONCURRENT_SCRIPT) as server:
        governed = govern(agent(server.base_url, tools=[add]), HookRunner([rec.hook]))

        async def converse(n: int) -> list[str]:
            session = SQLiteSession(f"concurrent-{attempt}-{n}")
            answers = []
            for t in range(2):
                result = await Runner.run(governed, f"Session {n} turn {t}", session=session)
                answers.append(result.final_output)
            await end_session(session)
            return answers

        answers = await asyncio.gather(*(converse(n) for n in range(3)))
    assert answers == [[f"s{n}t0={n}", f"s{n}t1={n + 1}"] for n in range(3)]
    trees = rec.span_tree(exclude=())
    assert sorted(tree["attributes"]["session.id"] for tree in trees) == [
        f"concurrent-{attempt}-{n}" for n in range(3)
    ]
    for tree in trees:  # each session's spans, and only its own, under its root
        session_id = tree["attributes"]["session.id"]
        turns = tree["children"]
        assert [t["name"] for t in turns] == ["invoke_agent assistant"] * 2
        for turn in turns:
            assert turn["attributes"]["session.id"] == session_id
            assert turn["attributes"]["hookscope.turn.outcome"] == "completed"
            assert [c["name"] for c in turn["children"]] == [
                "chat scripted-model",
                "execute_tool add",
                "chat scripted-model",
            ]
    assert totals(rec, "hookscope.tool.calls", "hookscope.tool.outcome") == {("succeeded",): 6}
    assert totals(rec, "hookscope.sessions", "gen_ai.agent.name") == {("assistant",): 3}


CANCEL_SCRIPT = {"Wait for it": [call("wait_forever", reason="test"), {"text": "done"}]}


@pytest.mark.parametrize("attempt", ATTEMPTS)
async def test_a_cancelled_run_ends_its_call_turn_and_session_cancelled(
    rec: Recording, attempt: int
) -> None:
    with ScriptedModelServer(CANCEL_SCRIPT) as server:
        governed = govern(agent(server.base_url, tools=[wait_forever]), HookRunner([rec.hook]))
        task = asyncio.ensure_future(Runner.run(governed, "Wait for it"))
        deadline = asyncio.get_running_loop().time() + 10
        while "wait_forever test" not in RAN:  # the tool is running
            assert asyncio.get_running_loop().time() < deadline, "the tool never started"
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert lines(rec) == [
        "session assistant ERROR session=cancelled error=CancelledError",
        "  invoke_agent assistant ERROR turn=cancelled error=CancelledError",
        "    chat scripted-model in=100 out=10",
        "    execute_tool wait_forever ERROR tool=failed decision=allow error=CancelledError",
    ]
    assert totals(rec, "hookscope.turns", "hookscope.turn.outcome") == {("cancelled",): 1}


NATIVE_SCRIPT = {
    "Send a small transfer": [call("transfer", amount=5), {"text": "{tool_result}"}],
    "Send another transfer": [call("transfer", amount=7), {"text": "{tool_result}"}],
}


@pytest.mark.parametrize("attempt", ATTEMPTS)
async def test_ask_native_hands_the_question_to_the_sdk_approval(
    rec: Recording, attempt: int
) -> None:
    with ScriptedModelServer(NATIVE_SCRIPT) as server:
        governed = govern(
            agent(server.base_url, tools=[transfer]),
            HookRunner([rec.hook, confirm_transfers]),
            ask="native",
        )
        session = SQLiteSession(f"native-{attempt}")
        asked = await Runner.run(governed, "Send a small transfer", session=session)
        assert [i.tool_name for i in asked.interruptions] == ["transfer"]
        state = asked.to_state()
        state.approve(asked.interruptions[0])
        approved = await Runner.run(governed, state, session=session)
        asked_again = await Runner.run(governed, "Send another transfer", session=session)
        state = asked_again.to_state()
        state.reject(asked_again.interruptions[0])
        rejected = await Runner.run(governed, state, session=session)
        await end_session(session)
    assert approved.final_output == "sent 5"
    assert rejected.final_output == "Tool execution was not approved."
    assert RAN == ["transfer 5"]
    assert lines(rec) == [
        "session assistant session=completed",
        # the run stops for the SDK's approval: asked, not approved within this turn
        "  invoke_agent assistant turn=completed in=100 out=10",
        "    chat scripted-model in=100 out=10",
        "    execute_tool transfer ERROR tool=denied decision=ask_user by=confirm_transfers",
        # resumed with the call approved: the hooks decide again, the approval answers the ask
        "  invoke_agent assistant turn=completed in=200 out=20",
        "    execute_tool transfer tool=succeeded decision=ask_user by=confirm_transfers",
        "    chat scripted-model in=100 out=10",
        "  invoke_agent assistant turn=completed in=100 out=10",
        "    chat scripted-model in=100 out=10",
        "    execute_tool transfer ERROR tool=denied decision=ask_user by=confirm_transfers",
        # resumed with the call rejected: the SDK answers the model itself, calling no seam
        "  invoke_agent assistant turn=completed in=200 out=20",
        "    chat scripted-model in=100 out=10",
    ]


MODEL_SCRIPT = {"Say hi": [{"text": "hi"}], "Say bye": [{"text": "bye"}]}


class HouseRules(Hook):
    """Adds a system rule to every model request; blocks goodbyes."""

    def pre_llm_request(self, context: Any, request: LlmRequest) -> RequestDecision:
        if any("bye" in str(m.get("content")) for m in request.messages):
            return RequestDecision.block("goodbyes are not sent to the model")
        rules = {"role": "system", "content": "House rules: be brief."}
        return RequestDecision.modify(
            LlmRequest(request.model, [rules, *request.messages], request.tools, request.provider)
        )


async def test_pre_llm_request_modifies_and_blocks_model_calls(rec: Recording) -> None:
    with ScriptedModelServer(MODEL_SCRIPT) as server:
        governed = govern(agent(server.base_url), HookRunner([rec.hook, HouseRules()]))
        said = await Runner.run(governed, "Say hi")
        with pytest.raises(ModelRequestBlocked, match="goodbyes are not sent"):
            await Runner.run(governed, "Say bye")
        sent = server.model_requests()
    assert said.final_output == "hi"
    assert len(sent) == 1
    assert sent[0].body["messages"] == [
        {"role": "system", "content": "Use tools."},
        {"role": "system", "content": "House rules: be brief."},
        {"role": "user", "content": "Say hi"},
    ]
    assert lines(rec) == [
        "session assistant session=completed",
        "  invoke_agent assistant turn=completed in=100 out=10",
        "    chat scripted-model in=100 out=10",
        "session assistant ERROR session=failed error=ModelRequestBlocked",
        "  invoke_agent assistant ERROR turn=failed error=ModelRequestBlocked",
        "    chat scripted-model",
    ]


async def test_the_applications_session_id_is_kept(rec: Recording) -> None:
    with ScriptedModelServer(MODEL_SCRIPT) as server:
        governed = govern(agent(server.base_url), HookRunner([rec.hook]))
        conversation = SQLiteSession("sdk-conversation")
        token = otel_context.attach(baggage.set_baggage("session.id", "app-session-7"))
        try:
            await Runner.run(governed, "Say hi", session=conversation)
        finally:
            otel_context.detach(token)
        await Runner.run(governed, "Say bye", session=conversation)  # the app's id is kept
        assert await end_session(conversation)
        assert not await end_session(conversation)  # ended once
    assert [
        (s.name, s.attributes["session.id"], s.attributes["gen_ai.conversation.id"])
        for s in rec.spans
        if s.name != "chat scripted-model"
    ] == [
        ("invoke_agent assistant", "app-session-7", "sdk-conversation"),
        ("invoke_agent assistant", "app-session-7", "sdk-conversation"),
        ("session assistant", "app-session-7", "sdk-conversation"),
    ]


async def test_a_session_the_application_lets_go_of_ends(rec: Recording) -> None:
    with ScriptedModelServer(MODEL_SCRIPT) as server:
        governed = govern(agent(server.base_url), HookRunner([rec.hook]))
        await Runner.run(governed, "Say hi", session=SQLiteSession("dropped"))
        deadline = asyncio.get_running_loop().time() + 10
        while not any(s.name == "session assistant" for s in rec.spans):
            assert asyncio.get_running_loop().time() < deadline, "the session never ended"
            # The SDK's objects can hold the session in a reference cycle; only the cycle
            # collector frees it, and an idle test allocates too little to trigger it.
            gc.collect()
            await asyncio.sleep(0.01)
    assert lines(rec)[0] == "session assistant session=completed"


async def test_a_session_the_collector_frees_in_another_thread_ends(rec: Recording) -> None:
    """The cycle collector runs finalizers in whichever thread allocates: the session is
    ended on its own loop all the same."""
    with ScriptedModelServer(MODEL_SCRIPT) as server:
        governed = govern(agent(server.base_url), HookRunner([rec.hook]))
        gc.disable()  # only the other thread's collection may free the SDK session
        try:
            sdk_session = SQLiteSession("freed elsewhere")
            freed = weakref.ref(sdk_session)
            await Runner.run(governed, "Say hi", session=sdk_session)
            cycle: list[Any] = [sdk_session]
            cycle.append(cycle)  # as the SDK's own objects may: only the collector frees it
            del sdk_session, cycle
            assert freed() is not None
            collector = threading.Thread(target=gc.collect)
            collector.start()
            collector.join()
        finally:
            gc.enable()
        assert freed() is None, "the other thread's collection did not free the SDK session"
        deadline = asyncio.get_running_loop().time() + 10
        while not any(s.name == "session assistant" for s in rec.spans):
            assert asyncio.get_running_loop().time() < deadline, "the session never ended"
            await asyncio.sleep(0.01)
    assert lines(rec)[0] == "session assistant session=completed"


class UserHooks(AgentHooks[Any]):
    def __init__(self) -> None:
        self.seen: list[str] = []

    async def on_start(self, context: Any, agent: Any) -> None:
        self.seen.append(f"start {agent.name}")

    async def on_tool_end(self, context: Any, agent: Any, tool: Any, result: Any) -> None:
        self.seen.append(f"tool {tool.name} -> {result}")

    async def on_llm_end(self, context: Any, agent: Any, response: Any) -> None:
        self.seen.append("llm")


async def test_the_users_own_hooks_and_settings_still_run(rec: Recording) -> None:
    script = {"Add please": [call("add", a=1, b=2), {"text": "{tool_result}"}]}
    with ScriptedModelServer(script) as server:
        user = UserHooks()
        original = agent(server.base_url, tools=[add], hooks=user)
        original.model_settings = ModelSettings(temperature=0.25)
        governed = govern(original, HookRunner([rec.hook]))
        result = await Runner.run(governed, "Add please")
        sent = server.model_requests()[0].body
    assert result.final_output == "3"
    assert user.seen == ["start assistant", "llm", "tool add -> 3", "llm"]
    assert sent["temperature"] == 0.25
    assert original.tools == [add]  # the user's agent is left as it was
    assert original.hooks is user


async def test_tracing_is_left_alone(rec: Recording) -> None:
    provider = get_trace_provider()
    before = provider._disabled  # type: ignore[attr-defined]
    with ScriptedModelServer(MODEL_SCRIPT) as server:
        governed = govern(agent(server.base_url), HookRunner([rec.hook]))
        await Runner.run(governed, "Say hi")
    assert provider._disabled is before  # type: ignore[attr-defined]


class Lockdown(Hook):
    """Blocks every turn once locked (a resumed run included)."""

    def __init__(self) -> None:
        self.locked = False

    def pre_turn(self, context: Any, prompt: Any) -> HookResult | None:
        return HookResult.deny("locked down") if self.locked else None


async def test_a_blocked_resumed_run_does_not_run_the_approved_call(rec: Recording) -> None:
    with ScriptedModelServer(NATIVE_SCRIPT) as server:
        lockdown = Lockdown()
        governed = govern(
            agent(server.base_url, tools=[transfer]),
            HookRunner([rec.hook, lockdown, confirm_transfers]),
            ask="native",
        )
        asked = await Runner.run(governed, "Send a small transfer")
        state = asked.to_state()
        state.approve(asked.interruptions[0])
        lockdown.locked = True  # the SDK runs no input guardrail on a resumed run
        with pytest.raises(InputGuardrailTripwireTriggered) as blocked:
            await Runner.run(governed, state)
        streamed = Runner.run_streamed(governed, asked.to_state())
        with pytest.raises(InputGuardrailTripwireTriggered):
            async for _ in streamed.stream_events():
                pass
    assert blocked.value.guardrail_result.output.output_info == "locked down"
    assert RAN == []
    assert totals(rec, "hookscope.turns", "hookscope.turn.outcome") == {
        ("completed",): 1,
        ("blocked",): 2,
    }


PARALLEL_SCRIPT = {
    "Add twice": [
        {
            "tool_calls": [
                {"name": "add", "arguments": {"a": 1, "b": 2}},
                {"name": "add", "arguments": {"a": 3, "b": 4}},
            ]
        },
        {"text": "{tool_result}"},
    ],
    "Fail please": [{"status": 500, "error": "the model is down"}],
}


async def test_parallel_calls_are_siblings_and_a_failing_model_fails_the_turn(
    rec: Recording,
) -> None:
    with ScriptedModelServer(PARALLEL_SCRIPT) as server:
        governed = govern(agent(server.base_url, tools=[add]), HookRunner([rec.hook]))
        result = await Runner.run(governed, "Add twice")
        with pytest.raises(Exception, match="the model is down") as failed:
            await Runner.run(governed, "Fail please")
    assert result.final_output == "7"
    assert sorted(RAN) == ["add 1 2", "add 3 4"]
    error = type(failed.value).__name__
    assert lines(rec) == [
        "session assistant session=completed",
        "  invoke_agent assistant turn=completed in=200 out=20",
        "    chat scripted-model in=100 out=10",
        "    execute_tool add tool=succeeded decision=allow",
        "    execute_tool add tool=succeeded decision=allow",
        "    chat scripted-model in=100 out=10",
        f"session assistant ERROR session=failed error={error}",
        f"  invoke_agent assistant ERROR turn=failed error={error}",
        f"    chat scripted-model ERROR error={error}",
    ]


async def test_a_copy_of_a_governed_agent_is_governed(rec: Recording) -> None:
    script = {"Add please": [call("add", a=1, b=2), {"text": "{tool_result}"}]}
    with ScriptedModelServer(script) as server:
        governed = govern(agent(server.base_url, tools=[add]), HookRunner([rec.hook]))
        copy = governed.clone(name="copy")  # as applications do
        result = await Runner.run(copy, "Add please")
    assert result.final_output == "3"
    assert lines(rec) == [
        "session copy session=completed",
        "  invoke_agent copy turn=completed in=200 out=20",
        "    chat scripted-model in=100 out=10",
        "    execute_tool add tool=succeeded decision=allow",
        "    chat scripted-model in=100 out=10",
    ]
