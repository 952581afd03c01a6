"""Values crossing the API are frozen, slotted and built by intent-revealing classmethods."""

from __future__ import annotations

import dataclasses

import pytest

from hookscope.types import (
    HookResult,
    LlmRequest,
    RequestDecision,
    ResponseDecision,
    ToolCall,
    Usage,
)


def test_tool_call_defaults() -> None:
    call = ToolCall("view_file")
    assert (call.name, dict(call.args), call.id, call.server) == ("view_file", {}, "", None)


def test_tool_call_is_frozen_and_slotted() -> None:
    call = ToolCall("view_file")
    with pytest.raises(dataclasses.FrozenInstanceError):
        call.name = "other"  # type: ignore[misc]
    assert not hasattr(call, "__dict__")


def test_tool_call_with_args_returns_a_copy() -> None:
    call = ToolCall("edit", {"a": 1}, id="c1", server="git")
    changed = call.with_args({"a": 2})
    assert changed == ToolCall("edit", {"a": 2}, id="c1", server="git")
    assert call.args == {"a": 1}


def test_qualified_name_prefixes_the_server() -> None:
    assert ToolCall("log", server="git").qualified_name == "git/log"
    assert ToolCall("git/log").qualified_name == "git/log"


def test_hook_result_deny() -> None:
    assert HookResult.deny("no") == HookResult(allow=False, message="no")
    assert HookResult() == HookResult(allow=True, message="", modified_args=None, decision=None)


def test_request_decisions() -> None:
    request = LlmRequest(model="m")
    assert RequestDecision.proceed() == RequestDecision(action="proceed")
    assert RequestDecision.modify(request) == RequestDecision(action="modify", request=request)
    assert RequestDecision.block("pii") == RequestDecision(action="block", message="pii")


def test_response_decisions() -> None:
    assert ResponseDecision.accept() == ResponseDecision(action="accept")
    assert ResponseDecision.block("toxic") == ResponseDecision(action="block", message="toxic")
    assert ResponseDecision.retry_with_feedback("cite sources") == ResponseDecision(
        action="retry_with_feedback", message="cite sources"
    )


def test_usage_total() -> None:
    assert Usage(input_tokens=3, output_tokens=4).total_tokens == 7
