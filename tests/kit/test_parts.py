"""The kit's smaller parts: identity, the around seam, correlation, binding, the runner."""

from __future__ import annotations

import asyncio
import gc
import inspect
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import baggage
from opentelemetry import context as otel_context
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from hookscope import HookRunner, ToolCall
from hookscope.context import OperationContext
from hookscope.integrations._kit import (
    Governor,
    KitInstrumentor,
    OpIndex,
    SessionBinder,
    Target,
    ambient_session_id,
    call_args,
    choose_session_id,
    env_flag,
    invoker,
    resolve_runner,
    run_now,
    run_tool,
)
from hookscope.policy import deny, enforce
from hookscope.runner import ScopeError
from hookscope.telemetry import OTelHook
from hookscope.testing import recording
from hookscope.types import Recovery


def test_an_explicit_id_beats_the_ambient_one_which_beats_the_sdk_id() -> None:
    assert choose_session_id("app", "ambient", "sdk") == "app"
    assert choose_session_id(None, "ambient", "sdk") == "ambient"
    assert choose_session_id(None, None, "sdk") == "sdk"
    random_id = choose_session_id()
    assert len(random_id) == 32
    assert random_id != choose_session_id()


def test_the_ambient_id_is_read_from_the_context_value_then_baggage() -> None:
    assert ambient_session_id() is None
    token = otel_context.attach(otel_context.set_value("session.id", "from-context"))
    try:
        assert ambient_session_id() == "from-context"
    finally:
        otel_context.detach(token)
    token = otel_context.attach(baggage.set_baggage("session.id", "from-baggage"))
    try:
        assert ambient_session_id() == "from-baggage"
    finally:
        otel_context.detach(token)


async def test_the_application_session_id_stays_and_the_sdk_id_is_the_conversation_id() -> None:
    with recording() as rec:
        gov = Governor(HookRunner([rec.hook]), "t", agent_name="a")
        session = await gov.open_session(ambient_id="app-session", sdk_id="cli-uuid")
        await session.end()
    (span,) = rec.spans
    assert span.attributes is not None
    assert span.attributes["session.id"] == "app-session"
    assert span.attributes["gen_ai.conversation.id"] == "cli-uuid"


async def test_the_around_seam_runs_the_effective_call_and_recovers() -> None:
    from hookscope import hooks

    @hooks.on_tool_error
    def recover(error: Exception) -> Recovery:
        return Recovery(f"recovered {type(error).__name__}")

    gov = Governor(HookRunner([enforce([deny("rm")]), recover]), "t")
    session = await gov.open_session()
    turn = await session.start_turn("x")
    ran: list[ToolCall] = []

    async def invoke(call: ToolCall) -> Any:
        ran.append(call)
        if call.name == "bad":
            raise ValueError("x")
        return call.args["a"] + 1

    ok = await run_tool(turn, ToolCall("inc", {"a": 1}, id="1"), invoke)
    denied = await run_tool(turn, ToolCall("rm", {}, id="2"), invoke)
    recovered = await run_tool(turn, ToolCall("bad", {}, id="3"), invoke)
    await session.end()
    assert (ok.allowed, ok.value) == (True, 2)
    assert denied.allowed is False
    assert [c.name for c in ran] == ["inc", "bad"]
    assert recovered.recovered
    assert recovered.value == "recovered ValueError"
    assert turn.ops == []


def test_op_index_finds_by_id_then_key_then_shape_and_keeps_closed_ones_briefly() -> None:
    index: OpIndex[str] = OpIndex()
    index.add("a", call_id="c1")
    index.add("b", lane="main", tool="Bash", args={"command": "ls"})
    index.bind("tool_use_id", "t-9", "a")
    assert index.find(call_id="c1") == "a"
    assert index.find(key=("tool_use_id", "t-9")) == "a"
    assert index.find(lane="main", tool="Bash", args={"command": "ls"}) == "b"
    assert index.find(lane="main", tool="Bash", args={"command": "pwd"}) is None
    index.bind_id("c2", "b")
    assert index.find(lane="main", tool="Bash") is None
    assert index.find(call_id="c2") == "b"
    index.close("a")
    assert index.find(call_id="c1") == "a"  # lingers


def test_session_binder_binds_unhashable_objects_weakly() -> None:
    @dataclass
    class Options:  # a dataclass with eq: unhashable, like the SDKs' options
        x: int = 0

    binder: SessionBinder[Options, str] = SessionBinder()
    options = Options()
    binder.bind(options, "state")
    assert binder.get(options) == "state"
    assert binder.get(Options()) is None
    del options
    gc.collect()
    assert list(binder.values()) == []


def test_resolve_runner_adds_an_otel_hook_only_when_the_runner_has_none() -> None:
    runner = HookRunner()
    same, undo = resolve_runner(runner)
    assert same is runner
    assert any(isinstance(o, OTelHook) for o in runner.notifier.observers)
    undo()
    assert runner.notifier.observers == ()
    traced = HookRunner([OTelHook()])
    _, undo = resolve_runner(traced)
    assert len(traced.notifier.observers) == 1


def test_resolve_runner_loads_hookscope_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "hookscope.toml"
    config.write_text(
        '[[hooks.pre_tool_call]]\nmatcher = "Bash"\ntype = "command"\ncommand = "exit 0"\n',
        encoding="utf-8",
    )
    monkeypatch.setenv("HOOKSCOPE_CONFIG", str(config))
    runner, _ = resolve_runner()
    assert len(runner.hook_names("pre_tool_call")) == 1


@pytest.mark.parametrize(
    ("raw", "expected"), [("true", True), ("0", False), ("", True), ("maybe", True)]
)
def test_env_flag(monkeypatch: pytest.MonkeyPatch, raw: str, expected: bool) -> None:
    monkeypatch.setenv("HOOKSCOPE_TEST_FLAG", raw)
    assert env_flag("HOOKSCOPE_TEST_FLAG", default=True) is expected


class _Nothing(KitInstrumentor):
    """An instrumentor of no SDK: what the base does on its own."""

    sdk = "nothing"

    def targets(self, governor: Governor) -> list[Target]:
        return []


async def test_a_config_that_cannot_be_loaded_denies_every_turn_and_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    missing = tmp_path / "missing.toml"
    monkeypatch.setenv("HOOKSCOPE_CONFIG", str(missing))
    instrumentor = _Nothing()
    with caplog.at_level(logging.ERROR, logger="hookscope.integrations"):
        instrumentor.instrument()  # must not raise: opentelemetry-instrument would go on
    try:
        governor = instrumentor.governor
        assert governor is not None
        [record] = [r for r in caplog.records if r.name == "hookscope.integrations"]
        assert str(missing) in record.getMessage()
        assert "denies every turn and tool call" in record.getMessage()
        session = await governor.open_session()
        turn = await session.start_turn("hello")
        assert not turn.allowed
        assert turn.verdict.message.startswith(f"HOOKSCOPE_CONFIG={missing} cannot be loaded")
        await session.end()
        # A call (from a subagent, say, whose prompt no hook saw) is denied all the same.
        call = ToolCall("read", {}, id="c1")
        decided = await governor.runner.dispatch(
            "pre_tool_call", OperationContext(turn.context, "tool", call, call.id), call
        )
        assert not decided.result.allow
        assert decided.decided_by == "hookscope.config_error"
        assert str(missing) in decided.result.message
    finally:
        instrumentor.uninstrument()


def test_call_args_and_invoker_round_trip_a_tools_arguments_by_name() -> None:
    def tool(a: int, /, b: int, *rest: int, c: int = 0, **more: int) -> tuple[Any, ...]:
        return (a, b, rest, c, more)

    signature = inspect.signature(tool)
    named = call_args(signature, (1, 2, 3), {"c": 4, "d": 5})
    assert named == {"a": 1, "b": 2, "rest": (3,), "c": 4, "d": 5}
    assert invoker(tool, signature)(**{**named, "b": 20}) == (1, 20, (3,), 4, {"d": 5})


async def test_run_now_completes_hooks_that_do_not_suspend_and_refuses_ones_that_do() -> None:
    async def plain() -> str:
        return "done"

    assert run_now(plain()) == "done"
    with pytest.raises(ScopeError, match="make the tool or method async"):
        run_now(asyncio.sleep(0.01))


def test_adapters_use_the_kits_run_now_and_wrap_keeps_no_private_alias() -> None:
    import hookscope.integrations.wrap as wrap

    # One name for one helper: adapters import run_now from the kit, not wrap's private alias.
    assert not hasattr(wrap, "_run_now")
    for module in ("runs", "tools"):
        source = (Path(wrap.__file__).parent / "langgraph" / f"{module}.py").read_text()
        assert "_run_now" not in source


class _Moved(KitInstrumentor):
    """An instrumentor whose SDK's modules moved: ``targets()`` cannot import them."""

    sdk = "moved-sdk"
    instruments = ("moved-sdk >= 1",)

    def targets(self, governor: Governor) -> list[Target]:
        raise ImportError("No module named 'moved_sdk.agents'")


@pytest.mark.parametrize(
    ("config", "runner", "level", "says"),
    [
        (None, False, logging.WARNING, "run untraced"),
        ("hooks.toml", False, logging.ERROR, "run UNGOVERNED"),
        (None, True, logging.ERROR, "run UNGOVERNED"),
    ],
    ids=["tracing-only", "HOOKSCOPE_CONFIG", "runner"],
)
def test_an_sdk_whose_modules_moved_is_an_error_when_governance_was_asked_for(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    config: str | None,
    runner: bool,
    level: int,
    says: str,
) -> None:
    if config is None:
        monkeypatch.delenv("HOOKSCOPE_CONFIG", raising=False)
    else:
        (tmp_path / config).write_text("")
        monkeypatch.setenv("HOOKSCOPE_CONFIG", str(tmp_path / config))
    instrumentor = _Moved()
    with caplog.at_level(logging.WARNING, logger="hookscope.integrations"):
        instrumentor.instrument(
            runner=HookRunner([enforce([deny("rm")])]) if runner else None, skip_dep_check=True
        )
    try:
        assert instrumentor.governor is None  # nothing was wrapped
        [record] = [r for r in caplog.records if "cannot instrument" in r.getMessage()]
        assert record.levelno == level
        message = record.getMessage()
        assert "moved-sdk (expected moved-sdk >= 1)" in message
        assert says in message
        if level == logging.ERROR:
            assert "Install a supported moved-sdk version or upgrade hookscope" in message
    finally:
        instrumentor.uninstrument()


async def test_a_session_in_flight_at_uninstrument_stays_traced_until_it_ends(
    tracer_provider: TracerProvider, span_exporter: InMemorySpanExporter
) -> None:
    instrumentor = _Nothing()
    instrumentor.instrument(tracer_provider=tracer_provider, runner=None)
    governor = instrumentor.governor
    assert governor is not None
    runner = governor.runner
    session = await governor.open_session(session_id="in-flight")
    turn = await session.start_turn("hello")

    instrumentor.uninstrument()
    # Still governed and traced: the OTelHook the instrumentor added stays until it ends.
    assert [type(o).__name__ for o in runner.notifier.observers] == ["OTelHook"]
    await turn.end()
    await session.end()

    spans = span_exporter.get_finished_spans()
    assert sorted((s.name, dict(s.attributes or {}).get("session.id")) for s in spans) == [
        ("invoke_agent agent", "in-flight"),
        ("session agent", "in-flight"),
    ]
    assert runner.notifier.observers == ()  # removed once the last session ended


async def test_instrumenting_again_with_the_same_runner_keeps_its_otel_hook(
    tracer_provider: TracerProvider,
) -> None:
    runner = HookRunner()
    first = _Nothing()
    first.instrument(tracer_provider=tracer_provider, runner=runner)
    assert first.governor is not None
    session = await first.governor.open_session()
    first.uninstrument()
    second = _Nothing()
    second.instrument(tracer_provider=tracer_provider, runner=runner)
    try:
        await session.end()  # the first instrumentation's last session: its hook serves on
        assert [type(o).__name__ for o in runner.notifier.observers] == ["OTelHook"]
    finally:
        second.uninstrument()
    assert runner.notifier.observers == ()
