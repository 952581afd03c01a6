"""HookMatcher: which tool calls a hook sees, on every hook style (DESIGN §7)."""

from __future__ import annotations

from typing import Any

import pytest

from hookscope import hooks
from hookscope.context import OperationContext, SessionContext, TurnContext
from hookscope.hooks import Hook
from hookscope.matching import TIERS_KEY, HookMatcher
from hookscope.runner import HookRunner
from hookscope.types import HookResult, ToolCall, ToolResult


def _op(tiers: dict[str, str] | None = None) -> OperationContext:
    session = SessionContext("s")
    if tiers is not None:
        session.set(TIERS_KEY, tiers)
    return OperationContext(TurnContext(session, 0), "tool")


@pytest.mark.parametrize(
    ("tools", "call", "expected"),
    [
        ("edit_file|write_to_file", ToolCall("edit_file"), True),
        ("edit_file|write_to_file", ToolCall("write_to_file"), True),
        ("edit_file|write_to_file", ToolCall("edit_files"), False),
        ("edit_file", ToolCall("Edit_file"), False),
        ("github/*", ToolCall("delete_branch", server="github"), True),
        ("github/*", ToolCall("delete_branch", server=" GitHub "), True),
        ("github/*", ToolCall("github/delete_branch"), True),
        ("github/*", ToolCall("delete_branch", server="gitlab"), False),
        ("github/delete_branch", ToolCall("delete_branch", server="github"), True),
        ("delete_branch", ToolCall("delete_branch", server="github"), True),
        ("mcp__.*", ToolCall("mcp__github__delete"), True),
        ("mcp__.*", ToolCall("xmcp__github"), False),
        ("run_.+", ToolCall("run_command"), True),
        ("run_.+", ToolCall("prerun_command"), False),
        ("*", ToolCall("anything"), True),
        ("", ToolCall("anything"), True),
    ],
)
def test_tools(tools: str, call: ToolCall, expected: bool) -> None:
    assert HookMatcher(tools=tools).matches(call, _op()) is expected


@pytest.mark.parametrize(
    ("paths", "path", "expected"),
    [
        (["/etc/**"], "/etc/passwd", True),
        (["/etc/**"], "/etc/ssh/sshd_config", True),
        (["/etc/**"], "/etcetera/x", False),
        (["/etc/**"], "/tmp/../etc/shadow", True),
        (["**/*.env"], "/srv/app/.env", True),
        (["**/*.env"], "prod.env", True),
        (["**/*.env"], "/srv/app/env.txt", False),
        (["/srv/*/config"], "/srv/app/config", True),
        (["/srv/*/config"], "/srv/app/nested/config", False),
        (["/data/file[0-9].txt"], "/data/file7.txt", True),
        (["/data/file[!0-9].txt"], "/data/file7.txt", False),
    ],
)
def test_paths(paths: list[str], path: str, expected: bool) -> None:
    call = ToolCall("view_file", {"AbsolutePath": path})
    assert HookMatcher(paths=paths).matches(call, _op()) is expected


@pytest.mark.parametrize("argument", ["AbsolutePath", "TargetFile", "path", "file_path"])
def test_paths_read_every_path_argument(argument: str) -> None:
    call = ToolCall("t", {argument: "/etc/hosts"})
    assert HookMatcher(paths="/etc/**").matches(call, _op())


def test_a_call_without_a_path_argument_does_not_match_a_paths_matcher() -> None:
    assert not HookMatcher(paths="**").matches(ToolCall("t", {"CommandLine": "ls"}), _op())


def test_tiers_come_from_the_table_in_the_context() -> None:
    matcher = HookMatcher(tiers={"confirm"})
    tiers = {"run_command": "confirm", "view_file": "observe", "*": "confirm"}
    assert matcher.matches(ToolCall("run_command"), _op(tiers))
    assert not matcher.matches(ToolCall("view_file"), _op(tiers))
    assert matcher.matches(ToolCall("unknown"), _op(tiers))  # the "*" default
    assert not matcher.matches(ToolCall("run_command"), _op())  # no table: no tier


def test_every_criterion_must_match() -> None:
    matcher = HookMatcher(tools="edit_file", paths=["/etc/**"])
    assert matcher.matches(ToolCall("edit_file", {"path": "/etc/x"}), _op())
    assert not matcher.matches(ToolCall("edit_file", {"path": "/srv/x"}), _op())
    assert not matcher.matches(ToolCall("view_file", {"path": "/etc/x"}), _op())


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"tools": "run_(command"},
            "matcher tools 'run_(command' is not a valid regular expression (missing ), "
            "unterminated subpattern at position 4); escape special characters or list exact "
            "names separated by '|'",
        ),
        (
            {"tools": "a||b"},
            "matcher tools 'a||b' has an empty alternative; write names separated by '|', "
            "e.g. 'edit_file|write_to_file'",
        ),
        (
            {"paths": ["/etc/[abc"]},
            "path glob '/etc/[abc' has an unbalanced '['; close it with ']' or write '[[]' for "
            "a literal '['",
        ),
        (
            {"paths": [""]},
            "matcher paths must be non-empty glob strings, got ['']; e.g. "
            "paths=['/etc/**', '**/*.env']",
        ),
    ],
)
def test_bad_patterns_say_how_to_fix_them(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=r"matcher|glob") as raised:
        HookMatcher(**kwargs)
    assert str(raised.value) == message


def test_parse_accepts_a_matcher_a_pattern_or_none() -> None:
    matcher = HookMatcher(tools="a")
    assert HookMatcher.parse(matcher) is matcher
    assert HookMatcher.parse("a|b") == HookMatcher(tools="a|b")
    assert HookMatcher.parse(None) is None
    with pytest.raises(ValueError, match="matcher must be a HookMatcher or a tools pattern"):
        HookMatcher.parse(42)


# --- in the dispatch loop ---------------------------------------------------------------


async def test_a_hook_whose_matcher_does_not_match_is_not_called() -> None:
    seen: list[str] = []

    @hooks.pre_tool_call_decide(matcher="run_command|bash")
    def guard(call: ToolCall) -> HookResult:
        seen.append(call.name)
        return HookResult.deny("no shell")

    runner = HookRunner([guard])
    verdict, _ = await runner.dispatch_pre_tool_call(_op(), ToolCall("view_file"))
    assert (verdict.allow, seen) == (True, [])
    verdict, _ = await runner.dispatch_pre_tool_call(_op(), ToolCall("bash"))
    assert (verdict.allow, seen) == (False, ["bash"])


async def test_matchers_apply_to_post_tool_call_and_on_tool_error() -> None:
    seen: list[str] = []

    class Watch(Hook):
        matcher = HookMatcher(tools="edit_file")

        def post_tool_call(self, context: OperationContext, result: ToolResult) -> None:
            seen.append(f"post {result.call.name}")

        def on_tool_error(self, context: OperationContext, error: Exception) -> None:
            seen.append(f"error {context.call.name if context.call else None}")

    runner = HookRunner([Watch()])
    async with runner.session() as session, session.turn("go") as turn:
        await turn.call_tool(ToolCall("view_file"), lambda: None)
        await turn.call_tool(ToolCall("edit_file"), lambda: None)
        for name in ("view_file", "edit_file"):
            with pytest.raises(OSError, match="disk"):
                await turn.call_tool(ToolCall(name), _fail)
    assert seen == ["post edit_file", "error edit_file"]


def _fail() -> None:
    raise OSError("disk")


def test_a_tools_matcher_on_a_non_tool_event_is_an_error() -> None:
    @hooks.pre_turn(matcher="bash")
    def turn_guard(prompt: Any) -> None: ...

    with pytest.raises(ValueError, match="matcher selects tool calls") as raised:
        HookRunner([turn_guard])
    assert str(raised.value) == (
        "hook 'turn_guard': a matcher selects tool calls, but pre_turn has none; use matchers "
        "only on on_tool_error, post_tool_call, pre_tool_call"
    )


def test_a_bad_matcher_option_names_the_hook() -> None:
    class Bad(Hook):
        matcher = 3

        def pre_tool_call(self, context: Any, call: ToolCall) -> None: ...

    with pytest.raises(ValueError, match=r"^hook 'Bad': matcher must be a HookMatcher"):
        HookRunner([Bad()])


def test_an_mcp_tools_tier_is_read_by_its_qualified_name_first() -> None:
    matcher = HookMatcher(tiers={"confirm"})
    tiers = {"github/delete_branch": "confirm", "delete_branch": "observe"}
    assert matcher.matches(ToolCall("delete_branch", server="github"), _op(tiers))
    assert not matcher.matches(ToolCall("delete_branch"), _op(tiers))
