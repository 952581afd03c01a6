"""Property tests: the compiled index agrees with a linear reference and with google-antigravity.

The reference below is the bucket table and DESIGN §4's name rules read literally: sort the
rules by (bucket, registration order) and take the first that matches, where a rule matches a
call by its exact target, or (deny and ask_user rules only) by the call's name read as
``server/tool`` for a registered server, or by look-alike names when ``normalize=True``. The
indexed evaluator must agree with it on every rule set and call hypothesis can think of,
condition and handler failures included.

The differential test drives the real google-antigravity 0.1.22 ``policy.enforce()`` hook (a
``PreToolCallDecideHook`` whose ``run(context, data)`` takes its own pydantic ``ToolCall``) on
rule sets without MCP targets and requires the same allow/deny outcome for every call.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from google.antigravity import types as ag_types
from google.antigravity.hooks import policy as ag_policy
from hypothesis import given, settings
from hypothesis import strategies as st

from hookscope import policy
from hookscope._names import fold_server, skeleton
from hookscope.policy import Decision, Policy
from hookscope.types import ToolCall

RANK = {Decision.DENY: 0, Decision.ASK_USER: 1, Decision.ALLOW: 2}


def targets(p: Policy, call: ToolCall, servers: list[str], normalize: bool) -> bool:
    """Whether rule ``p`` meets ``call``, by DESIGN §4 read literally."""
    if p.tool == "*":
        return True
    strict = p.decision is not Decision.ALLOW
    looks = normalize and strict

    def same_tool(rule_tool: str, name: str) -> bool:
        return rule_tool == name or (looks and skeleton(rule_tool) == skeleton(name))

    def same_server(rule_server: str, server: str) -> bool:
        a, b = fold_server(rule_server), fold_server(server)
        return a == b or (looks and skeleton(a) == skeleton(b))

    rule_server, slash, rule_tool = p.tool.partition("/")
    if not slash:
        if call.server and fold_server(call.server):
            return False
        return same_tool(p.tool, call.name)
    if call.server and fold_server(call.server):
        direct = same_server(rule_server, call.server) and (
            rule_tool == "*" or same_tool(rule_tool, call.name)
        )
        if direct:
            return True
    if not strict:
        return False
    # The call's name read as server/tool for a registered server: deny and ask rules only.
    registered = {fold_server(s) for s in servers}
    prefix, qualified, rest = call.name.partition("/")
    borrowed = qualified and fold_server(prefix) in registered
    if borrowed and fold_server(prefix) == fold_server(rule_server) and rule_tool in ("*", rest):
        return True
    if looks:
        prefix, qualified, rest = skeleton(call.name).partition("/")
        if qualified and skeleton(fold_server(rule_server)) == prefix.strip():
            return rule_tool == "*" or skeleton(rule_tool) == rest.strip()
    return False


def reference(
    rules: list[Policy], call: ToolCall, servers: list[str], normalize: bool = False
) -> tuple[str, str | None, int | None]:
    """(outcome, rule, bucket) by sorting on (bucket, registration order) and scanning."""

    def bucket(p: Policy) -> int:
        return (2 if p.tool == "*" else 1 if p.tool.endswith("/*") else 0) * 3 + RANK[p.decision]

    for _, p in sorted(enumerate(rules), key=lambda item: (bucket(item[1]), item[0])):
        if not targets(p, call, servers, normalize):
            continue
        matched = outcome_of(p.when, call.args) if p.when else True
        if matched is False:
            continue
        if matched is True and p.handler:
            matched = outcome_of(p.handler, call)
        allowed = matched is True and p.decision is not Decision.DENY
        return ("allowed" if allowed else "denied", p.name, bucket(p))
    return ("allowed", None, None)


def outcome_of(func: Callable[[Any], Any], arg: Any) -> object:
    """``func(arg)``, with a raise turned into a distinct non-bool marker."""
    try:
        return func(arg)
    except Exception:
        return "raised"


# --- predicates and handlers the strategies draw from -------------------------------------


def always(args: Any) -> bool:
    return True


def never(args: Any) -> bool:
    return False


def k_is_1(args: Any) -> bool:
    return bool(args.get("k") == 1)


def boom(arg: Any) -> bool:
    raise RuntimeError("boom")


def sloppy(arg: Any) -> Any:
    return 1


def yes(call: Any) -> bool:
    return True


def no(call: Any) -> bool:
    return False


SERVERS = ["s1", "S2 ", "a"]
TARGETS = ["a", "b", "a/b", "s1/a", "S1/b", "s1/*", "s2/a", "s2/*", "a/*", "A/a", "*"]
CONDITIONS = [None, always, never, k_is_1, boom, sloppy]
HANDLERS = [yes, no, boom, sloppy]


@st.composite
def rule_sets(
    draw: st.DrawFn, targets: list[str], conditions: list[Any], handlers: list[Any]
) -> list[Policy]:
    rules = []
    for index in range(draw(st.integers(0, 12))):
        decision = draw(st.sampled_from(list(Decision)))
        handler = draw(st.sampled_from(handlers)) if decision is Decision.ASK_USER else None
        rules.append(
            Policy(
                draw(st.sampled_from(targets)),
                decision,
                when=draw(st.sampled_from(conditions)),
                handler=handler,
                name=f"r{index}",
            )
        )
    return rules


# Look-alikes: Cyrillic a and s, fullwidth b, a zero-width space, a fullwidth solidus.
NAMES = ["a", "b", "c", "A", "\u0430", "\uff42", "b\u200b", "a/b", "s1/a", "S1/b", " s2/a"]
NAMES += ["\u04551/a", "s1\uff0fb", "s1/*", "*", ""]
calls = st.builds(
    ToolCall,
    name=st.sampled_from(NAMES),
    args=st.fixed_dictionaries({"k": st.integers(0, 1)}),
    server=st.sampled_from([None, "", " ", "s1", " S1", "s2", "s3", "a", "\u04551", "A"]),
)


@settings(max_examples=400, deadline=None)
@given(rules=rule_sets(TARGETS, CONDITIONS, HANDLERS), call=calls)
def test_the_compiled_index_agrees_with_the_linear_reference(
    rules: list[Policy], call: ToolCall
) -> None:
    enforcer = policy.enforce(rules, mcp_servers=SERVERS)

    decision = asyncio.run(enforcer.evaluate(call))

    assert (decision.outcome, decision.rule, decision.bucket) == reference(rules, call, SERVERS)


@settings(max_examples=400, deadline=None)
@given(rules=rule_sets(TARGETS, CONDITIONS, HANDLERS), call=calls)
def test_the_normalizing_index_agrees_with_the_linear_reference(
    rules: list[Policy], call: ToolCall
) -> None:
    enforcer = policy.enforce(rules, mcp_servers=SERVERS, normalize=True)

    decision = asyncio.run(enforcer.evaluate(call))

    expected = reference(rules, call, SERVERS, normalize=True)
    assert (decision.outcome, decision.rule, decision.bucket) == expected


# --- differential: google-antigravity 0.1.22 ----------------------------------------------

LOCAL_TOOLS = ["run_command", "view_file", "edit_file", "x", "y"]
BUILDERS: dict[Decision, tuple[Callable[..., Any], Callable[..., Any]]] = {
    Decision.ALLOW: (policy.allow, ag_policy.allow),
    Decision.DENY: (policy.deny, ag_policy.deny),
}


@st.composite
def paired_rule_sets(draw: st.DrawFn) -> tuple[list[Any], list[Any]]:
    """The same random rules built with hookscope's builders and with antigravity's."""
    ours: list[Any] = []
    theirs: list[Any] = []
    for index in range(draw(st.integers(0, 10))):
        kind = draw(st.sampled_from(["rule", "rule", "rule", "allow_all", "deny_all", "confirm"]))
        if kind == "allow_all":
            ours.append(policy.allow_all())
            theirs.append(ag_policy.allow_all())
            continue
        if kind == "deny_all":
            ours.append(policy.deny_all())
            theirs.append(ag_policy.deny_all())
            continue
        if kind == "confirm":
            handler = draw(st.sampled_from([None, yes, no, boom]))
            ours.append(policy.confirm_run_command(handler))
            theirs.append(ag_policy.confirm_run_command(handler))
            continue
        tool = draw(st.sampled_from([*LOCAL_TOOLS, "*"]))
        decision = draw(st.sampled_from(list(Decision)))
        when = draw(st.sampled_from([None, always, never, k_is_1, boom]))
        name = f"r{index}"
        if decision is Decision.ASK_USER:
            handler = draw(st.sampled_from([yes, no, boom]))
            ours.append(policy.ask_user(tool, handler, when=when, name=name))
            theirs.append(ag_policy.ask_user(tool, handler=handler, when=when, name=name))
        else:
            build_ours, build_theirs = BUILDERS[decision]
            ours.append(build_ours(tool, when=when, name=name))
            theirs.append(build_theirs(tool, when=when, name=name))
    return ours, theirs


async def both_outcomes(ours: list[Any], theirs: list[Any], name: str, k: int) -> tuple[bool, bool]:
    our_decision = await policy.enforce(ours).evaluate(ToolCall(name, {"k": k}))
    their_result = await ag_policy.enforce(theirs).run(
        None, ag_types.ToolCall(name=name, args={"k": k})
    )
    return our_decision.outcome == "allowed", their_result.allow


@settings(max_examples=400, deadline=None)
@given(rule_pair=paired_rule_sets(), name=st.sampled_from(LOCAL_TOOLS), k=st.integers(0, 1))
def test_allow_and_deny_agree_with_google_antigravity(
    rule_pair: tuple[list[Any], list[Any]], name: str, k: int
) -> None:
    ours, theirs = rule_pair

    our_allow, their_allow = asyncio.run(both_outcomes(ours, theirs, name, k))

    assert our_allow == their_allow
