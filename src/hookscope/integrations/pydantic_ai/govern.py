"""``govern(agent, runner)`` and the instrumentor: how the capability reaches each run.

Every way pydantic-ai runs an agent (``run``, ``run_sync``, ``run_stream``, ``iter``) goes
through ``Agent.iter``, which takes per-run ``capabilities``; hookscope adds its capability
there, after the application's, so the agent's own configuration is never rewritten.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar, Final, TypeVar

from hookscope.integrations._kit import Governor, SessionBinder, Target
from hookscope.integrations._kit.keyed import DEFAULT_IDLE_S
from hookscope.integrations._kit.keyed_govern import GovernedSet, KeyedInstrumentor
from hookscope.integrations.pydantic_ai.capability import AskMode, Governed, HookscopeCapability
from hookscope.runner import HookRunner

__all__ = ["INSTRUMENTS", "PydanticAIInstrumentor", "end_sessions", "govern"]

#: The pydantic-ai versions this adapter is written against (the ``pydantic-ai`` extra).
INSTRUMENTS: Final = ("pydantic-ai-slim >= 2.68, < 3",)
_SDK: Final = "pydantic-ai"

A = TypeVar("A")

#: Every live governed agent or instrumentation, for end_sessions().
_ALL: Final = GovernedSet(_SDK, Governed)
#: Agents governed explicitly: the instrumentor leaves them to their own runner.
#: (Agents are unhashable dataclasses: bound by identity, weakly.)
_GOVERNED: SessionBinder[Any, Governed] = SessionBinder()


def govern(
    agent: A,
    runner: HookRunner,
    *,
    agent_name: str | None = None,
    ask: AskMode = "hookscope",
    session_idle_s: float | None = DEFAULT_IDLE_S,
) -> A:
    """Govern and trace every run of a pydantic-ai ``Agent`` with ``runner``.

    Args:
        agent: A ``pydantic_ai.Agent``; returned as it is, used as before.
        runner: The hooks, policy and observers (an ``OTelHook`` traces).
        agent_name: ``gen_ai.agent.name`` of its sessions (the agent's ``name`` when ``None``).
        ask: ``"hookscope"`` settles a hook's ask with ``on_interaction`` hooks (none answering
            denies); ``"native"`` raises pydantic-ai's ``ApprovalRequired`` so the run ends with
            ``DeferredToolRequests`` and the application approves through
            ``DeferredToolResults`` (the agent's ``output_type`` must admit them).
        session_idle_s: A conversation with no run for this long is ended when another run
            starts (``None``: only :func:`end_sessions` ends sessions).

    Returns:
        ``agent``.

    Raises:
        TypeError: ``agent`` is not a pydantic-ai ``Agent``, or ``runner`` not a ``HookRunner``.
    """
    from pydantic_ai import Agent

    if not isinstance(agent, Agent):
        raise TypeError(f"govern needs a pydantic_ai.Agent, got {type(agent).__name__}")
    governed = _ALL.govern(runner, agent_name=agent_name, ask=ask, session_idle_s=session_idle_s)
    if _GOVERNED.get(agent) is None:  # once per agent; governing again swaps the runner
        original = type(agent).iter.__get__(agent)

        def iter(*args: Any, **kwargs: Any) -> Any:
            return original(*args, **_with(kwargs, _GOVERNED.get(agent)))

        agent.iter = iter  # type: ignore[method-assign]
    _GOVERNED.bind(agent, governed)
    return agent


async def end_sessions() -> int:
    """End every open pydantic-ai session (``on_session_end`` runs); how many there were.

    pydantic-ai has no session object: a conversation runs until the application says it is
    over (or it is idle for ``session_idle_s``). Call this at shutdown, or between tests.
    """
    return await _ALL.end_sessions()


def _with(kwargs: dict[str, Any], governed: Governed | None) -> dict[str, Any]:
    if governed is None:
        return kwargs
    given = list(kwargs.get("capabilities") or ())
    if not any(isinstance(c, HookscopeCapability) for c in given):
        kwargs["capabilities"] = [*given, HookscopeCapability(governed)]
    return kwargs


class PydanticAIInstrumentor(KeyedInstrumentor[Governed]):
    """The zero-code way: every pydantic-ai ``Agent`` run is governed and traced.

    ``instrument(runner=None, tracer_provider=None, meter_provider=None, agent_name=None,
    ask="hookscope", session_idle_s=1800)``; agents passed to :func:`govern` keep their own
    runner. ``uninstrument()`` restores ``Agent.iter``; call :func:`end_sessions` to end the
    conversations still open.
    """

    sdk: ClassVar[str] = _SDK
    instruments: ClassVar[tuple[str, ...]] = INSTRUMENTS
    governed_set = _ALL

    def targets(self, governor: Governor) -> Iterable[Target]:
        governed = self.governed(governor)

        def iter_wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
            # An agent passed to govern() is left to its own runner.
            if _GOVERNED.get(instance) is not None:
                return wrapped(*args, **kwargs)
            return wrapped(*args, **_with(kwargs, governed))

        yield ("pydantic_ai.agent", "Agent.iter", iter_wrapper)
