"""The CLI's message stream, tapped: model calls, tool results, turn results, the CLI's exit.

Hook callbacks cannot see model calls, so hookscope reads the messages the CLI writes, where
the SDK reads them: each raw message the subprocess transport yields is shown to the
conversation it names (by ``session_id``) before the SDK routes it. The tap is installed once
per process, passes every message through unchanged, and costs one dictionary lookup per
message for a conversation hookscope does not run. When the transport's stream ends (the client
disconnected, ``query()`` finished, the CLI exited) the conversations it carried end.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, Final

from hookscope.integrations._kit import ToolOp
from hookscope.integrations.claude_agent_sdk.conversation import Conversation

__all__ = [
    "conversation",
    "conversation_of",
    "find_ops",
    "install",
    "register",
    "tap",
]

logger = logging.getLogger("hookscope.integrations.claude_agent_sdk")

#: The transport whose ``read_messages`` is tapped.
TRANSPORT: Final = (
    "claude_agent_sdk._internal.transport.subprocess_cli",
    "SubprocessCLITransport.read_messages",
)

_CONVERSATIONS: dict[str, Conversation] = {}
_ENDING: set[asyncio.Task[None]] = set()
_installed = False


def register(key: str, conversation: Conversation) -> None:
    """Route the messages of CLI session ``key`` to ``conversation``."""
    _CONVERSATIONS[key] = conversation


def conversation(key: str) -> Conversation | None:
    """The conversation of CLI session ``key``."""
    return _CONVERSATIONS.get(key)


def conversation_of(op: ToolOp) -> Conversation | None:
    """The conversation ``op`` belongs to."""
    session = op.turn.session
    return next((c for c in _CONVERSATIONS.values() if c.session is session), None)


def find_ops(tool_use_id: str) -> list[ToolOp]:
    """Every open call ``tool_use_id`` names: one, unless concurrent sessions reuse ids."""
    return [op for found in _CONVERSATIONS.values() if (op := found.op(tool_use_id)) is not None]


def install() -> None:
    """Tap the subprocess transport (once per process; stays installed)."""
    global _installed
    if _installed:
        return
    from wrapt import wrap_function_wrapper

    wrap_function_wrapper(*TRANSPORT, _wrapper)
    _installed = True


def _wrapper(
    wrapped: Callable[..., AsyncIterator[dict[str, Any]]],
    instance: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> AsyncIterator[dict[str, Any]]:
    return tap(wrapped(*args, **kwargs))


async def tap(messages: AsyncIterator[dict[str, Any]]) -> AsyncIterator[dict[str, Any]]:
    """Show each message to its conversation, then pass it on unchanged."""
    seen: dict[str, Conversation] = {}
    error: BaseException | None = None
    try:
        async for message in messages:
            if _CONVERSATIONS:
                key = message.get("session_id")
                found = _CONVERSATIONS.get(key) if isinstance(key, str) else None
                if found is not None:
                    seen[found.session_key] = found
                    _show(found, message)
            yield message
    except GeneratorExit:
        raise
    except BaseException as exc:
        error = exc
        raise
    finally:
        for found in seen.values():
            _end_later(found, None if error is None or _quiet_end(error) else error)


def _quiet_end(error: BaseException) -> bool:
    # Cancelling the SDK's reader is how a client disconnects: the conversation completed.
    return isinstance(error, asyncio.CancelledError) or type(error).__name__ == "Cancelled"


def _show(found: Conversation, message: Mapping[str, Any]) -> None:
    try:
        kind = message.get("type")
        if kind == "assistant":
            body = message.get("message")
            if isinstance(body, Mapping):
                found.assistant(body, message.get("parent_tool_use_id"))
        elif kind == "user":
            body = message.get("message")
            content = body.get("content") if isinstance(body, Mapping) else None
            if isinstance(content, list):
                for block in content:
                    if isinstance(block, Mapping) and block.get("type") == "tool_result":
                        found.tool_result(block)
        elif kind == "result":
            ending = found.result(message)
            if ending is not None:
                _later(ending)
        elif kind == "system" and message.get("subtype") == "init":
            model = message.get("model")
            if isinstance(model, str) and model:
                found.model = model
    except Exception:  # telemetry only: the SDK must get its message whatever happens here
        logger.exception("hookscope could not read a Claude Code message; telemetry may miss it")


def _end_later(found: Conversation, error: BaseException | None) -> None:
    if _CONVERSATIONS.get(found.session_key) is found:
        del _CONVERSATIONS[found.session_key]
    # The reader may be cancelled: ending (on_session_end hooks) runs in a task of its own.
    _later(found.end(error))


def _later(work: Any) -> None:
    try:
        task = asyncio.get_running_loop().create_task(work)
    except RuntimeError:  # no loop any more: nothing can run the hooks
        work.close()
        return
    _ENDING.add(task)
    task.add_done_callback(_ENDING.discard)


async def drain() -> None:
    """Wait for conversations being ended (tests, shutdown)."""
    while _ENDING:
        await asyncio.gather(*tuple(_ENDING), return_exceptions=True)
