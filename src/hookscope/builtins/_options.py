"""Option checks and per-session state shared by the ready-made hooks.

Every ready-made hook validates its options when it is built, so a typo in a config file fails
at load time with a message naming the option and the fix, never at the first tool call.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any, Final, TypeVar

from hookscope.context import HookContext, TurnContext

__all__ = ["positive_int", "positive_number", "root", "state_key", "state_of"]

T = TypeVar("T")


def positive_int(owner: str, option: str, value: object, meaning: str) -> int:
    """``value`` if it is an int ≥ 1 (not a bool), else ``ValueError`` naming ``option``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(
            f"{owner}: {option} must be a whole number of at least 1 ({meaning}), "
            f"got {value!r}; e.g. {owner}({option}=10)"
        )
    return value


def positive_number(owner: str, option: str, value: object, meaning: str) -> float:
    """``value`` as a float if it is a finite number > 0 (not a bool), else ``ValueError``."""
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ValueError(
            f"{owner}: {option} must be a finite number greater than 0 ({meaning}), "
            f"got {value!r}; e.g. {owner}({option}=2.5)"
        )
    return float(value)


def root(context: HookContext) -> HookContext:
    """The session context at the top of ``context``'s parent chain."""
    if type(context) is TurnContext:  # where turn hooks look: one step, no property calls
        return context.session
    while True:
        parent = context.parent
        if parent is None:
            return context
        context = parent


def state_key(hook: object) -> str:
    """A new context key under which ``hook`` keeps its state; call once, in ``__init__``.

    Unique per hook object (a serial number, not ``id()``, which a later object may reuse), so
    two instances of one class — or a hook hot-swapped for a new one mid-session — never share
    a counter.
    """
    return f"hookscope.builtins.{type(hook).__name__}.{next(_SERIAL)}"


_SERIAL: Final = itertools.count(1)


def state_of(context: HookContext, key: str, factory: Callable[[], T]) -> T:
    """The state stored in ``context`` (locally) under ``key``, created on first use.

    Hooks call this without awaiting in between, so sibling tasks of one session cannot
    interleave the read and the write.
    """
    # Keys are per hook and per level (a hook keeps turn state only in turns), so the
    # parent-chain lookup of ``get`` never finds another scope's state.
    value: Any = context.get(key)
    if value is None:
        value = factory()
        context.set(key, value)
    return value  # type: ignore[no-any-return]
