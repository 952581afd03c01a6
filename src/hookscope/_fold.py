"""The machinery every event's rule works in: the fold a dispatch accumulates, the step codes a
rule answers with, the failure table (DESIGN §2), and the count of guards skipped by failing open.

The rules themselves, one per event, live in :mod:`hookscope._events`; the one loop that asks
them is :meth:`HookRunner._run <hookscope.runner.HookRunner._run>`.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Final, Generic, Literal, TypeVar, final

from hookscope._registry import Registration
from hookscope.hooks import HookEvent
from hookscope.types import HookscopeError

logger = logging.getLogger("hookscope")

__all__ = [
    "GO_ON",
    "SKIPPED_GUARDS",
    "STOP",
    "TENTATIVE",
    "Fold",
    "HookFailure",
    "HookKind",
    "HookTimeoutError",
    "Rule",
    "failure_message",
    "hook_failed",
    "type_path",
]

HookKind = Literal["inspect", "decide", "transform"]


@final
class HookFailure(HookscopeError):
    """Why a hook counts as failed when it did not raise: a return value its event does not
    accept, or a timeout that cannot run (no event loop).

    Observers receive it as ``error`` in ``hook_finished``; it never reaches the agent.
    """

    __module__ = "hookscope.runner"


@final
class HookTimeoutError(HookscopeError, TimeoutError):
    """A hook outlived its ``timeout``; counts as a hook failure (decide hooks fail closed)."""

    __module__ = "hookscope.runner"


class Fold:
    """Per-dispatch state a rule folds hook results into.

    The runner's :class:`~hookscope.runner.Dispatch` is one: the loop folds into the object it
    hands back (one allocation per dispatch, not two).
    """

    __slots__ = ("data", "extra", "original", "result")

    def __init__(self, data: Any, result: Any) -> None:
        self.original = data
        self.data = data
        self.result = result
        #: A rule's own state, made when a rule needs it (most dispatches never do).
        self.extra: Any = None


#: What :meth:`Rule.step` returns: go on, stop here (this hook decided), or go on with this
#: hook as the decider unless a later one stops the dispatch (a pending ask).
GO_ON: Final = 0
STOP: Final = 1
TENTATIVE: Final = 2

R = TypeVar("R")


class Rule(Generic[R]):
    """How one event's dispatch treats hook return values and failures.

    ``step`` sees every non-``None`` hook return value (``None`` always means "go on"); it
    returns :data:`GO_ON`, :data:`STOP` (the hook decided) or :data:`TENTATIVE`, and raises
    :class:`HookFailure` for a value the event does not accept. ``confirms`` marks the event
    whose final ask verdict the runner settles with the user (``pre_tool_call``).
    """

    kind: HookKind = "inspect"
    default: Any = None
    confirms = False

    def step(self, fold: Fold, value: Any) -> int:
        return GO_ON

    def fail_closed(self, hook_name: str, event: HookEvent, error: BaseException) -> Any:
        return None

    def finish(self, fold: Fold) -> R:
        result: R = fold.result
        return result


def failure_message(hook_name: str, event: HookEvent, error: BaseException) -> str:
    # The message reaches the model and the spans: an exception's own text may carry secrets
    # (a token in a URL, a header), so only hookscope's own failure texts are quoted.
    detail = f": {error}" if isinstance(error, (HookFailure, HookTimeoutError)) else ""
    return f"hook {hook_name!r} failed in {event} ({type(error).__name__}{detail}); failing closed"


def type_path(value: object) -> str:
    """The full dotted path of ``value``'s type, e.g. ``google.antigravity.types.HookResult``."""
    kind = type(value)
    module = kind.__module__
    return kind.__qualname__ if module == "builtins" else f"{module}.{kind.__qualname__}"


class _SkippedGuards:
    """How many times each fail-open decide hook failed and let its call or turn go on
    unjudged, process-wide (:func:`hookscope.runner.skipped_guards`)."""

    __slots__ = ("_counts", "_lock")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[tuple[str, str], int] = {}

    def add(self, name: str, event: str) -> int:
        with self._lock:  # dispatches in several threads may skip at once
            count = self._counts.get((name, event), 0) + 1
            self._counts[(name, event)] = count
        return count

    def snapshot(self) -> dict[tuple[str, str], int]:
        with self._lock:
            return dict(self._counts)


SKIPPED_GUARDS: Final = _SkippedGuards()


def hook_failed(
    rule: Rule[Any], registration: Registration, event: HookEvent, fold: Fold, error: Exception
) -> bool:
    """Apply the failure table (DESIGN §2); return whether the dispatch stops here.

    A decide hook that fails open (``fail_open``/``on_failure = "allow"``) lets its call or
    turn go on without a verdict: every such skip is counted (:data:`SKIPPED_GUARDS`) and
    logged at WARNING, never silent.
    """
    decide = rule.kind == "decide"
    closes = decide and not registration.fail_open
    consequence = "failing closed" if closes else "ignored"
    if decide and not closes:
        skipped = SKIPPED_GUARDS.add(registration.name, event)
        logger.warning(
            "guard %r skipped in %s: it failed (%s) and fails open, so this %s goes on "
            "unjudged (skipped %d times)",
            registration.name,
            event,
            type(error).__name__,
            "call" if event == "pre_tool_call" else "step",
            skipped,
        )
        consequence = "skipped, fails open"
    if registration.failed_before:
        logger.debug(
            "hook %r failed again in %s: %r (%s)", registration.name, event, error, consequence
        )
    else:
        registration.failed_before = True
        logger.warning(
            "hook %r failed in %s (%s); later failures of this hook log at DEBUG",
            registration.name,
            event,
            consequence,
            exc_info=error,
        )
    if closes:
        fold.result = rule.fail_closed(registration.name, event, error)
    return closes
