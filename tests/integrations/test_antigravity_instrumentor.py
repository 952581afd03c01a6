"""AntigravityInstrumentor: what it wraps, what it leaves behind, what it registers."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest
import wrapt
from google.antigravity.hooks import hook_runner, hooks
from opentelemetry.sdk.trace import TracerProvider

from hookscope.integrations.antigravity import INSTRUMENTS, AntigravityInstrumentor
from hookscope.integrations.antigravity import hooks as plain_hooks
from hookscope.integrations.antigravity.sessions import Tracker
from hookscope.integrations.antigravity.wrappers import Adapter
from hookscope.runner import HookRunner


def _targets() -> list[tuple[type, str]]:
    found = []
    for module, qualified, _ in Adapter(Tracker(HookRunner(), "x")).targets():
        owner, _, attribute = qualified.rpartition(".")
        found.append((getattr(importlib.import_module(module), owner), attribute))
    return found


def test_declares_the_instrumented_package_range() -> None:
    assert AntigravityInstrumentor().instrumentation_dependencies() == (
        "google-antigravity >= 0.1.22, < 0.2",
    )
    assert INSTRUMENTS == ("google-antigravity >= 0.1.22, < 0.2",)


def test_instrument_wraps_every_target_and_uninstrument_restores_the_originals() -> None:
    originals = {(cls, name): cls.__dict__[name] for cls, name in _targets()}
    instrumentor = AntigravityInstrumentor()

    instrumentor.instrument()
    try:
        wrapped = [(c, n) for c, n in originals if isinstance(c.__dict__[n], wrapt.FunctionWrapper)]
        assert wrapped == list(originals)
    finally:
        instrumentor.uninstrument()

    assert {(c, n): c.__dict__[n] for c, n in originals} == originals


@hooks.pre_turn
def gate(prompt: str) -> hooks.HookResult:
    """A decorated SDK hook."""
    return hooks.HookResult(allow=True)


class Audit(hooks.PostToolCallHook):
    async def run(self, context: hooks.HookContext, data: object) -> None:
        return None


@pytest.mark.usefixtures("instrumentor")
def test_sdk_hooks_are_registered_behind_transparent_proxies() -> None:
    audit = Audit()
    runner = hook_runner.HookRunner(hooks=[gate, audit])

    (registered_gate,) = runner.pre_turn_hooks
    (registered_audit,) = runner.post_tool_call_hooks
    assert isinstance(registered_gate, hooks.PreTurnHook)
    assert isinstance(registered_audit, Audit)
    assert registered_gate == gate
    assert registered_audit == audit
    assert registered_gate.__doc__ == "A decorated SDK hook."


def test_hooks_registered_when_not_instrumented_are_left_alone() -> None:
    runner = hook_runner.HookRunner(hooks=[gate])

    assert runner.pre_turn_hooks[0] is gate


async def test_a_proxy_outside_any_dispatch_just_runs_the_hook() -> None:
    instrumentor = AntigravityInstrumentor()
    instrumentor.instrument()
    try:
        runner = hook_runner.HookRunner(hooks=[gate])
        result, _ = await runner.dispatch_pre_turn("hello")
    finally:
        instrumentor.uninstrument()

    assert result.allow is True


def test_plain_hooks_observe_without_a_decide_hook(tracer_provider: TracerProvider) -> None:
    # A decide hook would change what the harness calls back, and would satisfy the SDK's
    # "write tools need a safety policy" check on the user's behalf.
    registered = hook_runner.HookRunner(hooks=plain_hooks("coder", tracer_provider=tracer_provider))

    assert registered.pre_tool_call_decide_hooks == ()
    assert len(registered.on_session_start_hooks) == 1
    assert len(registered.on_session_end_hooks) == 1
    assert len(registered.pre_turn_hooks) == 1
    assert len(registered.post_turn_hooks) == 1
    assert len(registered.post_tool_call_hooks) == 1
    assert len(registered.on_tool_error_hooks) == 1


def test_importing_the_integrations_loads_neither_the_sdk_nor_opentelemetry_sdk() -> None:
    # wrap_tool needs neither; the instrumentor module loads both only when instrumenting.
    script = (
        "import sys\n"
        "import hookscope.integrations, hookscope.integrations.antigravity\n"
        "print(sorted(m for m in sys.modules\n"
        "    if m.startswith(('google.antigravity', 'opentelemetry.sdk'))))\n"
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "[]"


def test_a_method_the_sdk_lacks_is_logged_and_the_rest_is_instrumented(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # As if a google-antigravity release had renamed the dynamic policy evaluation.
    from google.antigravity.connections.local.event_processor import BaseLocalEventProcessor

    gone = (BaseLocalEventProcessor, "_evaluate_dynamic_policy")
    monkeypatch.delattr(*gone)
    others = [target for target in _targets() if target != gone]
    instrumentor = AntigravityInstrumentor()

    with caplog.at_level("WARNING", logger="hookscope.integrations.antigravity"):
        instrumentor.instrument()
    try:
        wrapped = [(c, n) for c, n in others if isinstance(c.__dict__[n], wrapt.FunctionWrapper)]
        assert wrapped == others
    finally:
        instrumentor.uninstrument()

    assert [r.getMessage() for r in caplog.records] == [
        "hookscope could not instrument google.antigravity.connections.local.event_processor."
        "BaseLocalEventProcessor._evaluate_dynamic_policy (a google-antigravity version this "
        "instrumentation does not know?); the rest is instrumented, but telemetry that "
        "depends on it will be missing"
    ]
    assert not any(isinstance(c.__dict__[n], wrapt.FunctionWrapper) for c, n in others)


def test_the_instruments_extra_is_the_declared_dependency() -> None:
    # opentelemetry-instrument checks instrumentation_dependencies(); pip installs the extra.
    from pathlib import Path

    import tomllib

    pyproject = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())

    assert set(INSTRUMENTS) <= set(pyproject["project"]["optional-dependencies"]["instruments-any"])


@pytest.mark.parametrize(
    ("value", "nested"), [("true", True), ("1", True), ("YES", True), ("false", False), ("", False)]
)
def test_nest_sessions_env_var_reads_booleans(
    monkeypatch: pytest.MonkeyPatch, value: str, nested: bool
) -> None:
    from hookscope.integrations.antigravity.instrumentor import nest_sessions_from_env

    monkeypatch.setenv("HOOKSCOPE_NEST_SESSIONS", value)

    assert nest_sessions_from_env() is nested


def test_a_nest_sessions_env_var_that_is_no_boolean_is_an_error_in_the_log(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # Logged, not raised: under opentelemetry-instrument a raise would instrument nothing.
    from hookscope.integrations.antigravity.instrumentor import nest_sessions_from_env

    monkeypatch.setenv("HOOKSCOPE_NEST_SESSIONS", "sometimes")

    assert nest_sessions_from_env() is False
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        (
            "ERROR",
            "HOOKSCOPE_NEST_SESSIONS='sometimes' is not a boolean; sessions are not nested. "
            "Set it to true or false.",
        )
    ]


def test_nest_sessions_must_be_a_bool() -> None:
    with pytest.raises(TypeError, match="nest_sessions must be True or False, got 'yes'"):
        AntigravityInstrumentor().instrument(nest_sessions="yes")
