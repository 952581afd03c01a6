"""The runner's hook table as it changes: registration, replacement, observers, gates.

:class:`HookRegistrar` is the half of :class:`~hookscope.runner.HookRunner` that changes what a
dispatch runs: it validates hooks, builds a new :class:`~hookscope._registry.Table` and swaps it
in one step under a lock, and keeps the one :class:`~hookscope._notify.Notifier` observers are
told through. Dispatches never take the lock: they read whichever table is current when they
start (the dispatch loop itself is in :mod:`hookscope.runner`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable

from hookscope._notify import Notifier, check_observer, is_observer
from hookscope._registry import Registration, Table, not_a_hook, registrations
from hookscope.hooks import CategoryHook, Hook, HookEvent

__all__ = ["HookRegistrar"]


class HookRegistrar:
    """Registers hooks and observers; base of :class:`~hookscope.runner.HookRunner`.

    Args:
        hooks: Hooks to register, in order (see :meth:`register`).
    """

    __slots__ = ("_entries", "_lock", "_observed", "_table", "notifier")

    def __init__(self, hooks: Iterable[object] = ()) -> None:
        # Held while a change reads and replaces the table, so changes from several threads
        # (register() racing a watch()'s reload) never lose one; dispatches never take it.
        self._lock = threading.Lock()
        self._entries: tuple[tuple[object, list[tuple[HookEvent, Registration]]], ...] = ()
        self._observed: tuple[object, ...] = ()  # observers added with observe()
        self._table = Table.build(())
        #: The one notifier observers are told through; adapters report through it too.
        self.notifier = Notifier()
        for hook in hooks:
            self.register(hook)

    def register(self, hook: object) -> None:
        """Register ``hook`` after those already registered.

        Accepted: an instance of a :class:`~hookscope.hooks.Hook` subclass (registered for the
        methods it overrides), a category hook (``PreToolCallDecideHook`` …), a function
        decorated with ``@hooks.pre_turn`` and friends, and a :class:`DispatchObserver` (such
        as ``OTelHook``), which is observed wherever it stands in the list.

        Raises:
            TypeError: ``hook`` is none of these, a synchronous hook asks for a timeout, or
                the object has another SDK's lifecycle methods and none of ours.
            ValueError: an option (``timeout``, ``fail_open``, ``matcher``) is invalid.
        """
        self._swap((), (hook,))

    def unregister(self, hook: object) -> None:
        """Remove ``hook`` (registered or observed); dispatches in flight are not affected.

        Raises:
            ValueError: ``hook`` is not registered with this runner.
        """
        self._swap((hook,), ())

    def replace(
        self, old: Iterable[object], new: Iterable[object], *, missing_ok: bool = False
    ) -> None:
        """Swap the hooks ``old`` for ``new`` in one step, where ``old`` stood.

        A dispatch in flight finishes with the table it started with; the next one sees the
        new table — never a mix. When ``new`` is invalid nothing changes. Changes from several
        threads are applied one at a time, none lost.

        Args:
            old: The hooks to take out.
            new: The hooks to put in their place.
            missing_ok: Skip hooks of ``old`` that are no longer registered (unregistered
                meanwhile) instead of failing; with none left, ``new`` goes last.

        Raises:
            ValueError: a hook of ``old`` is not registered (unless ``missing_ok``), or a hook
                of ``new`` is invalid.
            TypeError: a hook of ``new`` is no hook.
        """
        self._swap(tuple(old), tuple(new), missing_ok)

    def _swap(
        self, old: tuple[object, ...], new: tuple[object, ...], missing_ok: bool = False
    ) -> None:
        with self._lock:
            self._swap_locked(old, new, missing_ok)

    def _swap_locked(
        self, old: tuple[object, ...], new: tuple[object, ...], missing_ok: bool
    ) -> None:
        # Everything is validated before anything changes: a bad hook leaves the table intact.
        entries = list(self._entries)
        position = len(entries)
        for hook in old:
            index = next((i for i, (h, _) in enumerate(entries) if h is hook), None)
            if index is None:
                if missing_ok:
                    continue
                raise ValueError(f"{hook!r} is not registered with this runner")
            del entries[index]
            position = min(position, index)
        fresh: list[tuple[object, list[tuple[HookEvent, Registration]]]] = []
        for hook in new:
            if any(h is hook for h, _ in (*entries, *fresh)) or any(
                o is hook for o in self._observed
            ):
                raise ValueError(f"{hook!r} is already registered with this runner")
            pairs = registrations(hook)
            observes = is_observer(hook)
            if not pairs and not observes and not isinstance(hook, (Hook, CategoryHook)):
                raise TypeError(not_a_hook(hook))
            if observes:
                check_observer(hook)
            fresh.append((hook, pairs))
        entries[position:position] = fresh
        self._entries = tuple(entries)
        self._table = Table.build(self._entries)
        self._notify_observers()

    def _notify_observers(self) -> None:
        registered = [h for h, _ in self._entries if is_observer(h)]
        self.notifier = Notifier([*registered, *self._observed])

    @property
    def hooks(self) -> tuple[object, ...]:
        """The registered hooks (and observers registered as hooks), in dispatch order."""
        return self._table.hooks

    def observe(self, observer: object) -> Callable[[], None]:
        """Tell ``observer`` of every dispatch and scope from now on.

        Args:
            observer: A :class:`DispatchObserver`, or any object with its three dispatch
                methods (the scope and hook-run methods are optional).

        Returns:
            A function that stops the observation; calling it again does nothing.

        Undo between sessions: an observer removed while a scope is open is not told the scope
        ended.

        Raises:
            TypeError: ``observer`` lacks a dispatch method.
            ValueError: ``observer`` is already observed.
        """
        with self._lock:
            if any(o is observer for o in self.notifier.observers):
                # Twice observed, it would open every scope twice and leave one span unended.
                raise ValueError(f"{observer!r} is already observed by this runner")
            check_observer(observer)
            self._observed = (*self._observed, observer)
            self._notify_observers()

        def undo() -> None:
            with self._lock:
                if any(o is observer for o in self._observed):
                    self._observed = tuple(o for o in self._observed if o is not observer)
                    self._notify_observers()

        return undo

    def idle(self, event: HookEvent) -> bool:
        """Whether dispatching ``event`` now would do nothing: no hook for it, no observer.

        Scopes skip such a dispatch (its coroutine would only return the event's default).
        A hook whose gate is shut (``LoggingHook`` on a logger that is off) is no hook here.
        """
        if self.notifier.active:
            return False
        table = self._table
        if table.gated and not table.holds():
            table = self._regate(table)
        return not table.by_event[event]

    def hook_names(self, event: HookEvent) -> tuple[str, ...]:
        """Names of the hooks registered for ``event``, in dispatch order."""
        return tuple(r.name for r in self._table.registered[event])

    def _regate(self, seen: Table) -> Table:
        """The table with every gate as it is now (a stamp of ``seen`` no longer holds)."""
        with self._lock:
            table = self._table
            if table is not seen:  # replaced meanwhile, with the gates as they were then
                return table
            if table.reopened():
                self._table = table = Table.build(self._entries)
            else:  # the logging configuration changed, not what it says about these hooks
                table.restamp()
            return table
