"""Cost on spans and counters: ``gen_ai.usage.cost`` per model call, turn and session totals,
``hookscope.cost`` and ``hookscope.cost.unpriced`` (DESIGN §11). Prices come from
:mod:`hookscope.pricing`.
"""

from __future__ import annotations

import logging
import threading
import weakref
from typing import Any, final

from hookscope.pricing import (
    CURRENCY,
    PRICE_KEYS,
    PriceError,
    Pricer,
    Rates,
    current_pricer,
    install_prices,
    parse_prices,
    set_prices,
)
from hookscope.types import Usage

__all__ = [
    "CURRENCY",
    "PRICE_KEYS",
    "CostRecorder",
    "PriceError",
    "Pricer",
    "Rates",
    "current_pricer",
    "install_prices",
    "parse_prices",
    "set_prices",
    "total_attributes",
]

logger = logging.getLogger("hookscope")
_current_lock = threading.Lock()

# --- recording ------------------------------------------------------------------------------

_recorders: weakref.WeakKeyDictionary[Any, tuple[Any, Any]] = weakref.WeakKeyDictionary()


def _counters(meter_provider: Any) -> tuple[Any, Any]:
    """The two cost counters of ``meter_provider``, created once."""
    with _current_lock:
        found = _recorders.get(meter_provider)
        if found is None:
            from hookscope._version import __version__
            from hookscope.telemetry import semconv as sc

            meter = meter_provider.get_meter(
                sc.INSTRUMENTATION_SCOPE, __version__, schema_url=sc.SCHEMA_URL
            )
            found = (
                meter.create_counter(
                    sc.METRIC_COST, unit="{USD}", description="Spend on model calls, in USD"
                ),
                meter.create_counter(
                    sc.METRIC_COST_UNPRICED,
                    unit="{call}",
                    description="Model calls whose model has no known price (counted, not priced)",
                ),
            )
            _recorders[meter_provider] = found
        return found


@final
class CostRecorder:
    """Prices each reported model call for an ``OTelHook``: the chat span's cost, the turn's
    and session's totals, and the ``hookscope.cost`` / ``hookscope.cost.unpriced`` counters.

    Args:
        meter_provider: Where the counters go.
        instruments: The hook's instruments (their cardinality guards name the series).
        pricer: The prices; ``None`` uses the process-wide ones (:func:`set_prices`).
    """

    __slots__ = ("_cost", "_failed", "_instruments", "_pricer", "_unpriced")

    def __init__(self, meter_provider: Any, instruments: Any, pricer: Pricer | None) -> None:
        self._cost, self._unpriced = _counters(meter_provider)
        self._instruments = instruments
        self._pricer = pricer
        self._failed = False

    def charge(
        self, turn: Any, chat: Any, provider: str | None, model: str | None, usage: Usage
    ) -> float | None:
        """Price one model call (or a turn's usage when ``chat`` is ``None``); never raises."""
        try:
            from hookscope.telemetry import semconv as sc

            pricer = self._pricer or current_pricer()
            cost = pricer.price(provider, model, usage)
            instruments = self._instruments
            attributes = {sc.GEN_AI_AGENT_NAME: turn.metric_agent}
            if model:
                attributes[sc.GEN_AI_REQUEST_MODEL] = instruments.model_name(model)
            if provider:
                attributes[sc.GEN_AI_PROVIDER_NAME] = instruments.provider_name(provider)
            if cost is None:
                self._unpriced.add(1, attributes)
                return None
            self._cost.add(cost, attributes)
            if chat is not None and chat.recording:
                chat.span.set_attributes(
                    {sc.GEN_AI_USAGE_COST: cost, sc.COST_CURRENCY: sc.COST_CURRENCY_VALUE}
                )
            turn.cost += cost
            turn.priced += 1
            session = turn.session
            if session is not None:
                session.cost += cost
                session.priced += 1
            return cost
        except Exception:  # telemetry never breaks the agent
            if not self._failed:
                self._failed = True
                logger.warning("hookscope: pricing a model call failed", exc_info=True)
            return None


def total_attributes(cost: float, priced: int) -> dict[str, Any]:
    """A turn's or session's cost attributes: empty when nothing in it was priced."""
    if not priced:
        return {}
    from hookscope.telemetry import semconv as sc

    return {sc.GEN_AI_USAGE_COST: round(cost, 12), sc.COST_CURRENCY: sc.COST_CURRENCY_VALUE}
