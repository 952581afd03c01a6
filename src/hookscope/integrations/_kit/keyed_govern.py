"""``govern()`` and the instrumentor of an SDK whose sessions are keyed (DESIGN §10).

Google ADK, LangGraph and pydantic-ai share one shape: each ``govern()`` (or instrumentation)
is a :class:`Governed` — a governor, how asks are settled, and the
:class:`~hookscope.integrations._kit.keyed.KeyedSessions` it opened — and the adapter's
``end_sessions()`` ends the sessions of every live one. :class:`GovernedSet` holds them (weakly:
a governed agent that is collected takes its state along) and :class:`KeyedInstrumentor` reads
``ask``/``session_idle_s`` from ``instrument()``.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any, Generic, Literal, TypeVar, cast, final

from hookscope.integrations._kit.govern import Governor
from hookscope.integrations._kit.instrumenting import KitInstrumentor
from hookscope.integrations._kit.keyed import DEFAULT_IDLE_S, KeyedSessions
from hookscope.runner import HookRunner

__all__ = ["AskMode", "Governed", "GovernedSet", "KeyedInstrumentor", "check_ask"]

#: ``"hookscope"`` settles a hook's ask with ``on_interaction`` hooks; ``"native"`` with the
#: SDK's own approval mechanism.
AskMode = Literal["hookscope", "native"]


def check_ask(ask: str) -> AskMode:
    """``ask`` when it is an :data:`AskMode`.

    Raises:
        ValueError: any other value.
    """
    if ask in ("hookscope", "native"):
        return cast(AskMode, ask)
    raise ValueError(f"ask must be 'hookscope' or 'native', got {ask!r}")


class Governed:
    """One ``govern()`` (or instrumentation): the runner's governor and its keyed sessions.

    Args:
        governor: The runner, wired in.
        ask: How a hook's ask is settled (``"native"``: the SDK's approval).
        idle_s: See :class:`~hookscope.integrations._kit.keyed.KeyedSessions`.
    """

    __slots__ = ("__weakref__", "ask", "governor", "sessions")

    def __init__(self, governor: Governor, ask: AskMode, idle_s: float | None) -> None:
        self.governor = governor
        self.ask = ask
        self.sessions = KeyedSessions(governor, idle_s=idle_s)


G = TypeVar("G", bound=Governed)


@final
class GovernedSet(Generic[G]):
    """Every live :class:`Governed` of one SDK, for its ``end_sessions()``.

    Args:
        sdk: The SDK's name (the governors' ``sdk``).
        make: Builds one (the adapter's :class:`Governed` or a subclass).
    """

    __slots__ = ("_all", "make", "sdk")

    def __init__(self, sdk: str, make: Callable[[Governor, AskMode, float | None], G]) -> None:
        self.sdk = sdk
        self.make = make
        self._all: weakref.WeakSet[G] = weakref.WeakSet()

    def govern(
        self,
        runner: HookRunner,
        *,
        agent_name: str | None,
        ask: str,
        session_idle_s: float | None,
    ) -> G:
        """A new :class:`Governed` for ``govern(…, runner, …)``'s arguments.

        Raises:
            ValueError: ``ask`` is not an :data:`AskMode`.
            TypeError: ``runner`` is not a ``HookRunner``.
        """
        mode = check_ask(ask)
        return self.adopt(Governor(runner, self.sdk, agent_name=agent_name), mode, session_idle_s)

    def adopt(self, governor: Governor, ask: AskMode, session_idle_s: float | None) -> G:
        """A new :class:`Governed` of ``governor``, tracked for :meth:`end_sessions`."""
        governed = self.make(governor, ask, session_idle_s)
        self._all.add(governed)
        return governed

    async def end_sessions(self) -> int:
        """End every open session of every live one (``on_session_end`` runs); how many."""
        ended = 0
        for governed in list(self._all):
            ended += await governed.sessions.end_all()
        return ended


class KeyedInstrumentor(KitInstrumentor, Generic[G]):
    """A :class:`~hookscope.integrations._kit.instrumenting.KitInstrumentor` whose
    ``instrument()`` also takes ``ask="hookscope"`` and ``session_idle_s=1800``.

    Subclasses set :attr:`governed_set`; their :meth:`targets` take the instrumentation's
    :class:`Governed` from :meth:`governed`.
    """

    #: Where this SDK's :class:`Governed` are made and tracked.
    governed_set: GovernedSet[G]
    _options: tuple[AskMode, float | None] = ("hookscope", DEFAULT_IDLE_S)
    _governed: G | None = None

    def _instrument(self, **kwargs: Any) -> None:
        ask = check_ask(kwargs.get("ask") or "hookscope")
        self._options = (ask, kwargs.get("session_idle_s", DEFAULT_IDLE_S))
        super()._instrument(**kwargs)

    def governed(self, governor: Governor) -> G:
        """The :class:`Governed` of this instrumentation, made from ``governor``."""
        governed = self.governed_set.adopt(governor, *self._options)
        self._governed = governed  # held: the set is weak
        return governed
