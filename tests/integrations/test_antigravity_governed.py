"""A hookscope runner governing google-antigravity: the rarer governed paths, on the real SDK.

The stand-in harness (``fake_harness``) plays the harness's side, so a failing hook, an ask
the runner settles through its ``on_interaction`` hooks, a blocked prompt and an agent built
before instrumenting are as easy to specify as the common paths (the end-to-end tests run the
real harness).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from google.antigravity import Agent
from google.antigravity.hooks import policy
from google.antigravity.proto import localharness_pb2 as pb2
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from hookscope import HookResult, HookRunner, ToolCall, hooks
from hookscope.builtins import AutoAnswer
from hookscope.integrations.antigravity import AntigravityInstrumentor, govern
from hookscope.integrations.antigravity.governing import governing_hooks, is_governing

from .fake_harness import FakeHarness, fake_config
from .test_antigravity_adapter import python_tool_call

AGENT = "bot"


def get_weather(city: str) -> str:
    """Today's weather in a city."""
    return f"sunny in {city}"


@hooks.pre_tool_call_decide
def broken(call: ToolCall) -> HookResult:
    raise RuntimeError("the guard crashed")


@hooks.pre_tool_call_decide
def ask_first(call: ToolCall) -> HookResult:
    return HookResult.ask(f"may I look up {call.args.get('city')}?")


@hooks.pre_turn
def no_secrets(context: Any, prompt: Any) -> HookResult:
    return HookResult.deny("no secrets here") if "secret" in str(prompt) else HookResult()


@pytest.fixture
def governed_by(
    tracer_provider: TracerProvider, meter_provider: MeterProvider
) -> Iterator[list[AntigravityInstrumentor]]:
    """Instrumentors the test instruments with a runner; uninstrumented after it."""
    made: list[AntigravityInstrumentor] = []
    yield made
    for instrumentor in made:
        if instrumentor.is_instrumented_by_opentelemetry:
            instrumentor.uninstrument()


def instrument(
    made: list[AntigravityInstrumentor],
    runner: HookRunner,
    tracer_provider: TracerProvider,
    meter_provider: MeterProvider,
) -> None:
    instrumentor = AntigravityInstrumentor()
    instrumentor.instrument(
        runner=runner,
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
        agent_name=AGENT,
    )
    made.append(instrumentor)


@asynccontextmanager
async def agent_on(harness: FakeHarness, **config: Any) -> AsyncIterator[Agent]:
    config.setdefault("policies", [policy.allow_all()])
    async with Agent(fake_config(harness, **config)) as agent:
        yield agent


async def pre_tool(harness: FakeHarness, city: str, call_id: str = "call_1") -> Any:
    """The harness asks the SDK's pre-tool hooks about a call; their answer."""
    harness.emit(
        {
            "callHookRequest": {
                "requestId": f"h-{call_id}",
                "name": "PreTool",
                "type": "LIFECYCLE_HOOK_PRE_TOOL",
                "preToolArgs": {
                    "toolName": "get_weather",
                    "argumentsJson": f'{{"city": "{city}"}}',
                    "callId": call_id,
                    "trajectoryId": "t1",
                    "stepIndex": 2,
                },
            }
        }
    )
    response = await harness.answer("call_hook_response")
    return response.call_hook_response.pre_tool_result


def tool_attributes(spans: Any) -> list[dict[str, Any]]:
    return [dict(s.attributes or {}) for s in spans if s.name.startswith("execute_tool")]


async def test_a_runner_hook_that_raises_denies_the_call_naming_the_hook(
    governed_by: list[AntigravityInstrumentor],
    tracer_provider: TracerProvider,
    meter_provider: MeterProvider,
    span_exporter: InMemorySpanExporter,
) -> None:
    instrument(governed_by, HookRunner([broken]), tracer_provider, meter_provider)
    harness = FakeHarness()

    async with agent_on(harness, tools=[get_weather]) as agent:
        await agent.chat("go")
        harness.trajectory("RUNNING")
        verdict = await pre_tool(harness, "Oslo")
        harness.denied(1, verdict.reason)
        harness.answer_text(2, "Could not.")
        harness.trajectory("FULLY_IDLE")
        await agent.conversation.wait_for_idle()

    assert verdict.decision == pb2.PreToolResult.Decision.DENY
    assert "broken" in verdict.reason
    (tool,) = tool_attributes(span_exporter.get_finished_spans())
    assert tool["hookscope.tool.outcome"] == "denied"
    assert tool["hookscope.policy.decided_by"] == "broken"
    assert tool["gen_ai.tool.call.id"] == "call_1"


@pytest.mark.parametrize(("answer", "allowed"), [("allow", True), ("deny", False)])
async def test_an_ask_is_settled_by_the_runner_s_interaction_hooks(
    governed_by: list[AntigravityInstrumentor],
    tracer_provider: TracerProvider,
    meter_provider: MeterProvider,
    span_exporter: InMemorySpanExporter,
    answer: str,
    allowed: bool,
) -> None:
    runner = HookRunner([ask_first, AutoAnswer({"may I look up Oslo?": answer})])
    instrument(governed_by, runner, tracer_provider, meter_provider)
    harness = FakeHarness()

    async with agent_on(harness, tools=[get_weather]) as agent:
        await agent.chat("go")
        harness.trajectory("RUNNING")
        verdict = await pre_tool(harness, "Oslo")
        if allowed:
            await python_tool_call(harness, 1, "call_1", "Oslo")
        else:
            harness.denied(1, verdict.reason)
        harness.answer_text(2, "Done.")
        harness.trajectory("FULLY_IDLE")
        await agent.conversation.wait_for_idle()

    expected = pb2.PreToolResult.Decision.ALLOW if allowed else pb2.PreToolResult.Decision.DENY
    assert verdict.decision == expected
    (tool,) = tool_attributes(span_exporter.get_finished_spans())
    assert tool["hookscope.policy.decision"] == "ask_user"
    assert tool["hookscope.policy.outcome"] == ("allowed" if allowed else "denied")
    assert tool["hookscope.policy.decided_by"] == "ask_first"
    assert tool["hookscope.interaction.answered_by"] == "AutoAnswer"


async def test_a_prompt_the_runner_blocks_is_a_blocked_turn(
    governed_by: list[AntigravityInstrumentor],
    tracer_provider: TracerProvider,
    meter_provider: MeterProvider,
    span_exporter: InMemorySpanExporter,
) -> None:
    instrument(governed_by, HookRunner([no_secrets]), tracer_provider, meter_provider)
    harness = FakeHarness()

    async with agent_on(harness, tools=[get_weather]) as agent:
        await agent.chat("tell me a secret")
        harness.emit(
            {
                "callHookRequest": {
                    "requestId": "t",
                    "name": "PreTurn",
                    "type": "LIFECYCLE_HOOK_PRE_TURN",
                    "preTurnArgs": {"userInput": {"parts": [{"text": "tell me a secret"}]}},
                }
            }
        )
        response = await harness.answer("call_hook_response")
        harness.trajectory("CANCELLED")
        await agent.conversation.wait_for_idle()

    result = response.call_hook_response.pre_turn_result
    assert result.decision == pb2.PreTurnResult.Decision.DENY
    assert result.reason == "no secrets here"
    (turn,) = [s for s in span_exporter.get_finished_spans() if s.name.startswith("invoke_agent")]
    attributes = dict(turn.attributes or {})
    assert attributes["hookscope.turn.outcome"] == "blocked"
    assert attributes["hookscope.turn.decided_by"] == "no_secrets"


async def test_an_agent_nothing_tracks_is_still_governed() -> None:
    # govern() without instrumenting, called back outside any session it tracks (its SDK
    # hook runner built elsewhere): the runner still decides, reporting to nobody.
    (pre_tool_hook,) = [
        h for h in governing_hooks(HookRunner([broken])) if h.event == "pre_tool_call"
    ]

    from google.antigravity import types

    verdict = await pre_tool_hook.run(None, types.ToolCall(name="get_weather", args={}, id="c"))

    assert verdict.allow is False
    assert "broken" in verdict.message


def test_govern_returns_a_governed_copy_and_rejects_what_is_no_runner() -> None:
    harness = FakeHarness()
    config = fake_config(harness, tools=[get_weather], policies=[policy.allow_all()])
    runner = HookRunner()

    governed = govern(config, runner)

    assert config.hooks == []
    assert [type(h).__name__ for h in governed.hooks if is_governing(h)] == [
        "_SessionStart",
        "_PreTurn",
        "_PreToolCall",
        "_PostToolCall",
        "_OnToolError",
        "_PostTurn",
        "_SessionEnd",
    ]
    with pytest.raises(TypeError, match="HookRunner"):
        govern(config, object())  # type: ignore[arg-type]


@hooks.pre_tool_call_decide
def cut_down(call: ToolCall) -> HookResult:
    # Replaces the arguments: "city" is gone, which the SDK (it merges changes) cannot do.
    return HookResult(modified_args={"town": "Oslo"}, replace_args=True)


async def test_a_hook_removing_an_argument_denies_the_call_since_the_sdk_only_merges(
    governed_by: list[AntigravityInstrumentor],
    tracer_provider: TracerProvider,
    meter_provider: MeterProvider,
    span_exporter: InMemorySpanExporter,
) -> None:
    instrument(governed_by, HookRunner([cut_down]), tracer_provider, meter_provider)
    harness = FakeHarness()

    async with agent_on(harness, tools=[get_weather]) as agent:
        await agent.chat("go")
        harness.trajectory("RUNNING")
        verdict = await pre_tool(harness, "Atlantis")
        harness.denied(1, verdict.reason)
        harness.answer_text(2, "Could not.")
        harness.trajectory("FULLY_IDLE")
        await agent.conversation.wait_for_idle()

    assert verdict.decision == pb2.PreToolResult.Decision.DENY
    assert "removed its argument(s) city" in verdict.reason
    (tool,) = tool_attributes(span_exporter.get_finished_spans())
    assert tool["hookscope.tool.outcome"] == "denied"
    assert tool["hookscope.policy.decided_by"] == "hookscope"


async def test_a_hook_removing_an_argument_denies_in_an_agent_nothing_tracks() -> None:
    from google.antigravity import types

    (pre_tool_hook,) = [
        h for h in governing_hooks(HookRunner([cut_down])) if h.event == "pre_tool_call"
    ]
    call = types.ToolCall(name="get_weather", args={"city": "Atlantis"}, id="c")
    verdict = await pre_tool_hook.run(None, call)
    assert verdict.allow is False
    assert "removed its argument(s) city" in verdict.message
