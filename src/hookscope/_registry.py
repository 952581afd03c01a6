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
from typing import Any, Final, final

from hookscope.hooks import EVENTS, CategoryHook, Hook, HookEvent, _FunctionHook
from hookscope.matching import TOOL_EVENTS, HookMatcher

__all__ = ["Registration", "Table", "hook_name", "not_a_hook", "registrations"]

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


@final
class Table:
    """The runner's hooks: one immutable snapshot, replaced whole on every change.

    A dispatch reads ``table.by_event[event]`` once, so it finishes with the table it started
    with, whatever is registered, unregistered or replaced meanwhile.
    """

    __slots__ = ("by_event", "hooks")

    def __init__(
        self, hooks: tuple[object, ...], by_event: Mapping[HookEvent, tuple[Registration, ...]]
    ) -> None:
        self.hooks = hooks
        self.by_event = by_event

    @classmethod
    def build(cls, entries: Iterable[tuple[object, list[tuple[HookEvent, Registration]]]]) -> Table:
        hooks: list[object] = []
        by_event: dict[HookEvent, list[Registration]] = {event: [] for event in EVENTS}
        for hook, pairs in entries:
            hooks.append(hook)
            for event, registration in pairs:
                by_event[event].append(registration)
        return cls(tuple(hooks), {event: tuple(regs) for event, regs in by_event.items()})


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
