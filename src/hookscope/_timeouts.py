"""Hook timeouts that hold, even against a hook that swallows its cancellation.

Private to :mod:`hookscope.runner`. A timed hook runs in its own task; at its deadline the
task is cancelled and given a short grace, then abandoned — the dispatch goes on, the hook
counts as failed (decide hooks fail closed), and the orphan is logged and counted.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Final

from hookscope._fold import HookFailure, HookTimeoutError
from hookscope._registry import Registration
from hookscope.context import HookContext

__all__ = ["abandoned_hooks", "with_timeout"]

logger = logging.getLogger("hookscope")

#: How long a timed-out hook gets to honour its cancellation before it is abandoned.
_CANCEL_GRACE_S: Final = 0.05
_ABANDONED: set[asyncio.Task[Any]] = set()


async def with_timeout(registration: Registration, context: HookContext, data: Any) -> Any:
    timeout = registration.timeout
    assert timeout is not None
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # driven without an event loop (a synchronous wrapped tool)
        raise HookFailure(
            f"hook {registration.name!r} has a timeout, which needs a running event loop; "
            "call the tool from async code, or register the hook without a timeout"
        ) from None
    task = loop.create_task(registration.call(context, data))
    try:
        done, _ = await asyncio.wait((task,), timeout=timeout)
    except BaseException:  # the dispatch itself was cancelled: take the hook down with it
        task.cancel()
        raise
    if done:
        return task.result()
    task.cancel()
    done, _ = await asyncio.wait((task,), timeout=_CANCEL_GRACE_S)
    if not done:
        _abandon(task, registration.name, timeout)
    raise HookTimeoutError(f"hook {registration.name!r} took longer than {timeout:g}s")


def _abandon(task: asyncio.Task[Any], name: str, timeout: float) -> None:
    """Give up on a hook that swallowed its cancellation, so the dispatch goes on.

    Closing the coroutine raises ``GeneratorExit`` at its ``await`` (which ``except
    Exception`` does not catch) and a second cancel then ends the task, so it cannot keep
    the event loop alive. A hook that survives even that (it catches ``BaseException``) is
    taken off the loop's task list, so ``asyncio.run`` does not wait for it at exit and the
    process can end; it is kept referenced until it ends, and counted.
    """
    logger.warning(
        "hook %r ignored its cancellation after its %gs timeout; abandoned", name, timeout
    )
    _ABANDONED.add(task)
    task.add_done_callback(_ABANDONED.discard)
    coro = task.get_coro()
    close = getattr(coro, "close", None)
    if close is not None:
        try:
            close()
        except RuntimeError:  # it caught GeneratorExit and awaited again: unkillable
            # asyncio has no public way to stop tracking a task; without this, shutdown's
            # cancel-and-wait of every task would wait for this one forever.
            unregister = getattr(asyncio.tasks, "_unregister_task", None)
            if unregister is not None:
                unregister(task)
    task.cancel()


def abandoned_hooks() -> int:
    """How many timed-out hooks are still running after being abandoned."""
    return len(_ABANDONED)
