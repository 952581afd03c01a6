"""AuditLog: its lines, rotation, failures, and many sessions at once without cross-talk."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from hookscope import policy
from hookscope.builtins import (
    AuditLog,
    AuditLogError,
    RecoverErrors,
    RetryLoopDetector,
    TokenBudget,
)
from hookscope.hooks import Hook
from hookscope.runner import HookRunner
from hookscope.types import ChatResponse, HookResult, ToolCall, Usage


def ok(**kwargs: Any) -> str:
    return "ok"


def read_all(path: Path) -> list[dict[str, Any]]:
    """Every line of the audit file and its rotated files, oldest first; fails on a torn line."""
    rotated = sorted(
        (p for p in path.parent.iterdir() if p.name.startswith(path.name + ".")),
        key=lambda p: int(p.name.rsplit(".", 1)[1]),
    )
    lines: list[dict[str, Any]] = []
    for file in [*rotated, path]:
        text = file.read_text()
        assert text == "" or text.endswith("\n"), f"{file.name} ends in a torn line"
        lines.extend(json.loads(line) for line in text.splitlines())
    return lines


def file_sizes(directory: Path) -> dict[str, int]:
    return {p.name: p.stat().st_size for p in directory.iterdir()}


class DenyDelete(Hook):
    def pre_tool_call(self, context: Any, call: ToolCall) -> HookResult | None:
        return HookResult.deny("no deleting") if call.name == "delete" else None


async def test_one_line_per_call_with_outcome_decider_rule_and_redacted_args(
    tmp_path: Path,
) -> None:
    path = tmp_path / "audit.jsonl"
    runner = HookRunner(
        [
            AuditLog(path),
            policy.enforce([policy.deny("rm", name="no-rm", reason="never")]),
            DenyDelete(),
            RecoverErrors(TimeoutError, value="cached", message="from cache"),
        ]
    )

    def times_out(**kwargs: Any) -> None:
        raise TimeoutError("slow")

    def breaks(**kwargs: Any) -> None:
        raise ConnectionError("reset")

    async with runner.session(agent_name="bot", session_id="s1") as session:
        async with session.turn("go") as turn:
            await turn.call_tool(
                ToolCall(
                    "login", {"user": "ann", "api_key": "k-123", "opts": {"Token": "t"}}, "c1"
                ),
                ok,
            )
            await turn.call_tool(ToolCall("rm", {"path": "/"}, "c2"), ok)
            await turn.call_tool(ToolCall("delete", {"branch": "x"}, "c3", server="gh"), ok)
        async with session.turn("again") as turn:
            await turn.call_tool(ToolCall("fetch", {"url": "u"}, "c4"), times_out)
            with pytest.raises(ConnectionError):
                await turn.call_tool(ToolCall("fetch", {"url": "v"}, "c5"), breaks)
    lines = read_all(path)
    for line in lines:
        assert line.pop("time").endswith("+00:00")
        assert line.pop("duration_s") >= 0
        assert (line.pop("session_id"), line.pop("agent_name")) == ("s1", "bot")
    assert lines == [
        {
            "turn_index": 0,
            "call_id": "c1",
            "tool": "login",
            "server": None,
            "outcome": "succeeded",
            "decided_by": None,
            "message": None,
            "decision": "allow",
            "rule": None,
            "bucket": None,
            "args": {"user": "ann", "api_key": "[REDACTED]", "opts": {"Token": "[REDACTED]"}},
        },
        {
            "turn_index": 0,
            "call_id": "c2",
            "tool": "rm",
            "server": None,
            "outcome": "denied",
            "decided_by": "PolicyEnforcer",
            "message": "denied by policy rule 'no-rm': never",
            "decision": "deny",
            "rule": "no-rm",
            "bucket": 0,
            "args": {"path": "/"},
        },
        {
            "turn_index": 0,
            "call_id": "c3",
            "tool": "delete",
            "server": "gh",
            "outcome": "denied",
            "decided_by": "DenyDelete",
            "message": "no deleting",
            "args": {"branch": "x"},
        },
        {
            "turn_index": 1,
            "call_id": "c4",
            "tool": "fetch",
            "server": None,
            "outcome": "recovered",
            "decided_by": None,
            "message": "from cache",
            "decision": "allow",
            "rule": None,
            "bucket": None,
            "recovered_by": "RecoverErrors",
            "error_type": "TimeoutError",
            "args": {"url": "u"},
        },
        {
            "turn_index": 1,
            "call_id": "c5",
            "tool": "fetch",
            "server": None,
            "outcome": "failed",
            "decided_by": None,
            "message": None,
            "decision": "allow",
            "rule": None,
            "bucket": None,
            "error_type": "ConnectionError",
            "args": {"url": "v"},
        },
    ]


async def test_a_cancelled_call_is_recorded_and_args_can_be_left_out(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    runner = HookRunner([AuditLog(path, include_args=False)])
    started = asyncio.Event()

    async def hangs(**kwargs: Any) -> None:
        started.set()
        await asyncio.Event().wait()

    async with runner.session(session_id="s") as session, session.turn("go") as turn:
        task = asyncio.create_task(turn.call_tool(ToolCall("wait", {"token": "x"}, "c1"), hangs))
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    (line,) = read_all(path)
    assert (line["outcome"], line["error_type"], "args" in line) == (
        "cancelled",
        "CancelledError",
        False,
    )


def test_an_unwritable_path_fails_at_construction_saying_what_to_do(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(AuditLogError, match=r"AuditLog cannot append to .*file/audit.jsonl"):
        AuditLog(blocker / "audit.jsonl")
    with pytest.raises(AuditLogError, match="pass a file path in a writable directory") as info:
        AuditLog(tmp_path)  # a directory
    assert isinstance(info.value, OSError)


async def test_missing_directories_are_created_private(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "audit.jsonl"
    AuditLog(path)
    assert (path.parent.stat().st_mode & 0o777, path.stat().st_mode & 0o777) == (0o700, 0o600)


async def test_a_full_disk_is_counted_and_logged_never_raised(
    caplog: pytest.LogCaptureFixture,
) -> None:
    audit = AuditLog("/dev/full")  # every write fails with ENOSPC, for real
    runner = HookRunner([audit])
    caplog.set_level(logging.DEBUG, "hookscope.builtins")
    async with runner.session() as session, session.turn("go") as turn:
        outcomes = [await turn.call_tool(ToolCall("t", id=f"c{i}"), ok) for i in range(3)]
    assert [o.value for o in outcomes] == ["ok", "ok", "ok"]
    assert audit.failed_lines == 3
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1
    assert "AuditLog could not write to /dev/full" in errors[0].getMessage()
    assert "No space left on device" in errors[0].getMessage()


async def test_a_closed_log_counts_lines_instead_of_raising(tmp_path: Path) -> None:
    audit = AuditLog(tmp_path / "audit.jsonl")
    runner = HookRunner([audit])
    async with runner.session() as session, session.turn("go") as turn:
        await turn.call_tool(ToolCall("t"), ok)
        audit.close()
        assert (await turn.call_tool(ToolCall("t"), ok)).value == "ok"
    assert audit.failed_lines == 1
    assert len(read_all(tmp_path / "audit.jsonl")) == 1


async def test_rotation_keeps_every_line_whole_and_every_file(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    (tmp_path / "audit.jsonl.1").write_text('{"older": 1}\n')  # from an earlier run: kept
    runner = HookRunner([AuditLog(path, max_bytes=600)])
    async with runner.session(session_id="s") as session, session.turn("go") as turn:
        for i in range(40):
            await turn.call_tool(ToolCall("t", {"i": i, "pad": "x" * (i % 7) * 20}, f"c{i}"), ok)
    lines = read_all(path)
    assert lines[0] == {"older": 1}
    assert [line["call_id"] for line in lines[1:]] == [f"c{i}" for i in range(40)]
    sizes = file_sizes(tmp_path)
    assert len(sizes) > 5
    del sizes["audit.jsonl.1"]
    assert max(sizes.values()) <= 600


async def test_a_line_longer_than_max_bytes_gets_a_file_of_its_own(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    runner = HookRunner([AuditLog(path, max_bytes=100)])
    async with runner.session() as session, session.turn("go") as turn:
        for i in range(3):
            await turn.call_tool(ToolCall("t", {"blob": "y" * 300}, f"c{i}"), ok)
    assert [line["call_id"] for line in read_all(path)] == ["c0", "c1", "c2"]
    assert sorted(file_sizes(tmp_path)) == ["audit.jsonl", "audit.jsonl.1", "audit.jsonl.2"]


def test_rotation_under_concurrent_writers_loses_and_tears_nothing(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    audit = AuditLog(path, max_bytes=4096)
    threads, sessions_per_thread, calls = 8, 5, 20

    def writer(index: int) -> None:
        async def run() -> None:
            runner = HookRunner([audit])

            async def session(n: int) -> None:
                scope = runner.session(session_id=f"t{index}-s{n}")
                async with scope as active, active.turn("go") as turn:
                    for i in range(calls):
                        await asyncio.sleep(0)
                        args = {"blob": "z" * (i * 13 % 200)}
                        await turn.call_tool(ToolCall("t", args, f"c{i}"), ok)

            await asyncio.gather(*(session(n) for n in range(sessions_per_thread)))

        asyncio.run(run())

    workers = [threading.Thread(target=writer, args=(i,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    lines = read_all(path)
    seen = sorted((line["session_id"], line["call_id"]) for line in lines)
    expected = sorted(
        (f"t{t}-s{n}", f"c{i}")
        for t in range(threads)
        for n in range(sessions_per_thread)
        for i in range(calls)
    )
    assert seen == expected
    assert audit.failed_lines == 0
    assert len(os.listdir(tmp_path)) > 10


async def test_a_thousand_concurrent_sessions_keep_budgets_retries_and_audit_apart(
    tmp_path: Path,
) -> None:
    path = tmp_path / "audit.jsonl"
    budget = TokenBudget(max_tokens=1000)
    runner = HookRunner([AuditLog(path), budget, RetryLoopDetector(max_repeats=3)])
    sessions = 1000

    async def tool(**kwargs: Any) -> str:
        await asyncio.sleep(0)  # let every session interleave with every other
        return "ok"

    async def session(n: int) -> tuple[list[bool], list[bool]]:
        # Session n spends 300 + n % 5 * 100 tokens per turn: its budget runs out at a turn
        # that depends on n, so a tally shared between sessions would show.
        per_turn = 300 + n % 5 * 100
        turns: list[bool] = []
        calls: list[bool] = []
        async with runner.session(session_id=f"s{n}") as scope:
            for t in range(5):
                async with scope.turn("go") as turn:
                    turns.append(turn.allowed)
                    if not turn.allowed:
                        continue
                    # The same call n % 3 + 2 times: denied from the third, per turn.
                    for i in range(n % 3 + 2):
                        args = {"session": f"s{n}", "turn": t}
                        outcome = await turn.call_tool(
                            ToolCall("probe", args, f"s{n}-{t}-{i}"), tool
                        )
                        calls.append(outcome.allowed)
                    turn.respond(ChatResponse("x", usage=Usage(per_turn, 0)))
        return turns, calls

    results = await asyncio.gather(*(session(n) for n in range(sessions)))
    for n, (turns, calls) in enumerate(results):
        per_turn = 300 + n % 5 * 100
        allowed_turns = -(-1000 // per_turn)  # turns until the tally reaches 1000
        assert turns == [t < allowed_turns for t in range(5)], n
        repeats = n % 3 + 2
        assert calls == [i < 2 for i in range(repeats)] * allowed_turns, n
    lines = read_all(path)
    assert len(lines) == sum(len(calls) for _, calls in results)
    for line in lines:
        assert line["args"] == {"session": line["session_id"], "turn": line["turn_index"]}
        assert line["call_id"].startswith(f"{line['session_id']}-{line['turn_index']}-")
        index = int(line["call_id"].rsplit("-", 1)[1])
        assert line["outcome"] == ("succeeded" if index < 2 else "denied")
        assert line["decided_by"] == (None if index < 2 else "RetryLoopDetector")


async def test_args_are_redacted_at_any_depth_and_objects_show_only_their_type(
    tmp_path: Path,
) -> None:
    class Credentials:
        def __repr__(self) -> str:
            return "Credentials(password='hunter2')"

    path = tmp_path / "audit.jsonl"
    runner = HookRunner([AuditLog(path)])
    args = {
        "headers": [("Authorization", "Bearer abc"), ("Accept", "json")],
        "body": {"items": [{"client_secret": "s", "n": 1}], "PASSWORD": "p", "cookie_jar": 2},
        "apiKey": "k",
        "account": Credentials(),
        "auth": "under a short secret word",
        "ratio": 0.5,
        "flags": (True, None),
    }
    async with runner.session() as session, session.turn("go") as turn:
        await turn.call_tool(ToolCall("post", args), ok)
    (line,) = read_all(path)
    assert line["args"] == {
        "headers": [["Authorization", "[REDACTED]"], ["Accept", "json"]],
        "body": {
            "items": [{"client_secret": "[REDACTED]", "n": 1}],
            "PASSWORD": "[REDACTED]",
            "cookie_jar": "[REDACTED]",
        },
        "apiKey": "[REDACTED]",
        "account": "<Credentials>",
        "auth": "[REDACTED]",
        "ratio": 0.5,
        "flags": [True, None],
    }
    assert "hunter2" not in path.read_text()


async def test_redact_values_also_finds_secrets_under_ordinary_keys(tmp_path: Path) -> None:
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    args = {
        "CommandLine": f"curl -H 'Authorization: Bearer {token}' https://api.example",
        "url": "postgres://app:hunter2@db:5432/app",
        "note": "nothing secret",
    }
    lines = {}
    for values in (False, True):
        path = tmp_path / f"audit-{values}.jsonl"
        runner = HookRunner([AuditLog(path, redact_values=values)])
        async with runner.session() as session, session.turn("go") as turn:
            await turn.call_tool(ToolCall("run", args), ok)
        (lines[values],) = read_all(path)
    assert lines[False]["args"] == args  # keys only, by default: fast, and §5's rule
    redacted = lines[True]["args"]
    assert token not in redacted["CommandLine"]
    assert "hunter2" not in redacted["url"]
    assert "[REDACTED]" in redacted["CommandLine"]
    assert "[REDACTED]" in redacted["url"]
    assert redacted["note"] == "nothing secret"
