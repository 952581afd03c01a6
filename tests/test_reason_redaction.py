"""Reasons and messages from hooks reach spans redacted, whatever content capture says."""

from __future__ import annotations

from hookscope import Hook, HookResult, HookRunner, ToolCall, hooks
from hookscope.testing import recording
from hookscope.types import LlmRequest, RequestDecision

TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


async def test_a_denial_message_quoting_a_secret_is_redacted_on_the_span() -> None:
    @hooks.pre_tool_call_decide
    def refuse(call: ToolCall) -> HookResult:
        return HookResult.deny(f"refusing {call.args['CommandLine']}")

    with recording() as rec:
        runner = HookRunner([rec.hook, refuse])
        async with runner.session(agent_name="a") as session, session.turn("go") as turn:
            outcome = await turn.call_tool(
                ToolCall(
                    "run_command", {"CommandLine": f"curl -H 'Authorization: Bearer {TOKEN}'"}
                ),
                lambda CommandLine: None,
            )
    assert outcome.allowed is False
    tool = next(s for s in rec.spans if s.name == "execute_tool run_command")
    reason = tool.attributes["hookscope.policy.reason"]
    assert TOKEN not in reason
    assert reason.startswith("refusing curl -H 'Authorization: ")
    assert all(TOKEN not in str(e.attributes) for e in tool.events)


async def test_a_guardrail_message_quoting_a_secret_is_redacted() -> None:
    class Guard(Hook):
        def pre_llm_request(self, context: object, request: LlmRequest) -> RequestDecision:
            return RequestDecision.block(f"prompt carries {TOKEN}")

    with recording() as rec:
        runner = HookRunner([rec.hook, Guard()])
        async with runner.session(agent_name="a") as session, session.turn("go") as turn:
            decision = await turn.llm_request(LlmRequest("m"))
    assert decision.action == "block"
    exported = [
        str(dict(s.attributes or {})) + str([e.attributes for e in s.events]) for s in rec.spans
    ]
    assert all(TOKEN not in text for text in exported)
    assert any("hookscope.guardrail.reason" in text for text in exported)
