"""The Claude Agent SDK governed by hookscope, against the real Claude Code CLI: sessions, concurrency, cancellation, the instrumentor, identity.

The CLI bundled in the claude-agent-sdk wheel talks to a scripted Anthropic Messages server on
127.0.0.1 (one per module, shared by its scenarios: each uses script keys of its own, so they
run concurrently). Every scenario checks what the application saw, the exact span tree and the
metric totals; multi-turn scenarios run three times each.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hookscope import HookRunner, hooks
from hookscope.integrations.claude_agent_sdk import govern
from hookscope.policy import deny, enforce
from hookscope.testing import recording
from tests.support.claude_cli import (
    ClaudeEnv,
    allowed,
    chat,
    claude_env,
    converse,
    denied,
    same_tree,
    settled,
    totals,
    tree,
    turn,
)
from tests.support.zero_code import console_spans, run_instrumented

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def claude() -> Iterator[ClaudeEnv]:
    with claude_env() as env:
        yield env


# --- three sessions at once through one runner -----------------------------------------------


async def test_three_concurrent_sessions_through_one_runner_stay_apart(
    claude: ClaudeEnv, tmp_path: Path
) -> None:
    for i in range(3):
        claude.server.resolver.script[f"[par-{i}] go"] = [
            {"tool_calls": [{"name": "mcp__calc__add", "arguments": {"a": i, "b": 10}}]},
            {"text": "sum {tool_result}"},
        ]
    with recording() as rec:
        runner = HookRunner([rec.hook])
        options = [
            govern(claude.options(tmp_path / f"par-{i}"), runner, agent_name=f"par{i}")
            for i in range(3)
        ]
        seen = await asyncio.gather(*(converse(options[i], [f"[par-{i}] go"]) for i in range(3)))
        await settled()
    assert [s.results for s in seen] == [["sum 10"], ["sum 11"], ["sum 12"]]
    trees = sorted(tree(rec), key=lambda t: t[0])
    assert [t[0] for t in trees] == ["session par0", "session par1", "session par2"]
    for i, session in enumerate(trees):
        same_tree(
            session,
            [
                f"session par{i}",
                {"hookscope.session.outcome": "completed"},
                [turn(f"par{i}", [chat(), allowed("add", None, "calc"), chat()])],
            ],
        )
    ids = {s.attributes["session.id"] for s in rec.spans if s.attributes}
    assert len(ids) == 3  # one CLI session id each, and every span carries its own
    assert totals(rec, "hookscope.sessions", "gen_ai.agent.name") == {
        ("par0",): 1,
        ("par1",): 1,
        ("par2",): 1,
    }


# --- cancellation -----------------------------------------------------------------------------


async def test_an_interrupted_turn_ends_cancelled_with_its_call(
    claude: ClaudeEnv, tmp_path: Path
) -> None:
    from claude_agent_sdk import ClaudeSDKClient, ResultMessage, create_sdk_mcp_server, tool

    started = asyncio.Event()

    @tool("wait", "Wait for a long time", {})
    async def wait(args: dict[str, Any]) -> dict[str, Any]:
        started.set()
        await asyncio.sleep(60)
        return {"content": [{"type": "text", "text": "late"}]}

    claude.server.resolver.script["[cancel] go"] = [
        {"tool_calls": [{"name": "mcp__slow__wait", "arguments": {}}]},
        {"text": "never"},
    ]
    with recording() as rec:
        options = claude.options(
            tmp_path / "cancel",
            mcp_servers={"slow": create_sdk_mcp_server("slow", tools=[wait])},
            allowed_tools=["mcp__slow__wait"],
        )
        results: list[Any] = []
        async with ClaudeSDKClient(
            govern(options, HookRunner([rec.hook]), agent_name="c")
        ) as client:
            await client.query("[cancel] go")

            async def interrupt() -> None:
                await asyncio.wait_for(started.wait(), 60)
                await client.interrupt()

            interrupting = asyncio.create_task(interrupt())
            async for message in client.receive_response():
                if isinstance(message, ResultMessage):
                    results.append(message)
            await interrupting
        await settled()
    assert [r.terminal_reason for r in results] == ["aborted_tools"]
    same_tree(
        tree(rec),
        [
            [
                "session c",
                {"hookscope.session.outcome": "completed"},
                [
                    [
                        "invoke_agent c",
                        {"hookscope.turn.outcome": "cancelled", "error.type": "CancelledError"},
                        [
                            chat(),
                            [
                                "execute_tool slow/wait",
                                {
                                    "hookscope.tool.server": "slow",
                                    "hookscope.policy.decision": "allow",
                                    "hookscope.policy.outcome": "allowed",
                                    "hookscope.tool.outcome": "failed",
                                    "error.type": "CancelledError",
                                },
                            ],
                        ],
                    ]
                ],
            ]
        ],
    )
    assert totals(rec, "hookscope.turns", "hookscope.turn.outcome") == {("cancelled",): 1}


# --- the instrumentor: in process, uninstrument, zero code ------------------------------------


async def test_the_instrumentor_governs_new_clients_and_uninstrument_restores_the_sdk(
    claude: ClaudeEnv, tmp_path: Path
) -> None:
    from claude_agent_sdk import ClaudeSDKClient, ResultMessage

    from hookscope.integrations.claude_agent_sdk import ClaudeAgentSdkInstrumentor

    for tag in ("inst-a", "inst-b"):
        for step in ("one", "two"):
            claude.server.resolver.script[f"[{tag}] {step}"] = [
                {"tool_calls": [{"name": "Bash", "arguments": {"command": f"echo {tag}-{step}"}}]},
                {"text": "got {tool_result}"},
            ]
    policy = enforce([deny("Bash", when=lambda a: "-two" in a["command"], reason="not two")])
    instrumentor = ClaudeAgentSdkInstrumentor()
    with recording() as rec:
        instrumentor.instrument(runner=HookRunner([rec.hook, policy]), agent_name="auto")
        try:
            answers: list[str] = []
            async with ClaudeSDKClient(claude.options(tmp_path / "a")) as governed:
                await governed.query("[inst-a] one: go")
                async for message in governed.receive_response():
                    if isinstance(message, ResultMessage):
                        answers.append(message.result or "")
                instrumentor.uninstrument()
                # Sessions in flight stay governed until they end.
                await governed.query("[inst-a] two: go")
                async for message in governed.receive_response():
                    if isinstance(message, ResultMessage):
                        answers.append(message.result or "")
            untraced = await converse(claude.options(tmp_path / "b"), ["[inst-b] two: go"])
        finally:
            if instrumentor.is_instrumented_by_opentelemetry:
                instrumentor.uninstrument()
        await settled()
    assert answers[0] == "got inst-a-one"
    assert "not two" in answers[1]
    assert untraced.results == ["got inst-b-two"]  # the SDK is itself again: no policy
    same_tree(
        tree(rec),
        [
            [
                "session auto",
                {"hookscope.session.outcome": "completed"},
                [
                    turn("auto", [chat(), allowed("Bash"), chat()]),
                    turn("auto", [chat(), denied("Bash", "PolicyEnforcer"), chat()]),
                ],
            ]
        ],
    )


async def test_zero_code_hookscope_config_governs_an_unchanged_app(
    claude: ClaudeEnv, tmp_path: Path
) -> None:
    claude.server.resolver.script.update(
        {
            "[zero] one": [
                {"tool_calls": [{"name": "Bash", "arguments": {"command": "echo zero-one"}}]},
                {"text": "one: {tool_result}"},
            ],
            "[zero] two": [
                {"tool_calls": [{"name": "Bash", "arguments": {"command": "rm -rf ./all"}}]},
                {"text": "two: {tool_result}"},
            ],
        }
    )
    config = tmp_path / "hookscope.toml"
    config.write_text(
        "[[hooks.pre_tool_call]]\n"
        'matcher = "Bash"\n'
        'type = "command"\n'
        'command = "grep -q \'rm -rf\' && echo \'{\\"allow\\": false, \\"message\\": '
        '\\"no rm from the config\\"}\' || true"\n',
        encoding="utf-8",
    )
    (tmp_path / "work").mkdir()
    env = {
        "HOOKSCOPE_CONFIG": str(config),
        "SCRIPTED_MODEL_URL": claude.server.base_url,
        "APP_HOME": str(claude.home),
        "APP_WORKDIR": str(tmp_path / "work"),
        "OTEL_SERVICE_NAME": "claude-zero-code",
        # OpenInference's instrumentor (installed for the comparison) has this entry point
        # name; hookscope's is hookscope_claude_agent_sdk.
        "OTEL_PYTHON_DISABLED_INSTRUMENTATIONS": "claude_agent_sdk",
    }
    finished = await run_instrumented("tests.support.claude_app", env=env)
    stdout, stderr = finished.stdout, finished.stderr
    assert finished.returncode == 0, stderr[-3000:]
    assert "answer: one: zero-one" in stdout
    assert "no rm from the config" in stdout
    spans = console_spans(stdout)
    tools = sorted(
        (s["attributes"]["gen_ai.tool.name"], s["attributes"]["hookscope.tool.outcome"])
        for s in spans
        if s["name"].startswith("execute_tool")
    )
    assert tools == [("Bash", "denied"), ("Bash", "succeeded")]
    names = sorted(s["name"] for s in spans if not s["name"].startswith(("execute_tool", "chat")))
    assert names == [
        "execute_hook grep",  # the config's command hook, once per Bash call
        "execute_hook grep",
        "invoke_agent claude-agent-sdk",
        "invoke_agent claude-agent-sdk",
        "session claude-agent-sdk",
    ]


# --- query() and compaction -------------------------------------------------------------------


async def test_query_is_one_session_with_one_turn(claude: ClaudeEnv, tmp_path: Path) -> None:
    from claude_agent_sdk import ResultMessage, query

    claude.server.resolver.script["[oneshot] go"] = [
        {"tool_calls": [{"name": "mcp__calc__add", "arguments": {"a": 1, "b": 1}}]},
        {"text": "two: {tool_result}"},
    ]
    results: list[str] = []
    with recording() as rec:
        options = govern(
            claude.options(tmp_path / "oneshot"), HookRunner([rec.hook]), agent_name="q"
        )
        async for message in query(prompt="[oneshot] go", options=options):
            if isinstance(message, ResultMessage):
                results.append(message.result or "")
        await settled()
    assert results == ["two: 2"]
    same_tree(
        tree(rec),
        [
            [
                "session q",
                {"hookscope.session.outcome": "completed"},
                [turn("q", [chat(), allowed("add", None, "calc"), chat()])],
            ]
        ],
    )


async def test_compaction_runs_pre_compaction_hooks(claude: ClaudeEnv, tmp_path: Path) -> None:
    claude.server.resolver.script["[compact] go"] = [{"text": "before compaction"}]
    compacted: list[str] = []

    @hooks.pre_compaction
    def note(messages: Any) -> None:
        compacted.append("pre_compaction")

    with recording() as rec:
        options = govern(
            claude.options(tmp_path / "compact"), HookRunner([rec.hook, note]), agent_name="k"
        )
        seen = await converse(options, ["[compact] go", "/compact"])
        await settled()
    assert seen.results[0] == "before compaction"
    assert compacted == ["pre_compaction"]
    same_tree(
        tree(rec),
        [
            [
                "session k",
                {"hookscope.session.outcome": "completed"},
                [
                    turn("k", [chat()]),
                    # /compact: Claude's summarizing model call reaches no assistant message.
                    [
                        "invoke_agent k",
                        {"hookscope.turn.outcome": "completed"},
                        [["chat claude-sonnet-4-5", {}]],
                    ],
                ],
            ]
        ],
    )
    events = [name for name, _ in rec.span_tree()[0]["children"][1]["events"]]
    assert "hookscope.pre_compaction" in events
    assert totals(rec, "hookscope.compactions", "hookscope.compaction.stage") == {("pre",): 1}
