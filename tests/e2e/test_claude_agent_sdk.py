"""The Claude Agent SDK governed by hookscope, against the real Claude Code CLI: what hookscope decides.

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

from hookscope import HookResult, HookRunner, ToolCall, hooks
from hookscope.integrations.claude_agent_sdk import govern
from hookscope.policy import deny, enforce
from hookscope.testing import Recording, recording
from hookscope.types import Answer, Question, Recovery
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

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def claude() -> Iterator[ClaudeEnv]:
    with claude_env() as env:
        yield env


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
    # What the denied calls would destroy or create, so the test can see they never ran.
    (base / tag / "important").mkdir(parents=True)
    with recording() as rec:
        options = govern(claude.options(base / tag), governed_runner(rec), agent_name="coder")
        seen = await converse(options, [f"[{tag}] turn {t}: go" for t in "ABCD"])
        await settled()
        return seen, rec


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
        assert (tmp_path / tag / "important").is_dir()  # the denied rm -rf never ran
        assert not (tmp_path / tag / "x.txt").exists()  # nor did the denied Write
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
