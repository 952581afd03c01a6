"""Sessions of SDKs that have no session object, found by the SDK's conversation key.

LangGraph keeps a conversation under a ``thread_id``, pydantic-ai under a ``conversation_id``
carried by the message history, and neither says when a conversation is over. DESIGN §10: such
a session runs from the key's first run to its last; the last is known only afterwards, so a
session ends when the application says so (:meth:`KeyedSessions.end`, :meth:`end_all`), or once
it has been idle for ``idle_s`` when the next run of any key starts (no timer task: nothing runs
in the background of the application).
"""

from __future__ import annotations

import asyncio
from time import monotonic
from typing import Final, final

from opentelemetry import context as otel_context

from hookscope.integrations._kit.govern import Governor
from hookscope.integrations._kit.lifecycle import Session

__all__ = ["DEFAULT_IDLE_S", "KeyedSessions"]

#: How long a keyed session may wait for its next run before it is ended (seconds).
DEFAULT_IDLE_S: Final = 1800.0


@final
class KeyedSessions:
    """One open :class:`~hookscope.integrations._kit.lifecycle.Session` per SDK key.

    Args:
        governor: Opens the sessions (its runner governs them).
        idle_s: A session with no turn running for this long is ended when another run starts;
            ``None`` keeps sessions open until :meth:`end` or :meth:`end_all`.
    """

    __slots__ = ("_last", "_open", "_opening", "governor", "idle_s")

    def __init__(self, governor: Governor, *, idle_s: float | None = DEFAULT_IDLE_S) -> None:
        self.governor = governor
        self.idle_s = idle_s
        self._open: dict[str, Session] = {}
        self._last: dict[str, float] = {}
        self._opening: dict[str, asyncio.Future[Session]] = {}

    async def session_for(
        self,
        key: str,
        *,
        agent_name: str | None = None,
        ambient_id: str | None = None,
        parent: otel_context.Context | None = None,
    ) -> Session:
        """The open session of ``key``, opened (``on_session_start``) on its first run.

        Args:
            key: The SDK's conversation id (recorded as ``gen_ai.conversation.id``).
            agent_name: The session's agent name when it opens.
            ambient_id: A session id the application propagates (wins over ``key``).
            parent: The OpenTelemetry context the application called from.
        """
        await self._sweep(key)
        self._last[key] = monotonic()
        session = self._open.get(key)
        if session is not None and not session.ended:
            return session
        pending = self._opening.get(key)
        if pending is not None:  # another task is opening it: share that session
            return await asyncio.shield(pending)
        try:  # a synchronous run (driven without a loop) cannot interleave with another
            opening: asyncio.Future[Session] | None = asyncio.get_running_loop().create_future()
        except RuntimeError:
            opening = None
        if opening is not None:
            self._opening[key] = opening
        try:
            session = await self.governor.open_session(
                sdk_id=key, ambient_id=ambient_id, agent_name=agent_name, parent=parent
            )
        except BaseException as error:
            if opening is not None:
                opening.set_exception(error)
                opening.exception()  # retrieved: no "never retrieved" warning when none waits
            raise
        finally:
            self._opening.pop(key, None)
        self._open[key] = session
        if opening is not None:
            opening.set_result(session)
        return session

    def get(self, key: str) -> Session | None:
        """The open session of ``key``, if any."""
        session = self._open.get(key)
        return session if session is not None and not session.ended else None

    async def end(self, key: str, error: BaseException | None = None) -> bool:
        """End the session of ``key`` (``on_session_end`` runs). ``False`` when none is open."""
        session = self._open.pop(key, None)
        self._last.pop(key, None)
        if session is None or session.ended:
            return False
        await session.end(error)
        return True

    async def end_all(self, error: BaseException | None = None) -> int:
        """End every open session; how many there were."""
        ended = 0
        for key in list(self._open):
            ended += await self.end(key, error)
        return ended

    async def _sweep(self, current: str) -> None:
        if self.idle_s is None:
            return
        now = monotonic()
        for key, last in list(self._last.items()):
            session = self._open.get(key)
            idle = session is not None and session.turn is None and now - last >= self.idle_s
            if key != current and idle:
                await self.end(key)
