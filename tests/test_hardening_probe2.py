"""Issue 19 (the second adversarial probe), core and ready-made hooks: path matchers that
resolve paths as ``workspace_only`` does, audit lines and guards that survive any string, the
runner's table swaps under threads, and the hooks' close() protocol."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from hookscope import hooks
from hookscope.context import OperationContext, SessionContext, TurnContext
from hookscope.hooks import Hook
from hookscope.matching import HookMatcher
from hookscope.runner import HookRunner
from hookscope.types import HookResult, LlmResponse, ResponseDecision, ToolCall

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


# --- SecretGuard: keys and any depth ------------------------------------------------------

AWS_KEY = "AKIA" + "IOSFODNN7EXAMPLE"


@pytest.mark.parametrize(
    "args",
    [
        {AWS_KEY: "value"},
        {"env": [{"vars": {f"KEY={AWS_KEY}": 1}}]},
        functools.reduce(lambda inner, _: {"x": [inner]}, range(200), AWS_KEY),
    ],
)
def test_secret_guard_scans_keys_and_any_depth(args: Any) -> None:
    from hookscope.builtins import SecretGuard

    guard = SecretGuard(secret_types={"AWS Access Key"})
    response = LlmResponse("m", text="ok", tool_calls=(ToolCall("deploy", args),))
    decision = guard.on_llm_response(TurnContext(SessionContext("s"), 0), response)
    assert decision == ResponseDecision.block(
        "the response carries a secret (AWS Access Key); blocked by SecretGuard"
    )


# --- AuditLog: every line written, files closed, other writers' lines kept ------------------


@pytest.mark.parametrize("accelerated", [True, False])
async def test_an_argument_with_a_lone_surrogate_is_audited_escaped(
    tmp_path: Path, accelerated: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hookscope.builtins import AuditLog
    from hookscope.builtins import audit as audit_module

    if not accelerated:  # as on interpreters without json's C encoder
        plain = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
        monkeypatch.setattr(audit_module, "_encode", plain.encode)
    audit = AuditLog(tmp_path / "audit.jsonl")
    runner = HookRunner([audit])
    call = ToolCall("write_to_file", {"text": "a\ud800b", "\udfff": "k"}, id="c1")
    async with runner.session() as session, session.turn("go") as turn:
        await turn.call_tool(call, lambda **_: "done")
    audit.close()
    (line,) = (tmp_path / "audit.jsonl").read_bytes().splitlines()
    entry = json.loads(line)
    assert (entry["outcome"], entry["args"]) == ("succeeded", {"text": "a\ud800b", "\udfff": "k"})
    assert audit.failed_lines == 0


def test_a_torn_line_is_cut_without_deleting_another_writer_s_lines(tmp_path: Path) -> None:
    # A real short write: RLIMIT_FSIZE stops the file mid-line (as a full disk would).
    script = f"""
import json, resource, signal
from pathlib import Path
from hookscope.builtins.audit import _Lines
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
path = Path({str(tmp_path / "audit.jsonl")!r})
mine, theirs = _Lines(path, 1 << 30), _Lines(path, 1 << 30)
mine.write(b'{{"n": 1}}\\n')
theirs.write(b'{{"n": 2}}\\n')
theirs.write(b'{{"n": 3}}\\n')
size = path.stat().st_size
resource.setrlimit(resource.RLIMIT_FSIZE, (size + 5, resource.RLIM_INFINITY))
try:
    mine.write(b'{{"n": 4, "pad": "' + b"x" * 100 + b'"}}\\n')
except OSError as error:
    print("failed", error.errno)
print(path.read_bytes().decode().splitlines())
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1] == str(['{"n": 1}', '{"n": 2}', '{"n": 3}'])


def _settle(handle: Any) -> bool:
    """Check until the watch acts on the change (it waits for one quiet check first)."""
    return any(handle.check() for _ in range(3))


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_reloads_close_the_audit_logs_they_replace_or_reject(tmp_path: Path) -> None:
    from hookscope.engine import watch

    path = tmp_path / "hookscope.toml"
    audit = (
        '[[hooks.pre_tool_call]]\ntype = "python"\nhook = "hookscope.builtins:AuditLog"\n'
        f'options = {{{{ path = "{tmp_path / "audit.jsonl"}" }}}}\nname = "audit-{{}}"\n'
    )
    bad = '[[hooks.pre_turn]]\ntype = "shell"\n'
    path.write_text(audit.format(0))
    runner = HookRunner()
    handle = watch(runner, path, interval=3600)
    try:
        before = _open_fds()
        for n in range(1, 101):
            path.write_text(audit.format(n) + (bad if n % 2 else ""))
            assert _settle(handle)  # applied (even n) or rejected (odd n)
        after = _open_fds()
    finally:
        handle.stop()
    assert [getattr(h, "name", "") for h in runner.hooks] == ["audit-100"]
    assert after - before == 0


# --- the runner's table under threads, and watch() re-basing on it -------------------------


class _Noop(Hook):
    def pre_tool_call(self, context: Any, call: ToolCall) -> None:
        return None


def _config(name: str) -> str:
    return f'[[hooks.pre_tool_call]]\ntype = "command"\nname = "{name}"\ncommand = "exit 0"\n'


@pytest.mark.parametrize("round_", range(3))
def test_register_racing_a_watch_loses_no_update(tmp_path: Path, round_: int) -> None:
    from hookscope.engine import watch

    path = tmp_path / "hookscope.toml"
    path.write_text(_config("v0"))
    runner = HookRunner()
    handle = watch(runner, path, interval=3600)
    registered = [_Noop() for _ in range(2000)]
    start = threading.Barrier(2)

    def register_all() -> None:
        start.wait()
        for hook in registered:
            runner.register(hook)

    worker = threading.Thread(target=register_all)
    worker.start()
    start.wait()
    version = 0
    try:
        while worker.is_alive() or version < 20:
            version += 1
            path.write_text(_config(f"v{version}"))
            assert _settle(handle)
    finally:
        worker.join()
        handle.stop()
    hooks = runner.hooks
    assert all(any(h is hook for h in hooks) for hook in registered)
    assert [h.name for h in hooks if not isinstance(h, _Noop)] == [f"v{version}"]  # type: ignore[attr-defined]
    assert handle.table[0] in hooks
    assert len(hooks) == len(registered) + 1


def test_edits_apply_after_a_watched_hook_was_unregistered(tmp_path: Path) -> None:
    from hookscope.engine import watch

    path = tmp_path / "hookscope.toml"
    path.write_text(_config("v1"))
    runner = HookRunner()
    handle = watch(runner, path, interval=3600)
    try:
        runner.unregister(handle.table[0])
        path.write_text(_config("v2"))
        assert _settle(handle)
        assert handle.last_error is None
        assert [h.name for h in runner.hooks] == ["v2"]  # type: ignore[attr-defined]
    finally:
        handle.stop()


def test_a_file_still_being_written_is_not_applied_and_each_check_reads_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hookscope.engine import config, watch

    path = tmp_path / "hookscope.toml"
    path.write_text(_config("v1"))
    runner = HookRunner()
    handle = watch(runner, path, interval=3600)

    def second_read(_: Path) -> bytes:
        raise AssertionError("load() read the file again within one check")

    monkeypatch.setattr(config, "read_config_bytes", second_read)
    try:
        path.write_text(_config("half"))  # valid, but the writer is not done
        assert not handle.check()
        path.write_text(_config("a") + _config("b"))
        assert not handle.check()  # changed again since the last check: still waiting
        assert [h.name for h in runner.hooks] == ["v1"]  # type: ignore[attr-defined]
        assert handle.check()
        assert [h.name for h in runner.hooks] == ["a", "b"]  # type: ignore[attr-defined]
    finally:
        handle.stop()


# --- hooks check calls nothing ------------------------------------------------------------


def test_hooks_check_resolves_references_without_calling_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from hookscope.cli import main

    marker = tmp_path / "ran"
    path = tmp_path / "hookscope.toml"
    path.write_text(
        '[[hooks.pre_tool_call]]\ntype = "python"\nhook = "subprocess:Popen"\n'
        f'options = {{ args = ["touch", "{marker}"] }}\n'
        '[[hooks.pre_tool_call]]\ntype = "python"\nhook = "hookscope.builtins:AuditLog"\n'
        f'options = {{ path = "{tmp_path / "audit.jsonl"}", max_bytes = 10 }}\n'
    )
    assert main(["hooks", "check", str(path)]) == 1
    err = capsys.readouterr().err
    assert "subprocess:Popen handles no event, not pre_tool_call" in err
    assert "AuditLog" not in err
    assert not marker.exists()
    assert not (tmp_path / "audit.jsonl").exists()  # the AuditLog was not built either
    path.write_text("[[hooks" + path.read_text().split("[[hooks", 2)[2])
    assert main(["hooks", "check", str(path)]) == 0
    assert "AuditLog" in capsys.readouterr().out
    assert not (tmp_path / "audit.jsonl").exists()
    path.write_text(path.read_text().replace("max_bytes = 10", "max_bites = 10"))
    assert main(["hooks", "check", str(path)]) == 1
    assert "unexpected keyword argument 'max_bites'" in capsys.readouterr().err
