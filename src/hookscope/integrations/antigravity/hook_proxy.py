"""Transparent proxies of the SDK's own hooks, reporting each run to the dispatch in flight.

``HookRunner.register_hook`` is wrapped so every registered hook is a :class:`HookProxy`:
the SDK registers and calls it as it would the hook itself, and each run is reported (its
duration, its result as the hookscope value of the same meaning, or its failure) to the
dispatch the hook router opened in the same task.
"""

from __future__ import annotations

from time import perf_counter
from typing import Any, Final

import wrapt
from google.antigravity.hooks import hooks as ag_hooks

from hookscope.hooks import HookEvent
from hookscope.integrations._kit.report import REPORTING
from hookscope.integrations.antigravity.sdk_values import answers_of
from hookscope.types import HookResult, Recovery

__all__ = ["RUNNER_LISTS", "HookProxy", "hook_name", "proxy"]

# SDK hook class → the hookscope event it serves, and the runner property listing its hooks.
_HOOK_CLASSES: Final[tuple[tuple[type, HookEvent, str], ...]] = (
    (ag_hooks.OnSessionStartHook, "on_session_start", "on_session_start_hooks"),
    (ag_hooks.OnSessionEndHook, "on_session_end", "on_session_end_hooks"),
    (ag_hooks.PreTurnHook, "pre_turn", "pre_turn_hooks"),
    (ag_hooks.PostTurnHook, "post_turn", "post_turn_hooks"),
    (ag_hooks.PreToolCallDecideHook, "pre_tool_call", "pre_tool_call_decide_hooks"),
    (ag_hooks.PostToolCallHook, "post_tool_call", "post_tool_call_hooks"),
    (ag_hooks.OnToolErrorHook, "on_tool_error", "on_tool_error_hooks"),
    (ag_hooks.OnInteractionHook, "on_interaction", "on_interaction_hooks"),
    (ag_hooks.OnCompactionHook, "on_compaction", "on_compaction_hooks"),
)
#: The SDK HookRunner property that lists the hooks of each event.
RUNNER_LISTS: Final[dict[HookEvent, str]] = {event: attr for _, event, attr in _HOOK_CLASSES}

# --- hooks -------------------------------------------------------------------------------


def hook_name(hook: Any) -> str:
    """A registered SDK hook's name: its ``name``, function name or class name."""
    for attribute in ("name", "__name__"):
        value = getattr(hook, attribute, None)
        if isinstance(value, str) and value:
            return value
    return type(hook).__name__


def _hook_result(event: HookEvent, result: Any) -> Any:
    """An SDK hook's return value as the hookscope value of the same meaning."""
    if result is None:
        return None
    if event in ("pre_turn", "pre_tool_call"):
        return HookResult(
            allow=bool(getattr(result, "allow", True)),
            message=str(getattr(result, "message", "") or ""),
            modified_args=getattr(result, "modified_args", None),
        )
    if event == "on_tool_error":
        return Recovery(result)
    if event == "on_interaction":
        return answers_of(result)
    return None


class HookProxy(wrapt.ObjectProxy[Any]):
    """A registered SDK hook, unchanged, that reports each run to the current dispatch.

    ``isinstance`` checks, attributes and equality all pass through to the hook, so the SDK
    registers and calls it exactly as it would the hook itself.
    """

    def __init__(self, hook: Any, events: frozenset[HookEvent]) -> None:
        super().__init__(hook)
        self._self_events = events
        self._self_hook_name = hook_name(hook)

    async def run(self, context: Any, data: Any) -> Any:
        """Run the hook; report its duration and result (or failure) to the dispatch."""
        dispatch = REPORTING.get()
        if dispatch is None or dispatch.event not in self._self_events:
            return await self.__wrapped__.run(context, data)
        started = perf_counter()
        try:
            result = await self.__wrapped__.run(context, data)
        except Exception as error:
            dispatch.hook_finished(self._self_hook_name, None, error, perf_counter() - started)
            raise
        duration = perf_counter() - started
        try:
            converted = _hook_result(dispatch.event, result)
        except Exception:  # an odd return value: report the run without its result
            converted = None
        dispatch.hook_finished(self._self_hook_name, converted, None, duration)
        return result


def proxy(hook: Any) -> Any:
    """``hook`` behind a :class:`HookProxy` when it serves a hookscope event, else itself."""
    if isinstance(hook, HookProxy) or getattr(hook, "reports_itself", False):
        return hook  # a governing hook reports the runner's hooks one by one instead
    events = frozenset(event for cls, event, _ in _HOOK_CLASSES if isinstance(hook, cls))
    return HookProxy(hook, events) if events else hook
