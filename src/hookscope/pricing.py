"""Prices of model calls: a user price table, then genai-prices' data (DESIGN §11).

Core (no OpenTelemetry): :class:`hookscope.builtins.CostBudget` and the configuration loader
use it; :mod:`hookscope.telemetry.cost` records what it says on spans and counters.


A model call's price is looked up by model name (and provider): first in the user's table —
``configure(prices={"my-model": {"input": 3.0, "output": 15.0}})``, ``[prices]`` in a
hookscope configuration file, or ``OTelHook(prices=...)`` — given in US dollars per million
tokens (``input``, ``output``, optional ``cache_read`` and ``cache_write``, which default to the
input price), then in the maintained ``genai-prices`` data shipped in its wheel (``pip install
'hookscope[cost]'``; it is never fetched at run time). A model found in neither costs nothing
and is counted as unpriced: a price is never guessed.

Cached input tokens are part of ``Usage.input_tokens``; they are charged at their cache rates
and the rest at the input rate. A model's price is resolved once a minute (genai-prices has
prices that change by date); a flat price is then applied with a few float operations, a tiered
one through genai-prices itself.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, final

from hookscope.types import HookscopeError, Usage

__all__ = [
    "CURRENCY",
    "PRICE_KEYS",
    "PriceError",
    "Pricer",
    "Rates",
    "current_pricer",
    "install_prices",
    "parse_prices",
    "set_prices",
]


#: The currency every price and cost is in.
CURRENCY: Final = "USD"
#: The keys of one model's entry in a price table (US dollars per million tokens).
PRICE_KEYS: Final = ("input", "output", "cache_read", "cache_write")
_REFRESH_S: Final = 60.0
_FLAT_KEYS: Final = frozenset({"input_mtok", "output_mtok", "cache_read_mtok", "cache_write_mtok"})


class PriceError(HookscopeError, ValueError):
    """A price table entry is not a price: the message names the model, the key and the fix."""


@dataclass(frozen=True, slots=True)
class Rates:
    """One model's prices in US dollars per million tokens."""

    input: float
    output: float
    cache_read: float | None = None
    cache_write: float | None = None

    def cost(self, usage: Usage) -> float:
        """What ``usage`` costs at these rates, in US dollars."""
        cached = usage.cache_read_tokens
        written = usage.cache_creation_tokens
        fresh = max(usage.input_tokens - cached - written, 0)
        read_rate = self.input if self.cache_read is None else self.cache_read
        write_rate = self.input if self.cache_write is None else self.cache_write
        return (
            fresh * self.input
            + cached * read_rate
            + written * write_rate
            + usage.output_tokens * self.output
        ) / 1_000_000


def parse_prices(table: Any, where: str = "prices") -> tuple[dict[str, Rates], list[str]]:
    """Validate a user price table: (the rates by model, every problem found).

    Each problem reads ``"<where>.<model>: <what is wrong>; <fix>"``.
    """
    problems: list[str] = []
    rates: dict[str, Rates] = {}
    if not isinstance(table, Mapping):
        return rates, [
            f'{where}: must be a table of models, e.g. {{"my-model": {{"input": 3.0, '
            f'"output": 15.0}}}} (USD per million tokens), got {table!r}'
        ]
    for model, entry in table.items():
        here = f"{where}.{model}"
        if not isinstance(model, str) or not model.strip():
            problems.append(f"{where}: model names must be non-empty strings, got {model!r}")
            continue
        if not isinstance(entry, Mapping):
            problems.append(f"{here}: must be a table with input and output prices, got {entry!r}")
            continue
        unknown = sorted(set(entry) - set(PRICE_KEYS))
        if unknown:
            problems.append(f"{here}: unknown key(s) {unknown}; allowed: {', '.join(PRICE_KEYS)}")
        values: dict[str, float | None] = {}
        for key in PRICE_KEYS:
            value = entry.get(key)
            if value is None:
                if key in ("input", "output"):
                    problems.append(f"{here}: needs {key} (USD per million {key} tokens)")
                values[key] = None
                continue
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not math.isfinite(value)
                or value < 0
            ):
                problems.append(
                    f"{here}.{key}: must be a non-negative number of USD per million tokens, "
                    f"got {value!r}"
                )
                continue
            values[key] = float(value)
        if not any(p.startswith(here) for p in problems):
            rates[model.strip()] = Rates(
                values["input"] or 0.0,
                values["output"] or 0.0,
                values["cache_read"],
                values["cache_write"],
            )
    return rates, problems


def _genai_prices() -> Any:
    try:
        import genai_prices.data_snapshot as snapshot
    except ImportError:  # the optional `cost` extra is not installed
        return None
    return snapshot


def _rates_at(prices: Mapping[str, Any], start: int | None) -> Rates:
    """Flat rates from genai-prices' token prices, as they apply above input tier ``start``."""

    def value(key: str) -> float | None:
        price = prices.get(key)
        if price is None:
            return None
        if hasattr(price, "tiers"):  # TieredPrices: the last tier whose start is passed
            chosen = price.base
            for tier in price.tiers:
                if start is not None and tier.start <= start:
                    chosen = tier.price
            return float(chosen)
        return float(price)

    return Rates(
        value("input_mtok") or 0.0,
        value("output_mtok") or 0.0,
        value("cache_read_mtok"),
        value("cache_write_mtok"),
    )


@final
@dataclass(frozen=True, slots=True)
class _Tiered:
    """Prices that step up once a call's input tokens pass a threshold (genai-prices tiers)."""

    base: Rates
    tiers: tuple[tuple[int, Rates], ...]

    def cost(self, usage: Usage) -> float:
        rates = self.base
        for start, above in self.tiers:
            if usage.input_tokens > start:
                rates = above
        return rates.cost(usage)


@final
class Pricer:
    """Prices model calls from a user table, then from genai-prices.

    Args:
        table: Model name → :class:`Rates` (or the mapping :func:`parse_prices` reads).
        use_genai_prices: ``False`` prices only what the table lists.

    Raises:
        PriceError: ``table`` is given as a mapping with a bad entry.
    """

    def __init__(
        self, table: Mapping[str, Any] | None = None, use_genai_prices: bool = True
    ) -> None:
        rates: dict[str, Rates] = {}
        raw = {k: v for k, v in (table or {}).items() if not isinstance(v, Rates)}
        if raw:
            parsed, problems = parse_prices(raw)
            if problems:
                raise PriceError("; ".join(problems))
            rates.update(parsed)
        rates.update({k: v for k, v in (table or {}).items() if isinstance(v, Rates)})
        self.table: dict[str, Rates] = rates
        self._library = _genai_prices() if use_genai_prices else None
        # (provider, model) → (resolved at, Rates or a genai-prices ModelPrice, or None)
        self._resolved: dict[tuple[str | None, str], tuple[float, Any]] = {}
        self._lock = threading.Lock()

    def price(self, provider: str | None, model: str | None, usage: Usage) -> float | None:
        """The cost of one model call in US dollars, or ``None`` when the model is unpriced."""
        if not model:
            return None
        own = self.table.get(model)
        if own is not None:
            return own.cost(usage)
        key = (provider, model)
        found = self._resolved.get(key)
        now = time.monotonic()
        if found is None or now - found[0] > _REFRESH_S:
            found = (now, self._resolve(provider, model))
            with self._lock:
                self._resolved[key] = found
        price = found[1]
        if price is None:
            return None
        return price.cost(usage)

    def _resolve(self, provider: str | None, model: str) -> Rates | _Tiered | None:
        if self._library is None:
            return None
        snapshot = self._library
        try:
            _, info = snapshot.get_snapshot().find_provider_model(model, None, provider, None)
        except LookupError:
            if provider is None:
                return None
            try:  # a provider name genai-prices spells differently: let it find the model
                _, info = snapshot.get_snapshot().find_provider_model(model, None, None, None)
            except LookupError:
                return None
        from datetime import datetime, timezone

        prices = info.get_prices(datetime.now(tz=timezone.utc))
        # Only token prices apply: hookscope reports no other units (web searches, audio).
        given: dict[str, Any] = {k: getattr(prices, k, None) for k in _FLAT_KEYS}
        tiered = [v.tiers for v in given.values() if hasattr(v, "tiers")]
        starts = sorted({tier.start for tiers in tiered for tier in tiers})
        base = _rates_at(given, None)
        if not starts:
            return base
        return _Tiered(base, tuple((start, _rates_at(given, start)) for start in starts))


_current: Pricer | None = None
_current_lock = threading.Lock()


def set_prices(table: Mapping[str, Any] | None, *, use_genai_prices: bool = True) -> Pricer:
    """Install the process-wide price table (``configure(prices=...)`` and ``[prices]`` do).

    Raises:
        PriceError: a bad entry; the previous table stays.
    """
    global _current
    pricer = Pricer(table, use_genai_prices)
    with _current_lock:
        _current = pricer
    return pricer


def current_pricer() -> Pricer:
    """The process-wide :class:`Pricer` (genai-prices alone until a table is installed)."""
    global _current
    pricer = _current
    if pricer is None:
        with _current_lock:
            if _current is None:
                _current = Pricer()
            pricer = _current
    return pricer


def install_prices(table: Any, source: str, where: str = "prices") -> Pricer:
    """Validate ``table`` and install it process-wide.

    Raises:
        ConfigError: a bad entry (every problem listed, naming ``source``); nothing changes.
    """
    rates, problems = parse_prices(table, where)
    if problems:
        from hookscope.engine.config import ConfigError  # the engine imports telemetry

        raise ConfigError(source, problems)
    return set_prices(rates)
