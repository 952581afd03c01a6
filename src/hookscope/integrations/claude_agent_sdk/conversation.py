"""One Claude Code conversation (one CLI session id) as hookscope scopes.

The CLI reports a conversation through two channels: hook callbacks (prompt submitted, tool
use before/after/failed, stop, subagent start/stop, compaction), which can answer, and its
message stream (assistant messages with model and usage, tool results, the turn's result),
which only tells. :class:`Conversation` maps both onto one kit session: a turn per prompt, a
tool operation per ``tool_use_id``, a subagent run per ``agent_id``, and a ``chat`` span per
assistant message, timed from the moment the CLI was last waiting on the model (the turn's
start, or the last tool result of the previous message) to the message's arrival.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Mapping
from typing import Any, final

from hookscope.integrations._kit import (
    Governor,
    OpIndex,
    Session,
    SubagentRun,
    ToolOp,
    ToolVerdict,
    Turn,
    TurnInterrupted,
)
from hookscope.integrations.claude_agent_sdk.values import (
    PROVIDER,
    SUBAGENT_TOOLS,
    ClaudeToolError,
    PermissionRefused,
    llm_response,
    tool_call,
    usage,
)
from hookscope.types import ChatResponse, HookscopeError, LlmRequest, LlmResponse, Usage

__all__ = ["Conversation", "TurnFailed"]


class TurnFailed(HookscopeError):
    """The CLI ended a turn with an error result (an API error, a turn limit …)."""


@final
class _Lane:
    """The main agent's or one subagent's model-call bookkeeping."""

    __slots__ = ("chat_open", "message_id", "run", "waiting")

    def __init__(self, run: SubagentRun | None) -> None:
        self.run = run
        self.chat_open = False
        self.message_id: str | None = None
        #: Tool uses of the last message still running: the next model call waits for them.
        self.waiting: set[str] = set()


@final
class Conversation:
    """The scopes of one CLI session; every method is called on the SDK's event loop."""

    __slots__ = (
        "_lanes",
        "_unsettled",
        "_usage",
        "governor",
        "model",
        "ops",
        "servers",
        "session",
        "session_key",
    )

    def __init__(
        self,
        governor: Governor,
        session: Session,
        session_key: str,
        model: str,
        servers: Mapping[str, str] | None = None,
    ) -> None:
        self.governor = governor
        #: The options' MCP servers (:func:`~.values.server_names`), to name their tools.
        self.servers: Mapping[str, str] = servers or {}
        self.session = session
        self.session_key = session_key
        self.model = model
        self.ops: OpIndex[ToolOp] = OpIndex()
        self._lanes: dict[str | None, _Lane] = {None: _Lane(None)}
        self._usage: list[Usage] = []
        self._unsettled: dict[str, str] = {}

    @property
    def turn(self) -> Turn | None:
        """The turn running now."""
        return self.session.turn

    # --- turns ---

    async def prompt(self, prompt: str) -> Turn:
        """A prompt was submitted: a new turn (``pre_turn`` decides)."""
        self._settle()
        turn = await self.session.start_turn(prompt)
        self._usage = []
        self._lanes = {None: _Lane(None)}
        if turn.allowed:
            self._expect_model(None)
        return turn

    async def current_turn(self) -> Turn:
        """The running turn; one without a prompt when a callback came before any prompt."""
        turn = self.session.turn
        if turn is None:
            turn = await self.prompt("")
        return turn

    async def stop(self, last_message: str) -> ChatResponse | None:
        """The agent wants to stop: ``post_turn`` hooks run.

        Returns:
            ``None`` when the turn ended; otherwise the request to go on (its ``text``).
        """
        self._settle()
        turn = self.session.turn
        if turn is None:
            return None
        response = ChatResponse(
            text=last_message, model=self.model, usage=_total(self._usage), provider=PROVIDER
        )
        verdict = await turn.stop(response)
        if verdict.allowed:
            return None
        self._expect_model(None)  # the agent goes on: it asks the model again
        return ChatResponse(text=verdict.message)

    def result(self, message: Mapping[str, Any]) -> Awaitable[None] | None:
        """The CLI's result for the turn: a turn still open here ended abnormally.

        Returns:
            The work that ends the turn (run it soon), or ``None`` when none is open.
        """
        turn = self.session.turn  # captured now: the next prompt may open another
        if turn is None or turn.ended:
            return None
        reason = str(message.get("terminal_reason") or "")
        if reason.startswith("aborted"):
            self._unsettled.clear()  # interrupted, not refused: the turn's end closes them
            return turn.end(asyncio.CancelledError(f"the turn was interrupted ({reason})"))
        if message.get("is_error"):
            errors = message.get("errors") or [message.get("subtype") or "error result"]
            return turn.end(TurnFailed("; ".join(str(e) for e in errors)))
        return turn.end()

    # --- tool calls ---

    async def pre_tool(
        self, data: Mapping[str, Any], tool_use_id: str | None, native_ask: bool
    ) -> ToolVerdict:
        """``PreToolUse``: open the call and let the runner decide."""
        self._settle()
        turn = await self.current_turn()
        name = str(data.get("tool_name", ""))
        call = tool_call(name, data.get("tool_input"), tool_use_id, self.servers)
        if not turn.allowed or turn.ended:
            return ToolVerdict(False, call, "the turn was blocked")
        lane = self._lane(data.get("agent_id"))
        if lane.chat_open:
            # The model call that asked for this tool is over. A subagent's messages reach the
            # stream late (its last one never), so its calls end here, without usage.
            lane.chat_open = False
            turn.model_call_finished(LlmResponse(self.model, provider=PROVIDER), lane.run)
        op = turn.open_tool(call, lane.run)
        self.ops.add(op, call.id)
        lane.waiting.add(call.id)
        verdict = await op.decide(native_ask=native_ask)
        if verdict.denied:
            self._closed(op)
        return verdict

    async def post_tool(self, data: Mapping[str, Any], tool_use_id: str | None) -> None:
        """``PostToolUse``: the call returned."""
        op = self.ops.find(call_id=tool_use_id or "")
        if op is None:
            return
        await op.returned(data.get("tool_response"))
        self._closed(op)

    async def tool_failed(self, data: Mapping[str, Any], tool_use_id: str | None) -> None:
        """``PostToolUseFailure``: ``on_tool_error`` runs; Claude cannot take a recovery."""
        op = self.ops.find(call_id=tool_use_id or "")
        if op is None:
            return
        error = ClaudeToolError(str(data.get("error") or "the tool failed"))
        await op.failed(error, recoverable=False)
        self._closed(op)

    def refused(self, tool_use_id: str, message: str) -> None:
        """Claude's own permission check refused a call hookscope allowed."""
        op = self.ops.find(call_id=tool_use_id)
        if op is not None and not op.scope.ended:
            op.close(PermissionRefused(message or "refused by Claude Code's permission check"))
            self._closed(op)

    def op(self, tool_use_id: str | None) -> ToolOp | None:
        """The call ``tool_use_id`` names, if known."""
        return self.ops.find(call_id=tool_use_id or "")

    def _closed(self, op: ToolOp, expect_model: bool = True) -> None:
        self.ops.close(op)
        lane = self._lanes.get(op.run.run_id if op.run is not None else None)
        if lane is None:
            return
        lane.waiting.discard(op.call_id)
        if not lane.waiting and expect_model:
            self._expect_model(op.run.run_id if op.run is not None else None)

    # --- subagents ---

    async def subagent_started(self, agent_id: str, agent_type: str) -> None:
        """``SubagentStart``: the run opens under the newest ``Agent`` call without one."""
        turn = await self.current_turn()
        if turn.ended:
            return
        taken = {run.delegating for run in turn.runs.values()}
        delegating = next(
            (
                op
                for op in reversed(turn.ops)
                if op.call.name in SUBAGENT_TOOLS and op.run is None and op not in taken
            ),
            None,
        )
        run = turn.start_subagent(agent_id, agent_type or "subagent", delegating)
        self._lanes[agent_id] = _Lane(run)
        self._expect_model(agent_id)

    def subagent_stopped(self, agent_id: str) -> None:
        """``SubagentStop``: the run ends (its open calls end interrupted)."""
        turn = self.session.turn
        self._lanes.pop(agent_id, None)
        if turn is not None:
            turn.end_subagent(agent_id)

    # --- the message stream ---

    def assistant(self, message: Mapping[str, Any], parent_tool_use_id: str | None) -> None:
        """An assistant message: it ends the model call its lane was waiting on."""
        self._settle()
        turn = self.session.turn
        if turn is None or turn.ended:
            return
        if parent_tool_use_id is not None:
            # A subagent's messages reach the stream late (its last one never): its model
            # calls are timed by its hooks alone, without usage, the same on every run.
            return
        lane = self._lanes[None]
        response = llm_response(message)
        self.model = response.model
        for call in response.tool_calls:
            lane.waiting.add(call.id)
        message_id = str(message.get("id") or "")
        if message_id and message_id == lane.message_id:
            return  # another content block of the same model response
        lane.message_id = message_id
        if not lane.chat_open:
            turn.model_call_started(LlmRequest(response.model, provider=PROVIDER), lane.run)
        lane.chat_open = False
        turn.model_call_finished(response, lane.run)
        if response.usage is not None:
            self._usage.append(response.usage)

    def tool_result(self, block: Mapping[str, Any]) -> None:
        """A tool result in the stream for a call still open: it got no ``PostToolUse``.

        Either Claude's own permission check refused the call, or the user interrupted the
        turn. Which one shows next: a result that says the turn was aborted ends it (and the
        call) cancelled; anything else the conversation does settles it as refused.
        """
        tool_use_id = str(block.get("tool_use_id") or "")
        op = self.ops.find(call_id=tool_use_id)
        if op is not None and not op.scope.ended and op.phase == "allowed":
            self._unsettled[tool_use_id] = _text(block.get("content"))

    def _settle(self) -> None:
        unsettled, self._unsettled = self._unsettled, {}
        for tool_use_id, text in unsettled.items():
            self.refused(tool_use_id, text)

    def _lane(self, agent_id: Any) -> _Lane:
        lane = self._lanes.get(agent_id) if isinstance(agent_id, str) else None
        return lane or self._lanes[None]

    def _expect_model(self, lane_key: str | None) -> None:
        turn = self.session.turn
        lane = self._lanes.get(lane_key)
        if turn is None or turn.ended or lane is None or lane.chat_open:
            return
        lane.chat_open = True
        turn.model_call_started(LlmRequest(self.model, provider=PROVIDER), lane.run)

    # --- the end ---

    async def end(self, error: BaseException | None = None) -> None:
        """The CLI is gone: an open turn ends interrupted, then the session."""
        turn = self.session.turn
        if turn is not None and error is None:
            await turn.end(TurnInterrupted("the CLI exited during the turn"))
        await self.session.end(error)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, Mapping))
    return ""


def _total(usages: list[Usage]) -> Usage | None:
    if not usages:
        return None
    return Usage(
        input_tokens=sum(u.input_tokens for u in usages),
        output_tokens=sum(u.output_tokens for u in usages),
        cache_read_tokens=sum(u.cache_read_tokens for u in usages),
        cache_creation_tokens=sum(u.cache_creation_tokens for u in usages),
    )


def result_usage(message: Mapping[str, Any]) -> Usage | None:
    """The turn's total usage from the CLI's result message."""
    return usage(message.get("usage"))
