"""Issue 19 (the second adversarial probe), core and ready-made hooks: path matchers that
resolve paths as ``workspace_only`` does, audit lines and guards that survive any string, the
runner's table swaps under threads, and the hooks' close() protocol."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hookscope import hooks
from hookscope.context import OperationContext, SessionContext, TurnContext
from hookscope.matching import HookMatcher
from hookscope.runner import HookRunner
from hookscope.types import HookResult, ToolCall

README_GUARD = HookMatcher(paths=["/etc/**", "**/*.env"])


def _op(call: ToolCall) -> OperationContext:
    return OperationContext(TurnContext(SessionContext("s"), 0), "tool", call, call.id)


# --- path matchers resolve paths --------------------------------------------------------


@pytest.mark.parametrize(
    "path", ["//etc/hosts", "/proc/self/root/etc/hosts", "/./etc//hosts", "/tmp/../etc/hosts"]
)
def test_a_paths_matcher_sees_every_spelling_of_a_path_under_etc(path: str) -> None:
    assert README_GUARD.matches(ToolCall("write_to_file", {"TargetFile": path}))


def test_a_relative_path_is_resolved_from_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    monkeypatch.chdir(deep)
    climb = "../" * len(deep.parts) + "etc/hosts"
    assert README_GUARD.matches(ToolCall("write_to_file", {"path": climb}))
    assert not README_GUARD.matches(ToolCall("write_to_file", {"path": "notes.txt"}))


def test_symlinks_into_etc_and_to_a_dot_env_file_match(tmp_path: Path) -> None:
    (tmp_path / "etc_link").symlink_to("/etc")
    secrets = tmp_path / "project" / ".env"
    secrets.parent.mkdir()
    secrets.write_text("TOKEN=x")
    (tmp_path / "config.txt").symlink_to(secrets)
    for path in (tmp_path / "etc_link" / "hosts", tmp_path / "config.txt"):
        assert README_GUARD.matches(ToolCall("write_to_file", {"file_path": str(path)}))
    assert not README_GUARD.matches(ToolCall("write_to_file", {"file_path": str(tmp_path)}))


def test_a_path_that_cannot_be_resolved_lets_the_guard_see_the_call(tmp_path: Path) -> None:
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    (tmp_path / "dangling").symlink_to("/etc/not-yet-there")
    for path in (tmp_path / "loop" / "x", tmp_path / "dangling", "/" + "a/" * 3000):
        assert README_GUARD.matches(ToolCall("write_to_file", {"path": str(path)}))


async def test_the_guard_runs_for_a_symlinked_path(tmp_path: Path) -> None:
    (tmp_path / "etc_link").symlink_to("/etc")

    @hooks.pre_tool_call_decide(matcher=README_GUARD)
    def guard(call: ToolCall) -> HookResult:
        return HookResult.deny("no writes under /etc")

    call = ToolCall("write_to_file", {"TargetFile": str(tmp_path / "etc_link" / "hosts")})
    result, _ = await HookRunner([guard]).dispatch_pre_tool_call(_op(call), call)
    assert (result.allow, result.message) == (False, "no writes under /etc")


def test_workspace_only_and_the_matchers_share_one_resolver() -> None:
    from hookscope import _paths, matching

    assert matching.resolve_path is _paths.resolve_path
    assert _paths.resolve_for_containment("/proc/self/root/etc") == os.path.realpath("/etc")
