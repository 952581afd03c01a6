"""Calling a tool from an SDK's callback: its arguments by name and back, hooks run to the end.

:func:`call_args` turns a call's positional and keyword arguments into the name → value mapping
a :class:`~hookscope.types.ToolCall` carries (what hooks read and may modify); :func:`invoker`
calls the tool with such a mapping, bound back to its signature. :func:`run_now` drives the
runner's coroutine from a synchronous callback (a sync tool, a sync graph node) when no hook
suspends, and says clearly what to change when one does.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Coroutine, Iterator, Mapping
from typing import Any, Final, TypeVar

from hookscope._timeouts import with_timeout
from hookscope.runner import ScopeError

__all__ = ["call_args", "invoker", "run_now"]

T = TypeVar("T")

#: How a suspended runner coroutine shows a hook run under its ``timeout``.
_WAIT_FOR_CODE: Final = with_timeout.__code__


def run_now(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine that does not suspend to completion, here and now.

    A synchronous tool or method cannot await the runner's coroutines; with the usual hooks
    they never suspend, so driving them by hand completes them in one step.

    Raises:
        ScopeError: a hook suspended; the message says whether its timeout made it.
    """
    try:
        coroutine.send(None)
    except StopIteration as done:
        value: T = done.value
        return value
    timed = _timed_hook_tasks(coroutine)
    coroutine.close()
    if timed is None:
        raise ScopeError(
            "a hook awaited something while a synchronous tool or agent method was running, "
            "which cannot wait; make the tool or method async (async def), or make the hook "
            "synchronous"
        )
    for task in timed:
        # Closing the dispatch does not stop the task the runner runs the hook in; cancel
        # it, or the hook would run on, unobserved.
        task.cancel()
    raise ScopeError(
        "a hook with a timeout ran while a synchronous tool or agent method was running: "
        "hookscope runs such a hook in a task it waits for, which suspends, and a synchronous "
        "caller cannot wait; make the tool or method async (async def), or register the hook "
        "without a timeout"
    )


def _awaiting(coroutine: Coroutine[Any, Any, Any]) -> Iterator[Any]:
    """The suspended ``coroutine`` and what it awaits, down to the innermost awaitable."""
    awaited: Any = coroutine
    while awaited is not None:
        yield awaited
        awaited = getattr(awaited, "cr_await", None)


def _timed_hook_tasks(coroutine: Coroutine[Any, Any, Any]) -> list[asyncio.Task[Any]] | None:
    """The tasks of a hook timeout ``coroutine`` is suspended in; ``None`` when it is not."""
    waits = [a for a in _awaiting(coroutine) if getattr(a, "cr_code", None) is _WAIT_FOR_CODE]
    if not waits:
        return None
    tasks = [a.cr_frame.f_locals.get("task") for a in waits]
    return [task for task in tasks if isinstance(task, asyncio.Task)]


def call_args(
    signature: inspect.Signature, args: tuple[Any, ...], kwargs: Mapping[str, Any]
) -> dict[str, Any]:
    """The call's arguments by parameter name (``**kwargs`` merged in, defaults left out)."""
    bound = signature.bind(*args, **kwargs)
    named: dict[str, Any] = {}
    for name, value in bound.arguments.items():
        if signature.parameters[name].kind is inspect.Parameter.VAR_KEYWORD:
            named.update(value)
        else:
            named[name] = value
    return named


def invoker(fn: Callable[..., Any], signature: inspect.Signature) -> Callable[..., Any]:
    """Call ``fn`` with arguments by name, as :func:`call_args` made them (maybe modified).

    The names are bound back to the signature, so positional-only and ``*args`` values go by
    position, the parameters before them too, and names no parameter has into ``**kwargs``.
    """
    parameters = signature.parameters
    var_keyword = next(
        (p.name for p in parameters.values() if p.kind is inspect.Parameter.VAR_KEYWORD), None
    )

    def invoke(**named: Any) -> Any:
        bound = signature.bind_partial()
        for name, parameter in parameters.items():  # in signature order, as bind() makes them
            if parameter.kind is not inspect.Parameter.VAR_KEYWORD and name in named:
                bound.arguments[name] = named[name]
        extra = {name: value for name, value in named.items() if name not in bound.arguments}
        if var_keyword is None:  # let the tool reject names it does not take, as it would
            return fn(*bound.args, **bound.kwargs, **extra)
        if extra:
            bound.arguments[var_keyword] = extra
        return fn(*bound.args, **bound.kwargs)

    return invoke
