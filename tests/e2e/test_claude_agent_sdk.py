"""The Claude Agent SDK governed by hookscope, against the real Claude Code CLI.

The CLI bundled in the claude-agent-sdk wheel talks to a scripted Anthropic Messages server on
127.0.0.1. Every scenario checks what the application saw, the exact span tree and the metric
totals. Multi-turn scenarios run three times each (concurrently: one shared CLI environment,
script keys of their own).
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hookscope import HookResult, HookRunner, ToolCall, hooks
from hookscope.integrations.claude_agent_sdk import govern
from hookscope.integrations.claude_agent_sdk import stream as claude_stream
from hookscope.policy import deny, enforce
from hookscope.testing import Recording, recording
from hookscope.types import Answer, Question, Recovery
from tests.support.claude_cli import ClaudeEnv, converse
from tests.support.model_server import ScriptedModelServer

pytestmark = pytest.mark.e2e

KEYS = (
    "hookscope.session.outcome",
    "hookscope.turn.outcome",
    "hookscope.tool.outcome",
    "hookscope.tool.server",
    "hookscope.policy.decision",
    "hookscope.policy.outcome",
    "hookscope.policy.decided_by",
    "hookscope.recovery.recovered",
    "error.type",
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.output_tokens",
)


@pytest.fixture(scope="module")
def claude() -> Iterator[ClaudeEnv]:
    with (
        tempfile.TemporaryDirectory(prefix="hookscope-claude-") as tmp,
        ScriptedModelServer({}) as server,
    ):
        home = Path(tmp) / "home"
        home.mkdir()
        yield ClaudeEnv(server, home)


def tree(rec: Recording) -> list[Any]:
    """Names and the KEYS attributes, nested; siblings in start order."""

    def strip(node: dict[str, Any]) -> Any:
        out: list[Any] = [node["name"], node["attributes"]]
        if "children" in node:
            out.append([strip(c) for c in node["children"]])
        return out

    return [strip(n) for n in rec.span_tree(keys=KEYS)]


def same_tree(actual: Any, expected: Any, path: str = "") -> None:
    """Assert two trees are equal, naming the first span where they differ."""
    if isinstance(expected, list) and isinstance(actual, list):
        assert len(actual) == len(expected), (
            f"{path}: {len(actual)} items, expected {len(expected)}: {actual!r}"
        )
        for index, (a, e) in enumerate(zip(actual, expected, strict=True)):
            where = (
                f"{path}/{a[0]}"
                if isinstance(a, list) and a and isinstance(a[0], str)
                else f"{path}[{index}]"
            )
            same_tree(a, e, where)
    else:
        assert actual == expected, f"{path}: {actual!r} != {expected!r}"


def totals(rec: Recording, name: str, *keys: str) -> dict[tuple[Any, ...], int]:
    """A metric's points, keyed by the values of ``keys``."""
    points = rec.metric_points([name]).get(name, {})
    out: dict[tuple[Any, ...], int] = {}
    for attributes, value in points.items():
        found = dict(attributes)
        out[tuple(found.get(k) for k in keys)] = value
    return out


async def settled() -> None:
    """Let the conversations the CLI's exit ended finish their on_session_end hooks."""
    await claude_stream.drain()


def chat(input_tokens: int = 100, output_tokens: int = 1) -> list[Any]:
    # The CLI's stream reports usage as of message_start: 1 output token here (see README).
    return [
        "chat claude-sonnet-4-5",
        {"gen_ai.usage.input_tokens": input_tokens, "gen_ai.usage.output_tokens": output_tokens},
    ]


# --- hooks and policy the scenarios share ---------------------------------------------------


@hooks.pre_tool_call_decide
def modify_echo(call: ToolCall) -> HookResult | None:
    command = str(call.args.get("command", ""))
    if call.name == "Bash" and "original" in command:
        return HookResult(modified_args={"command": command.replace("original", "modified")})
    return None


@hooks.pre_tool_call_decide
def no_write(call: ToolCall) -> HookResult | None:
    return HookResult.deny("writing files is off today") if call.name == "Write" else None


@hooks.pre_tool_call_decide
def ask_first(call: ToolCall) -> HookResult | None:
    command = str(call.args.get("command", ""))
    return HookResult.ask(f"may I run {command!r}?") if "ask-" in command else None


@hooks.on_interaction
def reviewer(questions: list[Question]) -> list[Answer]:
    verdict = "allow" if "approve" in questions[0].text else "deny"
    return [Answer(question_id=questions[0].id, text=verdict)]


@hooks.on_tool_error
def fallback(error: Exception) -> Recovery:
    return Recovery("0", "division fallback")


def governed_runner(rec: Recording) -> HookRunner:
    policy = enforce([deny("Bash", when=lambda a: "rm -rf" in a["command"], reason="no deleting")])
    # Hooks that change arguments come before the policy, which decides on the final call.
    return HookRunner([rec.hook, modify_echo, policy, no_write, ask_first, reviewer, fallback])


def governed_script(tag: str) -> dict[str, list[Any]]:
    return {
        f"[{tag}] turn A": [
            {"tool_calls": [{"name": "mcp__calc__add", "arguments": {"a": 2, "b": 3}}]},
            {"tool_calls": [{"name": "Bash", "arguments": {"command": f"echo original-{tag}"}}]},
            {"text": "A: {tool_result}"},
        ],
        f"[{tag}] turn B": [
            {"tool_calls": [{"name": "Bash", "arguments": {"command": "rm -rf ./important"}}]},
            {
                "tool_calls": [
                    {"name": "Write", "arguments": {"file_path": "x.txt", "content": "x"}}
                ]
            },
            {"text": "B: {tool_result}"},
        ],
        f"[{tag}] turn C": [
            {"tool_calls": [{"name": "mcp__calc__divide", "arguments": {"a": 1, "b": 0}}]},
            {"text": "C: {tool_result}"},
        ],
        f"[{tag}] turn D": [
            {"tool_calls": [{"name": "Bash", "arguments": {"command": "echo ask-approve"}}]},
            {"tool_calls": [{"name": "Bash", "arguments": {"command": "echo ask-reject"}}]},
            {"text": "D: {tool_result}"},
        ],
    }


async def run_governed(claude: ClaudeEnv, base: Path, tag: str) -> tuple[Any, Recording]:
    claude.server.resolver.script.update(governed_script(tag))
    with recording() as rec:
        options = govern(claude.options(base / tag), governed_runner(rec), agent_name="coder")
        seen = await converse(options, [f"[{tag}] turn {t}: go" for t in "ABCD"])
        await settled()
        return seen, rec


def allowed(tool: str, by: str | None = "PolicyEnforcer", server: str | None = None) -> list[Any]:
    attributes: dict[str, Any] = {
        "hookscope.policy.decision": "allow",
        "hookscope.policy.outcome": "allowed",
        "hookscope.tool.outcome": "succeeded",
    }
    if by is not None:
        attributes["hookscope.policy.decided_by"] = by
    if server is not None:  # an MCP tool is server/tool, as policies name it
        attributes["hookscope.tool.server"] = server
        tool = f"{server}/{tool}"
    return [f"execute_tool {tool}", attributes]


def denied(tool: str, by: str, decision: str = "deny") -> list[Any]:
    return [
        f"execute_tool {tool}",
        {
            "hookscope.policy.decided_by": by,
            "hookscope.policy.decision": decision,
            "hookscope.policy.outcome": "denied",
            "hookscope.tool.outcome": "denied",
        },
    ]


def turn(agent: str, children: list[Any], outcome: str = "completed") -> list[Any]:
    chats = sum(1 for c in children if c[0].startswith("chat "))
    attributes: dict[str, Any] = {"hookscope.turn.outcome": outcome}
    if chats:
        attributes["gen_ai.usage.input_tokens"] = 100 * chats
        attributes["gen_ai.usage.output_tokens"] = chats
    return [f"invoke_agent {agent}", attributes, children]


GOVERNED_TREE = [
    [
        "session coder",
        {"hookscope.session.outcome": "completed"},
        [
            turn("coder", [chat(), allowed("add", server="calc"), chat(), allowed("Bash"), chat()]),
            turn(
                "coder",
                [
                    chat(),
                    denied("Bash", "PolicyEnforcer"),
                    chat(),
                    denied("Write", "no_write"),
                    chat(),
                ],
            ),
            turn(
                "coder",
                [
                    chat(),
                    [
                        "execute_tool calc/divide",
                        {
                            "error.type": "ClaudeToolError",
                            "hookscope.policy.decided_by": "PolicyEnforcer",
                            "hookscope.policy.decision": "allow",
                            "hookscope.policy.outcome": "allowed",
                            # Claude Code cannot take a recovery in place of an error.
                            "hookscope.recovery.recovered": False,
                            "hookscope.tool.outcome": "failed",
                            "hookscope.tool.server": "calc",
                        },
                    ],
                    chat(),
                ],
            ),
            turn(
                "coder",
                [
                    chat(),
                    [
                        "execute_tool Bash",
                        {
                            "hookscope.policy.decided_by": "ask_first",
                            "hookscope.policy.decision": "ask_user",
                            "hookscope.policy.outcome": "allowed",
                            "hookscope.tool.outcome": "succeeded",
                        },
                    ],
                    chat(),
                    denied("Bash", "ask_first", "ask_user"),
                    chat(),
                ],
            ),
        ],
    ]
]


async def test_a_governed_multi_turn_session_three_times(claude: ClaudeEnv, tmp_path: Path) -> None:
    runs = await asyncio.gather(*(run_governed(claude, tmp_path, f"gov-{i}") for i in range(3)))
    for i, (seen, rec) in enumerate(runs):
        tag = f"gov-{i}"
        assert seen.errors == [False] * 4
        assert seen.results[0] == f"A: modified-{tag}"  # the hook's arguments reached Bash
        assert seen.results[1] == "B: writing files is off today"
        denial = next(
            r for r in claude.server.requests if r.prompt_key == f"[{tag}] turn B" and r.step == 1
        )
        assert "no deleting" in str(denial.body["messages"][-1])  # the model read the denial
        assert seen.results[2] == "C: integer division or modulo by zero"
        assert seen.results[3].startswith("D: ")
        assert "the user answered 'deny'" in seen.results[3]
        same_tree(tree(rec), GOVERNED_TREE)
        assert totals(
            rec, "hookscope.tool.calls", "gen_ai.tool.name", "hookscope.tool.outcome"
        ) == {
            ("calc/add", "succeeded"): 1,
            ("Bash", "succeeded"): 2,
            ("Bash", "denied"): 2,
            ("Write", "denied"): 1,
            ("calc/divide", "failed"): 1,
        }
        assert totals(
            rec,
            "hookscope.policy.decisions",
            "gen_ai.tool.name",
            "hookscope.policy.decision",
            "hookscope.policy.outcome",
        ) == {
            ("calc/add", "allow", "allowed"): 1,
            ("Bash", "allow", "allowed"): 1,
            ("Bash", "deny", "denied"): 1,
            ("Write", "deny", "denied"): 1,
            ("calc/divide", "allow", "allowed"): 1,
            ("Bash", "ask_user", "allowed"): 1,
            ("Bash", "ask_user", "denied"): 1,
        }
        assert totals(
            rec, "hookscope.tool.errors", "gen_ai.tool.name", "hookscope.recovery.recovered"
        ) == {("calc/divide", False): 1}
        assert totals(rec, "hookscope.turns", "hookscope.turn.outcome") == {("completed",): 4}
        assert totals(rec, "hookscope.sessions", "gen_ai.agent.name") == {("coder",): 1}
        assert totals(rec, "gen_ai.client.token.usage", "gen_ai.token.type") == {
            ("input",): 11,
            ("output",): 11,
        }


# --- asks answered by Claude's own approval (ask="native") ----------------------------------


async def run_native(claude: ClaudeEnv, base: Path, tag: str) -> tuple[Any, Recording, list[str]]:
    claude.server.resolver.script.update(
        {
            f"[{tag}] yes": [
                {"tool_calls": [{"name": "Bash", "arguments": {"command": f"echo ask-yes-{tag}"}}]},
                {"text": "yes: {tool_result}"},
            ],
            f"[{tag}] no": [
                {"tool_calls": [{"name": "Bash", "arguments": {"command": "echo ask-no"}}]},
                {"text": "no: {tool_result}"},
            ],
        }
    )
    asked: list[str] = []

    async def approver(name: str, tool_input: dict[str, Any], context: Any) -> Any:
        from claude_agent_sdk import PermissionResultAllow, PermissionResultDeny

        asked.append(f"{name} {tool_input.get('command')} ({context.decision_reason})")
        if "yes" in str(tool_input.get("command")):
            return PermissionResultAllow()
        return PermissionResultDeny(message="the reviewer said no")

    with recording() as rec:
        options = claude.options(base / tag, can_use_tool=approver, allowed_tools=[])
        governed = govern(
            options, HookRunner([rec.hook, ask_first]), agent_name="asker", ask="native"
        )
        seen = await converse(governed, [f"[{tag}] yes: go", f"[{tag}] no: go"])
        await settled()
        return seen, rec, asked


async def test_asks_go_to_claudes_own_approval_with_ask_native(
    claude: ClaudeEnv, tmp_path: Path
) -> None:
    runs = await asyncio.gather(*(run_native(claude, tmp_path, f"native-{i}") for i in range(3)))
    for i, (seen, rec, asked) in enumerate(runs):
        tag = f"native-{i}"
        assert asked == [
            f"Bash echo ask-yes-{tag} (may I run 'echo ask-yes-{tag}'?)",
            "Bash echo ask-no (may I run 'echo ask-no'?)",
        ]
        assert seen.results == [f"yes: ask-yes-{tag}", "no: the reviewer said no"]
        asked_tool = {
            "hookscope.policy.decided_by": "ask_first",
            "hookscope.policy.decision": "ask_user",
        }
        same_tree(
            tree(rec),
            [
                [
                    "session asker",
                    {"hookscope.session.outcome": "completed"},
                    [
                        turn(
                            "asker",
                            [
                                chat(),
                                [
                                    "execute_tool Bash",
                                    {
                                        **asked_tool,
                                        "hookscope.policy.outcome": "allowed",
                                        "hookscope.tool.outcome": "succeeded",
                                    },
                                ],
                                chat(),
                            ],
                        ),
                        turn(
                            "asker",
                            [
                                chat(),
                                [
                                    "execute_tool Bash",
                                    {
                                        **asked_tool,
                                        "hookscope.policy.outcome": "denied",
                                        "hookscope.tool.outcome": "denied",
                                    },
                                ],
                                chat(),
                            ],
                        ),
                    ],
                ]
            ],
        )
        assert totals(
            rec,
            "hookscope.policy.decisions",
            "hookscope.policy.decision",
            "hookscope.policy.outcome",
        ) == {
            ("ask_user", "allowed"): 1,
            ("ask_user", "denied"): 1,
        }


# --- pre_turn blocks, post_turn asks to go on -------------------------------------------------


@hooks.pre_turn
def no_forbidden(prompt: Any) -> HookResult | None:
    return HookResult.deny("that topic is off limits") if "forbidden" in str(prompt) else None


async def run_blocked(claude: ClaudeEnv, base: Path, tag: str) -> tuple[Any, Recording, int]:
    claude.server.resolver.script.update(
        {
            f"[{tag}] forbidden": [{"text": "must never be asked"}],
            f"[{tag}] fine": [{"text": "fine answer"}],
        }
    )
    with recording() as rec:
        options = govern(
            claude.options(base / tag), HookRunner([rec.hook, no_forbidden]), agent_name="guarded"
        )
        seen = await converse(options, [f"[{tag}] forbidden: go", f"[{tag}] fine: go"])
        await settled()
        asked = sum(1 for r in claude.server.requests if r.prompt_key == f"[{tag}] forbidden")
        return seen, rec, asked


async def test_a_pre_turn_block_stops_the_prompt_before_any_model_call(
    claude: ClaudeEnv, tmp_path: Path
) -> None:
    runs = await asyncio.gather(*(run_blocked(claude, tmp_path, f"block-{i}") for i in range(3)))
    for seen, rec, model_calls in runs:
        assert model_calls == 0
        assert "that topic is off limits" in seen.results[0]
        assert seen.results[1] == "fine answer"
        same_tree(
            tree(rec),
            [
                [
                    "session guarded",
                    {"hookscope.session.outcome": "completed"},
                    [
                        ["invoke_agent guarded", {"hookscope.turn.outcome": "blocked"}],
                        turn("guarded", [chat()]),
                    ],
                ]
            ],
        )
        assert totals(rec, "hookscope.turns", "hookscope.turn.outcome") == {
            ("blocked",): 1,
            ("completed",): 1,
        }


async def test_a_post_turn_hook_keeps_claude_going_through_a_stop_block(
    claude: ClaudeEnv, tmp_path: Path
) -> None:
    claude.server.resolver.script.update(
        {
            "[more] start": [{"text": "first answer"}],
            "[more] also": [{"text": "second answer"}],
        }
    )
    stops: list[str] = []

    @hooks.post_turn
    def once_more(response: Any) -> HookResult | None:
        stops.append(response.text)
        return HookResult.deny("[more] also: check the tests") if len(stops) == 1 else None

    with recording() as rec:
        options = govern(
            claude.options(tmp_path / "more"), HookRunner([rec.hook, once_more]), agent_name="eager"
        )
        seen = await converse(options, ["[more] start: go"])
        await settled()
    assert stops == ["first answer", "second answer"]
    assert seen.results == ["second answer"]
    same_tree(
        tree(rec),
        [
            [
                "session eager",
                {"hookscope.session.outcome": "completed"},
                [turn("eager", [chat(), chat()])],
            ]
        ],
    )


# --- a subagent -------------------------------------------------------------------------------


async def test_a_subagent_is_an_invoke_agent_span_under_the_call_that_started_it(
    claude: ClaudeEnv, tmp_path: Path
) -> None:
    from claude_agent_sdk import AgentDefinition

    claude.server.resolver.script.update(
        {
            "[sub] delegate": [
                {
                    "tool_calls": [
                        {
                            "name": "Agent",
                            "arguments": {
                                "description": "add numbers",
                                "prompt": "[sub-task] add 4 and 5",
                                "subagent_type": "helper",
                                "run_in_background": False,
                            },
                        }
                    ]
                },
                {"text": "delegated: {tool_result}"},
            ],
            "[sub-task]": [
                {"tool_calls": [{"name": "mcp__calc__add", "arguments": {"a": 4, "b": 5}}]},
                {"text": "sum {tool_result}"},
            ],
        }
    )
    helper = AgentDefinition(
        description="adds numbers",
        prompt="You add numbers.",
        tools=["mcp__calc__add"],
        background=False,
    )
    with recording() as rec:
        options = claude.options(tmp_path / "sub", agents={"helper": helper})
        seen = await converse(
            govern(options, HookRunner([rec.hook]), agent_name="lead"), ["[sub] delegate: go"]
        )
        await settled()
    assert seen.results[0].startswith("delegated: ")
    assert "sum 9" in seen.results[0]
    same_tree(
        tree(rec),
        [
            [
                "session lead",
                {"hookscope.session.outcome": "completed"},
                [
                    turn(
                        "lead",
                        [
                            chat(),
                            [
                                "execute_tool Agent",
                                {
                                    "hookscope.policy.decision": "allow",
                                    "hookscope.policy.outcome": "allowed",
                                    "hookscope.tool.outcome": "succeeded",
                                },
                                [
                                    [
                                        "invoke_agent helper",
                                        {"hookscope.turn.outcome": "completed"},
                                        [
                                            # The CLI forwards a subagent's messages late and
                                            # its last one never: its calls carry no usage.
                                            ["chat claude-sonnet-4-5", {}],
                                            [
                                                "execute_tool calc/add",
                                                {
                                                    "hookscope.policy.decision": "allow",
                                                    "hookscope.policy.outcome": "allowed",
                                                    "hookscope.tool.outcome": "succeeded",
                                                    "hookscope.tool.server": "calc",
                                                },
                                            ],
                                            ["chat claude-sonnet-4-5", {}],
                                        ],
                                    ]
                                ],
                            ],
                            chat(),
                        ],
                    )
                ],
            ]
        ],
    )


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


def console_spans(output: str) -> list[dict[str, Any]]:
    """The spans the console exporter printed (JSON objects), in print order."""
    import json

    decoder = json.JSONDecoder()
    spans, index = [], 0
    while (start := output.find("{", index)) != -1:
        try:
            value, index = decoder.raw_decode(output, start)
        except json.JSONDecodeError:
            index = start + 1
            continue
        if isinstance(value, dict) and "context" in value and "name" in value:
            spans.append(value)
    return spans


async def test_zero_code_hookscope_config_governs_an_unchanged_app(
    claude: ClaudeEnv, tmp_path: Path
) -> None:
    import os
    import sys

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
        **os.environ,
        "HOOKSCOPE_CONFIG": str(config),
        "SCRIPTED_MODEL_URL": claude.server.base_url,
        "APP_HOME": str(claude.home),
        "APP_WORKDIR": str(tmp_path / "work"),
        "OTEL_SERVICE_NAME": "claude-zero-code",
        "OTEL_TRACES_EXPORTER": "console",
        "OTEL_METRICS_EXPORTER": "none",
        "OTEL_LOGS_EXPORTER": "none",
        "PYTHONWARNINGS": "ignore",
        # OpenInference's instrumentor (installed for the comparison) has this entry point
        # name; hookscope's is hookscope_claude_agent_sdk.
        "OTEL_PYTHON_DISABLED_INSTRUMENTATIONS": "claude_agent_sdk",
    }
    instrument = Path(sys.executable).parent / "opentelemetry-instrument"
    process = await asyncio.create_subprocess_exec(
        str(instrument),
        sys.executable,
        "-m",
        "tests.support.claude_app",
        cwd=str(Path(__file__).parents[2]),
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    out, err = await asyncio.wait_for(process.communicate(), 120)
    stdout, stderr = out.decode(), err.decode()
    assert process.returncode == 0, stderr[-3000:]
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


# --- identity, and the adapter failing closed -------------------------------------------------


async def test_an_application_session_id_is_kept_and_the_cli_id_is_the_conversation_id(
    claude: ClaudeEnv, tmp_path: Path
) -> None:
    from opentelemetry import baggage
    from opentelemetry import context as otel_context

    claude.server.resolver.script["[ident] go"] = [{"text": "hello"}]
    with recording() as rec:
        options = govern(claude.options(tmp_path / "ident"), HookRunner([rec.hook]))
        token = otel_context.attach(baggage.set_baggage("session.id", "app-session-42"))
        try:
            await converse(options, ["[ident] go"])
        finally:
            otel_context.detach(token)
        await settled()
    ids = {(s.attributes or {}).get("session.id") for s in rec.spans}
    assert ids == {"app-session-42"}
    session = next(s for s in rec.spans if s.name.startswith("session "))
    conversation = (session.attributes or {})["gen_ai.conversation.id"]
    assert conversation != "app-session-42"
    assert len(conversation) == 36  # the CLI's session UUID


async def test_an_adapter_failure_denies_the_call(
    claude: ClaudeEnv,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    from hookscope.integrations.claude_agent_sdk.conversation import Conversation

    async def broken(self: Any, *args: Any) -> Any:
        raise RuntimeError("adapter bug")

    monkeypatch.setattr(Conversation, "pre_tool", broken)
    claude.server.resolver.script["[broken] go"] = [
        {
            "tool_calls": [
                {"name": "Bash", "arguments": {"command": "echo should-not-run > ran.txt"}}
            ]
        },
        {"text": "after: {tool_result}"},
    ]
    options = govern(claude.options(tmp_path / "broken"), HookRunner())
    seen = await converse(options, ["[broken] go"])
    await settled()
    assert not (tmp_path / "broken" / "ran.txt").exists()
    assert "its claude-agent-sdk adapter failed (RuntimeError)" in seen.results[0]
    assert "adapter bug" not in seen.results[0]  # exception text may carry secrets
    assert "failing closed" in caplog.text


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
