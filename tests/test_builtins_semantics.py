"""The seed semantics as a user meets them with the ready-made hooks: ask/confirm through every
hook style and next to a policy, tiers in matchers, compaction summaries, migration errors."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from google.antigravity import types as ag_types

from hookscope import hooks, policy
from hookscope.builtins import AuditLog, AutoAnswer, LoggingHook, ToolTiers
from hookscope.context import OperationContext, TurnContext
from hookscope.hooks import (
    Hook,
    OnInteractionHook,
    PreCompactionHook,
    PreToolCallDecideHook,
)
from hookscope.matching import HookMatcher
from hookscope.runner import HookRunner, ToolOutcome
from hookscope.types import Answer, Decision, HookResult, PolicyDecision, Question, ToolCall

CALL = ToolCall("run_command", {"CommandLine": "make deploy"}, id="c1")


def run_command(CommandLine: str) -> str:
    return f"ran {CommandLine}"


class AskMethod(Hook):
    def pre_tool_call(self, context: OperationContext, call: ToolCall) -> HookResult | None:
        return HookResult.ask(f"run {call.args['CommandLine']}?")


class AskCategory(PreToolCallDecideHook):
    async def run(self, context: OperationContext, call: ToolCall) -> HookResult | None:
        return HookResult.ask(f"run {call.args['CommandLine']}?")


@hooks.pre_tool_call_decide
def ask_function(call: ToolCall) -> HookResult:
    return HookResult.ask(f"run {call.args['CommandLine']}?")


ASKERS = [
    pytest.param(AskMethod(), "AskMethod", "run make deploy?", id="method"),
    pytest.param(AskCategory(), "AskCategory", "run make deploy?", id="category"),
    pytest.param(ask_function, "ask_function", "run make deploy?", id="decorator"),
    pytest.param(
        ToolTiers({"view_file": "observe"}),
        "ToolTiers",
        "Confirm run_command? It is a confirm-tier tool.",
        id="ToolTiers",
    ),
]


async def _call(*registered: object, call: ToolCall = CALL) -> ToolOutcome:
    runner = HookRunner(registered)
    async with runner.session() as session, session.turn("go") as turn:
        return await turn.call_tool(call, run_command)


@pytest.mark.parametrize(("asker", "name", "text"), ASKERS)
async def test_an_ask_from_any_hook_style_runs_the_call_when_autoanswer_allows(
    asker: object, name: str, text: str
) -> None:
    seen: list[Question] = []

    def answer(question: Question) -> str:
        seen.append(question)
        return "allow"

    outcome = await _call(asker, AutoAnswer(answer))
    assert seen == [Question(text, ("allow", "deny"), "confirm", "confirm")]
    assert (outcome.allowed, outcome.value, outcome.decided_by) == (True, "ran make deploy", name)
    assert outcome.decision == PolicyDecision(
        Decision.ASK_USER, "allowed", None, None, text, asked_user=True, user_approved=True
    )


@pytest.mark.parametrize(("asker", "name", "text"), ASKERS)
@pytest.mark.parametrize(
    ("answers", "approved", "why"),
    [
        ({}, None, "the user did not confirm"),
        ({"*": "allow"}, None, "the user did not confirm"),
        ("deny", False, "the user answered 'deny'"),
        ("Allow", False, "the user answered 'Allow'"),
        ("allow ", False, "the user answered 'allow '"),
    ],
)
async def test_anything_but_allow_denies_the_asked_call(
    asker: object, name: str, text: str, answers: Any, approved: bool | None, why: str
) -> None:
    answerer = AutoAnswer(answers if isinstance(answers, dict) else (lambda q: answers))
    outcome = await _call(asker, answerer)
    assert (outcome.allowed, outcome.value, outcome.decided_by) == (False, None, name)
    assert outcome.message == f"{text} ({why})"
    assert outcome.decision is not None
    assert (outcome.decision.decision, outcome.decision.outcome) == (Decision.ASK_USER, "denied")
    assert outcome.decision.user_approved is approved


class AnswerMethod(Hook):
    def on_interaction(self, context: OperationContext, questions: Any) -> list[Answer]:
        return [Answer("allow", q.id) for q in questions if q.kind == "confirm"]


class AnswerCategory(OnInteractionHook):
    def run(self, context: OperationContext, questions: Any) -> list[Answer]:
        return [Answer("allow", q.id) for q in questions if q.kind == "confirm"]


@hooks.on_interaction
def answer_function(questions: Any) -> list[Answer]:
    return [Answer("allow", q.id) for q in questions if q.kind == "confirm"]


@pytest.mark.parametrize(
    "answerer", [AnswerMethod(), AnswerCategory(), answer_function], ids=lambda h: type(h).__name__
)
async def test_tooltiers_confirmation_is_answered_by_any_interaction_hook_style(
    answerer: object,
) -> None:
    tiers = ToolTiers({"view_file": "observe"})
    assert (await _call(tiers, answerer)).allowed
    observed = await _call(tiers, call=ToolCall("view_file", {"CommandLine": "x"}))
    assert (observed.allowed, observed.decision) == (True, None)  # observe tier: nobody asked


async def test_an_ask_after_a_policy_allow_is_settled_and_a_later_policy_deny_wins(
    tmp_path: Path,
) -> None:
    audit_path = tmp_path / "audit.jsonl"
    asked: list[str] = []

    def answer(question: Question) -> str:
        asked.append(question.text)
        return "allow" if "make test" in question.text else "deny"

    class AskEveryCommand(Hook):
        def pre_tool_call(self, context: OperationContext, call: ToolCall) -> HookResult:
            return HookResult.ask(f"run {call.args['CommandLine']}?")

    runner = HookRunner(
        [
            AuditLog(audit_path),
            policy.enforce([policy.allow("run_command", name="commands")]),
            AskEveryCommand(),
            policy.enforce(
                [
                    policy.deny(
                        "run_command",
                        when=lambda a: "rm" in a["CommandLine"],
                        name="no-rm",
                        reason="never",
                    )
                ]
            ),
            AutoAnswer(answer),
        ]
    )
    async with runner.session(session_id="s") as session, session.turn("go") as turn:
        allowed = await turn.call_tool(
            ToolCall("run_command", {"CommandLine": "make test"}, "a"), run_command
        )
        refused = await turn.call_tool(
            ToolCall("run_command", {"CommandLine": "make deploy"}, "b"), run_command
        )
        denied = await turn.call_tool(
            ToolCall("run_command", {"CommandLine": "rm -rf /"}, "c"), run_command
        )
    assert asked == ["run make test?", "run make deploy?"]  # the deny won before anyone asked
    assert (allowed.allowed, allowed.decided_by) == (True, "AskEveryCommand")
    assert (refused.allowed, refused.decided_by) == (False, "AskEveryCommand")
    assert (denied.allowed, denied.decided_by) == (False, "PolicyEnforcer")
    assert denied.decision is not None
    assert denied.decision.rule == "no-rm"
    lines = [json.loads(line) for line in audit_path.read_text().splitlines()]
    assert [
        (
            line["call_id"],
            line["outcome"],
            line["decided_by"],
            line["decision"],
            line.get("user_approved"),
        )
        for line in lines
    ] == [
        ("a", "succeeded", "AskEveryCommand", "ask_user", True),
        ("b", "denied", "AskEveryCommand", "ask_user", False),
        ("c", "denied", "PolicyEnforcer", "deny", None),
    ]
    assert [line["message"] for line in lines[:2]] == [
        "run make test?",
        "run make deploy? (the user answered 'deny')",
    ]


async def test_matchers_read_the_tooltiers_table_of_the_session() -> None:
    seen: list[str] = []

    @hooks.post_tool_call(matcher=HookMatcher(tiers={"confirm"}))
    def note(result: Any) -> None:
        seen.append(result.call.name)

    tiers = ToolTiers({"view_file": "observe"}, default="confirm")
    answer = AutoAnswer(lambda q: "allow")
    runner = HookRunner([tiers, answer, note])
    async with runner.session() as session, session.turn("go") as turn:
        for name in ("view_file", "run_command", "view_file", "edit_file"):
            await turn.call_tool(ToolCall(name), lambda: "ok")
    assert seen == ["run_command", "edit_file"]


# --- pre_compaction ------------------------------------------------------------------------


class SummaryMethod(Hook):
    def __init__(self, summary: str | None) -> None:
        self.summary = summary
        self.calls = 0

    def pre_compaction(self, context: TurnContext, messages: Any) -> str | None:
        self.calls += 1
        return self.summary


class SummaryCategory(PreCompactionHook):
    def __init__(self, summary: str | None) -> None:
        self.summary = summary
        self.calls = 0

    async def run(self, context: TurnContext, messages: Any) -> str | None:
        self.calls += 1
        return self.summary


async def test_the_first_summary_wins_in_registration_order_and_reaches_on_compaction(
    caplog: pytest.LogCaptureFixture,
) -> None:
    order: list[str] = []

    @hooks.pre_compaction
    def by_decorator(messages: Any) -> str | None:
        order.append("decorator")
        return f"{len(messages)} messages, summarized by the decorator"

    compacted: list[str] = []

    @hooks.on_compaction
    def note(summary: str) -> None:
        compacted.append(summary)

    silent, late = SummaryMethod(None), SummaryCategory("never used")
    runner = HookRunner([LoggingHook(level="INFO"), silent, by_decorator, late, note])
    caplog.set_level(logging.INFO, "hookscope.agent")
    messages = [{"role": "user"}, {"role": "assistant"}, {"role": "tool"}]
    async with runner.session(session_id="s") as session, session.turn("go") as turn:
        summary = await turn.summarize(messages)
        assert summary == "3 messages, summarized by the decorator"
        await turn.compact(summary)
    assert (silent.calls, order, late.calls) == (1, ["decorator"], 0)
    assert compacted == ["3 messages, summarized by the decorator"]
    lines = [r.getMessage() for r in caplog.records if r.name == "hookscope.agent"]
    assert lines[2:4] == [
        "pre_compaction session=s turn=0 messages=3",
        "on_compaction session=s turn=0 summary_chars=39",
    ]


async def test_no_summary_leaves_it_to_the_agent() -> None:
    runner = HookRunner([SummaryMethod(None), SummaryCategory(None), LoggingHook()])
    async with runner.session() as session, session.turn("go") as turn:
        assert await turn.summarize([{"role": "user"}]) is None


# --- migration from google-antigravity ----------------------------------------------------


class AgResultMethod(Hook):
    def pre_tool_call(self, context: OperationContext, call: ToolCall) -> Any:
        return ag_types.HookResult(allow=True)


class AgResultCategory(PreToolCallDecideHook):
    async def run(self, context: OperationContext, call: ToolCall) -> Any:
        return ag_types.HookResult(allow=True)


@hooks.pre_tool_call_decide
def ag_result_function(call: ToolCall) -> Any:
    return ag_types.HookResult(allow=True)


@pytest.mark.parametrize(
    ("hook", "name"),
    [
        (AgResultMethod(), "AgResultMethod"),
        (AgResultCategory(), "AgResultCategory"),
        (ag_result_function, "ag_result_function"),
    ],
    ids=["method", "category", "decorator"],
)
async def test_a_google_antigravity_hookresult_fails_closed_naming_both_types(
    hook: object, name: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, "hookscope")
    outcome = await _call(hook)
    assert (outcome.allowed, outcome.decided_by) == (False, name)
    assert outcome.message == (
        f"hook {name!r} failed in pre_tool_call (HookFailure: returned "
        "google.antigravity.types.HookResult, expected hookscope.HookResult or None "
        "(google.antigravity.types.HookResult is not hookscope.HookResult; return "
        "hookscope.HookResult(...), HookResult.deny(message) or None)); failing closed"
    )


def test_a_seed_style_hook_object_is_refused_at_registration_naming_our_methods() -> None:
    class SeedHooks:
        """Seed 003's AgentHooks, ported by name only."""

        def pre_tool_use(self, invocation: Any) -> None: ...
        def post_tool_use(self, tool_name: str, result: Any) -> None: ...
        def on_error(self, error: Exception) -> bool:
            return False

        def on_context_compact(self, messages: Any) -> str | None:
            return None

    with pytest.raises(TypeError) as info:
        HookRunner([SeedHooks()])
    message = str(info.value)
    for theirs, ours in [
        ("pre_tool_use", "pre_tool_call"),
        ("post_tool_use", "post_tool_call"),
        ("on_error", "on_tool_error"),
        ("on_context_compact", "pre_compaction"),
    ]:
        assert f"{theirs} → {ours}" in message
    assert "subclass hookscope.Hook" in message
