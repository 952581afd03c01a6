"""Issue 19 (the second adversarial probe), core and ready-made hooks: path matchers that
resolve paths as ``workspace_only`` does, audit lines and guards that survive any string, the
runner's table swaps under threads, and the hooks' close() protocol."""

from __future__ import annotations

import json
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


# --- one reader for untrusted JSON and TOML ---------------------------------------------

DEEP_JSON = "[" * 5000 + "]" * 5000
DEEP_TOML = "[[hooks.pre_tool_call]]\nx = " + "[" * 5000 + "]" * 5000 + "\n"


def test_the_reader_refuses_deep_nesting_naming_source_and_line() -> None:
    from hookscope._reader import InputError, read_json, read_toml

    with pytest.raises(InputError, match=r"^a\.json, line 2: nests arrays or objects deeper"):
        read_json('{"ok": 1,\n "x": ' + DEEP_JSON + "}", "a.json")
    with pytest.raises(InputError, match=r"^b\.toml, line 2: nests arrays or objects deeper"):
        read_toml(DEEP_TOML, "b.toml")
    with pytest.raises(InputError, match=r"^c, line 3: invalid JSON \(Expecting value\)"):
        read_json('{\n"a":\n}', "c")
    with pytest.raises(InputError, match=r"larger than 10 bytes"):
        read_json("[" + "1," * 10 + "1]", "d", max_bytes=10)
    # brackets inside strings are text, not nesting
    assert read_json(json.dumps({"s": "[" * 5000}), "e") == {"s": "[" * 5000}


@pytest.mark.parametrize(("name", "text"), [("h.json", DEEP_JSON), ("hookscope.toml", DEEP_TOML)])
def test_load_and_hooks_check_report_deep_files_as_config_errors(
    tmp_path: Path, name: str, text: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from hookscope.cli import main
    from hookscope.engine import ConfigError, load

    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ConfigError, match="nests arrays or objects deeper than 64 levels"):
        load(path)
    assert main(["hooks", "check", str(path)]) == 1
    assert "deeper than 64 levels" in capsys.readouterr().err


def test_hooks_run_input_and_policy_explain_call_refuse_deep_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from hookscope.cli import main

    config = tmp_path / "hookscope.toml"
    config.write_text('[[hooks.pre_tool_call]]\ntype = "command"\ncommand = "exit 0"\n')
    assert main(["hooks", "run", str(config), "pre_tool_call", "--input", DEEP_JSON]) == 1
    assert "--input is not valid JSON: nests arrays" in capsys.readouterr().err
    rules = tmp_path / "probe2_deep_rules.py"
    rules.write_text("from hookscope import policy\nPOLICIES = [policy.deny('x')]\n")
    monkeypatch.chdir(tmp_path)
    call = '{"name": "x", "args": {"a": ' + DEEP_JSON + "}}"
    status = main(["policy", "explain", "--policies", "probe2_deep_rules:POLICIES", "--call", call])
    assert status == 2
    assert "--call is not valid JSON: nests arrays" in capsys.readouterr().err


def test_a_deep_telemetry_line_is_skipped_and_later_lines_still_read(tmp_path: Path) -> None:
    from hookscope.telemetry.files import TRACES_FILE, JsonLinesSpanExporter, read_spans
    from tests.test_files import make_spans

    exporter = JsonLinesSpanExporter(tmp_path)
    exporter.export(make_spans(1))
    with open(tmp_path / TRACES_FILE, "ab") as file:
        file.write(DEEP_JSON.encode() + b"\n")
    exporter.export(make_spans(2))
    exporter.shutdown()
    from hookscope.telemetry._reading import ReadProblems, iter_spans

    problems = ReadProblems()
    assert len(list(iter_spans(tmp_path, problems))) == 3
    assert "malformed" in problems.summary()
    with pytest.raises(Exception, match=r"traces.jsonl:2: not JSON \(nests arrays"):
        read_spans(tmp_path)
