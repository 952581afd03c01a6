"""Comparison: one scripted Claude Agent SDK session traced by hookscope and by OpenInference.

The real Claude Code CLI (bundled in claude-agent-sdk) talks to the scripted model server of
the tests. The same two-turn session runs twice: once with ``govern(options, runner)`` (a
policy that denies ``rm -rf``, and an ``OTelHook``), once under OpenInference's
``ClaudeAgentSDKInstrumentor`` (which observes only: the ``rm -rf`` runs, in a throwaway
directory). Both span trees are printed, with the attributes that say what happened.

Run: ``.venv/bin/python bench/compare_claude_openinference.py`` (about 10 s).
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # the scripted model and the CLI environment live with the tests
    sys.path.insert(0, str(ROOT))

from openinference.instrumentation.claude_agent_sdk import ClaudeAgentSDKInstrumentor  # noqa: E402
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)
from tests.support.claude_cli import ClaudeEnv, converse  # noqa: E402
from tests.support.model_server import ScriptedModelServer  # noqa: E402

from hookscope import HookRunner  # noqa: E402
from hookscope.integrations.claude_agent_sdk import govern  # noqa: E402
from hookscope.integrations.claude_agent_sdk import stream as claude_stream  # noqa: E402
from hookscope.policy import deny, enforce  # noqa: E402
from hookscope.testing import recording  # noqa: E402
from span_lines import tree_lines  # noqa: E402

SHOWN = (
    "hookscope.turn.outcome",
    "hookscope.tool.outcome",
    "hookscope.tool.server",
    "hookscope.policy.decision",
    "hookscope.policy.rule",
    "gen_ai.usage.input_tokens",
    "openinference.span.kind",
    "tool.name",
    "llm.model_name",
    "llm.token_count.prompt",
)
PROMPTS = ("[cmp] one: add 2 and 3, then greet", "[cmp] two: clean up")


def script(tag: str) -> dict[str, list[Any]]:
    return {
        f"[{tag}] one": [
            {"tool_calls": [{"name": "mcp__calc__add", "arguments": {"a": 2, "b": 3}}]},
            {"tool_calls": [{"name": "Bash", "arguments": {"command": "echo hello"}}]},
            {"text": "sum and greeting: {tool_result}"},
        ],
        f"[{tag}] two": [
            {"tool_calls": [{"name": "Bash", "arguments": {"command": "rm -rf ./build"}}]},
            {"text": "cleanup: {tool_result}"},
        ],
    }


def lines(spans: Sequence[ReadableSpan]) -> list[str]:
    """Each span as ``name  [shown attributes]``, indented under its parent, by start time."""
    return tree_lines(spans, _label)


def _label(span: ReadableSpan) -> str:
    attributes = span.attributes or {}
    shown = ", ".join(f"{k.split('.')[-1]}={attributes[k]}" for k in SHOWN if k in attributes)
    return span.name + (f"  [{shown}]" if shown else "")


async def run(claude: ClaudeEnv, base: Path) -> tuple[list[str], list[str], list[str], list[str]]:
    claude.server.resolver.script.update(script("cmp"))
    with recording() as rec:
        runner = HookRunner(
            [
                rec.hook,
                enforce([deny("Bash", when=lambda a: "rm -rf" in a["command"], name="no-rm")]),
            ]
        )
        ours = await converse(
            govern(claude.options(base / "hookscope"), runner, agent_name="coder"), PROMPTS
        )
        await claude_stream.drain()
        hookscope_tree = lines(rec.spans)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = ClaudeAgentSDKInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        theirs = await converse(claude.options(base / "openinference"), PROMPTS)
    finally:
        instrumentor.uninstrument()
    provider.shutdown()
    return hookscope_tree, lines(exporter.get_finished_spans()), ours.results, theirs.results


def main() -> int:
    with (
        tempfile.TemporaryDirectory(prefix="hookscope-compare-") as tmp,
        ScriptedModelServer({}) as server,
    ):
        home = Path(tmp) / "home"
        home.mkdir()
        ours, theirs, our_answers, their_answers = asyncio.run(
            run(ClaudeEnv(server, home), Path(tmp))
        )
    print("Claude Agent SDK, one scripted two-turn session (real Claude Code CLI)")
    print(f"\nhookscope (govern: policy denies rm -rf): answers {our_answers}")
    print("\n".join(ours))
    print(f"\nOpenInference (ClaudeAgentSDKInstrumentor, observes only): answers {their_answers}")
    print("\n".join(theirs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
