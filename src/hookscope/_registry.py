"""Registration: what the runner keeps for each hook, validated once, and the table it swaps.

Private to :mod:`hookscope.runner`. Everything a dispatch needs about a hook — how to call it,
its timeout, failure mode and matcher, whether its runs are reported — is checked and
precomputed here, so the dispatch loop only reads attributes.
"""

from __future__ import annotations

import inspect
import logging
import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, Protocol, final

from hookscope.context import OperationContext
from hookscope.hooks import EVENTS, CategoryHook, Hook, HookEvent, _FunctionHook
from hookscope.matching import TOOL_EVENTS, HookMatcher
from hookscope.types import ToolCall, ToolResult

__all__ = [
    "NEVER",
    "Gate",
    "Registration",
    "Stamp",
    "Table",
    "ToolNarrowing",
    "gate_of",
    "hook_name",
    "not_a_hook",
    "registrations",
    "same_events",
]

#: Lifecycle method names other agent SDKs use, and ours for each: an object that has them
#: but none of ours is a port from another SDK, not a hook that wants nothing.
FOREIGN_METHODS: Final[Mapping[str, str]] = {
    "pre_tool_use": "pre_tool_call",
    "post_tool_use": "post_tool_call",
    "post_tool_use_failure": "on_tool_error",
    "on_error": "on_tool_error",
    "on_event": "one method per event (on_session_start, pre_turn, pre_tool_call, …)",
    "on_context_compact": "pre_compaction",
    "pre_compact": "pre_compaction",
    "on_pre_turn": "pre_turn",
    "on_post_tool": "post_tool_call",
    "user_prompt_submit": "pre_turn",
    "on_stop": "post_turn",
    "on_session_begin": "on_session_start",
    "pre_tool_call_decide": "pre_tool_call",
}


@final
class Registration:
    """One hook registered for one event, with everything the loop needs precomputed."""

    __slots__ = (
        "call",
        "direct",
        "fail_open",
        "failed_before",
        "group",
        "hook",
        "hook_type",
        "is_async",
        "matcher",
        "name",
        "once_key",
        "timeout",
        "traced",
    )

    def __init__(
        self,
        hook: object,
        name: str,
        call: Callable[[Any, Any], Any],
        is_async: bool,
        options: tuple[float | None, bool, HookMatcher | None, str],
    ) -> None:
        self.hook = hook
        self.name = name
        self.call = call
        self.is_async = is_async
        self.timeout, self.fail_open, self.matcher, self.hook_type = options
        #: Runs of command and prompt hooks are reported to observers (``execute_hook`` spans).
        self.traced = self.hook_type != "python"
        #: Called inline by the loop: no timeout to enforce, no run to report.
        self.direct = not self.traced and self.timeout is None
        self.failed_before = False  # log a hook's first failure in full, later ones briefly
        #: Hooks next to each other that share a ``parallel_group`` run concurrently and have
        #: their verdicts merged (a Claude Code settings file's hooks of one event).
        self.group: object | None = getattr(hook, "parallel_group", None)
        #: Within a group, hooks with the same key run once per dispatch (identical commands).
        self.once_key: object | None = getattr(hook, "dedupe_key", None)


_TOOL_EVENTS: Final[tuple[HookEvent, ...]] = tuple(e for e in EVENTS if e in TOOL_EVENTS)

#: ``(mapping, key, value)``: while ``mapping.get(key) is value``, a gate is as it was.
Stamp = tuple[Mapping[Any, Any], Any, object]


class Gate(Protocol):
    """A hook's declaration that, while it is shut, the hook does nothing for any event.

    A hook declares one through a ``_hookscope_gate()`` method (``LoggingHook``: its logger
    is not enabled for its level). A shut gate takes the hook out of the table the way an
    event method it does not override is never registered. The runner checks the gate's
    :meth:`stamp` on every dispatch (one dictionary lookup) and asks :meth:`is_open` again
    when it no longer holds, so a hook whose gate opens runs from the next dispatch on.
    """

    def is_open(self) -> bool:
        """Whether the hook may act now (exact; asked when the table is built)."""
        ...

    def stamp(self, was_open: bool) -> Stamp | None:
        """What stays as it is while :meth:`is_open` surely still answers ``was_open``;
        ``None`` when it always will."""
        ...


@final
class _Never:
    """The gate of a hook that never acts: shut for good, so nothing to check per dispatch."""

    __slots__ = ()

    def is_open(self) -> bool:
        return False

    def stamp(self, was_open: bool) -> None:
        return None


#: The gate of a hook whose every event method provably does nothing (``AllowAll``).
NEVER: Final = _Never()


def gate_of(hook: object) -> Gate | None:
    """The gate ``hook`` declares, if any."""
    if not callable(getattr(type(hook), "_hookscope_gate", None)):  # declared by its class
        return None
    gate: Gate | None = hook._hookscope_gate()  # type: ignore[attr-defined]
    return gate


def same_events(hook: object, cls: type) -> bool:
    """Whether ``hook``'s class overrides none of ``cls``'s event methods: only then does a
    gate ``cls`` declares from what its own methods do hold for ``hook`` too."""
    kind = type(hook)
    return all(getattr(kind, event) is getattr(cls, event) for event in EVENTS)


@final
class ToolNarrowing:
    """One tool event's hooks, narrowed per tool by what depends only on the tool's name.

    A matcher without ``paths`` or ``tiers`` reads the call's name and server alone, and so
    does a hook's ``_hookscope_acts_on(event, call)`` declaration (``ToolTiers``: only
    confirm-tier tools): which of the event's hooks may act is worked out once per tool and
    cached, and a dispatch meets only those (the loop still asks every matcher it meets).
    """

    __slots__ = ("_event", "_filters", "cache")

    #: Tools remembered per event; names come from the model, so the cache is bounded.
    LIMIT: Final = 512

    def __init__(self, event: HookEvent, registrations: tuple[Registration, ...]) -> None:
        self._event = event
        self._filters = tuple((r, _tool_filter(r)) for r in registrations)
        #: What :meth:`select` found, by :meth:`key`: the runner reads it inline.
        self.cache: dict[str | tuple[str, str], tuple[Registration, ...]] = {}

    @staticmethod
    def applies(registrations: tuple[Registration, ...]) -> bool:
        """Whether some of ``registrations`` can be narrowed by tool name."""
        return any(_tool_filter(r) is not None for r in registrations)

    def call_of(self, context: Any, data: Any) -> ToolCall:
        """The call the dispatch of ``data`` in ``context`` concerns, as matchers read it."""
        return data if type(data) is ToolCall else _call_of(context, data)

    @staticmethod
    def key(call: ToolCall) -> str | tuple[str, str]:
        """The cache key of ``call``: its name, or (name, server) for an MCP tool."""
        server = call.server
        return call.name if server is None else (call.name, server)

    def select(self, call: ToolCall) -> tuple[Registration, ...]:
        """The registrations that may act on ``call`` (remembered per tool)."""
        key = self.key(call)
        found = self.cache.get(key)
        if found is None:
            event = self._event
            found = tuple(r for r, acts in self._filters if acts is None or acts(event, call))
            if len(self.cache) < self.LIMIT:
                self.cache[key] = found
        return found


ToolFilter = Callable[[HookEvent, ToolCall], bool]


def _tool_filter(registration: Registration) -> ToolFilter | None:
    """What tells, from a call's name alone, whether the registration's hook may act on it."""
    matcher = registration.matcher
    names = matcher is not None and _names_tools(matcher)
    hook = registration.hook
    declared = None
    if callable(getattr(type(hook), "_hookscope_acts_on", None)):  # declared by its class
        declared = hook._hookscope_acts_on  # type: ignore[attr-defined]
    if not names:
        return declared
    assert matcher is not None
    if declared is None:
        return lambda event, call: matcher.matches(call)
    return lambda event, call: matcher.matches(call) and bool(declared(event, call))


def _call_of(context: Any, data: Any) -> ToolCall:
    """The call a ``post_tool_call`` or ``on_tool_error`` dispatch concerns (as matchers read
    it: the result's call, else the operation's, else a nameless one)."""
    if type(data) is ToolResult:
        return data.call
    call = context.call if isinstance(context, OperationContext) else None
    return call if call is not None else _NO_CALL


_NO_CALL: Final = ToolCall("")


def _names_tools(matcher: HookMatcher | None) -> bool:
    """Whether ``matcher`` narrows by tool name and by nothing else."""
    return (
        matcher is not None
        and matcher.selects_tools
        and matcher.paths is None
        and matcher.tiers is None
    )


@final
class Table:
    """The runner's hooks: one immutable snapshot, replaced whole on every change.

    A dispatch reads ``table.by_event[event]`` once, so it finishes with the table it started
    with, whatever is registered, unregistered or replaced meanwhile. ``registered`` lists
    every hook's registrations; ``by_event`` leaves out hooks whose gate is shut (see
    :class:`Gate`), and ``narrowed`` holds the tool events some matcher narrows by name.
    """

    __slots__ = ("by_event", "gated", "gates", "hooks", "narrowed", "registered", "stamp", "stamps")

    def __init__(
        self,
        hooks: tuple[object, ...],
        registered: Mapping[HookEvent, tuple[Registration, ...]],
        by_event: Mapping[HookEvent, tuple[Registration, ...]],
        gates: tuple[tuple[Gate, bool], ...],
    ) -> None:
        self.hooks = hooks
        self.registered = registered
        self.by_event = by_event
        #: Each declared gate and whether it was open when the table was built.
        self.gates = gates
        self.gated = False  # whether a gate has a stamp to check on every dispatch
        self.stamps: tuple[Stamp, ...] = ()
        self.stamp: Stamp | None = None  # the one stamp, checked inline by the runner
        self.restamp()
        self.narrowed: dict[HookEvent, ToolNarrowing] = {
            event: ToolNarrowing(event, by_event[event])
            for event in _TOOL_EVENTS
            if ToolNarrowing.applies(by_event[event])
        }

    def holds(self) -> bool:
        """Whether every gate's stamp still holds: no gate can have changed."""
        stamp = self.stamp
        if stamp is not None:  # one gate (the usual case): no generator
            return stamp[0].get(stamp[1]) is stamp[2]
        return all(mapping.get(key) is value for mapping, key, value in self.stamps)

    def reopened(self) -> bool:
        """Whether a gate opened or shut since the table was built (exact, slower)."""
        return any(gate.is_open() != was_open for gate, was_open in self.gates)

    def restamp(self) -> None:
        """Take the gates' stamps afresh (their states are unchanged)."""
        stamps = (gate.stamp(was_open) for gate, was_open in self.gates)
        self.stamps = tuple(stamp for stamp in stamps if stamp is not None)
        self.stamp = self.stamps[0] if len(self.stamps) == 1 else None
        self.gated = bool(self.stamps)

    @classmethod
    def build(cls, entries: Iterable[tuple[object, list[tuple[HookEvent, Registration]]]]) -> Table:
        hooks: list[object] = []
        registered: dict[HookEvent, list[Registration]] = {event: [] for event in EVENTS}
        by_event: dict[HookEvent, list[Registration]] = {event: [] for event in EVENTS}
        gates: list[tuple[Gate, bool]] = []
        for hook, pairs in entries:
            hooks.append(hook)
            gate = gate_of(hook) if pairs else None
            is_open = True
            if gate is not None:
                is_open = gate.is_open()
                gates.append((gate, is_open))
            for event, registration in pairs:
                registered[event].append(registration)
                if is_open:
                    by_event[event].append(registration)
        return cls(
            tuple(hooks),
            {event: tuple(regs) for event, regs in registered.items()},
            {event: tuple(regs) for event, regs in by_event.items()},
            tuple(gates),
        )


def hook_name(hook: object) -> str:
    """A hook's name: its ``name`` option, else its class name."""
    name = getattr(hook, "name", "")
    if not isinstance(name, str):
        raise TypeError(f"hook {hook!r}: name must be a string, got {name!r}")
    return name or type(hook).__name__


def _context_only(method: Callable[[Any], Any]) -> Callable[[Any, Any], Any]:
    return lambda context, data: method(context)


def _options(hook: object, name: str) -> tuple[float | None, bool, HookMatcher | None, str]:
    """The hook's validated (timeout, fail_open, matcher, hook_type).

    Raises:
        ValueError: an option has the wrong type or value (the message says which and why).
    """
    timeout = getattr(hook, "timeout", None)
    if timeout is not None and (
        isinstance(timeout, bool)
        or not isinstance(timeout, (int, float))
        or not math.isfinite(timeout)
        or timeout <= 0
    ):
        raise ValueError(
            f"hook {name!r}: timeout must be a finite positive number of seconds or None, "
            f"got {timeout!r}"
        )
    fail_open = getattr(hook, "fail_open", False)
    if type(fail_open) is not bool:  # "false" is truthy: bool() would fail open
        raise ValueError(f"hook {name!r}: fail_open must be True or False, got {fail_open!r}")
    try:
        matcher = HookMatcher.parse(getattr(hook, "matcher", None))
    except ValueError as error:
        raise ValueError(f"hook {name!r}: {error}") from None
    hook_type = getattr(hook, "hook_type", "python")
    if hook_type not in ("python", "command", "prompt", "http"):
        raise ValueError(
            f"hook {name!r}: hook_type must be 'python', 'command', 'prompt' or 'http', "
            f"got {hook_type!r}"
        )
    return (None if timeout is None else float(timeout)), fail_open, matcher, hook_type


def registrations(hook: object) -> list[tuple[HookEvent, Registration]]:
    """The (event, registration) pairs ``hook`` provides; empty when it is no hook.

    Raises:
        TypeError: a synchronous hook asks for a timeout, or the object carries another
            SDK's lifecycle method names and none of ours.
        ValueError: an option is invalid.
    """
    name = hook_name(hook)
    found: list[tuple[HookEvent, Callable[[Any, Any], Any], bool]] = []
    if isinstance(hook, Hook):
        for event in EVENTS:
            # Only overridden methods are registered: unused no-ops cost nothing per dispatch.
            if getattr(type(hook), event) is getattr(Hook, event):
                continue
            method = getattr(hook, event)
            is_async = inspect.iscoroutinefunction(method)
            if event in ("on_session_start", "on_session_end"):
                found.append((event, _context_only(method), is_async))
            else:
                found.append((event, method, is_async))
    elif isinstance(hook, _FunctionHook):
        found.append((hook.event, hook.call, hook.call_is_async))
    elif isinstance(hook, CategoryHook):
        event = hook.event
        if event not in EVENTS:
            raise ValueError(f"hook {name!r}: unknown event {event!r}; one of {', '.join(EVENTS)}")
        found.append((event, hook.run, inspect.iscoroutinefunction(hook.run)))
    if not found:
        _refuse_foreign(hook)
        return []
    options = _options(hook, name)
    timeout, _, matcher, _ = options
    for event, _, is_async in found:
        if timeout is not None and not is_async:
            raise TypeError(
                f"hook {name!r}: timeout={timeout!r} needs an async {event} (async def); "
                "a synchronous hook cannot be interrupted"
            )
        if matcher is not None and matcher.selects_tools and event not in TOOL_EVENTS:
            raise ValueError(
                f"hook {name!r}: a matcher selects tool calls, but {event} has none; "
                f"use matchers only on {', '.join(sorted(TOOL_EVENTS))}"
            )
    return [
        (event, Registration(hook, name, call, is_async, options))
        for event, call, is_async in found
    ]


def _refuse_foreign(hook: object) -> None:
    foreign = [m for m in FOREIGN_METHODS if callable(getattr(hook, m, None))]
    if foreign:
        hints = "; ".join(f"{m} → {FOREIGN_METHODS[m]}" for m in foreign)
        raise TypeError(
            f"{type(hook).__name__} has another SDK's hook methods and none of "
            f"hookscope's, so it would never run: rename them ({hints}) and subclass "
            "hookscope.Hook"
        )


def not_a_hook(hook: object) -> str:
    """Why ``hook`` cannot be registered, and what can."""
    accepted = (
        "accepted: an instance of a hookscope.Hook subclass, a category hook such as "
        "PreToolCallDecideHook, a function decorated with @hooks.pre_turn (or another event "
        "decorator), or a DispatchObserver such as OTelHook"
    )
    if isinstance(hook, type):
        name = hook.__name__
        return f"cannot register the class {name}; register an instance: {name}(). {accepted}"
    foreign = next(
        (k for k in type(hook).__mro__ if k.__module__.startswith("google.antigravity")), None
    )
    if foreign is not None:
        return (
            f"cannot register {type(hook).__name__}: it is a google-antigravity hook "
            f"({foreign.__module__}.{foreign.__qualname__}); subclass hookscope.hooks."
            f"{foreign.__name__} (same run(context, data)) or hookscope.Hook instead. {accepted}"
        )
    if callable(hook):
        name = getattr(hook, "__qualname__", repr(hook))
        return f"cannot register the plain function {name}; decorate it first. {accepted}"
    return f"cannot register {hook!r}: {accepted}"


def close_hooks(hooks: Iterable[object]) -> None:
    """Call ``close()`` on each hook that has one (the hook close protocol).

    A hook holding a resource (``AuditLog``'s file) defines ``close()``; a reload calls it on
    the hooks it replaces, and a configuration that fails validation on the hooks it built.
    A failing ``close()`` is logged, never raised: the other hooks are still closed.
    """
    for hook in hooks:
        close = getattr(hook, "close", None)
        if not callable(close):
            continue
        try:
            close()
        except Exception:
            logging.getLogger("hookscope").exception("closing hook %r failed", hook)
