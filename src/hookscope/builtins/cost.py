"""``CostBudget``: stop spending once a session, a turn or a day cost ``max_usd``."""

from __future__ import annotations

import datetime
import threading
from collections.abc import Mapping
from typing import Any, Final, Literal, final

from hookscope.builtins._options import positive_number, root, state_key, state_of
from hookscope.context import HookContext, TurnContext
from hookscope.hooks import Hook
from hookscope.pricing import Pricer, current_pricer
from hookscope.types import ChatResponse, HookResult, LlmRequest, LlmResponse, RequestDecision

__all__ = ["CostBudget"]

Period = Literal["session", "turn", "day"]
_PERIODS: Final = ("session", "turn", "day")


@final
class _Spend:
    __slots__ = ("calls", "usd")

    def __init__(self) -> None:
        self.usd = 0.0
        self.calls = 0  # model calls priced in this turn (a turn's own usage is then not)


class CostBudget(Hook):
    """Blocks the next turn, and the next model call, once ``max_usd`` was spent.

    Spend is priced as ``gen_ai.usage.cost`` is (a user table, then genai-prices; unknown
    models cost nothing): per model call the adapter reports (``on_llm_response``), or from the
    turn's usage when the turn reported none. The call or turn that crosses the budget
    completes; the next turn is blocked (``pre_turn``), and so is the next model call where the
    SDK has a model hook (``pre_llm_request``), with a message saying how much was spent.

    Args:
        max_usd: US dollars a period may cost.
        per: ``"session"`` (default), ``"turn"`` (each turn starts afresh) or ``"day"`` (every
            session of this hook in this process, per UTC calendar day).
        prices: A price table (model → USD per million tokens) for this hook alone; the
            process-wide one (``configure(prices=...)``) when ``None``.

    Example::

        runner = HookRunner([CostBudget(max_usd=5.0)])  # $5 per session
    """

    def __init__(
        self, max_usd: float, per: Period = "session", prices: Mapping[str, Any] | None = None
    ) -> None:
        self.max_usd = positive_number("CostBudget", "max_usd", max_usd, "US dollars to spend")
        if per not in _PERIODS:
            raise ValueError(
                f"CostBudget(per={per!r}) is not a period; use 'session', 'turn' or 'day'"
            )
        self.per: Period = per
        self._pricer = None if prices is None else Pricer(prices)
        self._key = state_key(self)
        self._turn_key = state_key(self)
        self._days: dict[datetime.date, float] = {}
        self._lock = threading.Lock()

    def spent(self, context: HookContext) -> float:
        """US dollars spent so far in the period ``context`` belongs to."""
        if self.per == "day":
            with self._lock:
                return self._days.get(_today(), 0.0)
        scope = context if self.per == "turn" else root(context)
        found = scope.get(self._key)
        return 0.0 if found is None else float(found.usd)

    def _message(self, spent: float, where: str) -> str:
        period = {"session": "this session", "turn": "this turn", "day": "today (UTC)"}[self.per]
        return (
            f"cost budget exhausted: ${spent:.4f} of ${self.max_usd:.2f} spent {period} "
            f"(CostBudget); {where}"
        )

    def pre_turn(self, context: TurnContext, prompt: Any) -> HookResult | None:
        """Block the turn once the session's (or the day's) spend reached the budget."""
        if self.per == "turn":
            return None  # every turn starts with its whole budget
        spent = self.spent(context)
        if spent < self.max_usd:
            return None
        fix = "start a new session to go on" if self.per == "session" else "wait for tomorrow"
        return HookResult.deny(self._message(spent, fix))

    def pre_llm_request(self, context: TurnContext, request: LlmRequest) -> RequestDecision | None:
        """Block the model call once the period's spend reached the budget."""
        spent = self.spent(context)
        if spent < self.max_usd:
            return None
        return RequestDecision.block(self._message(spent, "no further model calls"))

    def on_llm_response(self, context: TurnContext, response: LlmResponse) -> None:
        """Add the model call's cost."""
        if response.usage is not None:
            turn = state_of(context, self._turn_key, _Spend)
            turn.calls += 1
            self._add(
                context,
                (self._pricer or current_pricer()).price(
                    response.provider, response.model, response.usage
                ),
            )

    def post_turn(self, context: TurnContext, response: ChatResponse) -> None:
        """Price the turn's usage when it reported no model call."""
        turn = context.get(self._turn_key)
        if response.usage is None or (turn is not None and turn.calls):
            return
        self._add(
            context,
            (self._pricer or current_pricer()).price(
                response.provider, response.model, response.usage
            ),
        )

    def _add(self, context: TurnContext, usd: float | None) -> None:
        if not usd:
            return
        if self.per == "day":
            with self._lock:
                today = _today()
                self._days = {today: self._days.get(today, 0.0) + usd}
            return
        scope = context if self.per == "turn" else root(context)
        state_of(scope, self._key, _Spend).usd += usd


def _today() -> datetime.date:
    return datetime.datetime.now(tz=datetime.timezone.utc).date()
