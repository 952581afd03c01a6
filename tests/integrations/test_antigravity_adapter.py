"""AntigravityInstrumentor against the real SDK and a stand-in harness: the rarer paths.

The events are the ones the real harness sends (the end-to-end tests run against it); here the
test decides when each arrives, so cancellations, errors, questions, compactions and wildcard
denials are as easy to specify as the common paths.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
from google.antigravity import Agent, types
from google.antigravity.hooks import hooks, policy
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from hookscope.integrations.antigravity import AntigravityInstrumentor
from hookscope.testing import metric_points, span_tree

from ..otel_helpers import attrs
from .fake_harness import FakeHarness, fake_config

AGENT = "bot"


def get_weather(city: str) -> str:
    """Today's weather in a city."""
    return f"sunny in {city}"


@asynccontextmanager
async def agent_on(harness: FakeHarness, **config: Any) -> AsyncIterator[Agent]:
    config.setdefault("policies", [policy.allow_all()])
    async with Agent(fake_config(harness, **config)) as agent:
        yield agent


async def turn(
    agent: Agent, harness: FakeHarness, play: Callable[[], Awaitable[None] | None]
) -> None:
    """One turn: a prompt, the harness's events as ``play`` emits them, then idle."""
    await agent.chat("go")
    harness.trajectory("RUNNING")
    played = play()
    if played is not None:
        await played
    await agent.conversation.wait_for_idle()


async def python_tool_call(harness: FakeHarness, index: int, call_id: str, city: str) -> None:
    """A Python tool call as the harness makes it: step active, tool call, step done."""
    custom = {
        "toolCall": {"id": call_id, "name": "get_weather", "argumentsJson": f'{{"city": "{city}"}}'}
    }
    harness.step(index, "ACTIVE", target="TARGET_ENVIRONMENT", customTool=custom)
    harness.emit({"toolCall": {**custom["toolCall"], "trajectoryId": "t1"}})
    await harness.answer("tool_response")
    harness.step(index, "DONE", target="TARGET_ENVIRONMENT", customTool=custom)


# --- expected spans ------------------------------------------------------------------------


def session_span(children: list[dict[str, Any]], **counts: int) -> dict[str, Any]:
    values = {"turns": 1, "tool_calls": 0, "denied_calls": 0, "tool_errors": 0, **counts}
    return {
        "name": f"session {AGENT}",
        "attributes": {
            "gen_ai.agent.name": AGENT,
            "hookscope.session.outcome": "completed",
            **{f"hookscope.session.{k}": v for k, v in values.items()},
            "openinference.span.kind": "CHAIN",
        },
        "events": [("hookscope.session_start", {}), ("hookscope.session_end", {})],
        "status": "UNSET",
        "children": children,
    }


def turn_span(
    children: list[dict[str, Any]] | None = None,
    *,
    index: int = 0,
    outcome: str = "completed",
    error_type: str | None = None,
    events: list[Any] | None = None,
) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        "gen_ai.agent.name": AGENT,
        "gen_ai.operation.name": "invoke_agent",
        "hookscope.turn.index": index,
        "hookscope.turn.outcome": outcome,
        "openinference.span.kind": "AGENT",
    }
    if error_type:
        attributes["error.type"] = error_type
    span: dict[str, Any] = {
        "name": f"invoke_agent {AGENT}",
        "attributes": attributes,
        "events": events
        if events is not None
        else [
            ("hookscope.pre_turn", {"hookscope.turn.allowed": True}),
            ("hookscope.post_turn", {}),
        ],
        "status": "ERROR" if error_type else "UNSET",
    }
    if children:
        span["children"] = children
    return span


def denied_span(tool: str, decision: dict[str, Any], call_id: str = "") -> dict[str, Any]:
    attributes = {
        "gen_ai.agent.name": AGENT,
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": tool,
        "gen_ai.tool.type": "function",
        "tool.name": tool,
        "hookscope.tool.outcome": "denied",
        "openinference.span.kind": "TOOL",
        **decision,
    }
    if call_id:
        attributes["gen_ai.tool.call.id"] = call_id
    return {
        "name": f"execute_tool {tool}",
        "attributes": attributes,
        "events": [("hookscope.pre_tool_call", decision)],
        "status": "ERROR",  # a denied call is refused: ERROR, like a blocked turn
    }


def succeeded_span(call_id: str) -> dict[str, Any]:
    allowed = {"hookscope.policy.decision": "allow", "hookscope.policy.outcome": "allowed"}
    return {
        "name": "execute_tool get_weather",
        "attributes": {
            "gen_ai.agent.name": AGENT,
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.call.id": call_id,
            "gen_ai.tool.name": "get_weather",
            "gen_ai.tool.type": "function",
            "tool.name": "get_weather",
            "hookscope.tool.outcome": "succeeded",
            "openinference.span.kind": "TOOL",
            **allowed,
        },
        "events": [("hookscope.pre_tool_call", allowed), ("hookscope.post_tool_call", {})],
        "status": "UNSET",
    }


def interrupted_span(call_id: str, attributes: dict[str, Any], events: list[Any]) -> dict[str, Any]:
    return {
        "name": "execute_tool get_weather",
        "attributes": {
            "gen_ai.agent.name": AGENT,
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.call.id": call_id,
            "gen_ai.tool.name": "get_weather",
            "gen_ai.tool.type": "function",
            "tool.name": "get_weather",
            "hookscope.tool.outcome": "failed",
            "openinference.span.kind": "TOOL",
            **attributes,
        },
        "events": events,
        "status": "ERROR",
    }


def tree(exporter: InMemorySpanExporter) -> list[dict[str, Any]]:
    return span_tree(exporter.get_finished_spans())


# --- policy denials the harness enforces ------------------------------------------------------


@pytest.mark.usefixtures("instrumentor")
async def test_wildcard_static_denial_names_the_rule_and_an_unknown_tool(
    span_exporter: InMemorySpanExporter,
) -> None:
    # The harness says which rule denied, not which tool: a wildcard rule cannot tell either.
    harness = FakeHarness()
    async with agent_on(harness, policies=[policy.deny_all()]) as agent:

        def play() -> None:
            harness.denied(1, 'Denied by policy "deny_all".')
            harness.answer_text(2, "I may not.")
            harness.trajectory("FULLY_IDLE")

        await turn(agent, harness, play)

    decision = {
        "hookscope.policy.bucket": 6,
        "hookscope.policy.decided_by": "antigravity.harness",
        "hookscope.policy.decision": "deny",
        "hookscope.policy.outcome": "denied",
        "hookscope.policy.reason": 'Denied by policy "deny_all".',
        "hookscope.policy.rule": "deny_all",
    }
    assert tree(span_exporter) == [
        session_span([turn_span([denied_span("_unknown", decision)])], tool_calls=1, denied_calls=1)
    ]


@pytest.mark.usefixtures("instrumentor")
async def test_static_denial_with_a_reason_is_matched_by_its_reason(
    span_exporter: InMemorySpanExporter,
) -> None:
    # A rule with a reason is reported by the reason alone, without its name.
    secret = policy.deny("get_weather", name="no_weather", reason="the weather is secret")
    harness = FakeHarness()
    async with agent_on(harness, policies=[secret, policy.allow_all()]) as agent:

        def play() -> None:
            harness.denied(1, "the weather is secret")
            harness.answer_text(2, "I may not.")
            harness.trajectory("FULLY_IDLE")

        await turn(agent, harness, play)

    decision = {
        "hookscope.policy.bucket": 0,
        "hookscope.policy.decided_by": "antigravity.harness",
        "hookscope.policy.decision": "deny",
        "hookscope.policy.outcome": "denied",
        "hookscope.policy.reason": "the weather is secret",
        "hookscope.policy.rule": "no_weather",
    }
    assert tree(span_exporter) == [
        session_span(
            [turn_span([denied_span("get_weather", decision)])], tool_calls=1, denied_calls=1
        )
    ]


# --- policies evaluated in Python --------------------------------------------------------------


def never(call: types.ToolCall) -> bool:
    return False


@pytest.mark.usefixtures("instrumentor")
async def test_ask_user_refusal_is_a_denial_by_the_ask_user_rule(
    span_exporter: InMemorySpanExporter, metric_reader: InMemoryMetricReader
) -> None:
    confirm = policy.ask_user("get_weather", handler=never, name="confirm")
    harness = FakeHarness()
    async with agent_on(
        harness, tools=[get_weather], policies=[confirm, policy.allow_all()]
    ) as agent:

        async def play() -> None:
            harness.emit(
                {
                    "policyDecisionRequest": {
                        "requestId": "1",
                        "ruleId": "rule_0",
                        "toolArgs": {
                            "toolName": "get_weather",
                            "argumentsJson": '{"city": "Oslo"}',
                            "callId": "call_1",
                            "trajectoryId": "t1",
                            "stepIndex": 2,
                        },
                    }
                }
            )
            response = await harness.answer("policy_decision_response")
            assert response.policy_decision_response.deny_reason == "Denied by user (confirm)."
            harness.denied(1, "Denied by user (confirm).")
            harness.answer_text(2, "You said no.")
            harness.trajectory("FULLY_IDLE")

        await turn(agent, harness, play)

    decision = {
        "hookscope.policy.bucket": 1,
        "hookscope.policy.decided_by": "antigravity.policy",
        "hookscope.policy.decision": "ask_user",
        "hookscope.policy.outcome": "denied",
        "hookscope.policy.reason": "Denied by user (confirm).",
        "hookscope.policy.rule": "confirm",
    }
    assert tree(span_exporter) == [
        session_span(
            [turn_span([denied_span("get_weather", decision, call_id="call_1")])],
            tool_calls=1,
            denied_calls=1,
        )
    ]
    points = metric_points(metric_reader.get_metrics_data(), ["hookscope.hook.duration"])
    assert points["hookscope.hook.duration"] == {
        attrs(
            gen_ai__agent__name=AGENT,
            hookscope__hook__name="antigravity.policy",
            hookscope__hook__event="pre_tool_call",
            hookscope__hook__type="python",
        ): 1
    }


# --- turns that do not complete ---------------------------------------------------------------


@pytest.mark.usefixtures("instrumentor")
async def test_turn_that_goes_idle_with_an_error_failed(
    span_exporter: InMemorySpanExporter,
) -> None:
    harness = FakeHarness()
    async with agent_on(harness) as agent:
        await turn(
            agent, harness, lambda: harness.trajectory("FULLY_IDLE", error="model unavailable")
        )

    failed = turn_span(
        outcome="failed",
        error_type="AntigravityExecutionError",
        events=[("hookscope.pre_turn", {"hookscope.turn.allowed": True})],
    )
    assert tree(span_exporter) == [session_span([failed])]


@pytest.mark.usefixtures("instrumentor")
async def test_cancelled_turn_is_cancelled_with_the_cancellation(
    span_exporter: InMemorySpanExporter,
) -> None:
    # Cancelled, but not because pre_turn denied it (that would be "blocked").
    harness = FakeHarness()
    async with agent_on(harness) as agent:
        await turn(
            agent, harness, lambda: harness.trajectory("CANCELLED", error="halted by the user")
        )

    cancelled = turn_span(
        outcome="cancelled",
        error_type="AntigravityCancelledError",
        events=[("hookscope.pre_turn", {"hookscope.turn.allowed": True})],
    )
    assert tree(span_exporter) == [session_span([cancelled])]


@pytest.mark.usefixtures("instrumentor")
async def test_session_that_ends_mid_turn_fails_the_turn_not_the_session(
    span_exporter: InMemorySpanExporter,
) -> None:
    harness = FakeHarness()
    async with agent_on(harness) as agent:
        await agent.chat("go")
        harness.trajectory("RUNNING")

    interrupted = turn_span(
        outcome="failed",
        error_type="TurnInterrupted",
        events=[("hookscope.pre_turn", {"hookscope.turn.allowed": True})],
    )
    assert tree(span_exporter) == [session_span([interrupted])]


@pytest.mark.usefixtures("instrumentor")
async def test_calls_in_flight_when_a_turn_is_cancelled_fail_with_the_cancellation(
    span_exporter: InMemorySpanExporter,
) -> None:
    # One call awaits its decision, one runs: neither was allowed-and-succeeded.
    deciding, running, never = asyncio.Event(), asyncio.Event(), asyncio.Event()

    @hooks.pre_tool_call_decide
    async def hold_the_decision(call: types.ToolCall) -> hooks.HookResult:
        deciding.set()
        await never.wait()
        return hooks.HookResult(allow=True)

    async def get_weather(city: str) -> str:
        """Today's weather in a city, slowly."""
        running.set()
        await never.wait()
        return "sunny"

    harness = FakeHarness()
    async with agent_on(harness, tools=[get_weather], hooks=[hold_the_decision]) as agent:

        async def play() -> None:
            pre_tool = {
                "toolName": "get_weather",
                "argumentsJson": '{"city": "Oslo"}',
                "callId": "call_1",
                "trajectoryId": "t1",
                "stepIndex": 2,
            }
            request = {"requestId": "h1", "name": "PreTool", "type": "LIFECYCLE_HOOK_PRE_TOOL"}
            harness.emit({"callHookRequest": {**request, "preToolArgs": pre_tool}})
            await deciding.wait()
            call = {"id": "call_2", "name": "get_weather", "argumentsJson": '{"city": "Rome"}'}
            custom = {"toolCall": call}
            harness.step(3, "ACTIVE", target="TARGET_ENVIRONMENT", customTool=custom)
            harness.emit({"toolCall": {**custom["toolCall"], "trajectoryId": "t1"}})
            await running.wait()
            harness.trajectory("CANCELLED", error="halted by the user")

        await turn(agent, harness, play)

    cancelled = {"error.type": "AntigravityCancelledError"}
    awaiting_decision = interrupted_span("call_1", cancelled, events=[])
    allowed = {"hookscope.policy.decision": "allow", "hookscope.policy.outcome": "allowed"}
    running_tool = interrupted_span(
        "call_2", {**cancelled, **allowed}, events=[("hookscope.pre_tool_call", allowed)]
    )
    failed_turn = turn_span(
        [awaiting_decision, running_tool],
        outcome="cancelled",
        error_type="AntigravityCancelledError",
        events=[("hookscope.pre_turn", {"hookscope.turn.allowed": True})],
    )
    assert tree(span_exporter) == [session_span([failed_turn], tool_calls=2)]


# --- keys ------------------------------------------------------------------------------------------


@pytest.mark.usefixtures("instrumentor")
async def test_call_id_reused_in_a_later_turn_is_a_new_call(
    span_exporter: InMemorySpanExporter,
) -> None:
    # OpenAI-style ids restart: a local model may call "call_1" again in the next turn.
    harness = FakeHarness()
    async with agent_on(harness, tools=[get_weather]) as agent:
        for index, city in enumerate(["Oslo", "Rome"]):

            async def play(city: str = city, base: int = index * 2) -> None:
                await python_tool_call(harness, base + 1, "call_1", city)
                harness.answer_text(base + 2, "Sunny.")
                harness.trajectory("FULLY_IDLE")

            await turn(agent, harness, play)

    assert tree(span_exporter) == [
        session_span(
            [
                turn_span([succeeded_span("call_1")], index=0),
                turn_span([succeeded_span("call_1")], index=1),
            ],
            turns=2,
            tool_calls=2,
        )
    ]


# --- questions and compaction -------------------------------------------------------------------


@hooks.on_interaction
def pick_first(spec: types.AskQuestionInteractionSpec) -> types.QuestionHookResult:
    return types.QuestionHookResult(
        responses=[types.QuestionResponse(selected_option_ids=["1"]) for _ in spec.questions]
    )


@pytest.mark.usefixtures("instrumentor")
async def test_question_to_the_user_is_an_interaction_answered_by_the_hook(
    span_exporter: InMemorySpanExporter,
) -> None:
    harness = FakeHarness()
    async with agent_on(harness, hooks=[pick_first]) as agent:

        async def play() -> None:
            question = {"multipleChoice": {"question": "Which city?", "choices": ["Oslo", "Rome"]}}
            harness.step(1, "WAITING_FOR_USER", questionsRequest={"questions": [question]})
            response = await harness.answer("question_response")
            answer = response.question_response.response.answers[0]
            assert list(answer.multiple_choice_answer.selected_choice_indices) == [0]
            harness.answer_text(2, "Oslo it is.")
            harness.trajectory("FULLY_IDLE")

        await turn(agent, harness, play)

    answered = {
        "hookscope.interaction.answered_by": "pick_first",
        "hookscope.interaction.outcome": "answered",
    }
    interaction = {
        "name": f"interaction {AGENT}",
        "attributes": {
            "gen_ai.agent.name": AGENT,
            "openinference.span.kind": "CHAIN",
            **answered,
        },
        "events": [("hookscope.interaction", answered)],
        "status": "UNSET",
    }
    assert tree(span_exporter) == [session_span([turn_span([interaction])])]


@hooks.on_interaction
def answer_nothing(spec: types.AskQuestionInteractionSpec) -> types.QuestionHookResult:
    return types.QuestionHookResult(responses=[])


@pytest.mark.usefixtures("instrumentor")
async def test_question_a_hook_answers_with_no_responses_is_unanswered(
    span_exporter: InMemorySpanExporter,
) -> None:
    # No answers answer nothing, as in HookRunner: the hook that returned them decided nothing.
    harness = FakeHarness()
    async with agent_on(harness, hooks=[answer_nothing]) as agent:

        async def play() -> None:
            question = {"multipleChoice": {"question": "Which city?", "choices": ["Oslo", "Rome"]}}
            harness.step(1, "WAITING_FOR_USER", questionsRequest={"questions": [question]})
            response = await harness.answer("question_response")
            assert response.question_response.response.answers[0].unanswered
            harness.answer_text(2, "Never mind.")
            harness.trajectory("FULLY_IDLE")

        await turn(agent, harness, play)

    unanswered = {"hookscope.interaction.outcome": "unanswered"}
    interaction = {
        "name": f"interaction {AGENT}",
        "attributes": {
            "gen_ai.agent.name": AGENT,
            "openinference.span.kind": "CHAIN",
            **unanswered,
        },
        "events": [("hookscope.interaction", unanswered)],
        "status": "UNSET",
    }
    assert tree(span_exporter) == [session_span([turn_span([interaction])])]


@pytest.mark.usefixtures("instrumentor")
async def test_compaction_step_is_a_compaction_event_on_the_turn(
    span_exporter: InMemorySpanExporter,
) -> None:
    harness = FakeHarness()
    async with agent_on(harness) as agent:

        def play() -> None:
            harness.step(1, "DONE", source="SOURCE_SYSTEM", compaction={}, text="the talk so far")
            harness.answer_text(2, "Done.")
            harness.trajectory("FULLY_IDLE")

        await turn(agent, harness, play)

    compacted = turn_span(
        events=[
            ("hookscope.pre_turn", {"hookscope.turn.allowed": True}),
            ("hookscope.compaction", {"hookscope.compaction.summary_length": 15}),
            ("hookscope.post_turn", {}),
        ]
    )
    assert tree(span_exporter) == [session_span([compacted])]


# --- the instrumentation itself -------------------------------------------------------------------


async def test_uninstrument_ends_the_spans_of_sessions_still_open(
    tracer_provider: TracerProvider,
    meter_provider: MeterProvider,
    span_exporter: InMemorySpanExporter,
) -> None:
    instrumentor = AntigravityInstrumentor()
    instrumentor.instrument(tracer_provider=tracer_provider, meter_provider=meter_provider)
    harness = FakeHarness()
    async with agent_on(harness) as agent:
        await agent.chat("go")
        instrumentor.uninstrument()
        assert [s.name for s in span_exporter.get_finished_spans()] == [
            "invoke_agent antigravity",
            "session antigravity",
        ]

    assert len(span_exporter.get_finished_spans()) == 2


class Exploding:
    """An observer that fails at every call."""

    def __getattr__(self, name: str) -> Callable[..., None]:
        def fail(*args: Any) -> None:
            raise RuntimeError(f"{name} exploded")

        return fail


async def test_a_failing_observer_neither_breaks_the_agent_nor_the_other_observers(
    tracer_provider: TracerProvider,
    meter_provider: MeterProvider,
    span_exporter: InMemorySpanExporter,
    caplog: pytest.LogCaptureFixture,
) -> None:
    instrumentor = AntigravityInstrumentor()
    instrumentor.instrument(
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
        agent_name=AGENT,
        observers=[Exploding()],
    )
    try:
        harness = FakeHarness()
        with caplog.at_level(logging.ERROR, "hookscope.integrations"):
            async with agent_on(harness, tools=[get_weather]) as agent:

                async def play() -> None:
                    await python_tool_call(harness, 1, "call_1", "Oslo")
                    harness.answer_text(2, "Sunny.")
                    harness.trajectory("FULLY_IDLE")

                await turn(agent, harness, play)
    finally:
        instrumentor.uninstrument()

    assert tree(span_exporter) == [
        session_span([turn_span([succeeded_span("call_1")])], tool_calls=1)
    ]
    failures = [r.getMessage() for r in caplog.records if "exploded" in str(r.exc_info)]
    assert len(failures) == len(set(failures))  # each failing method logged once


@hooks.pre_tool_call_decide
def prefer_bergen(call: types.ToolCall) -> hooks.HookResult:
    return hooks.HookResult(allow=True, modified_args={"city": "Bergen"})


async def test_arguments_a_hook_modified_are_the_ones_recorded(
    tracer_provider: TracerProvider,
    meter_provider: MeterProvider,
    span_exporter: InMemorySpanExporter,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")
    instrumentor = AntigravityInstrumentor()
    instrumentor.instrument(tracer_provider=tracer_provider, meter_provider=meter_provider)
    try:
        harness = FakeHarness()
        async with agent_on(harness, tools=[get_weather], hooks=[prefer_bergen]) as agent:

            async def play() -> None:
                pre_tool = {
                    "toolName": "get_weather",
                    "argumentsJson": '{"city": "Oslo"}',
                    "callId": "call_1",
                    "trajectoryId": "t1",
                    "stepIndex": 2,
                }
                harness.emit(
                    {
                        "callHookRequest": {
                            "requestId": "h1",
                            "name": "PreTool",
                            "type": "LIFECYCLE_HOOK_PRE_TOOL",
                            "preToolArgs": pre_tool,
                        }
                    }
                )
                response = await harness.answer("call_hook_response")
                assert response.call_hook_response.pre_tool_result.HasField("modified_args")
                await python_tool_call(harness, 1, "call_1", "Bergen")
                harness.answer_text(2, "Sunny in Bergen.")
                harness.trajectory("FULLY_IDLE")

            await turn(agent, harness, play)
    finally:
        instrumentor.uninstrument()

    (tool,) = [s for s in span_exporter.get_finished_spans() if s.name.startswith("execute_tool")]
    attributes = tool.attributes or {}
    assert attributes["gen_ai.tool.call.arguments"] == '{"city": "Bergen"}'
    assert attributes["hookscope.policy.outcome"] == "allowed"
