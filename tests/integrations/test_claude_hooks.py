"""The Claude adapter's callbacks, called as the SDK calls them (no CLI needed)."""

from __future__ import annotations

from typing import Any

from claude_agent_sdk import (
    ClaudeAgentOptions,
    PermissionResultAllow,
    PermissionResultDeny,
    ToolPermissionContext,
)

from hookscope import Hook, HookResult, HookRunner, ToolCall, hooks
from hookscope.integrations.claude_agent_sdk import govern, stream
from hookscope.integrations.claude_agent_sdk.govern import governed_by
from hookscope.policy import deny, enforce


async def test_a_native_ask_is_settled_in_its_own_session_when_sessions_reuse_a_call_id() -> None:
    @hooks.pre_tool_call_decide
    def ask_first(call: ToolCall) -> HookResult:
        return HookResult.ask(f"may I run {call.args['command']!r}?")

    async def approver(name: str, tool_input: dict[str, Any], context: Any) -> Any:
        if tool_input["command"] == "echo a":
            return PermissionResultAllow()
        return PermissionResultDeny(message="not b")

    options = govern(
        ClaudeAgentOptions(can_use_tool=approver), HookRunner([ask_first]), ask="native"
    )
    claude = governed_by(options)
    assert claude is not None
    assert options.can_use_tool is not None
    try:
        for key, command in (("session-a", "echo a"), ("session-b", "echo b")):
            await claude._user_prompt_submit({"session_id": key, "prompt": "go"}, None, None)
            asked = await claude._pre_tool_use(
                {"session_id": key, "tool_name": "Bash", "tool_input": {"command": command}},
                "toolu_same",
                None,
            )
            assert asked["hookSpecificOutput"]["permissionDecision"] == "ask"
        a, b = (stream.conversation(k) for k in ("session-a", "session-b"))
        assert a is not None
        assert b is not None
        context = ToolPermissionContext(tool_use_id="toolu_same")
        # Session b's CLI asks first: its answer must settle b's call, not a's.
        answer_b = await options.can_use_tool("Bash", {"command": "echo b"}, context)
        answer_a = await options.can_use_tool("Bash", {"command": "echo a"}, context)
        assert isinstance(answer_b, PermissionResultDeny)
        assert isinstance(answer_a, PermissionResultAllow)
        op_a = a.op("toolu_same")
        assert op_a is not None
        assert op_a.verdict is not None
        assert op_a.verdict.allowed
        op_b = b.op("toolu_same")
        assert op_b is not None
        assert op_b.verdict is not None
        assert not op_b.verdict.allowed
        assert op_b.phase == "denied"
    finally:
        for key in ("session-a", "session-b"):
            found = stream.conversation(key)
            if found is not None:
                stream._CONVERSATIONS.pop(key)
                await found.end(None)


async def test_a_rule_for_a_server_claude_code_renamed_denies_its_tools() -> None:
    # Claude Code writes "corp.files" as corp_files and keeps "a__b": policy rules name them
    # as configured, and must meet every one of their tools.
    runner = HookRunner(
        [enforce([deny("corp.files/*"), deny("a__b/*")], mcp_servers=["corp.files", "a__b", "a"])]
    )
    options = govern(
        ClaudeAgentOptions(mcp_servers={"corp.files": {}, "a__b": {}, "a": {}}), runner
    )
    claude = governed_by(options)
    assert claude is not None
    try:
        await claude._user_prompt_submit({"session_id": "names", "prompt": "go"}, None, None)
        decisions = []
        for i, name in enumerate(("mcp__corp_files__delete", "mcp__a__b__wipe", "mcp__a__read")):
            out = await claude._pre_tool_use(
                {"session_id": "names", "tool_name": name, "tool_input": {}}, f"t{i}", None
            )
            decisions.append(out.get("hookSpecificOutput", {}).get("permissionDecision"))
        assert decisions == ["deny", "deny", None]
    finally:
        found = stream.conversation("names")
        if found is not None:
            stream._CONVERSATIONS.pop("names")
            await found.end(None)


async def test_a_native_ask_under_bypass_permissions_is_settled_by_hookscope() -> None:
    @hooks.pre_tool_call_decide
    def ask_first(call: ToolCall) -> HookResult:
        return HookResult.ask("may I?")

    async def approver(name: str, tool_input: dict[str, Any], context: Any) -> Any:
        return PermissionResultAllow()  # never consulted in this mode

    options = govern(
        ClaudeAgentOptions(can_use_tool=approver), HookRunner([ask_first]), ask="native"
    )
    claude = governed_by(options)
    assert claude is not None
    try:
        await claude._user_prompt_submit({"session_id": "bypass", "prompt": "go"}, None, None)
        data = {"session_id": "bypass", "tool_name": "Bash", "tool_input": {"command": "ls"}}
        out = await claude._pre_tool_use(
            {**data, "permission_mode": "bypassPermissions"}, "t1", None
        )
        # Nobody answers hookscope's confirm: denied, not handed to an approver never called.
        assert out["hookSpecificOutput"]["permissionDecision"] == "deny"
        out = await claude._pre_tool_use({**data, "permission_mode": "default"}, "t2", None)
        assert out["hookSpecificOutput"]["permissionDecision"] == "ask"
    finally:
        found = stream.conversation("bypass")
        if found is not None:
            stream._CONVERSATIONS.pop("bypass")
            await found.end(None)


class _RaisesEverywhere(Hook):
    """A hook that fails in every event it can have."""

    def _fail(self, *args: Any) -> Any:
        raise RuntimeError("secret-token-123 leaked into a message")

    on_session_start = on_session_end = pre_turn = post_turn = _fail
    pre_tool_call = post_tool_call = on_tool_error = on_interaction = _fail
    pre_compaction = on_compaction = pre_llm_request = on_llm_response = _fail


async def test_a_hook_raising_in_every_callback_denies_and_never_breaks_the_cli() -> None:
    options = govern(ClaudeAgentOptions(), HookRunner([_RaisesEverywhere()]))
    claude = governed_by(options)
    assert claude is not None
    key = {"session_id": "raising"}
    call = {**key, "tool_name": "Bash", "tool_input": {"command": "ls"}}
    try:
        prompt = await claude._user_prompt_submit({**key, "prompt": "go"}, None, None)
        assert prompt["decision"] == "block"
        tool = await claude._pre_tool_use(call, "t1", None)
        assert tool["hookSpecificOutput"]["permissionDecision"] == "deny"
        # Inspect events: nothing to enforce, so no opinion, and no exception into the CLI.
        assert await claude._post_tool_use({**call, "tool_response": "x"}, "t1", None) == {}
        assert await claude._post_tool_use_failure({**call, "error": "boom"}, "t1", None) == {}
        assert await claude._stop({**key, "last_assistant_message": "done"}, None, None) == {}
        assert await claude._pre_compact({**key, "trigger": "auto"}, None, None) == {}
        assert await claude._subagent_start({**key, "agent_id": "a1"}, None, None) == {}
        assert await claude._subagent_stop({**key, "agent_id": "a1"}, None, None) == {}
        reasons = [prompt["reason"], tool["hookSpecificOutput"]["permissionDecisionReason"]]
        assert not any("secret-token-123" in reason for reason in reasons)
    finally:
        found = stream.conversation("raising")
        if found is not None:
            stream._CONVERSATIONS.pop("raising")
            await found.end(None)


async def test_claudes_approver_is_not_asked_about_a_call_hookscope_denied() -> None:
    asked: list[str] = []

    async def approver(name: str, tool_input: dict[str, Any], context: Any) -> Any:
        asked.append(name)
        return PermissionResultAllow()

    runner = HookRunner([enforce([deny("Bash", reason="no shell")])])
    options = govern(ClaudeAgentOptions(can_use_tool=approver), runner)
    claude = governed_by(options)
    assert claude is not None
    assert options.can_use_tool is not None
    key = {"session_id": "denied"}
    try:
        await claude._user_prompt_submit({**key, "prompt": "go"}, None, None)
        call = {**key, "tool_name": "Bash", "tool_input": {"command": "rm -rf x"}}
        out = await claude._pre_tool_use(call, "t1", None)
        assert out["hookSpecificOutput"]["permissionDecision"] == "deny"
        # Should Claude ask anyway (its hook answer lost), the approver's allow must not count.
        answer = await options.can_use_tool(
            "Bash", {"command": "rm -rf x"}, ToolPermissionContext(tool_use_id="t1")
        )
        assert isinstance(answer, PermissionResultDeny)
        assert "no shell" in answer.message
        assert asked == []
    finally:
        found = stream.conversation("denied")
        if found is not None:
            stream._CONVERSATIONS.pop("denied")
            await found.end(None)
