"""Tool-call hooks: allow all, tiers, retry loops, slow calls, error recovery (seeds 000 to 003)."""

from __future__ import annotations

import copy
import logging
import time
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any, Final, Literal, get_args

from opentelemetry import trace

from hookscope._registry import NEVER, Gate, same_events
from hookscope.builtins._options import positive_int, positive_number, state_key, state_of
from hookscope.context import OperationContext, SessionContext
from hookscope.hooks import Hook, HookEvent
from hookscope.matching import TIERS_KEY
from hookscope.types import HookResult, Recovery, ToolCall, ToolResult

__all__ = ["AllowAll", "RecoverErrors", "RetryLoopDetector", "SlowToolWarning", "ToolTiers"]

logger = logging.getLogger("hookscope.builtins")

Tier = Literal["observe", "confirm"]
_TIERS: Final = frozenset(get_args(Tier))

#: Span event and attributes of :class:`SlowToolWarning` (DESIGN §8).
SLOW_TOOL_EVENT: Final = "hookscope.slow_tool"
_TOOL_NAME: Final = "gen_ai.tool.name"
_DURATION: Final = "hookscope.tool.duration_s"
_THRESHOLD: Final = "hookscope.slow_tool.threshold_s"


class AllowAll(Hook):
    """Allows every tool call (seed 003's ``AllowAllHooks``).

    Useful to say so explicitly, in a config file or in place of a confirming hook such as
    :class:`ToolTiers`; a later hook that denies still denies. It answers ``None``, the
    runner's plain allow (and its cheapest path).

    Example::

        runner = HookRunner([AllowAll()])
    """

    def pre_tool_call(self, context: OperationContext, call: ToolCall) -> HookResult | None:
        """Allow."""
        return None

    def _hookscope_gate(self) -> Gate | None:
        """Never open: answering ``None`` is what no hook answers, so the runner lists this
        hook but never calls it (a subclass that overrides a method is called as usual)."""
        return NEVER if same_events(self, AllowAll) else None


class ToolTiers(Hook):
    """Allows ``observe``-tier tools and asks the user to confirm ``confirm``-tier ones.

    Seed 003's ``DefaultHooks``: side-effecting tools never run unconfirmed. A tool is looked
    up by its qualified name (``server/tool``), then by its name; unknown tools get
    ``default``. The confirmation goes through ``on_interaction`` (see ``HookResult.ask``): an
    ``allow`` answer runs the call, anything else denies it. The table is also stored in each
    session's context under ``hookscope.matching.TIERS_KEY`` so matchers' ``tiers`` use it.

    Args:
        tiers: Tool name → ``"observe"`` or ``"confirm"``.
        default: The tier of tools ``tiers`` does not name.

    Example::

        runner = HookRunner([
            ToolTiers({"view_file": "observe", "grep_search": "observe"}, default="confirm"),
            AutoAnswer(lambda q: "allow" if q.kind == "confirm" and ok(q) else None),
        ])
    """

    def __init__(self, tiers: Mapping[str, Tier], default: Tier = "confirm") -> None:
        if not isinstance(tiers, Mapping):
            raise ValueError(
                f"ToolTiers: tiers must be a mapping of tool name to 'observe' or 'confirm', "
                f"got {type(tiers).__name__}; e.g. ToolTiers({{'view_file': 'observe'}})"
            )
        for name, tier in tiers.items():
            if not isinstance(name, str) or not name:
                raise ValueError(f"ToolTiers: tiers has key {name!r}; tool names are non-empty str")
            if tier not in _TIERS:
                raise ValueError(
                    f"ToolTiers: tiers[{name!r}] is {tier!r}; use 'observe' (runs) or "
                    "'confirm' (asks the user first)"
                )
        if default not in _TIERS:
            raise ValueError(
                f"ToolTiers: default is {default!r}; use 'observe' or 'confirm' (the tier of "
                "tools the table does not name)"
            )
        self._default: Tier = default
        self._lookup: dict[str, Tier] = dict(tiers)  # a dict's get is faster than a proxy's
        self.tiers: Mapping[str, Tier] = MappingProxyType(self._lookup)
        # What matchers read: the table plus its default under "*" (DESIGN §7).
        self._table: Mapping[str, str] = MappingProxyType({**self.tiers, "*": default})

    @property
    def default(self) -> Tier:
        """The tier of tools the table does not name (read-only, like :attr:`tiers`)."""
        return self._default

    def tier_of(self, call: ToolCall) -> Tier:
        """The tier of ``call``'s tool."""
        tiers = self.tiers
        if call.server is not None:
            tier = tiers.get(call.qualified_name)
            if tier is not None:
                return tier
        return tiers.get(call.name, self._default)

    def on_session_start(self, context: SessionContext) -> None:
        """Publish the tier table to the session's matchers."""
        context.set(TIERS_KEY, self._table)

    def pre_tool_call(self, context: OperationContext, call: ToolCall) -> HookResult | None:
        """Allow an observe-tier call; ask about a confirm-tier one."""
        # tier_of inlined: this runs on every tool call.
        lookup = self._lookup
        tier = lookup.get(call.qualified_name) if call.server is not None else None
        if (tier or lookup.get(call.name, self._default)) == "observe":
            return None
        return HookResult.ask(f"Confirm {call.qualified_name}? It is a confirm-tier tool.")

    def _hookscope_acts_on(self, event: HookEvent, call: ToolCall) -> bool:
        """Whether :meth:`pre_tool_call` may act on ``call``'s tool: only a confirm-tier one
        (the tier reads the tool's name alone and the table is read-only, so the runner
        asks once per tool; a subclass that overrides a method is asked every call)."""
        return not same_events(self, ToolTiers) or self.tier_of(call) != "observe"


def _fingerprint(call: ToolCall) -> tuple[str, Any]:
    """The call's tool and arguments, by value: key order does not matter, nesting does."""
    return (call.qualified_name, _canonical(call.args, 0))


def _canonical(value: Any, depth: int) -> Any:
    """A hashable stand-in for ``value`` that compares equal exactly when values do."""
    if value is None or isinstance(value, (str, int, float, bool, bytes)):
        return value
    if depth > 20:
        return repr(value)
    depth += 1
    if isinstance(value, Mapping):  # dicts and the read-only proxies the runner hands out
        items = [(repr(key), _canonical(item, depth)) for key, item in value.items()]
        return ("map", tuple(sorted(items, key=lambda pair: pair[0])))
    if isinstance(value, (list, tuple)):
        return ("seq", tuple(_canonical(item, depth) for item in value))
    if isinstance(value, (set, frozenset)):
        return ("set", tuple(sorted(repr(_canonical(item, depth)) for item in value)))
    return ("obj", repr(value))


class RetryLoopDetector(Hook):
    """Denies the ``max_repeats``-th identical tool call in a turn, and every one after it.

    Identical means the same tool with equal arguments (compared by value: key order does not
    matter, nested values do). Counts start afresh each turn (seed 002's retry detector): an
    agent stuck calling the same thing gets a message telling it why, instead of looping.

    Args:
        max_repeats: The repeat that is denied (3: the first two run, the third is denied).

    Example::

        runner = HookRunner([RetryLoopDetector(max_repeats=3)])
    """

    def __init__(self, max_repeats: int = 3) -> None:
        self.max_repeats = positive_int(
            "RetryLoopDetector",
            "max_repeats",
            max_repeats,
            "the identical call in a turn that is denied",
        )
        if self.max_repeats < 2:
            raise ValueError(
                "RetryLoopDetector: max_repeats must be at least 2 (1 would deny every call), "
                f"got {max_repeats!r}; e.g. RetryLoopDetector(max_repeats=3)"
            )
        self._key = state_key(self)

    def pre_tool_call(self, context: OperationContext, call: ToolCall) -> HookResult | None:
        """Count the call in its turn; deny it when it repeats ``max_repeats`` times."""
        counts: dict[tuple[str, Any], int] = state_of(context.turn, self._key, dict)
        key = _fingerprint(call)
        seen = counts.get(key, 0) + 1
        counts[key] = seen
        if seen < self.max_repeats:
            return None
        return HookResult.deny(
            f"retry loop: {call.qualified_name} was called {seen} times with the same arguments "
            "in this turn (RetryLoopDetector); change the arguments or try another approach"
        )


class SlowToolWarning(Hook):
    """Logs a tool call that took ``threshold_s`` or longer and marks its span.

    The mark is a span event ``hookscope.slow_tool`` (``gen_ai.tool.name``,
    ``hookscope.tool.duration_s``, ``hookscope.slow_tool.threshold_s``) on the span current
    while tool hooks run: the tool's span under ``OTelHook``. A call that returned is timed by
    the runner. A call that raised is timed from the start of that span (the runner reports no
    duration for it), so it needs ``OTelHook`` or another observer that makes a recording span
    current; without one only calls that returned are timed. The hook does nothing before a
    call runs, so it adds no work to calls on their way in.

    Args:
        threshold_s: Seconds from which a call counts as slow.
        logger: Logger name for the warning.

    Example::

        runner = HookRunner([OTelHook(), SlowToolWarning(threshold_s=5)])
    """

    def __init__(self, threshold_s: float, *, logger: str = "hookscope.builtins") -> None:
        self.threshold_s = positive_number(
            "SlowToolWarning", "threshold_s", threshold_s, "seconds from which a call is slow"
        )
        if not isinstance(logger, str) or not logger:
            raise ValueError(f"SlowToolWarning: logger must be a logger name, got {logger!r}")
        self.logger = logging.getLogger(logger)

    def post_tool_call(self, context: OperationContext, result: ToolResult) -> None:
        """Warn when the call was slow."""
        if result.duration_s >= self.threshold_s:
            self._warn(result.call, result.duration_s, "returned")

    def on_tool_error(self, context: OperationContext, error: Exception) -> None:
        """Warn when the call was slow before it raised (timed by its span, when recorded)."""
        # The OTel API's Span has no start time; a recording span (the SDK's) does, in ns.
        started = getattr(trace.get_current_span(), "start_time", None)
        if type(started) is not int or context.call is None:
            return
        duration = (time.time_ns() - started) / 1e9
        if duration >= self.threshold_s:
            self._warn(context.call, duration, f"raised {type(error).__name__}")

    def _warn(self, call: ToolCall, duration: float, how: str) -> None:
        name = call.qualified_name
        self.logger.warning(
            "slow tool call: %s %s after %.3fs (threshold %gs)",
            name,
            how,
            duration,
            self.threshold_s,
        )
        trace.get_current_span().add_event(
            SLOW_TOOL_EVENT,
            {_TOOL_NAME: name, _DURATION: duration, _THRESHOLD: self.threshold_s},
        )


class RecoverErrors(Hook):
    """Recovers tool calls that raise one of ``errors`` with a fixed value (seed 000).

    Other exceptions propagate as usual. Each recovery gets its own deep copy of ``value``, so
    an agent that changes one cannot change the next.

    Args:
        errors: An exception class or classes to recover (subclasses included).
        value: What the agent receives instead of the exception.
        message: A note recorded with the recovery (not shown to the model).

    Example::

        runner = HookRunner([RecoverErrors(errors=(TimeoutError,), value={"status": 504})])
    """

    def __init__(
        self,
        errors: type[Exception] | Iterable[type[Exception]] = (TimeoutError,),
        *,
        value: Any = None,
        message: str = "",
    ) -> None:
        classes = (errors,) if isinstance(errors, type) else tuple(_iterable(errors))
        if not classes:
            raise ValueError(
                "RecoverErrors: errors is empty; name the exception classes to recover, "
                "e.g. RecoverErrors(errors=(TimeoutError, ConnectionError))"
            )
        for cls in classes:
            if not isinstance(cls, type) or not issubclass(cls, Exception):
                raise ValueError(
                    f"RecoverErrors: errors holds {cls!r}; list Exception subclasses such as "
                    "TimeoutError (cancellation and KeyboardInterrupt are never recovered)"
                )
        if not isinstance(message, str):
            raise ValueError(f"RecoverErrors: message must be a str, got {message!r}")
        try:
            copy.deepcopy(value)
        except Exception as error:
            raise ValueError(
                f"RecoverErrors: value cannot be copied ({type(error).__name__}); pass plain "
                "data (str, numbers, lists, dicts)"
            ) from None
        self.errors: tuple[type[Exception], ...] = classes
        self.value = value
        self.message = message or f"recovered by RecoverErrors from {_names(classes)}"

    def on_tool_error(self, context: OperationContext, error: Exception) -> Recovery | None:
        """Recover ``error`` when it is one of ``errors``."""
        if isinstance(error, self.errors):
            return Recovery(copy.deepcopy(self.value), self.message)
        return None


def _iterable(errors: object) -> Iterable[Any]:
    if isinstance(errors, (str, bytes)) or not isinstance(errors, Iterable):
        raise ValueError(
            f"RecoverErrors: errors must be an exception class or a tuple of them, got "
            f"{errors!r}; e.g. RecoverErrors(errors=(TimeoutError,))"
        )
    return errors


def _names(classes: tuple[type[Exception], ...]) -> str:
    return ", ".join(cls.__name__ for cls in classes)
