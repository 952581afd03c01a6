"""Hooks for agents written without any hook SDK: wrap their tools and their chat method.

::

    runner = HookRunner([OTelHook(), enforce([deny("delete_file")])])
    agent = wrap_agent(MyAgent(tools=[wrap_tool(view_file, runner)]), runner)
    async with agent:                       # one session
        await agent.chat("summarise x.py")  # one turn; view_file calls run pre/post/error hooks

Wrappers are ``wrapt`` proxies: ``inspect.signature``, ``__doc__``, ``__name__``,
``inspect.iscoroutinefunction`` and ``isinstance`` see the original. Calling a wrapped tool
runs the whole tool lifecycle (``pre_tool_call`` → tool → ``post_tool_call`` or
``on_tool_error``) in the current turn: the one a wrapped agent's method is running, or the
:class:`~hookscope.runner.TurnScope` given.

Synchronous tools and agent methods are supported when the hooks do not suspend (the usual
case: policies, OTelHook and synchronous hooks); a hook that really awaits something, or one
with a ``timeout`` (it runs in a task of its own, so it always suspends), needs an async tool
or method, and :class:`~hookscope.runner.ScopeError` says so.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from contextvars import ContextVar
from types import TracebackType
from typing import Any, Final, TypeVar, cast, final

import wrapt

from hookscope.integrations._kit.calls import call_args, invoker, run_now
from hookscope.runner import HookRunner, ScopeError, SessionScope, ToolOutcome, TurnScope
from hookscope.types import ChatResponse, HookResult, HookscopeError, ToolCall

__all__ = ["ToolCallDenied", "TurnBlocked", "wrap_agent", "wrap_tool"]

F = TypeVar("F", bound=Callable[..., Any])
A = TypeVar("A")

#: The turn a wrapped agent's method is running, per runner, in this task and its children.
_CURRENT_TURN: Final[ContextVar[tuple[HookRunner, TurnScope] | None]] = ContextVar(
    "hookscope_current_turn", default=None
)
_AGENT_METHODS: Final = ("chat", "run")


class ToolCallDenied(HookscopeError, PermissionError):
    """A ``pre_tool_call`` hook denied a call to a wrapped tool; the tool did not run.

    Feed :attr:`message` to the model as the tool's result, as you would any tool error.
    """

    def __init__(self, outcome: ToolOutcome) -> None:
        self.outcome = outcome
        self.message = outcome.message or f"the call to {outcome.call.name!r} was denied"
        super().__init__(self.message)


class TurnBlocked(HookscopeError, PermissionError):
    """A ``pre_turn`` hook blocked a wrapped agent's turn; the agent's method did not run."""

    def __init__(self, result: HookResult) -> None:
        self.result = result
        self.message = result.message or "the turn was blocked by a pre_turn hook"
        super().__init__(self.message)


# --- tools -------------------------------------------------------------------------------


def _turn_for(target: HookRunner | TurnScope, tool: str) -> TurnScope:
    if isinstance(target, TurnScope):
        return target
    current = _CURRENT_TURN.get()
    if current is None or current[0] is not target:
        raise ScopeError(
            f"tool {tool!r} was called outside a turn of its runner; call it while an agent "
            "wrapped with wrap_agent(agent, runner) is running, or wrap the tool with the "
            "TurnScope it belongs to: wrap_tool(fn, turn)"
        )
    return current[1]


def _result(outcome: ToolOutcome) -> Any:
    if not outcome.allowed:
        raise ToolCallDenied(outcome)
    return outcome.value


def wrap_tool(fn: F, runner_or_turn: HookRunner | TurnScope, *, name: str | None = None) -> F:
    """Make every call of ``fn`` a tool call through the hooks.

    Args:
        fn: The tool: a function or method, sync or async.
        runner_or_turn: A :class:`HookRunner` (calls join the turn a wrapped agent is
            running) or a :class:`TurnScope` (calls join that turn).
        name: The tool's name in hooks and telemetry; ``fn.__name__`` when ``None``.

    Returns:
        A proxy of ``fn`` with its signature, docstring and coroutine-ness. Calling it returns
        the tool's value, or a recovering ``on_tool_error`` hook's value.

    Raises (when the proxy is called):
        ToolCallDenied: a ``pre_tool_call`` hook denied the call.
        ScopeError: no turn of ``runner`` is running.
        Exception: the tool's own exception, when no hook recovered it.
    """
    if not isinstance(runner_or_turn, (HookRunner, TurnScope)):
        raise TypeError(
            f"wrap_tool needs a HookRunner or a TurnScope, got {type(runner_or_turn).__name__}"
        )
    is_async = inspect.iscoroutinefunction(fn)

    def prepare(
        wrapped: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[TurnScope, ToolCall, Callable[..., Any]]:
        tool = name or str(getattr(wrapped, "__name__", None) or type(wrapped).__name__)
        turn = _turn_for(runner_or_turn, tool)
        signature = inspect.signature(wrapped)
        call = ToolCall(tool, call_args(signature, args, kwargs))
        return turn, call, invoker(wrapped, signature)

    if is_async:

        async def call_async(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
            turn, call, invoke = prepare(wrapped, args, kwargs)
            return _result(await turn.call_tool(call, invoke))

        return cast(F, wrapt.FunctionWrapper(fn, call_async))

    def call_sync(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        turn, call, invoke = prepare(wrapped, args, kwargs)
        return _result(run_now(turn.call_tool(call, invoke)))

    return cast(F, wrapt.FunctionWrapper(fn, call_sync))


# --- agents ------------------------------------------------------------------------------


def _response(value: Any) -> ChatResponse:
    if isinstance(value, ChatResponse):
        return value
    text = value if isinstance(value, str) else getattr(value, "text", None)
    return ChatResponse(text=text) if isinstance(text, str) else ChatResponse()


class _AgentProxy(wrapt.ObjectProxy[Any]):
    """An agent whose chat/run method runs in a turn; ``async with`` it for one session."""

    def __init__(self, agent: Any, runner: HookRunner, method: str, agent_name: str) -> None:
        super().__init__(agent)
        self._self_runner = runner
        self._self_method_name = method
        self._self_agent_name = agent_name
        self._self_session: SessionScope | None = None
        self._self_entered_agent = False
        self._self_method = wrapt.FunctionWrapper(
            getattr(agent, method),
            self._self_call_async
            if inspect.iscoroutinefunction(getattr(agent, method))
            else self._self_call_sync,
        )

    def __getattr__(self, name: str) -> Any:
        if name == self._self_method_name:
            return self._self_method
        return super().__getattr__(name)

    async def __aenter__(self) -> _AgentProxy:
        if self._self_session is not None:
            raise ScopeError("this wrapped agent's session is already open; exit it first")
        session = self._self_runner.session(agent_name=self._self_agent_name)
        await session.__aenter__()
        self._self_session = session
        if hasattr(type(self.__wrapped__), "__aenter__"):
            try:
                await self.__wrapped__.__aenter__()
            except BaseException as error:
                self._self_session = None
                await session.__aexit__(type(error), error, error.__traceback__)
                raise
            self._self_entered_agent = True
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        session, self._self_session = self._self_session, None
        try:
            if self._self_entered_agent:
                self._self_entered_agent = False
                await self.__wrapped__.__aexit__(exc_type, exc, traceback)
        finally:
            if session is not None:
                await session.__aexit__(exc_type, exc, traceback)

    async def _self_lifecycle(self, call: _BoundCall, is_async: bool) -> Any:
        session = self._self_session
        if session is None:  # not inside `async with`: this call is a session of its own
            async with self._self_runner.session(agent_name=self._self_agent_name) as own:
                return await self._self_turn(own, call, is_async)
        return await self._self_turn(session, call, is_async)

    async def _self_turn(self, session: SessionScope, call: _BoundCall, is_async: bool) -> Any:
        async with session.turn(call.prompt) as turn:
            if turn.allowed:
                token = _CURRENT_TURN.set((self._self_runner, turn))
                try:
                    value = call()
                    if is_async:
                        value = await value
                finally:
                    _CURRENT_TURN.reset(token)
                turn.respond(_response(value))
        if not turn.allowed:
            raise TurnBlocked(turn.result)
        return value

    def _self_call_async(self, wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        return self._self_lifecycle(_BoundCall(wrapped, args, kwargs), True)

    def _self_call_sync(self, wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        return run_now(self._self_lifecycle(_BoundCall(wrapped, args, kwargs), False))


@final
class _BoundCall:
    """A deferred method call that knows its prompt (the first argument)."""

    __slots__ = ("args", "kwargs", "method", "prompt")

    def __init__(
        self, method: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> None:
        self.method, self.args, self.kwargs = method, args, kwargs
        self.prompt = args[0] if args else next(iter(kwargs.values()), None)

    def __call__(self) -> Any:
        return self.method(*self.args, **self.kwargs)


def wrap_agent(
    agent: A,
    runner: HookRunner,
    *,
    method: str | None = None,
    agent_name: str | None = None,
) -> A:
    """Run ``agent``'s chat (or run) method in a turn of a session of ``runner``.

    Each call of the method is one turn: ``pre_turn`` decides (a block raises
    :class:`TurnBlocked`), the method runs with its tools' turn set (see :func:`wrap_tool`), and
    ``post_turn`` receives its return value (a string, or an object with a ``text``). Inside
    ``async with wrapped:`` all calls share one session (entering the agent too, when it is an
    async context manager); outside, each call is a session of its own.

    Args:
        agent: Any object with the method.
        runner: The runner whose hooks see the agent's lifecycle.
        method: The method's name; the first of ``chat`` and ``run`` the agent has when
            ``None``.
        agent_name: The session's agent name; the agent's class name when ``None``.

    Returns:
        A proxy of ``agent`` (``isinstance`` and every other attribute pass through).

    Raises:
        TypeError: ``agent`` has no such method.
    """
    if not isinstance(runner, HookRunner):
        raise TypeError(f"wrap_agent needs a HookRunner, got {type(runner).__name__}")
    names = (method,) if method else _AGENT_METHODS
    found = next((n for n in names if callable(getattr(agent, n, None))), None)
    if found is None:
        wanted = repr(method) if method else "chat or run"
        raise TypeError(
            f"wrap_agent: {type(agent).__name__} has no {wanted} method; name the method that "
            "takes a prompt: wrap_agent(agent, runner, method='ask')"
        )
    # The proxy passes every attribute through, so it stands for the agent's own type.
    return cast(A, _AgentProxy(agent, runner, found, agent_name or type(agent).__name__))
