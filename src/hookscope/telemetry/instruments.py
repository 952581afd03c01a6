"""hookscope's metric instruments: created once, cheap to update, bounded in cardinality.

A synchronous ``counter.add`` or ``histogram.record`` in the OpenTelemetry SDK validates and
hashes its attributes on every call (~15 µs each on a small VM). An agent emits a dozen
measurements per tool call, so hookscope keeps them off the hot path:

* counters are pre-aggregated in process (an increment of one is queued and counted in
  batches) and reported through observable instruments when a reader collects;
* histogram values are counted into their fixed buckets in process (a bisect and a few
  additions under a lock, ~0.4 µs), each bucket keeping the span of a value measured in it as
  its exemplar, and handed to every reader of the provider when it collects, as the metric the
  SDK's histogram would report (:mod:`hookscope.telemetry._aggregated`); a hook run's
  duration, recorded per hook per event, costs about 1 µs in all. Where the provider does not
  allow that (not the SDK's, or a view that reshapes the instrument), values are queued with
  their context and recorded into the SDK histogram when a reader collects or
  :data:`FLUSH_THRESHOLD` are queued;
* attribute dicts are built once per distinct attribute set and reused.

Tool, rule, model, hook and error-type values pass a :class:`CardinalityGuard`: after
``limit`` distinct values an instrument reports further ones as ``_other``. Their
*combinations* with agent names are bounded too: past :data:`SERIES_BUDGET` distinct
attribute sets, an instrument reports a new set with those names as ``_other`` but keeps its
agent, outcome and decision — so a fleet of many agents times many tools never reaches the
SDK's own limit, which would fold every later set into one unlabelled overflow series.
"""

from __future__ import annotations

import logging
import threading
import weakref
from bisect import bisect_left
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from itertools import repeat
from typing import Final, final

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.metrics import CallbackOptions, Meter, MeterProvider, Observation
from opentelemetry.sdk.util.instrumentation import InstrumentationScope

from hookscope._version import __version__
from hookscope.telemetry import semconv as sc
from hookscope.telemetry._aggregated import BucketHistogram, Series, attach

__all__ = [
    "FLUSH_THRESHOLD",
    "SERIES_BUDGET",
    "CardinalityGuard",
    "Instruments",
    "instruments_for",
]

logger = logging.getLogger("hookscope")

#: Queued histogram values that trigger an immediate flush: bounds memory between collections,
#: and the pause a flush costs the agent (~15 µs per value on a small VM).
FLUSH_THRESHOLD: Final = 1024
#: Raw (agent, hook, event, hook type) keys whose hook-duration series are remembered; past
#: it, a key is guarded and budgeted on every run (still correct, a little slower).
_SERIES_CACHE: Final = 10_000
_HOOK_DURATION_DESCRIPTION: Final = (
    "Time each hook took per dispatch (hookscope's overhead on the agent)"
)
#: Distinct values of a guarded attribute an instrument reports before using ``_other``.
DEFAULT_CARDINALITY_LIMIT: Final = 100
#: Distinct attribute sets an instrument reports with their names; half the SDK's default
#: per-metric limit (2000), leaving room for the sets folded to ``_other`` (agents by outcomes).
SERIES_BUDGET: Final = 1000
#: The attributes folded to ``_other`` once an instrument's budget is spent; the rest (agent,
#: outcome, decision, stage …) are what dashboards and alerts group by, and are kept.
_FOLDABLE: Final = frozenset(
    {
        sc.GEN_AI_TOOL_NAME,
        sc.POLICY_RULE,
        sc.GEN_AI_REQUEST_MODEL,
        sc.GEN_AI_PROVIDER_NAME,
        sc.HOOK_NAME,
        sc.POLICY_DECIDED_BY,
        sc.ERROR_TYPE,
    }
)

AttributeValue = str | int | bool
Key = tuple[AttributeValue | None, ...]
# Queued values are recorded at collection time (or in a flush), where the current span is
# unrelated to the measurement: a value measured outside any span of ours is recorded in a
# context with an invalid span, so the SDK attaches no misleading exemplar. (An empty Context()
# is falsy: the SDK would fall back to the current one.)
_NO_SPAN: Final = trace.set_span_in_context(trace.INVALID_SPAN, Context())


@final
class CardinalityGuard:
    """Admits the first ``limit`` distinct values; maps every later one to ``_other``."""

    __slots__ = ("_lock", "_seen", "limit")

    def __init__(self, limit: int = DEFAULT_CARDINALITY_LIMIT) -> None:
        if limit < 1:
            raise ValueError(f"cardinality limit must be at least 1, got {limit}")
        self.limit = limit
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def __call__(self, value: str) -> str:
        if value in self._seen:
            return value
        with self._lock:
            if len(self._seen) < self.limit:
                self._seen.add(value)
                return value
        return sc.OVERFLOW_VALUE


@final
class _Budget:
    """Admits an instrument's first :data:`SERIES_BUDGET` attribute sets as they are; folds
    the names of later ones to ``_other``."""

    __slots__ = ("_fold", "_lock", "_seen", "limit")

    def __init__(self, names: Sequence[str], limit: int = SERIES_BUDGET) -> None:
        self._fold = frozenset(i for i, name in enumerate(names) if name in _FOLDABLE)
        self._seen: set[Key] = set()
        self._lock = threading.Lock()
        self.limit = limit

    def __call__(self, key: Key) -> Key:
        if key in self._seen:
            return key
        with self._lock:
            if len(self._seen) < self.limit:
                self._seen.add(key)
                return key
        fold = self._fold
        return tuple(
            sc.OVERFLOW_VALUE if i in fold and value is not None else value
            for i, value in enumerate(key)
        )


def _attributes(names: Sequence[str], key: Key) -> dict[str, AttributeValue]:
    # ``None`` means "not applicable" (no rule matched, no error): the attribute is left out.
    return {name: value for name, value in zip(names, key, strict=True) if value is not None}


@final
class _Counts:
    """A cumulative counter (or up-down counter) aggregated in process.

    An increment of one, the usual case, is queued (``deque.append`` is atomic: no lock on
    the agent's path) and counted in batches, when a reader collects or
    :data:`FLUSH_THRESHOLD` are queued; other amounts are counted at once.
    """

    __slots__ = (
        "_attributes",
        "_budget",
        "_counts",
        "_lock",
        "_names",
        "_pending",
        "before_observe",
    )

    def __init__(
        self,
        meter: Meter,
        name: str,
        unit: str,
        description: str,
        names: Sequence[str],
        *,
        up_down: bool = False,
    ) -> None:
        self._names = tuple(names)
        self._budget = _Budget(self._names)
        self._counts: dict[Key, int] = {}
        self._pending: deque[Key] = deque()
        self._attributes: dict[Key, dict[str, AttributeValue]] = {}
        self._lock = threading.Lock()
        #: Called at the start of every collection, before the counts are reported.
        self.before_observe: Callable[[], None] | None = None
        create = (
            meter.create_observable_up_down_counter if up_down else meter.create_observable_counter
        )
        create(name, callbacks=[self._observe], unit=unit, description=description)

    def add(self, key: Key, amount: int = 1) -> None:
        if amount == 1:
            pending = self._pending
            pending.append(key)
            if len(pending) >= FLUSH_THRESHOLD:
                self.count_pending()
            return
        counts = self._counts
        with self._lock:
            if key in counts:  # counted before: the budget let it through (or folded it here)
                counts[key] += amount
                return
        key = self._budget(key)
        with self._lock:
            counts[key] = counts.get(key, 0) + amount

    def count_pending(self) -> None:
        """Count every queued increment, in the order they were made (the order the budget
        admits new attribute sets in)."""
        counts, budget, popleft = self._counts, self._budget, self._pending.popleft
        with self._lock:
            # Only what is queued now: another thread may append meanwhile, for the next batch.
            for _ in repeat(None, len(self._pending)):
                key = popleft()
                if key in counts:
                    counts[key] += 1
                else:
                    key = budget(key)
                    counts[key] = counts.get(key, 0) + 1

    def _observe(self, options: CallbackOptions) -> Iterable[Observation]:
        if self.before_observe is not None:
            self.before_observe()
        self.count_pending()
        with self._lock:
            counts = list(self._counts.items())
        observations = []
        for key, count in counts:
            attributes = self._attributes.get(key)
            if attributes is None:
                attributes = self._attributes[key] = _attributes(self._names, key)
            observations.append(Observation(count, attributes))
        return observations


@final
class _Histogram:
    """A histogram counted into its buckets in process, or else queued and recorded in batches.

    Where the provider allows it (:func:`~hookscope.telemetry._aggregated.attach`: an SDK
    provider whose views leave the instrument as it is), values go to a
    :class:`~hookscope.telemetry._aggregated.BucketHistogram` that readers collect as the
    same metric, exemplars included; otherwise they are queued and recorded into the SDK
    histogram when a reader collects (or :data:`FLUSH_THRESHOLD` are queued).
    """

    __slots__ = (
        "_attributes",
        "_boundaries",
        "_histogram",
        "_pending",
        "_series",
        "buckets",
        "budget",
        "names",
    )

    def __init__(
        self,
        meter: Meter,
        meter_provider: MeterProvider,
        name: str,
        unit: str,
        description: str,
        names: Sequence[str],
        boundaries: Sequence[float],
    ) -> None:
        self.names = tuple(names)
        self.budget = _Budget(self.names)
        self._boundaries = tuple(boundaries)
        self._histogram = meter.create_histogram(
            name, unit=unit, description=description, explicit_bucket_boundaries_advisory=boundaries
        )
        # deque.append and popleft are atomic: the agent's thread appends while a reader's
        # thread drains, without a lock.
        self._pending: deque[tuple[float, Key, Context | None]] = deque()
        self._attributes: dict[Key, dict[str, AttributeValue]] = {}
        #: Series by the key as recorded (before the budget): a key's budgeted form never
        #: changes once seen, so the budget is asked once per key.
        self._series: dict[Key, Series] = {}
        buckets = BucketHistogram(
            name,
            unit,
            description,
            boundaries,
            getattr(self._histogram, "instrumentation_scope", None)
            or InstrumentationScope(sc.INSTRUMENTATION_SCOPE, __version__, sc.SCHEMA_URL),
        )
        #: The in-process histogram, or ``None`` where values go to the SDK's.
        self.buckets = buckets if attach(meter_provider, buckets, self._histogram) else None

    def record(self, value: float, key: Key, context: Context | None) -> None:
        """Count ``value`` with its attribute ``key``, measured in ``context`` (its span's)."""
        buckets = self.buckets
        if buckets is not None:
            series = self._series.get(key)
            if series is None:
                series = self.series(key)
            buckets.record(series, value, context)
            return
        self._pending.append((value, self.budget(key), context))
        if len(self._pending) >= FLUSH_THRESHOLD:
            self.flush()

    def series(self, key: Key, remember: Key | None = None) -> Series:
        """The in-process series of ``key`` (budgeted here), remembered under ``remember``
        (default ``key``) while the cache has room. Only when :attr:`buckets` is set."""
        assert self.buckets is not None
        budgeted = self.budget(key)
        names = self.names
        series = self.buckets.series(budgeted, lambda: _attributes(names, budgeted))
        if len(self._series) < _SERIES_CACHE:  # bounded: a name per run would not grow it
            self._series[key if remember is None else remember] = series
        return series

    def flush(self) -> None:
        """Record every queued value, each in the context (span) it was measured in.

        The SDK keeps one exemplar per bucket of a series and offering one costs more than the
        rest of a measurement, so per flush only the first value of each series and bucket is
        offered with its span; the others are recorded in a span-less context. Every bucket
        that holds values still gets an exemplar pointing at a span that produced one.
        """
        pending, record, cache = self._pending, self._histogram.record, self._attributes
        boundaries, offered = self._boundaries, set()
        while True:
            try:
                value, key, context = pending.popleft()
            except IndexError:
                return
            attributes = cache.get(key)
            if attributes is None:
                attributes = cache[key] = _attributes(self.names, key)
            if context is not None:
                slot = (key, bisect_left(boundaries, value))
                if slot in offered:
                    context = None
                else:
                    offered.add(slot)
            record(value, attributes, context=context or _NO_SPAN)


@final
class Instruments:
    """Every hookscope metric, bound to one meter provider.

    Args:
        meter_provider: Where the instruments live.
        cardinality_limit: Distinct tool, rule, model, hook or error-type values kept per
            instrument before the rest are reported as ``_other``.
    """

    def __init__(
        self, meter_provider: MeterProvider, cardinality_limit: int = DEFAULT_CARDINALITY_LIMIT
    ) -> None:
        meter = meter_provider.get_meter(
            sc.INSTRUMENTATION_SCOPE, __version__, schema_url=sc.SCHEMA_URL
        )
        agent, tool, outcome = sc.GEN_AI_AGENT_NAME, sc.GEN_AI_TOOL_NAME, sc.TOOL_OUTCOME
        hook, event = sc.HOOK_NAME, sc.HOOK_EVENT

        def guard() -> Callable[[str], str]:
            return CardinalityGuard(cardinality_limit)

        self.cardinality_limit = cardinality_limit
        #: Agent names come from the application; one built per user or request would
        #: otherwise grow every metric's series without bound.
        self.agent_name = guard()
        self.tool_name = guard()
        self.rule_name = guard()
        self.model_name = guard()
        self.provider_name = guard()
        self.hook_name = guard()
        self.error_type = guard()

        self.tool_calls = _Counts(
            meter, sc.METRIC_TOOL_CALLS, "{call}", "Tool calls by outcome", (tool, agent, outcome)
        )
        self.policy_decisions = _Counts(
            meter,
            sc.METRIC_POLICY_DECISIONS,
            "{decision}",
            "Decisions on tool calls, by rule",
            (
                agent,
                tool,
                sc.POLICY_DECISION,
                sc.POLICY_OUTCOME,
                sc.POLICY_RULE,
                sc.POLICY_BUCKET,
                sc.POLICY_DECIDED_BY,
            ),
        )
        self.tool_errors = _Counts(
            meter,
            sc.METRIC_TOOL_ERRORS,
            "{error}",
            "Tool errors, recovered or not",
            (agent, tool, sc.ERROR_TYPE, sc.RECOVERY_RECOVERED),
        )
        self.turns = _Counts(
            meter, sc.METRIC_TURNS, "{turn}", "Turns by outcome", (agent, sc.TURN_OUTCOME)
        )
        self.sessions = _Counts(
            meter, sc.METRIC_SESSIONS, "{session}", "Sessions started", (agent,)
        )
        self.sessions_active = _Counts(
            meter,
            sc.METRIC_SESSIONS_ACTIVE,
            "{session}",
            "Sessions running now",
            (agent,),
            up_down=True,
        )
        self.hook_failures = _Counts(
            meter,
            sc.METRIC_HOOK_FAILURES,
            "{failure}",
            "Hooks that raised or timed out",
            (agent, hook, event, sc.ERROR_TYPE),
        )
        self.interactions = _Counts(
            meter,
            sc.METRIC_INTERACTIONS,
            "{interaction}",
            "Questions to the user, by outcome",
            (agent, sc.INTERACTION_OUTCOME),
        )
        self.compactions = _Counts(
            meter,
            sc.METRIC_COMPACTIONS,
            "{compaction}",
            "Context compactions, by stage (pre: summary asked of hooks; post: reported)",
            (agent, sc.COMPACTION_STAGE),
        )
        self.guardrail_verdicts = _Counts(
            meter,
            sc.METRIC_GUARDRAIL_VERDICTS,
            "{verdict}",
            "Model request and response guardrail verdicts",
            (agent, sc.GUARDRAIL_STAGE, sc.GUARDRAIL_VERDICT),
        )
        self.tool_duration = _Histogram(
            meter,
            meter_provider,
            sc.METRIC_TOOL_DURATION,
            "s",
            "Duration of a tool call's execute_tool span (tools that ran)",
            (agent, tool, sc.ERROR_TYPE, outcome),
            sc.DURATION_BUCKETS_S,
        )
        self.turn_duration = _Histogram(
            meter,
            meter_provider,
            sc.METRIC_TURN_DURATION,
            "s",
            "Duration of a turn's invoke_agent span",
            (agent, sc.TURN_OUTCOME, sc.ERROR_TYPE),
            sc.TURN_DURATION_BUCKETS_S,
        )
        operation = (agent, sc.GEN_AI_OPERATION_NAME, sc.GEN_AI_PROVIDER_NAME)
        self.token_usage = _Histogram(
            meter,
            meter_provider,
            sc.METRIC_TOKEN_USAGE,
            "{token}",
            "Input and output tokens per model call",
            (*operation, sc.GEN_AI_TOKEN_TYPE, sc.GEN_AI_REQUEST_MODEL),
            sc.TOKEN_BUCKETS,
        )
        self.operation_duration = _Histogram(
            meter,
            meter_provider,
            sc.METRIC_OPERATION_DURATION,
            "s",
            "Duration of a model call (its chat span)",
            (*operation, sc.GEN_AI_REQUEST_MODEL, sc.ERROR_TYPE),
            sc.OPERATION_DURATION_BUCKETS_S,
        )
        self.hook_duration = _Histogram(
            meter,
            meter_provider,
            sc.METRIC_HOOK_DURATION,
            "s",
            _HOOK_DURATION_DESCRIPTION,
            (agent, hook, event, sc.HOOK_TYPE),
            sc.HOOK_DURATION_BUCKETS_S,
        )
        self._histograms = (
            self.tool_duration,
            self.turn_duration,
            self.token_usage,
            self.operation_duration,
            self.hook_duration,
        )
        self._hook_buckets = self.hook_duration.buckets
        self._hook_series: dict[tuple[str, str, str, str], Series] = {}
        # Queued histogram values must be recorded before the SDK aggregates a collection.
        # Observable callbacks run first, in registration order: the first counter flushes.
        self.tool_calls.before_observe = self.flush

    def flush(self) -> None:
        """Record every queued histogram value now."""
        for histogram in self._histograms:
            histogram.flush()

    def hook_ran(
        self,
        agent: str,
        hook_name: str,
        event: str,
        seconds: float,
        hook_type: str = sc.HOOK_TYPE_PYTHON,
    ) -> None:
        """Count one hook run of ``seconds`` in ``hookscope.hook.duration``.

        ``agent`` is already guarded; the hook name is guarded here. ``hook_type`` (python,
        command or prompt) is bounded by construction. The hot path is one dict lookup and
        one :meth:`BucketHistogram.add`: a guarded, budgeted key never changes once seen, so
        its series is kept under the raw key. The one place hook-duration attributes are
        built.
        """
        buckets = self._hook_buckets
        if buckets is None:  # a provider the in-process histogram cannot stand in for
            key = (agent, self.hook_name(hook_name), event, hook_type)
            self.hook_duration.record(seconds, key, None)
            return
        raw = (agent, hook_name, event, hook_type)
        series = self._hook_series.get(raw)
        if series is None:
            series = self._hook_series_of(buckets, raw)
        buckets.add(series, seconds)

    def _hook_series_of(self, buckets: BucketHistogram, raw: tuple[str, str, str, str]) -> Series:
        agent, hook_name, event, hook_type = raw
        series = self.hook_duration.series((agent, self.hook_name(hook_name), event, hook_type))
        if len(self._hook_series) < _SERIES_CACHE:
            self._hook_series[raw] = series
        return series


# The SDK hands back the instrument already registered when a name is created twice on one
# meter, and a second Instruments' observable callbacks would never be registered: every
# OTelHook on a meter provider must share that provider's Instruments.
_SHARED: weakref.WeakKeyDictionary[MeterProvider, Instruments] = weakref.WeakKeyDictionary()
_SHARED_LOCK = threading.Lock()


def instruments_for(
    meter_provider: MeterProvider, cardinality_limit: int = DEFAULT_CARDINALITY_LIMIT
) -> Instruments:
    """The :class:`Instruments` of ``meter_provider``, created on first use.

    The first caller's ``cardinality_limit`` holds for the provider; a different one later is
    logged and ignored.
    """
    with _SHARED_LOCK:
        shared = _SHARED.get(meter_provider)
        if shared is None:
            shared = _SHARED[meter_provider] = Instruments(meter_provider, cardinality_limit)
        elif shared.cardinality_limit != cardinality_limit:
            logger.warning(
                "hookscope: this meter provider's instruments already use cardinality_limit=%d; "
                "ignoring %d",
                shared.cardinality_limit,
                cardinality_limit,
            )
        return shared
