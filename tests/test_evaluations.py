"""gen_ai.evaluation.result (DESIGN §11): prompt-hook verdicts and scored HookResults become the
conventions' evaluation event on the judged span."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from hookscope import HookResult, HookRunner, ToolCall, hooks
from hookscope.engine import PromptHook
from hookscope.testing import recording
from tests.support.openai_server import Reply, ScriptedOpenAIServer
from tests.test_conformance import check_type

EVALUATION = "gen_ai.evaluation.result"


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedOpenAIServer]:
    scripts = {"EVAL-DENY": [Reply(text='{"ok": false, "reason": "rm is destructive"}')]}
    with ScriptedOpenAIServer(scripts, model="judge-1") as running:
        yield running


def evaluations(spans: Any, name: str) -> list[dict[str, Any]]:
    """The evaluation events of span ``name``, their attributes typed as the conventions say."""
    (span,) = [s for s in spans if s.name == name]
    found = [dict(e.attributes or {}) for e in span.events if e.name == EVALUATION]
    for attributes in found:
        for key, value in attributes.items():
            check_type(key, value)
    return found


@hooks.pre_tool_call_decide
def grader(call: ToolCall) -> HookResult:
    return HookResult(score=0.25, message="touches a config file")


@hooks.pre_turn
def prompt_grader(prompt: str) -> HookResult:
    return HookResult(allow=False, score=0.0, message="off-topic prompt")


@hooks.pre_tool_call_decide
def unscored(call: ToolCall) -> HookResult:
    return HookResult(message="no score, no evaluation")


def run(*extra: object) -> Any:
    with recording() as rec:

        async def go() -> None:
            runner = HookRunner([rec.hook, *extra])
            async with (
                runner.session(agent_name="a") as session,
                session.turn("edit the config") as turn,
            ):
                if turn.allowed:
                    await turn.call_tool(ToolCall("edit_file", {"path": "/w/x"}), lambda path: 1)

        asyncio.run(go())
        return rec.spans


def test_a_scored_hook_result_is_an_evaluation_of_the_tool_call() -> None:
    spans = run(grader, unscored)
    assert evaluations(spans, "execute_tool edit_file") == [
        {
            "gen_ai.evaluation.name": "grader",
            "gen_ai.evaluation.score.value": 0.25,
            "gen_ai.evaluation.score.label": "pass",
            "gen_ai.evaluation.explanation": "touches a config file",
        }
    ]


def test_a_scored_turn_verdict_is_an_evaluation_of_the_turn() -> None:
    spans = run(prompt_grader)
    assert evaluations(spans, "invoke_agent a") == [
        {
            "gen_ai.evaluation.name": "prompt_grader",
            "gen_ai.evaluation.score.value": 0.0,
            "gen_ai.evaluation.score.label": "fail",
            "gen_ai.evaluation.explanation": "off-topic prompt",
        }
    ]


def test_a_prompt_hooks_verdict_is_an_evaluation(server: ScriptedOpenAIServer) -> None:
    judge = PromptHook(
        "pre_tool_call",
        prompt="EVAL-DENY: may the agent do this? $ARGUMENTS",
        model="small",
        base_url=server.base_url,
        name="judge",
    )
    spans = run(judge)
    assert evaluations(spans, "execute_tool edit_file") == [
        {
            "gen_ai.evaluation.name": "judge",
            "gen_ai.evaluation.score.value": 0.0,
            "gen_ai.evaluation.score.label": "fail",
            "gen_ai.evaluation.explanation": "rm is destructive",
        }
    ]
