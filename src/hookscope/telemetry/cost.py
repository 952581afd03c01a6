"""Cost on spans and counters: ``gen_ai.usage.cost`` per model call, turn and session totals,
``hookscope.cost`` and ``hookscope.cost.unpriced`` (DESIGN §11). Prices come from
:mod:`hookscope.pricing`.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Iterable
from typing import Any, final

from opentelemetry.metrics import Observation

from hookscope._version import __version__
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
from hookscope.telemetry import semconv as sc
from hookscope.types import Usage

__all__ = [
    "CURRENCY",
    "PRICE_KEYS",
    "CostRecorder",
    "PriceError",
    "Pricer",
    "Rates",
    "cost_attributes",
    "current_pricer",
    "install_prices",
    "parse_prices",
    "set_prices",
    "total_attributes",
]

logger = logging.getLogger("hookscope")
_current_lock = threading.Lock()

# --- recording ------------------------------------------------------------------------------


@final
class _Totals:
    """Both cost counters of one meter provider, summed in process and reported on collection
    (an SDK counter's ``add`` costs several microseconds; a dict update a fraction of one)."""

    __slots__ = ("_lock", "cost", "unpriced")

    def __init__(self, meter: Any) -> None:
        self._lock = threading.Lock()
        self.cost: dict[tuple[str | None, ...], float] = {}
        self.unpriced: dict[tuple[str | None, ...], int] = {}
        meter.create_observable_counter(
            sc.METRIC_COST,
            callbacks=[lambda options: self._observe(self.cost)],
            unit="{USD}",
            description="Spend on model calls, in USD",
        )
        meter.create_observable_counter(
            sc.METRIC_COST_UNPRICED,
            callbacks=[lambda options: self._observe(self.unpriced)],
            unit="{call}",
            description="Model calls whose model has no known price (counted, not priced)",
        )

    def add(
        self, table: dict[tuple[str | None, ...], Any], key: tuple[str | None, ...], amount: float
    ) -> None:
        with self._lock:
            table[key] = table.get(key, 0) + amount

    def _observe(self, table: dict[tuple[str | None, ...], Any]) -> Iterable[Observation]:
        with self._lock:
            items = list(table.items())
        return [Observation(value, _attributes(key)) for key, value in items]


def _attributes(key: tuple[str | None, ...]) -> dict[str, str]:
    names = (sc.GEN_AI_AGENT_NAME, sc.GEN_AI_REQUEST_MODEL, sc.GEN_AI_PROVIDER_NAME)
    return {name: value for name, value in zip(names, key, strict=True) if value is not None}


_totals: weakref.WeakKeyDictionary[Any, _Totals] = weakref.WeakKeyDictionary()


def _totals_of(meter_provider: Any) -> _Totals:
    """The cost counters of ``meter_provider``, created once."""
    with _current_lock:
        found = _totals.get(meter_provider)
        if found is None:
            meter = meter_provider.get_meter(
                sc.INSTRUMENTATION_SCOPE, __version__, schema_url=sc.SCHEMA_URL
            )
            found = _totals[meter_provider] = _Totals(meter)
        return found


@final
class CostRecorder:
    """Prices each reported model call for an ``OTelHook``: the turn's and session's totals
    and the ``hookscope.cost`` / ``hookscope.cost.unpriced`` counters; the caller puts the
    returned cost on the chat span (with its other attributes, in one call).

    Args:
        meter_provider: Where the counters go.
        instruments: The hook's instruments (their cardinality guards name the series).
        pricer: The prices; ``None`` uses the process-wide ones (:func:`set_prices`).
    """

    __slots__ = ("_failed", "_instruments", "_pricer", "_totals")

    def __init__(self, meter_provider: Any, instruments: Any, pricer: Pricer | None) -> None:
        self._totals = _totals_of(meter_provider)
        self._instruments = instruments
        self._pricer = pricer
        self._failed = False

    def charge(
        self, turn: Any, provider: str | None, model: str | None, usage: Usage
    ) -> float | None:
        """Price one model call (or a turn's usage); ``None`` when unpriced. Never raises."""
        try:
            cost = (self._pricer or current_pricer()).price(provider, model, usage)
            instruments = self._instruments
            key = (
                turn.metric_agent,
                instruments.model_name(model) if model else None,
                instruments.provider_name(provider) if provider else None,
            )
            totals = self._totals
            if cost is None:
                totals.add(totals.unpriced, key, 1)
                return None
            totals.add(totals.cost, key, cost)
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


def cost_attributes(cost: float) -> dict[str, Any]:
    """A chat span's cost attributes."""
    return {sc.GEN_AI_USAGE_COST: cost, sc.COST_CURRENCY: sc.COST_CURRENCY_VALUE}


def total_attributes(cost: float, priced: int) -> dict[str, Any]:
    """A turn's or session's cost attributes: empty when nothing in it was priced."""
    if not priced:
        return {}
    return {sc.GEN_AI_USAGE_COST: round(cost, 12), sc.COST_CURRENCY: sc.COST_CURRENCY_VALUE}
