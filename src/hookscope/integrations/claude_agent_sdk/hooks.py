"""The SDK hook callbacks and ``can_use_tool`` that put a runner in charge of Claude Code.

:class:`ClaudeHooks` holds one runner's governor and the conversations it is running, keyed by
the CLI's session id (one options object may start many clients). Each callback finds its
conversation (opening it on the first prompt), asks the kit, and answers in the CLI's wire
format (:mod:`.values`). Every decide path runs under :class:`~hookscope.integrations._kit.Guard`
(an exception denies) and the matchers are ``on_failure="block"``: the CLI lets a raising hook
through otherwise.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final, Literal, cast, final

from claude_agent_sdk import (
    HookMatcher,
    PermissionResultAllow,
    PermissionResultDeny,
    ToolPermissionContext,
)

from hookscope.integrations._kit import (
    Governor,
    ToolVerdict,
    ambient_session_id,
    current_parent,
)
from hookscope.integrations.claude_agent_sdk import stream
from hookscope.integrations.claude_agent_sdk.conversation import Conversation
from hookscope.integrations.claude_agent_sdk.values import hook_output, tool_call
from hookscope.types import ToolCall

__all__ = ["DECIDE_TIMEOUT_S", "EVENTS", "AskMode", "ClaudeHooks"]

AskMode = Literal["confirm", "native"]
#: How long the CLI waits for a decide callback (a confirm may wait on a person): one day.
DECIDE_TIMEOUT_S: Final = 86_400.0
#: The hook events hookscope registers for, in the CLI's names.
EVENTS: Final = (
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "Stop",
    "SubagentStart",
    "SubagentStop",
    "PreCompact",
)

Callback = Callable[[Any, "str | None", Any], Awaitable[dict[str, Any]]]
CanUseTool = Callable[[str, dict[str, Any], ToolPermissionContext], Awaitable[Any]]


@final
class ClaudeHooks:
    """One runner's callbacks for any number of CLI sessions."""

    __slots__ = (
        "_opening",
        "ask",
        "governor",
        "model",
        "servers",
        "session_id",
        "user_can_use_tool",
    )

    def __init__(
        self,
        governor: Governor,
        *,
        ask: AskMode = "confirm",
        session_id: str | None = None,
        model: str | None = None,
        user_can_use_tool: CanUseTool | None = None,
        servers: Mapping[str, str] | None = None,
    ) -> None:
        self.governor = governor
        self.servers: Mapping[str, str] = servers or {}
        self.ask = ask
        self.session_id = session_id
        self.model = model or "claude"
        self.user_can_use_tool = user_can_use_tool
        self._opening: dict[str, asyncio.Future[Conversation]] = {}

    # --- wiring ---

    def matchers(self) -> dict[str, list[HookMatcher]]:
        """One matcher per event, each marked as hookscope's so ``govern`` never adds twice."""
        callbacks: dict[str, Callback] = {
            "UserPromptSubmit": self._user_prompt_submit,
            "PreToolUse": self._pre_tool_use,
            "PostToolUse": self._post_tool_use,
            "PostToolUseFailure": self._post_tool_use_failure,
            "Stop": self._stop,
            "SubagentStart": self._subagent_start,
            "SubagentStop": self._subagent_stop,
            "PreCompact": self._pre_compact,
        }
        decide = ("UserPromptSubmit", "PreToolUse")
        return {
            event: [
                HookMatcher(
                    matcher=None,
                    hooks=[cast(Any, callback)],  # the SDK's TypedDict signature, loosely
                    timeout=DECIDE_TIMEOUT_S if event in decide else None,
                    on_failure="block" if event in decide else None,
                )
            ]
            for event, callback in callbacks.items()
        }

    def can_use_tool(self) -> CanUseTool | None:
        """The ``can_use_tool`` to install: only when the user has one (it still answers)."""
        if self.user_can_use_tool is None:
            return None
        return self._can_use_tool

    # --- conversations ---

    async def _conversation(self, data: Any) -> Conversation:
        key = str(data.get("session_id") or "")
        found = stream.conversation(key)
        if found is not None:
            return found
        opening = self._opening.get(key)
        if opening is not None:
            return await asyncio.shield(opening)
        future: asyncio.Future[Conversation] = asyncio.get_running_loop().create_future()
        self._opening[key] = future
        try:
            # Callbacks run in tasks the SDK spawned from the application's call (connect or
            # query), so the application's OpenTelemetry context is current here.
            session = await self.governor.open_session(
                session_id=self.session_id,
                ambient_id=ambient_session_id(),
                sdk_id=key or None,
                parent=current_parent(),
            )
            conversation = Conversation(self.governor, session, key, self.model, self.servers)
            stream.register(key, conversation)
            future.set_result(conversation)
            return conversation
        except BaseException as error:
            future.set_exception(error)
            future.exception()  # retrieved: no "never retrieved" warning
            raise
        finally:
            del self._opening[key]

    # --- callbacks ---

    async def _user_prompt_submit(self, data: Any, tool_use_id: str | None, ctx: Any) -> Any:
        async def decide() -> dict[str, Any]:
            conversation = await self._conversation(data)
            turn = await conversation.prompt(str(data.get("prompt", "")))
            if turn.allowed:
                return {}
            return {"decision": "block", "reason": turn.verdict.message or "blocked by hookscope"}

        return await self.governor.guard.decide(
            decide(),
            lambda message: {"decision": "block", "reason": message},
            "UserPromptSubmit",
        )

    async def _pre_tool_use(self, data: Any, tool_use_id: str | None, ctx: Any) -> Any:
        # Under bypassPermissions Claude consults no can_use_tool, so a native ask would go
        # unanswered: hookscope's confirm path settles it (nobody answering denies).
        native = self.ask == "native" and data.get("permission_mode") != "bypassPermissions"

        async def decide() -> dict[str, Any]:
            conversation = await self._conversation(data)
            verdict = await conversation.pre_tool(data, tool_use_id, native)
            return hook_output(verdict)

        def deny(message: str) -> dict[str, Any]:
            return {
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": "deny",
                    "permissionDecisionReason": message,
                }
            }

        return await self.governor.guard.decide(decide(), deny, "PreToolUse")

    async def _can_use_tool(
        self, name: str, tool_input: dict[str, Any], context: ToolPermissionContext
    ) -> Any:
        user = self.user_can_use_tool
        tool_use_id = context.tool_use_id or ""
        ops = stream.find_ops(tool_use_id)
        if len(ops) > 1:  # concurrent sessions reused the id: only this very call will do
            asked = tool_call(name, tool_input, tool_use_id, self.servers)
            ops = [op for op in ops if _same_call(op.call, asked)]
        op = ops[0] if ops else None

        async def decide() -> Any:
            pending = op is not None and op.verdict is not None and op.verdict.pending
            if user is None:  # never installed without one; fail closed all the same
                return PermissionResultDeny(message="no approver (can_use_tool) is configured")
            if op is not None and not pending and (op.verdict is None or op.verdict.denied):
                # Claude asks about a call hookscope denied or never finished deciding (its
                # PreToolUse answer was lost): the approver must not let it run.
                reason = op.verdict.message if op.verdict is not None else ""
                return PermissionResultDeny(message=reason or "hookscope has not allowed this call")
            if len(ops) > 1:  # answering another session's ask would settle the wrong call
                return PermissionResultDeny(
                    message=f"hookscope cannot tell which session's call {tool_use_id} is "
                    "(concurrent sessions reuse that id with the same tool and input); denied"
                )
            answer = await user(name, tool_input, context)
            if op is None:
                return answer
            if pending:
                verdict = await op.answer(isinstance(answer, PermissionResultAllow))
                return _permission(verdict, answer)
            if isinstance(answer, PermissionResultDeny):
                conversation = stream.conversation_of(op)
                if conversation is not None:
                    conversation.refused(tool_use_id, answer.message)
            return answer

        return await self.governor.guard.decide(
            decide(), lambda message: PermissionResultDeny(message=message), "can_use_tool"
        )

    async def _post_tool_use(self, data: Any, tool_use_id: str | None, ctx: Any) -> Any:
        async def report() -> dict[str, Any]:
            conversation = await self._conversation(data)
            await conversation.post_tool(data, tool_use_id)
            return {}

        return await self._observe(report(), "PostToolUse")

    async def _post_tool_use_failure(self, data: Any, tool_use_id: str | None, ctx: Any) -> Any:
        async def report() -> dict[str, Any]:
            conversation = await self._conversation(data)
            await conversation.tool_failed(data, tool_use_id)
            return {}

        return await self._observe(report(), "PostToolUseFailure")

    async def _stop(self, data: Any, tool_use_id: str | None, ctx: Any) -> Any:
        async def report() -> dict[str, Any]:
            conversation = await self._conversation(data)
            going_on = await conversation.stop(str(data.get("last_assistant_message") or ""))
            if going_on is None:
                return {}
            return {"decision": "block", "reason": going_on.text or "continue"}

        return await self._observe(report(), "Stop")

    async def _subagent_start(self, data: Any, tool_use_id: str | None, ctx: Any) -> Any:
        async def report() -> dict[str, Any]:
            conversation = await self._conversation(data)
            await conversation.subagent_started(
                str(data.get("agent_id", "")), str(data.get("agent_type", ""))
            )
            return {}

        return await self._observe(report(), "SubagentStart")

    async def _subagent_stop(self, data: Any, tool_use_id: str | None, ctx: Any) -> Any:
        async def report() -> dict[str, Any]:
            conversation = await self._conversation(data)
            conversation.subagent_stopped(str(data.get("agent_id", "")))
            return {}

        return await self._observe(report(), "SubagentStop")

    async def _pre_compact(self, data: Any, tool_use_id: str | None, ctx: Any) -> Any:
        async def report() -> dict[str, Any]:
            conversation = await self._conversation(data)
            turn = await conversation.current_turn()
            if not turn.ended:
                # Claude Code writes its own summary: a hook's is recorded, not used.
                await turn.compacting([])
            return {}

        return await self._observe(report(), "PreCompact")

    async def _observe(self, work: Awaitable[dict[str, Any]], where: str) -> dict[str, Any]:
        # Inspect events: a failure is logged and the agent goes on ({} = no opinion).
        return await self.governor.guard.report(work, {}, where)


def _same_call(mine: ToolCall, asked: ToolCall) -> bool:
    return (mine.name, mine.server, dict(mine.args)) == (asked.name, asked.server, dict(asked.args))


def _permission(verdict: ToolVerdict, answer: Any) -> Any:
    """The ``can_use_tool`` answer once a native ask is settled."""
    if not verdict.allowed:
        message = getattr(answer, "message", "") or verdict.message or "denied"
        return PermissionResultDeny(message=message)
    if verdict.args is not None:
        return PermissionResultAllow(updated_input=dict(verdict.args))
    return answer
