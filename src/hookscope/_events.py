"""The rules of dispatch: what each event's hooks return, when a dispatch stops, what failing means.

Each lifecycle event has one :class:`Rule`. :meth:`HookRunner._dispatch
<hookscope.runner.HookRunner._dispatch>` runs every event through the same loop and asks the
event's rule what a hook's return value means; nothing event-specific lives at a call site.
This is DESIGN §2 as data.
"""

from __future__ import annotations

from typing import Any, Final, Literal, final, get_args

from hookscope.hooks import HookEvent
from hookscope.types import (
    HookResult,
    Recovery,
    RequestAction,
    RequestDecision,
    ResponseAction,
    ResponseDecision,
    ToolCall,
)

__all__ = ["ALLOW", "RULES", "Fold", "HookFailure", "HookKind", "HookTimeoutError", "Rule"]

HookKind = Literal["inspect", "decide", "transform"]
_REQUEST_ACTIONS: Final = frozenset(get_args(RequestAction))
_RESPONSE_ACTIONS: Final = frozenset(get_args(ResponseAction))


@final
class HookFailure(Exception):
    """Why a hook counts as failed when it did not raise: a return value its event does not
    accept, or a timeout that cannot run (no event loop).

    Observers receive it as ``error`` in ``hook_finished``; it never reaches the agent.
    """

    __module__ = "hookscope.runner"


@final
class HookTimeoutError(TimeoutError):
    """A hook outlived its ``timeout``; counts as a hook failure (decide hooks fail closed)."""

    __module__ = "hookscope.runner"


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
    # The message reaches the model and the spans: an exception's own text may carry secrets
    # (a token in a URL, a header), so only hookscope's own failure texts are quoted.
    detail = f": {error}" if isinstance(error, (HookFailure, HookTimeoutError)) else ""
    return f"hook {hook_name!r} failed in {event} ({type(error).__name__}{detail}); failing closed"


ALLOW: Final = HookResult()


def _check_result(value: Any) -> None:
    if type(value) is not HookResult:
        raise HookFailure(f"returned {type(value).__name__}, expected HookResult or None")
    if type(value.allow) is not bool:  # a truthy "false" must not allow
        raise HookFailure(f"returned HookResult(allow={value.allow!r}); allow must be a bool")


class _PreTurnRule(Rule):
    kind = "decide"
    default = ALLOW

    def step(self, fold: Fold, value: Any) -> bool:
        _check_result(value)
        if not value.allow:
            fold.result = value
            return True
        return False

    def fail_closed(self, hook_name: str, event: HookEvent, error: BaseException) -> Any:
        return HookResult.deny(_failure_message(hook_name, event, error))


class _PreToolCallRule(_PreTurnRule):
    """pre_turn's rule plus argument merging and the policy decision behind an allow."""

    def step(self, fold: Fold, value: Any) -> bool:
        _check_result(value)
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


def _check_decision(value: Any, kind: type[Any], actions: frozenset[str], builders: str) -> None:
    if type(value) is not kind:
        raise HookFailure(f"returned {type(value).__name__}, expected {kind.__name__} or None")
    if value.action not in actions:  # an unknown verdict must neither proceed nor accept
        raise HookFailure(
            f"returned {kind.__name__}(action={value.action!r}); build it with "
            f"{kind.__name__}{builders}"
        )


class _PreLlmRequestRule(Rule):
    kind = "decide"
    default = RequestDecision.proceed()

    def step(self, fold: Fold, value: Any) -> bool:
        _check_decision(
            value, RequestDecision, _REQUEST_ACTIONS, ".proceed(), .modify() or .block()"
        )
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
        _check_decision(
            value,
            ResponseDecision,
            _RESPONSE_ACTIONS,
            ".accept(), .block() or .retry_with_feedback()",
        )
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
        if not value:  # an empty list of answers answers nothing: ask the next hook
            return False
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
