"""Govern mode: the runner decides at the SDK's seams (DESIGN §10).

A :class:`Governor` holds the user's :class:`~hookscope.runner.HookRunner` and opens sessions
for an adapter; the session, turn and call objects (:mod:`.lifecycle`) run the runner's hooks
and report through its one notifier. Around seams (the SDK calls one function that runs the
tool) use :meth:`Turn.run_tool <hookscope.integrations._kit.lifecycle.Turn.run_tool>` or
:func:`run_tool`; split seams (before/after callbacks, maybe in different tasks) use
:class:`~hookscope.integrations._kit.lifecycle.ToolOp`.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any, final

from opentelemetry import context as otel_context
from opentelemetry import trace

from hookscope._scopes import ToolOutcome
from hookscope.context import NEST_SESSION_KEY, SessionContext
from hookscope.integrations._kit.guard import Guard
from hookscope.integrations._kit.identity import choose_session_id
from hookscope.integrations._kit.lifecycle import Session, SubagentRun, Turn
from hookscope.runner import HookRunner
from hookscope.types import ToolCall

__all__ = ["Governor", "run_tool"]


@final
class Governor:
    """The user's runner, wired into one SDK.

    Args:
        runner: The hooks, policy and observers that govern and trace the agent.
        sdk: The SDK's name, for log lines and failure denials (``"claude-agent-sdk"``).
        agent_name: ``gen_ai.agent.name`` of every session (telemetry's default when empty).
        provider: The model provider (``gen_ai.provider.name``) when the SDK fixes it.

    Raises:
        TypeError: ``runner`` is not a :class:`~hookscope.runner.HookRunner` (a notifier or a
            hookless runner would trace and enforce nothing: a silent fail-open).
    """

    __slots__ = ("__weakref__", "_idle", "_open", "agent_name", "guard", "provider", "runner")

    def __init__(
        self,
        runner: HookRunner,
        sdk: str,
        *,
        agent_name: str | None = None,
        provider: str | None = None,
    ) -> None:
        if not isinstance(runner, HookRunner):
            raise TypeError(
                f"govern needs a hookscope.HookRunner, got {type(runner).__name__}; "
                "build one with HookRunner([OTelHook(), enforce([...]), ...])"
            )
        self.runner = runner
        self.agent_name = agent_name or ""
        self.provider = provider
        self.guard = Guard(sdk)
        self._open: weakref.WeakSet[Session] = weakref.WeakSet()
        #: Run once no session is open (:meth:`when_idle`).
        self._idle: list[Callable[[], None]] = []

    async def open_session(
        self,
        *,
        session_id: str | None = None,
        ambient_id: str | None = None,
        sdk_id: str | None = None,
        agent_name: str | None = None,
        parent: otel_context.Context | None = None,
        nest: bool = False,
    ) -> Session:
        """Open a session and run ``on_session_start``.

        Args:
            session_id: An id the application gave explicitly; wins over everything.
            ambient_id: The id the application propagated where its call entered the SDK
                (:func:`~hookscope.integrations._kit.identity.ambient_session_id`).
            sdk_id: The SDK's conversation id, recorded as ``gen_ai.conversation.id`` and
                used as ``session.id`` only when the application gave none.
            agent_name: This session's agent name (the governor's when ``None``).
            parent: The OpenTelemetry context the application called from (linked to, or
                nested under when ``nest``).
            nest: Record the session under the span current in ``parent`` (an agent run
                inside another agent's tool) instead of a trace of its own linked to it.
        """
        context = SessionContext(
            choose_session_id(session_id, ambient_id, sdk_id),
            agent_name or self.agent_name,
            self.provider,
        )
        context.conversation_id = sdk_id
        if nest:
            context.set(NEST_SESSION_KEY, True)
        session = Session(self.runner, context, parent, self._session_ended)
        self._open.add(session)
        try:
            with session.scope.current():
                await self.runner.dispatch_on_session_start(context)
        except BaseException as error:
            await session.end(error)
            raise
        return session

    @property
    def sessions(self) -> tuple[Session, ...]:
        """The sessions open now."""
        return tuple(s for s in self._open if not s.ended)

    def when_idle(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` once no session is open: now, or when the last one ends.

        ``uninstrument()`` removes the ``OTelHook`` it added this way, so sessions already
        running stay traced (and governed) until they end, as a span started before an
        OpenTelemetry instrumentor was removed still ends.
        """
        if self.sessions:
            self._idle.append(callback)
        else:
            callback()

    def _session_ended(self, session: Session) -> None:
        self._open.discard(session)
        if self._idle and not self.sessions:
            callbacks, self._idle = self._idle, []
            for callback in callbacks:
                self.guard.observe(callback)()

    async def close_all(self, error: BaseException | None = None) -> None:
        """End every open session (at interpreter or test end; ``uninstrument`` does not)."""
        for session in self.sessions:
            await session.end(error)


async def run_tool(
    turn: Turn,
    call: ToolCall,
    invoke: Callable[[ToolCall], Any],
    run: SubagentRun | None = None,
) -> ToolOutcome:
    """The around seam, for SDKs that call one function to run a tool.

    ``pre_tool_call`` decides; an allowed call runs ``invoke(effective_call)``, then
    ``post_tool_call``; a raising tool goes to ``on_tool_error`` (a recovery's value is the
    outcome's). A denied call returns ``allowed=False`` with the message for the model.

    Raises:
        Exception: the tool's own, unchanged, when no hook recovered it.
    """
    return await turn.run_tool(call, invoke, run)


def current_parent() -> otel_context.Context | None:
    """The application's OpenTelemetry context when a span is current in it, else ``None``."""
    current = otel_context.get_current()
    return current if trace.get_current_span(current).get_span_context().is_valid else None
