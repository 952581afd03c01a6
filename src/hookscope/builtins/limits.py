"""Turn limits: a count, a rate and a token budget per session (seeds 000 and 002)."""

from __future__ import annotations

import collections
import time
from collections.abc import Callable
from typing import Any, final

from hookscope.builtins._options import positive_int, positive_number, root, state_key, state_of
from hookscope.context import TurnContext
from hookscope.hooks import Hook
from hookscope.types import ChatResponse, HookResult

__all__ = ["TokenBudget", "TurnLimit", "TurnRateLimit"]


class TurnLimit(Hook):
    """Blocks every turn of a session past the first ``max_turns``.

    Every turn the session opens counts, blocked ones included (it is the turn's index), so a
    loop that keeps retrying a blocked turn stays blocked.

    Args:
        max_turns: Turns a session may start.

    Example::

        runner = HookRunner([TurnLimit(max_turns=20)])
    """

    def __init__(self, max_turns: int) -> None:
        self.max_turns = positive_int("TurnLimit", "max_turns", max_turns, "turns per session")

    def pre_turn(self, context: TurnContext, prompt: Any) -> HookResult | None:
        """Deny the turn once the session has started ``max_turns`` turns."""
        if context.turn_index < self.max_turns:
            return None
        return HookResult.deny(
            f"turn limit reached: this session may start {self.max_turns} turns "
            f"(TurnLimit); start a new session to go on"
        )


@final
class _Window:
    """Start times of a session's recent allowed turns."""

    __slots__ = ("starts",)

    def __init__(self) -> None:
        self.starts: collections.deque[float] = collections.deque()


class TurnRateLimit(Hook):
    """Blocks a turn when the session already started ``max_turns`` in the last ``per_seconds``.

    Only turns this hook let through count, so a blocked agent may go on once the window
    has moved.

    Args:
        max_turns: Turns allowed per window.
        per_seconds: The sliding window's length, in seconds.
        clock: Monotonic time in seconds (for tests); :func:`time.monotonic` by default.

    Example::

        runner = HookRunner([TurnRateLimit(max_turns=5, per_seconds=60)])
    """

    def __init__(
        self,
        max_turns: int,
        per_seconds: float,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_turns = positive_int(
            "TurnRateLimit", "max_turns", max_turns, "turns allowed per window"
        )
        self.per_seconds = positive_number(
            "TurnRateLimit", "per_seconds", per_seconds, "the window's length in seconds"
        )
        if not callable(clock):
            raise ValueError(
                f"TurnRateLimit: clock must be a function returning seconds, got {clock!r}; "
                "leave it out to use time.monotonic"
            )
        self.clock = clock
        self._key = state_key(self)

    def pre_turn(self, context: TurnContext, prompt: Any) -> HookResult | None:
        """Deny the turn when the window is full; otherwise record its start."""
        now = self.clock()
        starts = state_of(root(context), self._key, _Window).starts
        horizon = now - self.per_seconds
        while starts and starts[0] <= horizon:
            starts.popleft()
        if len(starts) >= self.max_turns:
            wait = starts[0] - horizon
            return HookResult.deny(
                f"turn rate limit: {self.max_turns} turns in {self.per_seconds:g}s already "
                f"(TurnRateLimit); try again in {wait:.1f}s"
            )
        starts.append(now)
        return None


@final
class _Tally:
    """Tokens a session has used so far."""

    __slots__ = ("tokens",)

    def __init__(self) -> None:
        self.tokens = 0


class TokenBudget(Hook):
    """Sums each turn's token usage and blocks new turns once the session used ``max_tokens``.

    Usage comes from the :class:`~hookscope.types.ChatResponse` that ends each turn
    (``turn.respond(...)``); input and output tokens both count. The turn that crosses the
    budget completes; the next one is blocked.

    Args:
        max_tokens: Tokens a session may use.

    Example::

        runner = HookRunner([TokenBudget(max_tokens=200_000)])
    """

    def __init__(self, max_tokens: int) -> None:
        self.max_tokens = positive_int(
            "TokenBudget", "max_tokens", max_tokens, "tokens a session may use"
        )
        self._key = state_key(self)

    def used(self, context: Any) -> int:
        """Tokens the session of ``context`` has used so far."""
        tally = root(context).get(self._key)
        return 0 if tally is None else int(tally.tokens)

    def pre_turn(self, context: TurnContext, prompt: Any) -> HookResult | None:
        """Deny the turn once the session's usage reached the budget."""
        tally = root(context).get(self._key)  # used(), inlined: this runs on every turn
        used = 0 if tally is None else tally.tokens
        if used < self.max_tokens:
            return None
        return HookResult.deny(
            f"token budget exhausted: {used:,} of {self.max_tokens:,} tokens used in this "
            "session (TokenBudget); start a new session to go on"
        )

    def post_turn(self, context: TurnContext, response: ChatResponse) -> None:
        """Add the turn's usage to the session's tally."""
        usage = response.usage
        if usage is not None:
            state_of(root(context), self._key, _Tally).tokens += usage.total_tokens
