"""Claude Agent SDK wire values ↔ hookscope values (no CLI needed)."""

from __future__ import annotations

import pytest

from hookscope.integrations._kit import ToolVerdict
from hookscope.integrations.claude_agent_sdk.values import (
    hook_output,
    llm_response,
    mcp_name,
    server_names,
    tool_call,
    usage,
)
from hookscope.types import Decision, PolicyDecision, ToolCall, Usage

CALL = ToolCall("Bash", {"command": "ls"}, "toolu_1")


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("mcp__calc__add", ("add", "calc")),
        ("mcp__my_server__do__it", ("do__it", "my_server")),
        ("mcp__calc", ("mcp__calc", None)),
        ("Bash", ("Bash", None)),
    ],
)
def test_mcp_names_split_into_tool_and_server(name: str, expected: tuple[str, str | None]) -> None:
    assert mcp_name(name) == expected


def test_a_tool_use_becomes_a_tool_call_with_its_server() -> None:
    assert tool_call("mcp__calc__add", {"a": 1}, "t1") == ToolCall("add", {"a": 1}, "t1", "calc")


def test_a_denial_is_a_deny_permission_decision_with_the_message() -> None:
    assert hook_output(ToolVerdict(False, CALL, "no shell")) == {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "no shell",
        }
    }


def test_a_pending_native_ask_is_an_ask_permission_decision() -> None:
    verdict = ToolVerdict(False, CALL, "may I?", asked=True, pending=True)
    assert hook_output(verdict)["hookSpecificOutput"]["permissionDecision"] == "ask"


def test_an_allow_grants_nothing_claude_would_ask_for() -> None:
    rule = PolicyDecision(Decision.ALLOW, "allowed", rule="allow:Bash", bucket=2, reason="")
    assert hook_output(ToolVerdict(True, CALL, decision=rule)) == {}
    assert hook_output(ToolVerdict(True, CALL)) == {}


def test_a_person_approving_is_an_allow() -> None:
    asked = PolicyDecision(
        Decision.ASK_USER, "allowed", None, None, "ok?", asked_user=True, user_approved=True
    )
    output = hook_output(ToolVerdict(True, CALL, "ok?", asked=True, decision=asked))
    assert output["hookSpecificOutput"]["permissionDecision"] == "allow"


def test_changed_arguments_travel_as_updated_input_without_a_decision() -> None:
    verdict = ToolVerdict(True, CALL, args={"command": "ls -a"})
    assert hook_output(verdict) == {
        "hookSpecificOutput": {"hookEventName": "PreToolUse", "updatedInput": {"command": "ls -a"}}
    }


def test_usage_counts_cached_input_tokens_as_input() -> None:
    raw = {
        "input_tokens": 10,
        "output_tokens": 5,
        "cache_read_input_tokens": 100,
        "cache_creation_input_tokens": 7,
    }
    assert usage(raw) == Usage(117, 5, cache_read_tokens=100, cache_creation_tokens=7)
    assert usage(None) is None


def test_an_assistant_message_becomes_an_llm_response() -> None:
    response = llm_response(
        {
            "model": "claude-x",
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 3, "output_tokens": 1},
            "content": [
                {"type": "text", "text": "let me add"},
                {"type": "tool_use", "id": "t9", "name": "mcp__calc__add", "input": {"a": 1}},
            ],
        }
    )
    assert response.model == "claude-x"
    assert response.text == "let me add"
    assert response.tool_calls == (ToolCall("add", {"a": 1}, "t9", "calc"),)
    assert response.provider == "anthropic"
    assert response.finish_reasons == ("tool_use",)


def test_an_mcp_tool_is_named_by_the_configured_server_that_claude_code_renamed() -> None:
    servers = server_names({"my__srv": {}, "my": {}, "corp.files": {}})
    assert servers == {"my__srv": "my__srv", "my": "my", "corp_files": "corp.files"}
    assert mcp_name("mcp__my__srv__read", servers) == ("read", "my__srv")
    assert mcp_name("mcp__my__other", servers) == ("other", "my")
    assert mcp_name("mcp__corp_files__delete", servers) == ("delete", "corp.files")
    assert mcp_name("mcp__unknown__x", servers) == ("x", "unknown")
    assert server_names("/path/to/mcp.json") == {}
