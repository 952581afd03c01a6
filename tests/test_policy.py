"""hookscope.policy: builders, validation, the nine buckets, fail-closed evaluation, the hook."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import pytest

from hookscope import policy
from hookscope.hooks import Hook
from hookscope.policy import Decision, Policy, PolicyDecision, PolicyEnforcer, PolicyError
from hookscope.runner import HookRunner
from hookscope.types import HookResult, ToolCall

from .conftest import Recorder


def yes(call: ToolCall) -> bool:
    return True


def no(call: ToolCall) -> bool:
    return False


def rule_in_bucket(bucket: int, name: str) -> Policy:
    """A rule in ``bucket`` that matches ToolCall("t", server="srv") (asks answer yes)."""
    target = ("srv/t", "srv/*", "*")[bucket // 3]
    decision = (Decision.DENY, Decision.ASK_USER, Decision.ALLOW)[bucket % 3]
    handler = yes if decision is Decision.ASK_USER else None
    return Policy(target, decision, handler=handler, name=name)


MCP_CALL = ToolCall("t", {}, server="srv")


# --- precedence -------------------------------------------------------------------------


@pytest.mark.parametrize(("winner", "loser"), list(itertools.combinations(range(9), 2)))
async def test_lower_bucket_wins_whatever_the_registration_order(winner: int, loser: int) -> None:
    enforcer = policy.enforce(
        [rule_in_bucket(loser, "loser"), rule_in_bucket(winner, "winner")], mcp_servers=["srv"]
    )

    decision = await enforcer.evaluate(MCP_CALL)

    assert (decision.rule, decision.bucket) == ("winner", winner)


@pytest.mark.parametrize("bucket", range(9))
async def test_each_bucket_reports_its_decision_and_outcome(bucket: int) -> None:
    enforcer = policy.enforce([rule_in_bucket(bucket, "only")], mcp_servers=["srv"])

    decision = await enforcer.evaluate(MCP_CALL)

    expected_decision = (Decision.DENY, Decision.ASK_USER, Decision.ALLOW)[bucket % 3]
    expected_outcome = "denied" if bucket % 3 == 0 else "allowed"
    assert (decision.decision, decision.outcome, decision.bucket) == (
        expected_decision,
        expected_outcome,
        bucket,
    )


@pytest.mark.parametrize(
    ("winner", "loser"),
    [(0, 1), (0, 2), (1, 2), (0, 6), (2, 6), (2, 8), (6, 7), (6, 8), (7, 8)],
)
async def test_local_tool_buckets_follow_the_same_order(winner: int, loser: int) -> None:
    def local_rule(bucket: int, name: str) -> Policy:
        decision = (Decision.DENY, Decision.ASK_USER, Decision.ALLOW)[bucket % 3]
        handler = yes if decision is Decision.ASK_USER else None
        return Policy("t" if bucket < 3 else "*", decision, handler=handler, name=name)

    enforcer = policy.enforce([local_rule(loser, "loser"), local_rule(winner, "winner")])

    decision = await enforcer.evaluate(ToolCall("t"))

    assert (decision.rule, decision.bucket) == ("winner", winner)


async def test_first_registered_match_wins_inside_a_bucket() -> None:
    enforcer = policy.enforce([policy.deny("t", name="first"), policy.deny("t", name="second")])

    assert (await enforcer.evaluate(ToolCall("t"))).rule == "first"


async def test_a_rule_whose_condition_fails_gives_way_to_the_next_match() -> None:
    enforcer = policy.enforce(
        [
            policy.deny("t", when=lambda args: args["n"] > 5, name="big"),
            policy.deny("t", when=lambda args: args["n"] > 1, name="medium"),
            policy.allow_all(),
        ]
    )

    decisions = [await enforcer.evaluate(ToolCall("t", {"n": n})) for n in (9, 3, 0)]

    assert [(d.rule, d.bucket) for d in decisions] == [
        ("big", 0),
        ("medium", 0),
        ("allow_all", 8),
    ]


async def test_a_call_no_rule_matches_is_allowed_with_no_rule_and_no_bucket() -> None:
    enforcer = policy.enforce([policy.deny("other")])

    decision = await enforcer.evaluate(ToolCall("t"))

    assert decision == PolicyDecision(
        Decision.ALLOW, "allowed", None, None, "no policy rule matches; allowed"
    )


async def test_a_local_call_named_server_tool_meets_that_servers_deny_rules() -> None:
    enforcer = policy.enforce(
        [policy.deny("srv/t"), policy.deny_mcp("srv"), policy.allow_all()], mcp_servers=["srv"]
    )

    decisions = [await enforcer.evaluate(ToolCall(name)) for name in ("srv/t", "srv/*", "t")]

    assert [d.rule for d in decisions] == ["deny:srv/t", "deny:srv/*", "allow_all"]


async def test_an_mcp_call_never_matches_a_plain_tool_rule() -> None:
    enforcer = policy.enforce([policy.deny("t"), policy.allow_all()])

    decision = await enforcer.evaluate(ToolCall("t", server="srv"))

    assert decision.rule == "allow_all"


async def test_an_mcp_call_matches_its_server_rules_only() -> None:
    enforcer = policy.enforce(
        [policy.deny_mcp("a", ["t"], name="a-t"), policy.deny_mcp("b", name="all-of-b")],
        mcp_servers=["a", "b"],
    )

    decisions = [
        await enforcer.evaluate(ToolCall("t", server="a")),
        await enforcer.evaluate(ToolCall("u", server="a")),
        await enforcer.evaluate(ToolCall("t", server="b")),
        await enforcer.evaluate(ToolCall("t", server="c")),
    ]

    assert [d.rule for d in decisions] == ["a-t", None, "all-of-b", None]


async def test_an_empty_server_is_a_local_call_so_local_denies_apply() -> None:
    enforcer = policy.enforce([policy.deny("run_command")])

    decision = await enforcer.evaluate(ToolCall("run_command", server=""))

    assert (decision.outcome, decision.rule) == ("denied", "deny:run_command")


async def test_rules_after_one_that_always_decides_are_never_run() -> None:
    ran: list[str] = []

    def watch(args: Any) -> bool:
        ran.append("second")
        return True

    enforcer = policy.enforce([policy.deny("t", name="first"), policy.deny("t", when=watch)])

    assert ((await enforcer.evaluate(ToolCall("t"))).rule, ran) == ("first", [])


async def test_static_decisions_are_built_once_and_reused() -> None:
    enforcer = policy.enforce([policy.deny("t")])

    first = await enforcer.evaluate(ToolCall("t", id="1"))
    second = await enforcer.evaluate(ToolCall("t", id="2"))

    assert first is second


# --- conditions -------------------------------------------------------------------------


async def test_a_condition_receives_the_args_mapping() -> None:
    seen: list[Any] = []
    call = ToolCall("t", {"x": 1})
    enforcer = policy.enforce([policy.deny("t", when=lambda args: seen.append(args) or True)])

    await enforcer.evaluate(call)

    assert seen == [{"x": 1}]
    assert seen[0] is call.args


async def test_a_condition_annotated_toolcall_receives_the_call() -> None:
    seen: list[ToolCall] = []

    def check(call: ToolCall) -> bool:
        seen.append(call)
        return True

    call = ToolCall("t", {"x": 1}, id="c1")
    await policy.enforce([policy.deny("t", when=check)]).evaluate(call)

    assert seen == [call]


async def test_an_async_condition_is_awaited() -> None:
    async def big(args: Any) -> bool:
        return bool(args["n"] > 5)

    enforcer = policy.enforce([policy.deny("t", when=big)])

    outcomes = [(await enforcer.evaluate(ToolCall("t", {"n": n}))).outcome for n in (9, 1)]

    assert outcomes == ["denied", "allowed"]


async def test_a_condition_without_parameters_is_called_with_none() -> None:
    enforcer = policy.enforce([policy.deny("t", when=lambda: True)])

    assert (await enforcer.evaluate(ToolCall("t"))).outcome == "denied"


async def test_a_raising_condition_denies_and_says_why() -> None:
    def boom(args: Any) -> bool:
        raise ValueError("bad input")

    enforcer = policy.enforce([policy.allow("t", when=boom, name="maybe")])

    decision = await enforcer.evaluate(ToolCall("t"))

    assert decision == PolicyDecision(
        Decision.DENY,
        "denied",
        "maybe",
        2,
        "the condition of rule 'maybe' raised ValueError; failing closed",
    )


async def test_a_raising_async_condition_denies() -> None:
    async def boom(args: Any) -> bool:
        raise RuntimeError("down")

    enforcer = policy.enforce([policy.allow("t", when=boom, name="maybe")])

    decision = await enforcer.evaluate(ToolCall("t"))

    assert (decision.outcome, decision.reason) == (
        "denied",
        "the condition of rule 'maybe' raised RuntimeError; failing closed",
    )


@pytest.mark.parametrize("value", [None, 1, "yes", [True]])
async def test_a_condition_returning_a_non_bool_denies(value: object) -> None:
    enforcer = policy.enforce([policy.allow("t", when=lambda args: value, name="sloppy")])

    decision = await enforcer.evaluate(ToolCall("t"))

    assert (decision.outcome, decision.reason) == (
        "denied",
        f"the condition of rule 'sloppy' returned {type(value).__name__}, not bool; failing closed",
    )


# --- asking the user --------------------------------------------------------------------


async def test_an_approving_handler_allows_and_records_the_answer() -> None:
    enforcer = policy.enforce([policy.ask_user("t", yes, name="confirm")])

    decision = await enforcer.evaluate(ToolCall("t"))

    assert decision == PolicyDecision(
        Decision.ASK_USER, "allowed", "confirm", 1, "the user approved the call", True, True
    )


async def test_a_refusing_handler_denies_with_the_rules_reason() -> None:
    enforcer = policy.enforce([policy.ask_user("t", no, name="confirm", reason="not now")])

    decision = await enforcer.evaluate(ToolCall("t"))

    assert decision == PolicyDecision(
        Decision.ASK_USER, "denied", "confirm", 1, "not now", True, False
    )


async def test_a_handler_receives_the_call_and_may_be_async() -> None:
    seen: list[ToolCall] = []

    async def ask(call: ToolCall) -> bool:
        seen.append(call)
        return True

    call = ToolCall("t", {"x": 1})
    decision = await policy.enforce([policy.ask_user("t", ask)]).evaluate(call)

    assert (decision.outcome, seen) == ("allowed", [call])


async def test_a_raising_handler_denies_with_no_answer() -> None:
    def ask(call: ToolCall) -> bool:
        raise OSError("no terminal")

    enforcer = policy.enforce([policy.ask_user("t", ask, name="confirm")])

    decision = await enforcer.evaluate(ToolCall("t"))

    assert decision == PolicyDecision(
        Decision.ASK_USER,
        "denied",
        "confirm",
        1,
        "the ask handler of rule 'confirm' raised OSError; failing closed",
        True,
        None,
    )


async def test_a_handler_returning_a_non_bool_denies() -> None:
    enforcer = policy.enforce([policy.ask_user("t", lambda call: "y", name="confirm")])

    decision = await enforcer.evaluate(ToolCall("t"))

    assert (decision.outcome, decision.reason) == (
        "denied",
        "the ask handler of rule 'confirm' returned str, not bool; failing closed",
    )


async def test_a_dry_run_reports_the_ask_without_calling_the_handler() -> None:
    asked: list[ToolCall] = []
    enforcer = policy.enforce([policy.ask_user("t", lambda call: asked.append(call) or True)])

    decision = await enforcer.evaluate(ToolCall("t"), ask=False)

    assert (decision.decision, decision.asked_user, asked) == (Decision.ASK_USER, False, [])


async def test_an_ask_rule_whose_condition_fails_does_not_ask() -> None:
    asked: list[ToolCall] = []
    enforcer = policy.enforce(
        [policy.ask_user("t", lambda c: asked.append(c) or True, when=lambda args: False)]
    )

    decision = await enforcer.evaluate(ToolCall("t"))

    assert (decision.rule, asked) == (None, [])


# --- builders ---------------------------------------------------------------------------


def test_rules_without_a_name_get_one_from_decision_and_target() -> None:
    rules = [
        policy.deny("run_command"),
        policy.allow("view_file"),
        policy.ask_user("edit_file", yes),
        *policy.allow_mcp("gh"),
        *policy.deny_mcp("gh", ["delete_repo"]),
    ]

    assert [r.name for r in rules] == [
        "deny:run_command",
        "allow:view_file",
        "ask_user:edit_file",
        "allow:gh/*",
        "deny:gh/delete_repo",
    ]


def test_named_builders_carry_their_names() -> None:
    rules = [policy.allow_all(), policy.deny_all(), *policy.confirm_run_command()]

    assert [(r.tool, r.decision, r.name) for r in rules] == [
        ("*", Decision.ALLOW, "allow_all"),
        ("*", Decision.DENY, "deny_all"),
        ("run_command", Decision.DENY, "confirm_run_command"),
        ("*", Decision.ALLOW, "allow_all"),
    ]


async def test_confirm_run_command_without_handler_denies_run_command_only() -> None:
    enforcer = policy.enforce(policy.confirm_run_command())

    run = await enforcer.evaluate(ToolCall("run_command"))
    view = await enforcer.evaluate(ToolCall("view_file"))

    assert (run.outcome, run.rule, run.bucket) == ("denied", "confirm_run_command", 0)
    assert (view.outcome, view.rule, view.bucket) == ("allowed", "allow_all", 8)


async def test_confirm_run_command_with_handler_asks() -> None:
    enforcer = policy.enforce(policy.confirm_run_command(no))

    decision = await enforcer.evaluate(ToolCall("run_command"))

    assert (decision.decision, decision.outcome, decision.user_approved) == (
        Decision.ASK_USER,
        "denied",
        False,
    )


def test_mcp_builders_accept_server_objects_and_tool_lists() -> None:
    @dataclass
    class Server:
        name: str

    rules = policy.ask_user_mcp(Server("gh"), ["a", "b"], handler=yes, name="gh-writes")

    assert [(r.tool, r.decision, r.name) for r in rules] == [
        ("gh/a", Decision.ASK_USER, "gh-writes"),
        ("gh/b", Decision.ASK_USER, "gh-writes"),
    ]


def test_decision_values_are_the_telemetry_strings() -> None:
    assert [d.value for d in Decision] == ["allow", "deny", "ask_user"]
    assert str(Decision.ASK_USER) == "ask_user"


# --- validation -------------------------------------------------------------------------


def test_policy_error_is_a_value_error() -> None:
    assert issubclass(PolicyError, ValueError)


def test_ask_user_without_handler_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"ask_user rule for 't' has no handler; pass handler="):
        policy.enforce([Policy("t", Decision.ASK_USER)])


def test_a_handler_on_a_non_ask_rule_is_rejected() -> None:
    with pytest.raises(PolicyError, match="only ask_user rules take a handler"):
        Policy("t", Decision.DENY, handler=yes)


def test_mcp_rules_without_registered_servers_are_rejected() -> None:
    with pytest.raises(PolicyError, match=r"targets MCP server 'gh', but enforce\(\) got no "):
        policy.enforce([policy.allow_all(), policy.deny_mcp("gh")])


def test_mcp_rules_with_an_empty_server_list_are_rejected() -> None:
    with pytest.raises(PolicyError, match="but enforce\\(\\) got no mcp_servers"):
        policy.enforce([policy.deny("gh/x")], mcp_servers=[])


def test_a_rule_naming_an_unregistered_server_is_rejected() -> None:
    with pytest.raises(
        PolicyError,
        match=r"rule 'deny:gh/\*' targets MCP server 'gh', which is not registered "
        r"\(mcp_servers: jira, slack\)",
    ):
        policy.enforce([policy.deny_mcp("gh")], mcp_servers=["slack", "jira"])


def test_mcp_servers_may_be_objects_with_a_name() -> None:
    @dataclass
    class Server:
        name: str

    enforcer = policy.enforce(policy.deny_mcp("gh"), mcp_servers=[Server("gh")])

    assert enforcer.mcp_servers == frozenset({"gh"})


@pytest.mark.parametrize("tool", ["", "   ", " run_command", "run_command\n"])
def test_empty_or_padded_tool_names_are_rejected(tool: str) -> None:
    with pytest.raises(PolicyError, match=r"tool name|needs a tool name"):
        policy.deny(tool)


@pytest.mark.parametrize("tool", ["run_*", "*/x", "gh/a*", "gh/*/x"])
def test_star_patterns_other_than_the_two_wildcards_are_rejected(tool: str) -> None:
    with pytest.raises(PolicyError, match="patterns such as 'run_\\*' are not supported"):
        policy.deny(tool)


@pytest.mark.parametrize("tool", ["/x", "gh/"])
def test_half_empty_mcp_targets_are_rejected(tool: str) -> None:
    with pytest.raises(PolicyError, match="write 'server/tool' or 'server/\\*'"):
        policy.deny(tool)


@pytest.mark.parametrize("when", [True, "args['x']", 3])
def test_a_non_callable_condition_is_rejected(when: Any) -> None:
    with pytest.raises(ValueError, match="when= must be a function of the call's args"):
        policy.enforce([policy.deny("t", when=when)])


def test_a_condition_needing_two_arguments_is_rejected() -> None:
    with pytest.raises(PolicyError, match="must take one argument: the call's args dict"):
        policy.deny("t", when=lambda args, extra: True)


def test_a_handler_taking_no_arguments_is_rejected() -> None:
    with pytest.raises(PolicyError, match="must be a function taking the ToolCall"):
        policy.ask_user("t", lambda: True)  # type: ignore[arg-type]


def test_a_single_string_for_mcp_tools_is_rejected() -> None:
    with pytest.raises(PolicyError, match=r"write tools=\['a'\]"):
        policy.allow_mcp("gh", "a")


@pytest.mark.parametrize("server", ["", "  ", "a/b", "*", " * "])
def test_bad_server_names_are_rejected(server: str) -> None:
    with pytest.raises(PolicyError, match="must be non-empty, not '\\*' and without '/'"):
        policy.allow_mcp(server)


def test_something_other_than_a_policy_is_rejected() -> None:
    with pytest.raises(
        TypeError, match="enforce\\(\\) takes Policy objects and lists of them, got 'x'"
    ):
        policy.enforce([policy.allow_all(), ["x"]])


def test_nested_lists_are_flattened_in_order() -> None:
    a, b, c = policy.deny("a"), policy.deny("b"), policy.deny("c")

    assert policy.enforce([a, [b, (c,)]]).policies == (a, b, c)


# --- the hook ---------------------------------------------------------------------------


def test_the_enforcer_is_a_hook_named_policy_enforcer() -> None:
    enforcer = policy.enforce([])

    assert (isinstance(enforcer, Hook), enforcer.name) == (True, "PolicyEnforcer")


async def test_a_denial_names_the_rule_and_carries_the_decision() -> None:
    enforcer = policy.enforce([policy.deny("rm", reason="never delete")])

    result = await enforcer.pre_tool_call(None, ToolCall("rm"))  # type: ignore[arg-type]

    assert result == HookResult(
        allow=False,
        message="denied by policy rule 'deny:rm': never delete",
        decision=PolicyDecision(Decision.DENY, "denied", "deny:rm", 0, "never delete"),
    )


async def test_an_allow_carries_the_decision_too() -> None:
    enforcer = policy.enforce([policy.allow("ls")])

    result = await enforcer.pre_tool_call(None, ToolCall("ls"))  # type: ignore[arg-type]

    assert result == HookResult(
        allow=True,
        message="allowed by policy rule 'allow:ls'",
        decision=PolicyDecision(Decision.ALLOW, "allowed", "allow:ls", 2, "ls is allowed"),
    )


async def test_the_runner_reports_a_denial_with_its_decision_and_skips_the_tool() -> None:
    ran: list[str] = []
    runner = HookRunner([policy.enforce([policy.confirm_run_command()])])

    async with runner.session(agent_name="a") as session, session.turn("go") as turn:
        outcome = await turn.call_tool(ToolCall("run_command"), lambda: ran.append("ran"))

    assert (outcome.allowed, outcome.decided_by, ran) == (False, "PolicyEnforcer", [])
    assert outcome.decision is not None
    assert (outcome.decision.rule, outcome.decision.bucket) == ("confirm_run_command", 0)
    assert outcome.message.startswith("denied by policy rule 'confirm_run_command': ")


async def test_observers_see_the_allow_decision_of_an_allowed_call(recorder: Recorder) -> None:
    runner = HookRunner([policy.enforce([policy.allow("ls", name="reads")])])
    runner.observe(recorder)

    async with runner.session(agent_name="a") as session, session.turn("go") as turn:
        outcome = await turn.call_tool(ToolCall("ls"), lambda: "files")

    finished = [c for c in recorder.named("dispatch_finished") if c[1] == "pre_tool_call"]
    assert len(finished) == 1
    assert finished[0][2].decision.rule == "reads"
    assert (outcome.value, outcome.decision is not None and outcome.decision.rule) == (
        "files",
        "reads",
    )


def test_the_enforcer_overrides_only_pre_tool_call() -> None:
    overridden = [
        name
        for name in vars(Hook)
        if not name.startswith("_") and getattr(PolicyEnforcer, name) is not getattr(Hook, name)
    ]

    assert overridden == ["pre_tool_call"]


async def test_a_raising_condition_logs_its_exception_once_and_keeps_it_out_of_the_reason(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def leaky(args: Any) -> bool:
        raise KeyError("Authorization: Bearer sk-live-123")

    enforcer = policy.enforce([policy.allow("t", when=leaky, name="maybe")])
    with caplog.at_level("WARNING", logger="hookscope"):
        first = await enforcer.evaluate(ToolCall("t"))
        await enforcer.evaluate(ToolCall("t"))
    assert "sk-live" not in first.reason
    assert [r.getMessage() for r in caplog.records] == [
        "policy rule 'maybe': its condition raised; the call is denied "
        "(later failures of this rule are not logged)"
    ]
    assert caplog.records[0].exc_info is not None
