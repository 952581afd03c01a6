"""OpenAIAgentsInstrumentor: every run governed with no change to the app; undone cleanly."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest
from agents import Runner

from hookscope import HookRunner
from hookscope.integrations.openai_agents import INSTRUMENTS, OpenAIAgentsInstrumentor, govern
from hookscope.policy import deny, enforce
from hookscope.testing import Recording
from tests.integrations.oai.support import RAN, add, agent, delete_file, lines
from tests.support import openai_agents_app
from tests.support.model_server import ScriptedModelServer
from tests.support.zero_code import console_spans, run_instrumented

REPOSITORY = Path(__file__).parents[3]


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


SCRIPT = {
    "Add 2 and 3": [call("add", a=2, b=3), {"text": "{tool_result}"}],
    "Delete the notes": [call("delete_file", path="notes.txt"), {"text": "{tool_result}"}],
}


@pytest.fixture
def instrumentor(rec: Recording) -> Iterator[OpenAIAgentsInstrumentor]:
    instrumentor = OpenAIAgentsInstrumentor()
    instrumentor.instrument(
        runner=HookRunner([rec.hook, enforce([deny("delete_file", reason="no deleting")])])
    )
    yield instrumentor
    if instrumentor.is_instrumented_by_opentelemetry:
        instrumentor.uninstrument()


async def test_every_run_of_a_plain_agent_is_governed(
    instrumentor: OpenAIAgentsInstrumentor, rec: Recording
) -> None:
    with ScriptedModelServer(SCRIPT) as server:
        plain = agent(server.base_url, tools=[add, delete_file])
        added = await Runner.run(plain, "Add 2 and 3")
        denied = await Runner.run(plain, "Delete the notes")
    assert added.final_output == "5"
    assert denied.final_output == "denied by policy rule 'deny:delete_file': no deleting"
    assert RAN == ["add 2 3"]
    assert lines(rec) == [
        "session assistant session=completed",
        "  invoke_agent assistant turn=completed in=200 out=20",
        "    chat scripted-model in=100 out=10",
        "    execute_tool add tool=succeeded decision=allow by=PolicyEnforcer",
        "    chat scripted-model in=100 out=10",
        "session assistant session=completed",
        "  invoke_agent assistant turn=completed in=200 out=20",
        "    chat scripted-model in=100 out=10",
        "    execute_tool delete_file ERROR tool=denied decision=deny by=PolicyEnforcer",
        "    chat scripted-model in=100 out=10",
    ]


async def test_a_governed_agent_under_the_instrumentor_is_governed_once(
    instrumentor: OpenAIAgentsInstrumentor, rec: Recording
) -> None:
    instrumentor.instrument()  # a second instrument() is a no-op
    with ScriptedModelServer(SCRIPT) as server:
        governed = govern(agent(server.base_url, tools=[add]), HookRunner([rec.hook]))
        await Runner.run(governed, "Add 2 and 3")
    assert [s.name for s in rec.spans].count("execute_tool add") == 1
    assert [s.name for s in rec.spans].count("invoke_agent assistant") == 1


async def test_uninstrument_stops_governing_new_runs(
    instrumentor: OpenAIAgentsInstrumentor, rec: Recording
) -> None:
    instrumentor.uninstrument()
    with ScriptedModelServer(SCRIPT) as server:
        deleted = await Runner.run(agent(server.base_url, tools=[delete_file]), "Delete the notes")
    assert deleted.final_output == "deleted"
    assert rec.spans == ()


def test_uninstrument_restores_the_sdk_when_nothing_else_governs() -> None:
    # In a fresh interpreter: govern() in this one keeps the (pass-through) seams for good.
    code = textwrap.dedent(
        """
        import agents.run as run
        from hookscope.integrations.openai_agents import OpenAIAgentsInstrumentor
        originals = (run.AgentRunner.run, run.AgentRunner.run_streamed, run.start_streaming)
        instrumentor = OpenAIAgentsInstrumentor()
        instrumentor.instrument()
        wrapped = (run.AgentRunner.run, run.AgentRunner.run_streamed, run.start_streaming)
        instrumentor.uninstrument()
        restored = (run.AgentRunner.run, run.AgentRunner.run_streamed, run.start_streaming)
        assert all(w is not o for w, o in zip(wrapped, originals)), "not wrapped"
        assert restored == originals, "not restored"
        print("ok")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.stdout.strip() == "ok", done.stderr[-2000:]


def test_importing_hookscope_loads_no_sdk() -> None:
    code = "import sys, hookscope, hookscope.integrations; print('agents' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.stdout.strip() == "False", done.stderr[-2000:]


def test_the_entry_point_and_dependencies_name_the_sdk() -> None:
    (point,) = [
        e
        for e in entry_points(group="opentelemetry_instrumentor")
        if e.value.startswith("hookscope.integrations.openai_agents")
    ]
    assert point.name == "hookscope_openai_agents"
    assert point.load() is OpenAIAgentsInstrumentor
    assert tuple(OpenAIAgentsInstrumentor().instrumentation_dependencies()) == INSTRUMENTS


async def test_zero_code_governs_with_the_hooks_of_hookscope_config(tmp_path: Path) -> None:
    config = tmp_path / "hookscope.toml"
    config.write_text(
        "[[hooks.pre_tool_call]]\n"
        'type = "python"\n'
        'hook = "tests.support.openai_agents_app:no_deletes"\n'
    )
    with ScriptedModelServer(SCRIPT) as server:
        app = await run_instrumented(
            "tests.support.openai_agents_app",
            env={
                "SCRIPTED_MODEL_URL": server.base_url,
                "HOOKSCOPE_CONFIG": str(config),
                "OTEL_SERVICE_NAME": "zero-code-app",
                # OpenInference's instrumentor for this SDK is installed here too: only ours
                # runs
                "OTEL_PYTHON_DISABLED_INSTRUMENTATIONS": "openai_agents",
            },
        )
    stdout = app.stdout
    assert app.returncode == 0, app.stderr[-3000:]
    assert [line for line in stdout.splitlines() if line.startswith("answer:")] == [
        "answer: 5",
        "answer: deleting is not allowed here",
    ]
    spans = console_spans(stdout)
    assert sorted(
        (s["name"], s["attributes"].get("hookscope.tool.outcome", "")) for s in spans
    ) == [
        ("chat scripted-model", ""),
        ("chat scripted-model", ""),
        ("chat scripted-model", ""),
        ("chat scripted-model", ""),
        ("execute_tool add", "succeeded"),
        ("execute_tool delete_file", "denied"),
        ("invoke_agent app", ""),
        ("invoke_agent app", ""),
        # the app never ended its SDK session: hookscope ends it at exit, so the root is kept
        ("session app", ""),
    ]
    assert tuple(SCRIPT) == openai_agents_app.PROMPTS
