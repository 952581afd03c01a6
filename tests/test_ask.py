"""HookResult.ask: a pre_tool_call verdict the user settles through on_interaction (DESIGN §8)."""

from __future__ import annotations

from typing import Any

import pytest

from hookscope import hooks
from hookscope.context import OperationContext
from hookscope.hooks import Hook, PreToolCallDecideHook
from hookscope.runner import HookRunner
from hookscope.types import (
    Answer,
    Decision,
    HookResult,
    PolicyDecision,
    Question,
    ToolCall,
)

from .conftest import Recorder

CALL = ToolCall("run_command", {"CommandLine": "make"}, id="c1")


class AskingMethod(Hook):
    def pre_tool_call(self, context: OperationContext, call: ToolCall) -> HookResult:
        return HookResult.ask(f"run {call.args['CommandLine']!r}?")


class AskingCategory(PreToolCallDecideHook):
    async def run(self, context: OperationContext, call: ToolCall) -> HookResult:
        return HookResult.ask(f"run {call.args['CommandLine']!r}?")


@hooks.pre_tool_call_decide
def asking_function(call: ToolCall) -> HookResult:
    return HookResult.ask(f"run {call.args['CommandLine']!r}?")


def answering(text: str | None, seen: list[Question]) -> object:
    @hooks.on_interaction
    def answer(questions: list[Question]) -> list[Answer] | None:
        seen.extend(questions)
        return None if text is None else [Answer(text, questions[0].id)]

    return answer


async def _call(*registered: object) -> Any:
    runner = HookRunner(registered)
    async with runner.session() as session, session.turn("go") as turn:
        return await turn.call_tool(CALL, lambda CommandLine: f"ran {CommandLine}")


def test_ask_reads_as_a_denial_until_confirmed() -> None:
    asked = HookResult.ask("sure?")
    assert (asked.allow, asked.confirm, asked.message) == (False, True, "sure?")


@pytest.mark.parametrize("asker", [AskingMethod(), AskingCategory(), asking_function])
async def test_an_allow_answer_runs_the_call_recorded_as_ask_user(asker: object) -> None:
    seen: list[Question] = []
    outcome = await _call(asker, answering("allow", seen))

    assert seen == [
        Question(text="run 'make'?", options=("allow", "deny"), id="confirm", kind="confirm")
    ]
    assert outcome.allowed is True
    assert outcome.value == "ran make"
    assert outcome.decision == PolicyDecision(
        decision=Decision.ASK_USER,
        outcome="allowed",
        rule=None,
        bucket=None,
        reason="run 'make'?",
        asked_user=True,
        user_approved=True,
    )
    assert outcome.decided_by == getattr(asker, "name", "") or type(asker).__name__


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        ("deny", "the user answered 'deny'"),
        ("Allow", "the user answered 'Allow'"),
        ("yes", "the user answered 'yes'"),
        (None, "the user did not confirm"),
    ],
)
async def test_anything_but_allow_denies(answer: str | None, why: str) -> None:
    outcome = await _call(AskingMethod(), answering(answer, []))
    assert outcome.allowed is False
    assert outcome.message == f"run 'make'? ({why})"
    assert outcome.decision is not None
    assert (outcome.decision.decision, outcome.decision.outcome) == (Decision.ASK_USER, "denied")
    assert outcome.decision.user_approved is (None if answer is None else False)


async def test_a_failing_interaction_hook_denies() -> None:
    @hooks.on_interaction
    def broken(questions: list[Question]) -> list[Answer]:
        raise RuntimeError("no terminal")

    outcome = await _call(AskingMethod(), broken)
    assert outcome.allowed is False
    assert outcome.message == "run 'make'? (the user did not confirm)"


async def test_a_later_deny_wins_over_a_pending_ask_and_nobody_is_asked() -> None:
    seen: list[Question] = []

    @hooks.pre_tool_call_decide
    def never(call: ToolCall) -> HookResult:
        return HookResult.deny("never run make")

    outcome = await _call(AskingMethod(), never, answering("allow", seen))
    assert seen == []
    assert (outcome.allowed, outcome.message, outcome.decided_by) == (
        False,
        "never run make",
        "never",
    )


async def test_the_first_ask_is_the_question_and_later_hooks_still_run(
    recorder: Recorder,
) -> None:
    seen: list[Question] = []

    @hooks.pre_tool_call_decide
    def second(call: ToolCall) -> HookResult:
        return HookResult.ask("second question")

    runner = HookRunner([AskingMethod(), second, answering("allow", seen)])
    runner.observe(recorder)
    async with runner.session() as session, session.turn("go") as turn:
        outcome = await turn.call_tool(CALL, lambda CommandLine: None)
    assert [q.text for q in seen] == ["run 'make'?"]
    assert outcome.allowed is True
    assert [c[1:3] for c in recorder.named("hook_finished")] == [
        ("pre_tool_call", "AskingMethod"),
        ("pre_tool_call", "second"),
        ("on_interaction", "answer"),
    ]
    finished = [c for c in recorder.named("dispatch_finished") if "tool" in c[1] or "inter" in c[1]]
    # The confirmation is its own dispatch, inside pre_tool_call's: the tool span's verdict
    # is the settled one.
    assert [c[1] for c in finished] == ["on_interaction", "pre_tool_call", "post_tool_call"]
    assert finished[1][2].allow is True
    assert finished[1][3] == "AskingMethod"


async def test_ask_from_pre_turn_fails_closed() -> None:
    @hooks.pre_turn
    def ask_turn(prompt: Any) -> HookResult:
        return HookResult.ask("may I?")

    runner = HookRunner([ask_turn])
    async with runner.session() as session, session.turn("go") as turn:
        assert turn.allowed is False
        assert turn.result.message == (
            "hook 'ask_turn' failed in pre_turn (HookFailure: returned HookResult.ask(...), "
            "which only pre_tool_call hooks may return; allow or deny the turn instead); "
            "failing closed"
        )


async def test_modified_args_of_an_asking_hook_run_once_confirmed() -> None:
    class Rewrite(Hook):
        def pre_tool_call(self, context: OperationContext, call: ToolCall) -> HookResult:
            return HookResult(
                allow=False, message="run it quietly?", modified_args={"Quiet": True}, confirm=True
            )

    runner = HookRunner([Rewrite(), answering("allow", [])])
    async with runner.session() as session, session.turn("go") as turn:
        outcome = await turn.call_tool(CALL, lambda CommandLine, Quiet: (CommandLine, Quiet))
    assert outcome.value == ("make", True)
    assert dict(outcome.call.args) == {"CommandLine": "make", "Quiet": True}
