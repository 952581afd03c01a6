"""``govern(agent, runner)``: an Agent whose tools, hooks and handoffs run the runner's hooks.

The governed agent is a clone (``Agent.clone``); the user's agent is left as it was. Its
function tools are copies with hookscope's tool input guardrail appended (the SDK's native deny:
``reject_content``), a wrapped ``on_invoke_tool`` (modified arguments, ``post_tool_call``,
``on_tool_error`` recoveries) and, with ``ask="native"``, a ``needs_approval`` that hands a
policy's ask to the SDK's own approval; its hooks report model responses and handoffs; its
handoff targets are governed the same way, recursively.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import dataclasses
import logging
import weakref
from typing import Any, Final, Literal, final

from agents import Agent, Handoff, ToolInputGuardrail

from hookscope.integrations._kit import (
    Governor,
    Session,
    SessionBinder,
    ambient_session_id,
    current_parent,
)
from hookscope.integrations.openai_agents.hooks import GovernedHooks
from hookscope.integrations.openai_agents.runs import BINDINGS, GOVERNED
from hookscope.integrations.openai_agents.tools import governed_tool, tool_guardrail
from hookscope.integrations.openai_agents.values import PROVIDER
from hookscope.runner import HookRunner

__all__ = [
    "SDK",
    "AskMode",
    "Binding",
    "end_session",
    "govern",
]

logger = logging.getLogger("hookscope.integrations")

AskMode = Literal["hookscope", "native"]
_ASK_MODES: Final = ("hookscope", "native")
#: The SDK's distribution name, in log lines and failure denials.
SDK: Final = "openai-agents"


@final
class Binding:
    """One runner wired into the SDK: how its agents are governed and where sessions live.

    Args:
        governor: The runner (hooks, policy and observers), wired into this SDK.
        agent_name: ``gen_ai.agent.name`` of every session; the starting agent's name when
            ``None``.
        ask: Who settles a policy's ask: hookscope's confirm path (``on_interaction`` hooks)
            or the SDK's own ``needs_approval`` (``"native"``).
    """

    __slots__ = (
        "__weakref__",
        "_clones",
        "_ending",
        "_live",
        "_sessions",
        "agent_name",
        "ask",
        "governor",
        "guardrail",
    )

    def __init__(self, governor: Governor, agent_name: str | None, ask: AskMode) -> None:
        if ask not in _ASK_MODES:
            raise ValueError(f"ask must be 'hookscope' or 'native', got {ask!r}")
        self.governor = governor
        BINDINGS.add(self)
        self.agent_name = agent_name
        self.ask: AskMode = ask
        self.guardrail: ToolInputGuardrail[Any] = tool_guardrail(self)
        # The user's agent (by identity: Agents are unhashable dataclasses) → its clone.
        self._clones: SessionBinder[Agent[Any], Agent[Any]] = SessionBinder()
        # An SDK Session object → its hookscope session; the open ones held until they end.
        self._sessions: SessionBinder[Any, Session] = SessionBinder()
        self._live: set[Session] = set()
        self._ending: set[asyncio.Task[None]] = set()

    @property
    def runner(self) -> HookRunner:
        """The runner the governed agents report to."""
        return self.governor.runner

    def agent(self, agent: Agent[Any]) -> Agent[Any]:
        """``agent``'s governed clone (made once); a governed agent itself is returned as is."""
        if GOVERNED.get(agent) is not None or isinstance(agent.hooks, GovernedHooks):
            return agent  # governed already (or a copy the application made of one)
        known = self._clones.get(agent)
        if known is not None:
            return known
        clone = agent.clone(
            tools=[governed_tool(tool, self) for tool in agent.tools],
            hooks=GovernedHooks(agent.hooks, self),
        )
        self._clones.bind(agent, clone)
        GOVERNED.bind(clone, self)
        # Handoff targets after the clone is known: agents that hand back to it find it.
        clone.handoffs = [self._handoff(h) for h in agent.handoffs]
        return clone

    def _handoff(self, target: Agent[Any] | Handoff[Any, Any]) -> Any:
        if isinstance(target, Agent):
            return self.agent(target)
        if isinstance(target, Handoff):
            invoke = target.on_invoke_handoff

            async def on_invoke_handoff(context: Any, arguments: str) -> Any:
                return self.agent(await invoke(context, arguments))

            return dataclasses.replace(target, on_invoke_handoff=on_invoke_handoff)
        return target

    async def session_for(
        self, sdk_session: Any, agent: Agent[Any], conversation_id: str | None
    ) -> tuple[Session, bool]:
        """The hookscope session of an SDK ``Session`` (opened at its first run), or a new
        session for this run alone when there is none (``owned``: end it with the run)."""
        if sdk_session is not None:
            known = self._sessions.get(sdk_session)
            if known is not None and not known.ended:
                return known, False
        sdk_id = getattr(sdk_session, "session_id", None) if sdk_session is not None else None
        session = await self.governor.open_session(
            ambient_id=ambient_session_id(),
            sdk_id=sdk_id if isinstance(sdk_id, str) else conversation_id,
            agent_name=self.agent_name or agent.name,
            parent=current_parent(),
        )
        if sdk_session is None:
            return session, True
        self._sessions.bind(sdk_session, session)
        self._live.add(session)
        weakref.finalize(sdk_session, self._dropped, session, asyncio.get_running_loop())
        return session, False

    def _dropped(self, session: Session, loop: asyncio.AbstractEventLoop) -> None:
        # The application let go of its SDK Session: that conversation is over. Ended on the
        # loop that opened it. The cycle collector runs this finalizer in whichever thread
        # happened to allocate (the exporter's, an HTTP client's…), so from another thread the
        # end is handed to that loop; with the loop closed (interpreter exit), the session is
        # ended by end_sessions_at_exit.
        if session.ended:
            self._live.discard(session)
            return
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            self._end_soon(session)
            return
        with contextlib.suppress(RuntimeError):  # a closed loop: nothing can run the hooks
            loop.call_soon_threadsafe(self._end_soon, session)

    def _end_soon(self, session: Session) -> None:
        task = asyncio.get_running_loop().create_task(self._end(session))
        self._ending.add(task)
        task.add_done_callback(self._ending.discard)

    async def _end(self, session: Session, error: BaseException | None = None) -> None:
        self._live.discard(session)
        await session.end(error)

    async def end_session(self, sdk_session: Any, error: BaseException | None = None) -> bool:
        """End the hookscope session of ``sdk_session``; ``False`` when none is open."""
        known = self._sessions.pop(sdk_session)
        if known is None or known.ended:
            return False
        await self._end(known, error)
        return True

    @property
    def open_sessions(self) -> tuple[Session, ...]:
        """The sessions of SDK Session objects that have not ended yet."""
        return tuple(s for s in self._live if not s.ended)

    async def end_all(self) -> None:
        """End every session still open."""
        self._sessions = SessionBinder()
        for session in self.open_sessions:
            await self._end(session)
        await self.governor.close_all()


def govern(
    agent: Agent[Any],
    runner: HookRunner,
    *,
    agent_name: str | None = None,
    ask: AskMode = "hookscope",
) -> Agent[Any]:
    """Return a clone of ``agent`` that ``runner`` governs and traces; run it as before.

    ``Runner.run(governed, ...)`` / ``run_streamed`` / ``run_sync`` is one turn; runs sharing
    an SDK ``Session`` are one session (end it with :func:`end_session`), a run without one is
    a session of its own. Every function tool call goes through ``pre_tool_call`` (a denial
    reaches the model as the tool's output), modified arguments reach the tool, a recovery
    replaces a failed tool's output; model calls go through ``pre_llm_request`` and
    ``on_llm_response``; handoffs and agents used as tools are ``invoke_agent`` runs.

    Args:
        agent: The agent to govern (left unchanged).
        runner: The hooks, policy and observers (an ``OTelHook`` in it traces).
        agent_name: ``gen_ai.agent.name`` of the sessions; the agent's name when ``None``.
        ask: ``"hookscope"`` (default): a policy's ask is settled by ``on_interaction`` hooks
            (no answer denies); ``"native"``: it becomes the SDK's tool approval
            (``result.interruptions``, ``state.approve``/``reject``, run again).

    Raises:
        TypeError: ``agent`` is not an ``agents.Agent`` or ``runner`` not a ``HookRunner``.
        ValueError: ``ask`` is neither mode.
    """
    if not isinstance(agent, Agent):
        raise TypeError(f"govern needs an agents.Agent, got {type(agent).__name__}")
    from hookscope.integrations.openai_agents.instrumentor import GOVERN_OWNER, ensure_run_seams

    governor = Governor(runner, SDK, agent_name=agent_name, provider=PROVIDER)
    binding = Binding(governor, agent_name, ask)
    ensure_run_seams(GOVERN_OWNER)
    return binding.agent(agent)


def end_sessions_at_exit() -> None:
    """At interpreter exit: end the sessions still open, so their spans are exported.

    The SDK never says a conversation is over, and an app (notably a zero-code one) may never
    call :func:`end_session`; without this the session spans, the traces' roots, would be lost.
    Runs before OpenTelemetry's own exit handler flushes the providers.
    """
    open_bindings = [b for b in tuple(BINDINGS) if b.open_sessions or b.governor.sessions]
    if not open_bindings:
        return

    async def end_all() -> None:
        for binding in open_bindings:
            await binding.end_all()

    try:
        asyncio.run(end_all())
    except Exception:  # at exit nothing may raise; the spans are what is lost
        logger.warning("hookscope could not end the open openai-agents sessions", exc_info=True)


atexit.register(end_sessions_at_exit)


async def end_session(sdk_session: Any, error: BaseException | None = None) -> bool:
    """End the hookscope session of an SDK ``Session`` (``on_session_end`` runs, its span ends).

    The SDK never says a conversation is over; call this when yours is (the instrumentor's
    ``uninstrument()`` ends the sessions still open). Returns ``False`` when none was open.
    """
    ended = False
    for binding in tuple(BINDINGS):
        ended = await binding.end_session(sdk_session, error) or ended
    return ended
