"""The ready-made hooks (DESIGN §8): what each does, how it fails, how it keeps state."""

from __future__ import annotations

import asyncio
import logging
import random
import re
import subprocess
import sys
import textwrap
from pathlib import PurePath
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from hookscope.builtins import (
    AllowAll,
    AuditLog,
    AutoAnswer,
    LoggingHook,
    RecoverErrors,
    RetryLoopDetector,
    SecretGuard,
    SlowToolWarning,
    TokenBudget,
    ToolTiers,
    TurnLimit,
    TurnRateLimit,
)
from hookscope.matching import TIERS_KEY
from hookscope.runner import HookRunner
from hookscope.telemetry import OTelHook
from hookscope.types import (
    Answer,
    ChatResponse,
    LlmResponse,
    Question,
    ResponseDecision,
    ToolCall,
    Usage,
)

from .conftest import Recorder


def ok(**kwargs: Any) -> str:
    return "ok"


# --- construction: bad options are a ValueError naming the option -----------------------


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: TurnLimit(0), "TurnLimit: max_turns must be a whole number of at least 1"),
        (lambda: TurnLimit(True), "TurnLimit: max_turns must be a whole number"),  # type: ignore[arg-type]
        (lambda: TurnLimit(2.5), "TurnLimit: max_turns must be a whole number"),  # type: ignore[arg-type]
        (lambda: TurnRateLimit(0, 60), "TurnRateLimit: max_turns must be"),
        (lambda: TurnRateLimit(5, 0), "TurnRateLimit: per_seconds must be a finite number"),
        (
            lambda: TurnRateLimit(5, float("inf")),
            "TurnRateLimit: per_seconds must be a finite number",
        ),
        (lambda: TurnRateLimit(5, 60, clock=3), "TurnRateLimit: clock must be a function"),  # type: ignore[arg-type]
        (lambda: TokenBudget(-1), "TokenBudget: max_tokens must be a whole number"),
        (lambda: TokenBudget("100"), "TokenBudget: max_tokens"),  # type: ignore[arg-type]
        (lambda: RetryLoopDetector(1), "RetryLoopDetector: max_repeats must be at least 2"),
        (lambda: RetryLoopDetector(0), "RetryLoopDetector: max_repeats must be a whole number"),
        (lambda: SlowToolWarning(0), "SlowToolWarning: threshold_s must be a finite number"),
        (lambda: SlowToolWarning(1, logger=""), "SlowToolWarning: logger must be"),
        (lambda: ToolTiers(["view_file"]), "ToolTiers: tiers must be a mapping"),  # type: ignore[arg-type]
        (lambda: ToolTiers({"rm": "never"}), "ToolTiers: tiers['rm'] is 'never'; use 'observe'"),  # type: ignore[dict-item]
        (lambda: ToolTiers({}, default="allow"), "ToolTiers: default is 'allow'"),  # type: ignore[arg-type]
        (lambda: ToolTiers({"": "observe"}), "ToolTiers: tiers has key ''"),
        (lambda: RecoverErrors(()), "RecoverErrors: errors is empty"),
        (lambda: RecoverErrors("TimeoutError"), "RecoverErrors: errors must be an exception class"),  # type: ignore[arg-type]
        (lambda: RecoverErrors((asyncio.CancelledError,)), "RecoverErrors: errors holds"),  # type: ignore[arg-type]
        (lambda: RecoverErrors((ValueError, 3)), "RecoverErrors: errors holds 3"),  # type: ignore[arg-type]
        (lambda: RecoverErrors(message=1), "RecoverErrors: message must be a str"),  # type: ignore[arg-type]
        (lambda: AutoAnswer({"q": 1}), "AutoAnswer: answers maps 'q' to 1"),  # type: ignore[dict-item]
        (lambda: AutoAnswer(42), "AutoAnswer: answers must be a mapping"),  # type: ignore[arg-type]
        (lambda: LoggingHook(logger=3), "LoggingHook: logger must be"),  # type: ignore[arg-type]
        (lambda: LoggingHook(level="LOUD"), "LoggingHook: level must be"),
        (lambda: LoggingHook(level=-1), "LoggingHook: level must be"),
        (lambda: SecretGuard(secret_types={"Nope"}), "SecretGuard: secret_types has unknown"),
        (lambda: SecretGuard(secret_types="AWS Access Key"), "SecretGuard: secret_types must be"),
        (lambda: SecretGuard(action="warn"), "SecretGuard: action is 'warn'"),  # type: ignore[arg-type]
        (lambda: AuditLog(""), "AuditLog: path must be a file path"),
        (lambda: AuditLog("/tmp/x.jsonl", max_bytes=0), "AuditLog: max_bytes must be"),
        (lambda: AuditLog("/tmp/x.jsonl", include_args="yes"), "AuditLog: include_args"),  # type: ignore[arg-type]
        (lambda: AuditLog("/tmp/x.jsonl", redact_values=1), "AuditLog: redact_values"),  # type: ignore[arg-type]
    ],
)
def test_bad_options_fail_at_construction_naming_the_option(build: Any, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        build()


def test_each_builtin_reports_under_its_class_name(tmp_path: Any) -> None:
    built = [
        LoggingHook(),
        AllowAll(),
        ToolTiers({}),
        TurnLimit(3),
        TurnRateLimit(3, 1),
        TokenBudget(10),
        RetryLoopDetector(),
        SlowToolWarning(1),
        RecoverErrors(),
        AutoAnswer({}),
        SecretGuard(),
    ]
    runner = HookRunner(built)
    assert runner.hook_names("pre_tool_call") == (
        "LoggingHook",
        "AllowAll",
        "ToolTiers",
        "RetryLoopDetector",
    )
    assert runner.hook_names("post_tool_call") == ("LoggingHook", "SlowToolWarning")
    assert runner.hook_names("pre_turn") == (
        "LoggingHook",
        "TurnLimit",
        "TurnRateLimit",
        "TokenBudget",
    )
    assert runner.hook_names("on_llm_response") == ("LoggingHook", "SecretGuard")


# --- limits ------------------------------------------------------------------------------


async def test_turn_limit_blocks_turns_past_the_count_in_each_session() -> None:
    runner = HookRunner([TurnLimit(max_turns=2)])
    for session_id in ("a", "b"):
        async with runner.session(session_id=session_id) as session:
            allowed = []
            for _ in range(4):
                async with session.turn("go") as turn:
                    allowed.append(turn.allowed)
            assert allowed == [True, True, False, False]
            assert turn.result.message == (
                "turn limit reached: this session may start 2 turns (TurnLimit); "
                "start a new session to go on"
            )


async def test_turn_rate_limit_uses_a_sliding_window_per_session() -> None:
    now = [100.0]
    runner = HookRunner([TurnRateLimit(max_turns=2, per_seconds=10, clock=lambda: now[0])])

    async def turns(session: Any, count: int) -> list[bool]:
        result = []
        for _ in range(count):
            async with session.turn("go") as turn:
                result.append(turn.allowed)
        return result

    async with runner.session(session_id="a") as a, runner.session(session_id="b") as b:
        assert await turns(a, 3) == [True, True, False]
        assert await turns(b, 2) == [True, True]  # another session has its own window
        async with a.turn("go") as blocked:
            assert blocked.result.message == (
                "turn rate limit: 2 turns in 10s already (TurnRateLimit); try again in 10.0s"
            )
        now[0] = 109.0
        assert await turns(a, 1) == [False]
        now[0] = 110.0  # the first two starts leave the window together
        assert await turns(a, 3) == [True, True, False]


async def test_token_budget_sums_turn_usage_per_session_and_blocks_once_spent() -> None:
    budget = TokenBudget(max_tokens=1000)
    runner = HookRunner([budget])
    async with runner.session(session_id="s") as session, runner.session() as other:
        outcomes = []
        for tokens in (400, 500, 300, 1):
            async with session.turn("go") as turn:
                outcomes.append(turn.allowed)
                if turn.allowed:
                    turn.respond(ChatResponse("x", usage=Usage(tokens - 100, 100)))
        assert outcomes == [True, True, True, False]
        assert budget.used(session.context) == 1200
        assert turn.result.message == (
            "token budget exhausted: 1,200 of 1,000 tokens used in this session "
            "(TokenBudget); start a new session to go on"
        )
        async with other.turn("go") as fresh:
            assert fresh.allowed
        assert budget.used(other.context) == 0


async def test_token_budget_ignores_turns_without_usage() -> None:
    budget = TokenBudget(max_tokens=1)
    async with HookRunner([budget]).session() as session:
        for _ in range(3):
            async with session.turn("go") as turn:
                assert turn.allowed
                turn.respond(ChatResponse("no usage"))


async def test_two_budgets_in_one_runner_keep_their_own_tallies() -> None:
    small, large = TokenBudget(max_tokens=100), TokenBudget(max_tokens=10_000)
    runner = HookRunner([small, large])
    async with runner.session() as session:
        async with session.turn("go") as turn:
            turn.respond(ChatResponse("x", usage=Usage(150, 0)))
        async with session.turn("again") as blocked:
            assert blocked.result.message.startswith("token budget exhausted: 150 of 100 tokens")
        # A budget swapped in mid-session starts from nothing: its state is its own.
        fresh = TokenBudget(max_tokens=100)
        runner.replace([small], [fresh])
        async with session.turn("after the swap") as turn:
            assert turn.allowed
    assert (small.used(session.context), large.used(session.context)) == (150, 150)
    assert fresh.used(session.context) == 0


# --- tool hooks --------------------------------------------------------------------------


async def test_allow_all_allows_and_a_later_denial_still_wins() -> None:
    from hookscope.policy import deny, enforce

    runner = HookRunner([AllowAll(), enforce([deny("rm")])])
    async with runner.session() as session, session.turn("go") as turn:
        assert (await turn.call_tool(ToolCall("ls"), ok)).allowed
        denied = await turn.call_tool(ToolCall("rm"), ok)
        assert not denied.allowed
        assert denied.decided_by == "PolicyEnforcer"


async def test_tool_tiers_allow_observe_and_ask_about_confirm_naming_the_tool() -> None:
    tiers = ToolTiers({"view_file": "observe", "github/get_issue": "observe"}, default="confirm")
    runner = HookRunner([tiers])
    async with runner.session() as session, session.turn("go") as turn:
        assert (await turn.call_tool(ToolCall("view_file"), ok)).allowed
        assert (await turn.call_tool(ToolCall("get_issue", server="github"), ok)).allowed
        asked = await turn.call_tool(ToolCall("run_command", id="c1"), ok)
        assert not asked.allowed  # nobody answered the confirmation: fail closed
        assert "Confirm run_command? It is a confirm-tier tool." in asked.message
        # A server tool not named with its server falls back to its bare name, then the default.
        assert not (await turn.call_tool(ToolCall("delete_branch", server="github"), ok)).allowed


async def test_tool_tiers_publishes_its_table_in_every_session_context() -> None:
    tiers = ToolTiers({"view_file": "observe"}, default="confirm")
    runner = HookRunner([tiers])
    async with runner.session() as one, runner.session() as two:
        for scope in (one, two):
            table = scope.context.get(TIERS_KEY)
            assert dict(table) == {"view_file": "observe", "*": "confirm"}
    assert tiers.tier_of(ToolCall("x")) == "confirm"
    assert ToolTiers({}, default="observe").tier_of(ToolCall("x")) == "observe"


async def test_retry_loop_detector_denies_the_nth_identical_call_in_a_turn() -> None:
    runner = HookRunner([RetryLoopDetector(max_repeats=3)])
    async with runner.session() as session:
        async with session.turn("go") as turn:
            args: list[dict[str, Any]] = [
                {"path": "a", "opts": {"x": 1, "y": [1, 2]}},
                {"opts": {"y": [1, 2], "x": 1}, "path": "a"},  # same by value, other key order
                {"path": "b", "opts": {"x": 1, "y": [1, 2]}},  # different: counted apart
                {"path": "a", "opts": {"x": 1, "y": [1, 2]}},
                {"path": "a", "opts": {"x": 1, "y": [1, 2]}},
            ]
            outcomes = [await turn.call_tool(ToolCall("view", a), ok) for a in args]
            assert [o.allowed for o in outcomes] == [True, True, True, False, False]
            assert outcomes[3].message == (
                "retry loop: view was called 3 times with the same arguments in this turn "
                "(RetryLoopDetector); change the arguments or try another approach"
            )
            assert outcomes[3].decided_by == "RetryLoopDetector"
            # The same arguments on another tool are another call.
            assert (await turn.call_tool(ToolCall("cat", args[0]), ok)).allowed
        async with session.turn("again") as turn:  # counts start afresh each turn
            assert (await turn.call_tool(ToolCall("view", args[0]), ok)).allowed


async def test_retry_loop_detector_counts_parallel_calls_of_one_turn_together() -> None:
    runner = HookRunner([RetryLoopDetector(max_repeats=2)])

    async def tool(**kwargs: Any) -> str:
        await asyncio.sleep(0)
        return "ok"

    async with runner.session() as session, session.turn("go") as turn:
        outcomes = await asyncio.gather(
            *(turn.call_tool(ToolCall("grep", {"q": "x"}, f"c{i}"), tool) for i in range(4))
        )
    assert sorted(o.allowed for o in outcomes) == [False, False, False, True]


async def test_retry_loop_detector_compares_unusual_values_without_failing() -> None:
    runner = HookRunner([RetryLoopDetector(max_repeats=2)])
    async with runner.session() as session, session.turn("go") as turn:
        first = await turn.call_tool(ToolCall("t", {"at": PurePath("/a"), "k": {1, 2}}), ok)
        second = await turn.call_tool(ToolCall("t", {"k": {2, 1}, "at": PurePath("/a")}), ok)
        opaque = [await turn.call_tool(ToolCall("u", {"o": object()}), ok) for _ in range(2)]
    assert first.allowed
    assert not second.allowed
    # Objects without a value repr are copied per call (frozen args): never equal.
    assert [o.allowed for o in opaque] == [True, True]


async def test_recover_errors_recovers_listed_types_with_a_fresh_copy() -> None:
    recover = RecoverErrors(errors=(TimeoutError,), value={"cached": [1]}, message="from cache")
    runner = HookRunner([recover])

    def slow() -> None:
        raise TimeoutError("upstream")

    def broken() -> None:
        raise ConnectionError("reset")

    async with runner.session() as session, session.turn("go") as turn:
        first = await turn.call_tool(ToolCall("fetch"), slow)
        assert (first.recovered, first.value, first.message) == (
            True,
            {"cached": [1]},
            "from cache",
        )
        assert first.decided_by == "RecoverErrors"
        first.value["cached"].append(2)
        second = await turn.call_tool(ToolCall("fetch"), slow)
        assert second.value == {"cached": [1]}
        with pytest.raises(ConnectionError, match="reset"):
            await turn.call_tool(ToolCall("fetch"), broken)
    assert RecoverErrors(OSError).errors == (OSError,)
    assert RecoverErrors().message == "recovered by RecoverErrors from TimeoutError"


async def test_auto_answer_answers_from_a_mapping_only_when_it_knows_every_question() -> None:
    runner = HookRunner([AutoAnswer({"Open a PR?": "yes", "Run tests?": "no"})])
    async with runner.session() as session, session.turn("go") as turn:
        answers = await turn.ask([Question("Open a PR?", id="q1"), Question("Run tests?", id="q2")])
        assert answers == [Answer("yes", "q1"), Answer("no", "q2")]
        assert await turn.ask([Question("Open a PR?"), Question("Deploy?")]) is None


async def test_auto_answer_function_and_a_bad_return_is_a_hook_failure(
    recorder: Recorder,
) -> None:
    def answer(question: Question) -> Any:
        return {"ok?": "fine", "bad?": 3}.get(question.text)

    runner = HookRunner([AutoAnswer(answer), recorder])
    async with runner.session() as session, session.turn("go") as turn:
        assert await turn.ask([Question("ok?", id="1")]) == [Answer("fine", "1")]
        assert await turn.ask([Question("other?")]) is None
        assert await turn.ask([Question("bad?")]) is None
    failures = [c for c in recorder.named("hook_finished") if c[4] is not None]
    assert failures == [("hook_finished", "on_interaction", "AutoAnswer", None, "TypeError")]


# --- SlowToolWarning ---------------------------------------------------------------------


async def test_slow_tool_warning_logs_and_marks_the_tool_span(
    tracer_provider: TracerProvider,
    span_exporter: InMemorySpanExporter,
    caplog: pytest.LogCaptureFixture,
) -> None:
    runner = HookRunner([OTelHook(tracer_provider), SlowToolWarning(threshold_s=0.05)])

    async def slow(**kwargs: Any) -> str:
        await asyncio.sleep(0.06)
        return "late"

    async def slow_fail(**kwargs: Any) -> str:
        await asyncio.sleep(0.06)
        raise ConnectionError("late and broken")

    caplog.set_level(logging.WARNING, "hookscope.builtins")
    async with runner.session() as session, session.turn("go") as turn:
        await turn.call_tool(ToolCall("fast", id="c0"), ok)
        await turn.call_tool(ToolCall("slow", id="c1"), slow)
        with pytest.raises(ConnectionError):
            await turn.call_tool(ToolCall("slow_fail", id="c2"), slow_fail)
    spans = {s.name: s for s in span_exporter.get_finished_spans()}
    assert [
        e.name for e in spans["execute_tool fast"].events if e.name == "hookscope.slow_tool"
    ] == []
    for name in ("slow", "slow_fail"):
        (event,) = [
            e for e in spans[f"execute_tool {name}"].events if e.name == "hookscope.slow_tool"
        ]
        attributes = dict(event.attributes or {})
        assert attributes["gen_ai.tool.name"] == name
        assert attributes["hookscope.slow_tool.threshold_s"] == 0.05
        assert attributes["hookscope.tool.duration_s"] >= 0.05
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 2
    assert messages[0].startswith("slow tool call: slow returned after 0.")
    assert messages[1].startswith("slow tool call: slow_fail raised ConnectionError after 0.")
    assert all(m.endswith("(threshold 0.05s)") for m in messages)


async def test_slow_tool_warning_without_a_recording_span_times_returned_calls_only(
    caplog: pytest.LogCaptureFixture,
) -> None:
    runner = HookRunner([SlowToolWarning(threshold_s=0.05)])

    async def slow(**kwargs: Any) -> str:
        await asyncio.sleep(0.06)
        return "late"

    async def slow_fail(**kwargs: Any) -> str:
        await asyncio.sleep(0.06)
        raise ConnectionError("late and broken")

    caplog.set_level(logging.WARNING, "hookscope.builtins")
    async with runner.session() as session, session.turn("go") as turn:
        await turn.call_tool(ToolCall("slow"), slow)
        with pytest.raises(ConnectionError):
            await turn.call_tool(ToolCall("slow_fail"), slow_fail)
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 1
    assert messages[0].startswith("slow tool call: slow returned after 0.")


# --- LoggingHook -------------------------------------------------------------------------


async def test_logging_hook_logs_every_event_with_keys_never_values(
    caplog: pytest.LogCaptureFixture,
) -> None:
    runner = HookRunner([LoggingHook(level="INFO"), RecoverErrors(ValueError)])

    def fails(**kwargs: Any) -> None:
        raise ValueError("s3cret in the message")

    caplog.set_level(logging.INFO, "hookscope.agent")
    scope = runner.session(agent_name="bot", session_id="s1")
    async with scope as session, session.turn("my password is hunter2") as turn:
        call = ToolCall("login", {"user": "ann", "password": "hunter2"}, "c1")
        await turn.call_tool(call, ok)
        await turn.call_tool(ToolCall("login", {"password": "hunter2"}, "c2"), fails)
        await turn.ask([Question("hunter2?")])
        await turn.compact("summary with hunter2")
        turn.respond(ChatResponse("hunter2", "m", Usage(3, 4)))
    lines = [r.getMessage() for r in caplog.records if r.name == "hookscope.agent"]
    assert lines == [
        "on_session_start session=s1 agent=bot",
        "pre_turn session=s1 turn=0",
        "pre_tool_call session=s1 turn=0 call=c1 tool=login arg_keys=user,password",
        lines[3],  # duration varies
        "pre_tool_call session=s1 turn=0 call=c2 tool=login arg_keys=password",
        "on_tool_error session=s1 turn=0 call=c2 tool=login outcome=failed error_type=ValueError",
        "on_interaction session=s1 turn=0 questions=1 kinds=question",
        "on_compaction session=s1 turn=0 summary_chars=20",
        "post_turn session=s1 turn=0 model=m tokens=7",
        "on_session_end session=s1 outcome=completed turns=1",
    ]
    assert lines[3].startswith(
        "post_tool_call session=s1 turn=0 call=c1 tool=login outcome=succeeded duration_ms="
    )
    assert not any("hunter2" in line or "s3cret" in line or "ann" in line for line in lines)
    record = next(r for r in caplog.records if r.getMessage().startswith("pre_tool_call"))
    assert record.hookscope == {  # type: ignore[attr-defined]
        "event": "pre_tool_call",
        "session": "s1",
        "turn": 0,
        "call": "c1",
        "tool": "login",
        "arg_keys": ["user", "password"],
    }
    assert {r.levelno for r in caplog.records if r.name == "hookscope.agent"} == {logging.INFO}


async def test_logging_hook_is_silent_when_its_logger_is_off(
    caplog: pytest.LogCaptureFixture,
) -> None:
    runner = HookRunner([LoggingHook(logger="hookscope.quiet", level=logging.DEBUG)])
    caplog.set_level(logging.INFO, "hookscope.quiet")
    async with runner.session() as session, session.turn("go") as turn:
        await turn.call_tool(ToolCall("x"), ok)
    assert [r for r in caplog.records if r.name == "hookscope.quiet"] == []


# --- SecretGuard -------------------------------------------------------------------------

AWS_KEY = "AKIA" + "IOSFODNN7EXAMPLE"
PRIVATE_KEY = "-----BEGIN RSA " + "PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n"
GITHUB_TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


@pytest.mark.parametrize(
    ("text", "kinds"),
    [
        (f"use {AWS_KEY} for s3", "AWS Access Key"),
        (f"here:\n{PRIVATE_KEY}", "Private Key"),
        (f"token {GITHUB_TOKEN}", "GitHub Token"),
    ],
)
async def test_secret_guard_blocks_responses_carrying_secrets_naming_only_the_kind(
    text: str, kinds: str
) -> None:
    runner = HookRunner([SecretGuard()])
    async with runner.session() as session, session.turn("go") as turn:
        decision = await turn.llm_response(LlmResponse("m", text=text))
    assert decision == ResponseDecision.block(
        f"the response carries a secret ({kinds}); blocked by SecretGuard"
    )


async def test_secret_guard_checks_tool_call_arguments_and_can_ask_for_a_retry() -> None:
    guard = SecretGuard(secret_types={"AWS Access Key"}, action="retry_with_feedback")
    runner = HookRunner([guard])
    call = ToolCall("deploy", {"env": {"vars": ["A=1", f"KEY={AWS_KEY}"]}})
    async with runner.session() as session, session.turn("go") as turn:
        decision = await turn.llm_response(LlmResponse("m", text="ok", tool_calls=(call,)))
        clean = await turn.llm_response(LlmResponse("m", text=f"see {GITHUB_TOKEN}"))
    assert decision.action == "retry_with_feedback"
    assert AWS_KEY not in decision.message
    assert decision.message.startswith("Your response contained a secret (AWS Access Key).")
    assert clean == ResponseDecision.accept()  # GitHub tokens were not asked for


async def test_secret_guard_lets_ordinary_text_through() -> None:
    runner = HookRunner([SecretGuard()])
    text = "The fix: compare aware datetimes. Tests pass at 10.0.0.1; password rotation is weekly."
    async with runner.session() as session, session.turn("go") as turn:
        assert await turn.llm_response(LlmResponse("m", text=text)) == ResponseDecision.accept()
    assert "Public IP (ipv4)" not in SecretGuard().secret_types


def test_the_builtins_import_without_the_opentelemetry_sdk_or_detect_secrets() -> None:
    script = textwrap.dedent(
        """
        import sys

        class Block:
            def find_spec(self, name, path=None, target=None):
                if name == "opentelemetry.sdk" or name.startswith("opentelemetry.sdk."):
                    raise ImportError(f"blocked: {name}")
                return None

        sys.meta_path.insert(0, Block())
        import hookscope.builtins
        print(sorted(m for m in sys.modules if m.startswith(("opentelemetry.sdk", "detect_secrets"))))
        hookscope.builtins.SecretGuard()
        print("detect_secrets" in sys.modules)
        """
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert run.stdout.split("\n")[:2] == ["[]", "True"]


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=12,
)


def _reordered(value: Any, rng: random.Random) -> Any:
    if isinstance(value, dict):
        items = list(value.items())
        rng.shuffle(items)
        return {key: _reordered(item, rng) for key, item in items}
    if isinstance(value, list):
        return [_reordered(item, rng) for item in value]
    return value


@given(
    a=st.dictionaries(st.text(max_size=3), JSON, max_size=4),
    b=st.dictionaries(st.text(max_size=3), JSON, max_size=4),
    seed=st.integers(),
)
def test_retry_loop_detector_calls_args_identical_exactly_when_they_are_equal(
    a: dict[str, Any], b: dict[str, Any], seed: int
) -> None:
    from hookscope.builtins.tools import _fingerprint

    shuffled = _reordered(a, random.Random(seed))
    assert _fingerprint(ToolCall("t", shuffled)) == _fingerprint(ToolCall("t", a))
    assert (_fingerprint(ToolCall("t", a)) == _fingerprint(ToolCall("t", b))) == (a == b)
    assert _fingerprint(ToolCall("t", a)) != _fingerprint(ToolCall("u", a))


async def test_logging_hook_quotes_names_that_could_forge_a_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    runner = HookRunner([LoggingHook(level="INFO")])
    caplog.set_level(logging.INFO, "hookscope.agent")
    async with runner.session(session_id="s") as session, session.turn("go") as turn:
        await turn.call_tool(ToolCall("x\nINFO forged tool=y", {"a b": 1}, "c"), ok)
    line = next(r.getMessage() for r in caplog.records if r.getMessage().startswith("pre_tool"))
    assert (
        line == "pre_tool_call session=s turn=0 call=c tool='x\\nINFO forged tool=y' arg_keys='a b'"
    )
