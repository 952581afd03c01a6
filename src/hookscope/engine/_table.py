"""The loader's results and errors: :class:`HookTable`, :class:`HookEntry`, :class:`ConfigError`.

Re-exported by :mod:`hookscope.engine.config` (and :mod:`hookscope.engine`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import final, overload

from hookscope._registry import close_hooks
from hookscope.engine._claude_config import Idle
from hookscope.hooks import HookEvent
from hookscope.types import HookscopeError

__all__ = ["ConfigError", "HookEntry", "HookTable"]


class ConfigError(HookscopeError, ValueError):
    """A hook configuration failed validation; nothing from it was applied.

    Attributes:
        source: The file (or ``<mapping>``) that failed.
        problems: Every problem found, each ``"<entry>: <what is wrong>; <fix>"``.
    """

    def __init__(self, source: str, problems: Sequence[str]) -> None:
        self.source = source
        self.problems = tuple(problems)
        listed = "\n".join(f"  {source}: {problem}" for problem in self.problems)
        count = len(self.problems)
        super().__init__(f"{count} problem{'s' * (count != 1)} in {source}:\n{listed}")


@dataclass(frozen=True, slots=True)
class HookEntry:
    """One configured hook: the event it was listed under, the hook, and where it came from."""

    event: HookEvent
    hook: object
    entry: str


@final
class HookTable(Sequence[object]):
    """An immutable sequence of configured hooks, in file order.

    ``HookRunner(table)``, ``runner.register(h) for h in table`` and
    ``runner.replace(old_table, new_table)`` all work. :attr:`entries` keeps the event each
    hook was listed under (``hookscope hooks check`` prints it). :meth:`close` closes the
    hooks the table built (``watch()`` calls it on the table a reload replaces).
    """

    __slots__ = ("_built", "entries", "idle", "notes", "source")

    def __init__(
        self,
        entries: Sequence[HookEntry] = (),
        source: str | None = None,
        idle: Sequence[Idle] = (),
        notes: Sequence[str] = (),
        *,
        built: Iterable[object] = (),
    ) -> None:
        self.entries: tuple[HookEntry, ...] = tuple(entries)
        #: The file the table was loaded from; ``None`` for a mapping.
        self.source = source
        #: Hooks of a Claude Code settings file that loaded but never fire in hookscope, and why.
        self.idle: tuple[Idle, ...] = tuple(idle)
        #: What a check should mention: settings Claude Code ignores too.
        self.notes: tuple[str, ...] = tuple(notes)
        self._built = tuple(built)

    def close(self) -> None:
        """Close (``close()``, where a hook has one) every hook this table built: command and
        prompt hooks and instantiated classes, never an object a reference names as it is
        (it may serve elsewhere)."""
        close_hooks(self._built)

    @overload
    def __getitem__(self, index: int) -> object: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[object, ...]: ...
    def __getitem__(self, index: int | slice) -> object:
        if isinstance(index, slice):
            return tuple(entry.hook for entry in self.entries[index])
        return self.entries[index].hook

    def __len__(self) -> int:
        return len(self.entries)

    def __iter__(self) -> Iterator[object]:
        return (entry.hook for entry in self.entries)

    def __repr__(self) -> str:
        return f"HookTable({len(self.entries)} hooks from {self.source or '<mapping>'})"


class Problems:
    """Collects every problem of one file instead of stopping at the first."""

    def __init__(self) -> None:
        self.found: list[str] = []

    def add(self, entry: str, problem: str) -> None:
        self.found.append(f"{entry}: {problem}")
