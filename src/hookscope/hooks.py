"""The three ways to write a hook.

1. Subclass :class:`Hook` and override any of its lifecycle methods, sync or async. The runner
   registers the hook only for the methods it overrides.
2. Subclass one of the category classes (:class:`PreToolCallDecideHook`, …) and implement
   ``run(context, data)``.
3. Decorate a function with the category's snake-case decorator (``@pre_tool_call_decide``).
   The function receives the context when one parameter is named ``context`` or annotated
   with :class:`~hookscope.context.HookContext` (or one of its subclasses).

Every hook has a ``name`` (the class or function name unless set), an optional ``timeout`` in
seconds (async hooks only), ``fail_open``: a decide hook that raises or times out denies by
default; ``fail_open=True`` lets the dispatch go on as if it had allowed — and, for tool events,
a ``matcher`` (:class:`~hookscope.matching.HookMatcher` or a tools pattern) that selects the calls
the hook sees.
"""

from __future__ import annotations

import abc
import functools
import inspect
import typing
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, ClassVar, Literal, Protocol, TypeAlias, TypeVar, overload

from hookscope.context import HookContext, OperationContext, SessionContext, TurnContext
from hookscope.types import (
    Answer,
    ChatResponse,
    HookResult,
    LlmRequest,
    LlmResponse,
    Question,
    Recovery,
    RequestDecision,
    ResponseDecision,
    ToolCall,
    ToolResult,
)

__all__ = [
    "EVENTS",
    "CategoryHook",
    "Hook",
    "HookEvent",
    "HookType",
    "OnCompactionHook",
    "OnInteractionHook",
    "OnSessionEndHook",
    "OnSessionStartHook",
    "OnToolErrorHook",
    "PostToolCallHook",
    "PostTurnHook",
    "PreCompactionHook",
    "PreToolCallDecideHook",
    "PreTurnHook",
    "on_compaction",
    "on_interaction",
    "on_session_end",
    "on_session_start",
    "on_tool_error",
    "post_tool_call",
    "post_turn",
    "pre_compaction",
    "pre_tool_call_decide",
    "pre_turn",
]

HookEvent = Literal[
    "on_session_start",
    "on_session_end",
    "pre_turn",
    "post_turn",
    "pre_llm_request",
    "on_llm_response",
    "pre_tool_call",
    "post_tool_call",
    "on_tool_error",
    "on_interaction",
    "pre_compaction",
    "on_compaction",
]

#: Every lifecycle event, in the order an agent meets them. Each is also a :class:`Hook`
#: method name.
EVENTS: tuple[HookEvent, ...] = typing.get_args(HookEvent)


T = TypeVar("T")
#: What a hook method returns: the value itself (sync override) or an awaitable of it (async).
MaybeAwaitable: TypeAlias = T | Awaitable[T]


HookType = Literal["python", "command", "prompt"]


class _HookOptions:
    """Options every hook style shares; set them as class attributes or on the instance."""

    #: Used in messages and telemetry; the class name when empty.
    name: str = ""
    #: Seconds an async hook may take before it counts as failed; ``None`` for no limit.
    timeout: float | None = None
    #: For decide hooks: when the hook fails, go on as if it allowed instead of denying.
    fail_open: bool = False
    #: For tool events: which calls the hook sees (a :class:`~hookscope.matching.HookMatcher`
    #: or a tools pattern such as ``"run_command|bash"``); ``None`` for every call.
    matcher: Any = None
    #: What runs: in-process Python, or (for the hook engine) an external command or a model
    #: prompt. Runs of non-Python hooks are reported to observers (``execute_hook`` spans).
    hook_type: HookType = "python"


class Hook(_HookOptions):
    """Base class with every lifecycle method as a no-op; override what you need.

    Overrides may be ``async def`` or plain ``def``; both type-check against the base. A
    decide method (``pre_turn``, ``pre_tool_call``, ``pre_llm_request``, ``on_llm_response``)
    returning ``None`` allows.

    Example::

        class NoSecrets(Hook):
            def pre_tool_call(self, context, call):
                if "password" in call.args:
                    return HookResult.deny("do not pass passwords to tools")
                return None
    """

    def on_session_start(self, context: SessionContext) -> MaybeAwaitable[None]:
        """A session began."""

    def on_session_end(self, context: SessionContext) -> MaybeAwaitable[None]:
        """A session ended (``context.outcome`` says how); runs even after failures."""

    def pre_turn(self, context: TurnContext, prompt: Any) -> MaybeAwaitable[HookResult | None]:
        """Decide whether a turn may start; a denial blocks the turn."""
        return None

    def post_turn(self, context: TurnContext, response: ChatResponse) -> MaybeAwaitable[None]:
        """An allowed turn finished with ``response``."""

    def pre_llm_request(
        self, context: TurnContext, request: LlmRequest
    ) -> MaybeAwaitable[RequestDecision | None]:
        """Proceed with, modify or block a model request."""
        return None

    def on_llm_response(
        self, context: TurnContext, response: LlmResponse
    ) -> MaybeAwaitable[ResponseDecision | None]:
        """Accept, block or retry a model response."""
        return None

    def pre_tool_call(
        self, context: OperationContext, call: ToolCall
    ) -> MaybeAwaitable[HookResult | None]:
        """Allow, deny or modify a tool call."""
        return None

    def post_tool_call(self, context: OperationContext, result: ToolResult) -> MaybeAwaitable[None]:
        """A tool returned."""

    def on_tool_error(
        self, context: OperationContext, error: Exception
    ) -> MaybeAwaitable[Recovery | None]:
        """A tool raised; return a :class:`~hookscope.types.Recovery` to replace its result."""
        return None

    def on_interaction(
        self, context: OperationContext, questions: Sequence[Question]
    ) -> MaybeAwaitable[Sequence[Answer] | None]:
        """The agent asks its user; return answers to reply in the user's place."""
        return None

    def pre_compaction(
        self, context: TurnContext, messages: Sequence[Any]
    ) -> MaybeAwaitable[str | None]:
        """The agent is about to compact ``messages``; return a summary to supply it.

        The first hook that returns a string supplies the summary; ``None`` leaves it to the
        next hook (and, when nobody answers, to the agent).
        """
        return None

    def on_compaction(self, context: TurnContext, summary: str) -> MaybeAwaitable[None]:
        """The agent compacted its context into ``summary``."""


class CategoryHook(_HookOptions, abc.ABC):
    """A hook for one event, implemented as ``run(context, data)`` (sync or async)."""

    #: The lifecycle event this category serves.
    event: ClassVar[HookEvent]

    @abc.abstractmethod
    def run(self, context: Any, data: Any) -> Any:
        """Handle the event; the return value follows the event's rule (see DESIGN §2)."""


class OnSessionStartHook(CategoryHook):
    """``run(context: SessionContext, data: None) -> None``."""

    event = "on_session_start"


class OnSessionEndHook(CategoryHook):
    """``run(context: SessionContext, data: None) -> None``."""

    event = "on_session_end"


class PreTurnHook(CategoryHook):
    """``run(context: TurnContext, data: prompt) -> HookResult | None``."""

    event = "pre_turn"


class PostTurnHook(CategoryHook):
    """``run(context: TurnContext, data: ChatResponse) -> None``."""

    event = "post_turn"


class PreToolCallDecideHook(CategoryHook):
    """``run(context: OperationContext, data: ToolCall) -> HookResult | None``."""

    event = "pre_tool_call"


class PostToolCallHook(CategoryHook):
    """``run(context: OperationContext, data: ToolResult) -> None``."""

    event = "post_tool_call"


class OnToolErrorHook(CategoryHook):
    """``run(context: OperationContext, data: Exception) -> Recovery | None``."""

    event = "on_tool_error"


class OnInteractionHook(CategoryHook):
    """``run(context: OperationContext, data: Sequence[Question]) -> answers | None``."""

    event = "on_interaction"


class PreCompactionHook(CategoryHook):
    """``run(context: TurnContext, data: messages) -> summary | None``."""

    event = "pre_compaction"


class OnCompactionHook(CategoryHook):
    """``run(context: TurnContext, data: summary) -> None``."""

    event = "on_compaction"


# --- decorators -------------------------------------------------------------------------

_CONTEXT_TYPES = (HookContext, SessionContext, TurnContext, OperationContext)
_CONTEXT_TYPE_NAMES = frozenset(t.__name__ for t in _CONTEXT_TYPES)
_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
_SESSION_EVENTS = frozenset({"on_session_start", "on_session_end"})


class _FunctionHook(CategoryHook):
    """A category hook whose ``run`` calls a decorated function."""

    event: ClassVar[HookEvent]

    def __init__(self, func: Callable[..., Any], call: Callable[[Any, Any], Any]) -> None:
        functools.update_wrapper(self, func)
        self.__wrapped__ = func
        #: ``run`` without its extra call layer; the runner dispatches to it directly.
        self.call = call
        #: The adapter is a plain lambda even around an async function; tell the runner.
        self.call_is_async = inspect.iscoroutinefunction(func)

    def run(self, context: Any, data: Any) -> Any:
        return self.call(context, data)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the decorated function directly, as if it were not decorated."""
        return self.__wrapped__(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


def _is_context_parameter(param: inspect.Parameter, hints: dict[str, Any]) -> bool:
    if param.name == "context":
        return True
    annotation = hints.get(param.name, param.annotation)
    if isinstance(annotation, type):
        return issubclass(annotation, HookContext)
    if isinstance(annotation, str):
        # An annotation we could not resolve (a forward reference): match the bare name.
        return annotation.rsplit(".", 1)[-1] in _CONTEXT_TYPE_NAMES
    return False


def _adapt(func: Callable[..., Any], event: HookEvent) -> Callable[[Any, Any], Any]:
    """Return ``call(context, data)`` that invokes ``func`` with what its signature asks for.

    Raises:
        TypeError: ``func`` cannot be called with the event's data (and context).
    """
    signature = inspect.signature(func)
    try:
        hints = typing.get_type_hints(func)
    except Exception:  # unresolvable forward references: fall back to the raw annotations
        hints = {}
    params = list(signature.parameters.values())
    context_param = next((p for p in params if _is_context_parameter(p, hints)), None)
    others = [p for p in params if p is not context_param and p.kind in _POSITIONAL]
    has_var_positional = any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params)
    takes_data = event not in _SESSION_EVENTS and (bool(others) or has_var_positional)

    call: Callable[[Any, Any], Any]
    context, data = object(), object()
    if context_param is None:
        call = (lambda c, d: func(d)) if takes_data else (lambda c, d: func())
        probe: tuple[tuple[Any, ...], dict[str, Any]] = ((data,) if takes_data else (), {})
    elif context_param.kind in _POSITIONAL and params.index(context_param) == 0:
        call = func if takes_data else (lambda c, d: func(c))
        probe = ((context, data) if takes_data else (context,), {})
    else:
        name = context_param.name
        call = (
            (lambda c, d: func(d, **{name: c})) if takes_data else (lambda c, d: func(**{name: c}))
        )
        probe = ((data,) if takes_data else (), {name: context})
    try:
        signature.bind(*probe[0], **probe[1])
    except TypeError as exc:
        expected = "(context)" if event in _SESSION_EVENTS else "(data) or (context, data)"
        raise TypeError(
            f"@{event} cannot call {func.__qualname__}{signature}: {exc}. A {event} hook takes "
            f"{expected}; name the context parameter 'context' or annotate it HookContext."
        ) from None
    return call


class HookDecorator(Protocol):
    """A decorator usable bare (``@pre_turn``) or with options (``@pre_turn(timeout=1)``)."""

    @overload
    def __call__(self, func: Callable[..., Any], /) -> CategoryHook: ...
    @overload
    def __call__(
        self,
        *,
        name: str = "",
        timeout: float | None = None,
        fail_open: bool = False,
        matcher: Any = None,
    ) -> Callable[[Callable[..., Any]], CategoryHook]: ...


def _decorator(category: type, decorator_name: str) -> HookDecorator:
    hook_class = type(f"{category.__name__}Function", (_FunctionHook, category), {})
    event: HookEvent = category.event  # type: ignore[attr-defined]

    def decorate(
        func: Callable[..., Any] | None = None,
        /,
        *,
        name: str = "",
        timeout: float | None = None,
        fail_open: bool = False,
        matcher: Any = None,
    ) -> Any:
        def wrap(f: Callable[..., Any]) -> CategoryHook:
            if not callable(f):
                raise TypeError(f"@{decorator_name} decorates a function, got {f!r}")
            hook: CategoryHook = hook_class(f, _adapt(f, event))
            hook.name = name or getattr(f, "__name__", "") or type(f).__name__
            hook.timeout = timeout
            hook.fail_open = fail_open
            hook.matcher = matcher
            return hook

        return wrap if func is None else wrap(func)

    decorate.__name__ = decorate.__qualname__ = decorator_name
    decorate.__doc__ = (
        f"Make a function a ``{event}`` hook; use bare or with ``name``, ``timeout``, "
        f"``fail_open``, ``matcher``. See :class:`{category.__name__}` for what it receives "
        "and returns."
    )
    return typing.cast(HookDecorator, decorate)


on_session_start = _decorator(OnSessionStartHook, "on_session_start")
on_session_end = _decorator(OnSessionEndHook, "on_session_end")
pre_turn = _decorator(PreTurnHook, "pre_turn")
post_turn = _decorator(PostTurnHook, "post_turn")
pre_tool_call_decide = _decorator(PreToolCallDecideHook, "pre_tool_call_decide")
post_tool_call = _decorator(PostToolCallHook, "post_tool_call")
on_tool_error = _decorator(OnToolErrorHook, "on_tool_error")
on_interaction = _decorator(OnInteractionHook, "on_interaction")
pre_compaction = _decorator(PreCompactionHook, "pre_compaction")
on_compaction = _decorator(OnCompactionHook, "on_compaction")
