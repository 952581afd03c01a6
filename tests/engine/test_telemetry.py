"""What command hooks report: run attributes, and the trace context their programs join."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from hookscope.engine import CommandHook, PromptHook
from hookscope.runner import HookRunner
from hookscope.telemetry.otel_hook import OTelHook
from hookscope.types import ToolCall
from tests.support.openai_server import Reply, ScriptedOpenAIServer

from .conftest import PYTHON, Runs, dispatch
from .test_command import CALL, printing


async def test_a_command_run_reports_its_exit_code_executable_and_verdict() -> None:
    runs = Runs()
    runner = HookRunner(
        [
            CommandHook("pre_tool_call", command=printing({"decision": "block"}), name="a"),
            CommandHook(
                "pre_tool_call",
                args=[PYTHON, "-c", "raise SystemExit(3)"],
                name="b",
                fail_open=True,
            ),
        ]
    )
    runner.observe(runs)
    await dispatch(runner, "pre_tool_call", ToolCall("x"))
    runner.replace(runner.hooks, runner.hooks[::-1])
    await dispatch(runner, "pre_tool_call", ToolCall("x"))
    assert [(r.hook_name, r.hook_type, r.verdict, r.attributes) for r in runs.runs] == [
        ("a", "command", "deny", {"process.executable.name": "printf", "process.exit.code": 0}),
        # b fails (fail open) with its exit code recorded, then a still denies
        ("b", "command", "none", {"process.executable.name": "python", "process.exit.code": 3}),
        ("a", "command", "deny", {"process.executable.name": "printf", "process.exit.code": 0}),
    ]
    assert type(runs.runs[1].error).__name__ == "HookFailure"


async def test_the_hook_program_continues_the_session_trace(
    tmp_path: Path, script: Callable[[str], str]
) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    seen = tmp_path / "seen.json"
    command = script(
        f"""
        import json, os
        keys = ("TRACEPARENT", "TRACESTATE")
        open({str(seen)!r}, "w").write(json.dumps({{k: os.environ.get(k) for k in keys}}))
        """
    )
    otel = OTelHook(provider, MeterProvider(metric_readers=[InMemoryMetricReader()]))
    runner = HookRunner([otel, CommandHook("pre_tool_call", command=command, name="traced")])
    async with runner.session(agent_name="coder") as session, session.turn("go") as turn:
        outcome = await turn.call_tool(
            ToolCall("view_file", {"path": "/x"}, id="c1"), lambda path: "ok"
        )
    assert outcome.allowed
    spans = {span.name: span for span in exporter.get_finished_spans()}
    session_span = spans["session coder"]
    traceparent = json.loads(seen.read_text())["TRACEPARENT"]
    version, trace_id, parent_id, flags = traceparent.split("-")
    assert version == "00"
    assert int(flags, 16) & 1
    assert int(trace_id, 16) == session_span.context.trace_id
    # The program's parent is the hook run's own span, under the tool's.
    assert int(parent_id, 16) == spans["execute_hook traced"].context.span_id


async def test_without_a_current_span_no_inherited_traceparent_leaks(
    tmp_path: Path, script: Callable[[str], str], monkeypatch: Any
) -> None:
    monkeypatch.setenv("TRACEPARENT", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
    seen = tmp_path / "seen.json"
    command = script(
        f"""
        import json, os
        open({str(seen)!r}, "w").write(json.dumps(os.environ.get("TRACEPARENT")))
        """
    )
    await dispatch(
        HookRunner([CommandHook("pre_tool_call", command=command)]), "pre_tool_call", CALL
    )
    assert json.loads(seen.read_text()) is None


async def test_each_command_run_is_an_execute_hook_span_the_program_continues(
    tmp_path: Path, script: Callable[[str], str]
) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    seen = tmp_path / "seen.json"
    command = script(
        f"""
        import json, os, sys
        sys.stdin.read()
        open({str(seen)!r}, "w").write(json.dumps(os.environ["TRACEPARENT"]))
        print('{{"decision": "block", "reason": "not here"}}')
        """
    )
    otel = OTelHook(provider, MeterProvider(metric_readers=[InMemoryMetricReader()]))
    runner = HookRunner([otel, CommandHook("pre_tool_call", command=command, name="traced")])
    async with runner.session(agent_name="coder") as session, session.turn("go") as turn:
        outcome = await turn.call_tool(
            ToolCall("view_file", {"path": "/x"}, id="c1"), lambda path: "ok"
        )
    assert outcome.message == "not here"
    spans = {span.name: span for span in exporter.get_finished_spans()}
    hook_span, tool_span = spans["execute_hook traced"], spans["execute_tool view_file"]
    assert hook_span.parent is not None
    assert hook_span.parent.span_id == tool_span.context.span_id
    assert (
        dict(hook_span.attributes or {}).items()
        >= {
            "hookscope.hook.name": "traced",
            "hookscope.hook.event": "pre_tool_call",
            "hookscope.hook.type": "command",
            "hookscope.hook.verdict": "deny",
            "process.exit.code": 0,
            "process.executable.name": "python",
        }.items()
    )
    _, trace_id, parent_id, _ = json.loads(seen.read_text()).split("-")
    assert int(trace_id, 16) == spans["session coder"].context.trace_id
    assert int(parent_id, 16) == hook_span.context.span_id


async def test_a_prompt_run_span_carries_the_model_and_its_usage() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    script = {
        "JUDGE": [Reply(text='{"ok": false, "reason": "no"}', input_tokens=42, output_tokens=7)]
    }
    with ScriptedOpenAIServer(script, model="judge-1") as server:
        hook = PromptHook(
            "pre_turn",
            prompt="JUDGE $ARGUMENTS",
            model="small",
            base_url=server.base_url,
            name="judge",
        )
        otel = OTelHook(provider, MeterProvider(metric_readers=[InMemoryMetricReader()]))
        runner = HookRunner([otel, hook])
        async with runner.session(agent_name="coder") as session, session.turn("go") as turn:
            assert not turn.allowed
    spans = {span.name: span for span in exporter.get_finished_spans()}
    hook_span = spans["execute_hook judge"]
    assert hook_span.parent is not None
    assert hook_span.parent.span_id == spans["invoke_agent coder"].context.span_id
    assert (
        dict(hook_span.attributes or {}).items()
        >= {
            "hookscope.hook.name": "judge",
            "hookscope.hook.event": "pre_turn",
            "hookscope.hook.type": "prompt",
            "hookscope.hook.verdict": "deny",
        }.items()
    )
    assert not any(key.startswith("gen_ai.") for key in hook_span.attributes or {})
    # The model call itself: a chat span, CLIENT, under the hook run (DESIGN §7).
    chat = spans["chat small"]
    assert chat.kind is SpanKind.CLIENT
    assert chat.parent is not None
    assert chat.parent.span_id == hook_span.context.span_id
    assert (
        dict(chat.attributes or {}).items()
        >= {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "small",
            "gen_ai.response.model": "judge-1",
            "gen_ai.usage.input_tokens": 42,
            "gen_ai.usage.output_tokens": 7,
        }.items()
    )
