"""The rules of dispatch: what each event's hooks return, when a dispatch stops, what failing means.

Each lifecycle event has one :class:`Rule`. :meth:`HookRunner._dispatch
<hookscope.runner.HookRunner._dispatch>` runs every event through the same loop and asks the
event's rule what a hook's return value means; nothing event-specific lives at a call site.
This is DESIGN §2 as data.
"""

from __future__ import annotations

from typing import Any, Final, Literal, final

from hookscope.hooks import HookEvent
from hookscope.types import (
    HookResult,
    Recovery,
    RequestDecision,
    ResponseDecision,
    ToolCall,
)

__all__ = ["ALLOW", "RULES", "Fold", "HookFailure", "HookKind", "HookTimeoutError", "Rule"]

HookKind = Literal["inspect", "decide", "transform"]


@final
class HookFailure(Exception):
    """Why a hook counts as failed when it did not raise: a timeout or a wrong return type.

    Observers receive it as ``error`` in ``hook_finished``; it never reaches the agent.
    """


@final
class HookTimeoutError(TimeoutError):
    """A hook outlived its ``timeout``; counts as a hook failure (decide hooks fail closed)."""


@final
class Fold:
    """Per-dispatch state a rule folds hook results into."""

    __slots__ = ("data", "extra", "original", "result")

    def __init__(self, data: Any, result: Any) -> None:
        self.original = data
        self.data = data
        self.result = result
        self.extra: Any = None


class Rule:
    """How one event's dispatch treats hook return values and failures.

    ``step`` sees every non-``None`` hook return value (``None`` always means "go on"); it
    returns ``True`` to stop the dispatch (the hook decided) and raises :class:`HookFailure`
    for a value the event does not accept.
    """

    kind: HookKind = "inspect"
    default: Any = None

    def step(self, fold: Fold, value: Any) -> bool:
        return False

    def fail_closed(self, hook_name: str, event: HookEvent, error: BaseException) -> Any:
        return None

    def finish(self, fold: Fold) -> Any:
        return fold.result


def _failure_message(hook_name: str, event: HookEvent, error: BaseException) -> str:
    return f"hook {hook_name!r} failed in {event} ({type(error).__name__}: {error}); failing closed"


ALLOW: Final = HookResult()


class _PreTurnRule(Rule):
    kind = "decide"
    default = ALLOW

    def step(self, fold: Fold, value: Any) -> bool:
        if type(value) is not HookResult:
            raise HookFailure(f"returned {type(value).__name__}, expected HookResult or None")
        if not value.allow:
            fold.result = value
            return True
        return False

    def fail_closed(self, hook_name: str, event: HookEvent, error: BaseException) -> Any:
        return HookResult.deny(_failure_message(hook_name, event, error))


class _PreToolCallRule(_PreTurnRule):
    """pre_turn's rule plus argument merging and the policy decision behind an allow."""

    def step(self, fold: Fold, value: Any) -> bool:
        if type(value) is not HookResult:
            raise HookFailure(f"returned {type(value).__name__}, expected HookResult or None")
        if not value.allow:
            fold.result = value
            return True
        if value.modified_args:
            call: ToolCall = fold.data
            fold.data = call.with_args({**call.args, **value.modified_args})
        if value.decision is not None:
            fold.extra = value  # the allow that carries the policy decision
        return False

    def finish(self, fold: Fold) -> Any:
        if fold.result is not ALLOW:  # a hook denied
            return fold.result
        decided: HookResult | None = fold.extra
        if fold.data is fold.original:
            # Unmodified: pass the policy's own (prebuilt) allow through, or the plain allow.
            return ALLOW if decided is None else decided
        return HookResult(
            allow=True,
            message=decided.message if decided is not None else "",
            modified_args=dict(fold.data.args),
            decision=decided.decision if decided is not None else None,
        )


class _PreLlmRequestRule(Rule):
    kind = "decide"
    default = RequestDecision.proceed()

    def step(self, fold: Fold, value: Any) -> bool:
        if type(value) is not RequestDecision:
            raise HookFailure(f"returned {type(value).__name__}, expected RequestDecision or None")
        if value.action == "block":
            fold.result = value
            return True
        if value.action == "modify":
            if value.request is None:
                raise HookFailure("returned RequestDecision.modify without a request")
            fold.data = value.request
            fold.result = value
        return False

    def fail_closed(self, hook_name: str, event: HookEvent, error: BaseException) -> Any:
        return RequestDecision.block(_failure_message(hook_name, event, error))

    def finish(self, fold: Fold) -> Any:
        if fold.result.action == "modify":  # chained: the last request is what is sent
            return RequestDecision.modify(fold.data)
        return fold.result


class _OnLlmResponseRule(Rule):
    kind = "decide"
    default = ResponseDecision.accept()

    def step(self, fold: Fold, value: Any) -> bool:
        if type(value) is not ResponseDecision:
            raise HookFailure(f"returned {type(value).__name__}, expected ResponseDecision or None")
        if value.action != "accept":
            fold.result = value
            return True
        return False

    def fail_closed(self, hook_name: str, event: HookEvent, error: BaseException) -> Any:
        return ResponseDecision.block(_failure_message(hook_name, event, error))


class _OnToolErrorRule(Rule):
    kind = "transform"

    def step(self, fold: Fold, value: Any) -> bool:
        if type(value) is not Recovery:
            raise HookFailure(f"returned {type(value).__name__}, expected Recovery or None")
        fold.result = value
        return True


class _OnInteractionRule(Rule):
    kind = "transform"

    def step(self, fold: Fold, value: Any) -> bool:
        fold.result = value
        return True


_INSPECT: Final = Rule()
RULES: Final[dict[HookEvent, Rule]] = {
    "on_session_start": _INSPECT,
    "on_session_end": _INSPECT,
    "pre_turn": _PreTurnRule(),
    "post_turn": _INSPECT,
    "pre_llm_request": _PreLlmRequestRule(),
    "on_llm_response": _OnLlmResponseRule(),
    "pre_tool_call": _PreToolCallRule(),
    "post_tool_call": _INSPECT,
    "on_tool_error": _OnToolErrorRule(),
    "on_interaction": _OnInteractionRule(),
    "on_compaction": _INSPECT,
}
