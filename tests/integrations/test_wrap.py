"""wrap_tool and wrap_agent: hooks for agents written without any hook SDK."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

import pytest

from hookscope import hooks
from hookscope.integrations.wrap import ToolCallDenied, TurnBlocked, wrap_agent, wrap_tool
from hookscope.policy import deny, enforce
from hookscope.runner import HookRunner, ScopeError
from hookscope.types import ChatResponse, HookResult, Recovery, ToolCall, ToolResult

from ..conftest import Recorder


async def lookup(city: str, *, units: str = "metric") -> str:
    """Look the weather up."""
    return f"sunny in {city} ({units})"


def shout(text: str, /, times: int = 1) -> str:
    """Repeat loudly."""
    return " ".join([text.upper()] * times)


class Seen:
    """Records what the tool hooks saw."""

    def __init__(self) -> None:
        self.calls: list[ToolCall] = []
        self.results: list[Any] = []
        self.errors: list[str] = []

    def hooks(self) -> list[Any]:
        @hooks.pre_tool_call_decide
        def saw_call(call: ToolCall) -> None:
            self.calls.append(call)

        @hooks.post_tool_call
        def saw_result(result: ToolResult) -> None:
            self.results.append(result.value)

        @hooks.on_tool_error
        def saw_error(error: Exception) -> Recovery | None:
            self.errors.append(type(error).__name__)
            return Recovery("fallback") if isinstance(error, TimeoutError) else None

        return [saw_call, saw_result, saw_error]


@pytest.fixture
def seen() -> Seen:
    return Seen()


def test_wrapped_tool_keeps_signature_docstring_and_kind(seen: Seen) -> None:
    runner = HookRunner(seen.hooks())
    wrapped_async = wrap_tool(lookup, runner)
    wrapped_sync = wrap_tool(shout, runner)

    assert inspect.signature(wrapped_async) == inspect.signature(lookup)
    assert wrapped_async.__doc__ == "Look the weather up."
    assert wrapped_async.__name__ == "lookup"
    assert inspect.iscoroutinefunction(wrapped_async)
    assert inspect.signature(wrapped_sync) == inspect.signature(shout)
    assert not inspect.iscoroutinefunction(wrapped_sync)


async def test_calling_a_wrapped_tool_in_a_turn_runs_pre_and_post_hooks(seen: Seen) -> None:
    runner = HookRunner(seen.hooks())
    async with runner.session() as session, session.turn("hi") as turn:
        value = await wrap_tool(lookup, turn)("Oslo", units="imperial")

    assert value == "sunny in Oslo (imperial)"
    assert seen.calls == [ToolCall("lookup", {"city": "Oslo", "units": "imperial"})]
    assert seen.results == ["sunny in Oslo (imperial)"]


async def test_positional_only_arguments_reach_the_tool_by_position(seen: Seen) -> None:
    runner = HookRunner(seen.hooks())
    async with runner.session() as session, session.turn("hi") as turn:
        value = wrap_tool(shout, turn)("hey", times=2)

    assert value == "HEY HEY"
    assert seen.calls == [ToolCall("shout", {"text": "hey", "times": 2})]


def cat(path: str, *more: str) -> str:
    """Join files."""
    return "+".join((path, *more))


def label(name: str, *values: int, **tags: str) -> str:
    """Label values."""
    return f"{name}{list(values)}{tags}"


async def test_var_positional_arguments_reach_the_tool_by_position(seen: Seen) -> None:
    runner = HookRunner(seen.hooks())
    async with runner.session() as session, session.turn("hi") as turn:
        value = wrap_tool(cat, turn)("a.txt", "b.txt", "c.txt")

    assert value == "a.txt+b.txt+c.txt"
    assert seen.calls == [ToolCall("cat", {"path": "a.txt", "more": ("b.txt", "c.txt")})]


async def test_var_keyword_arguments_reach_the_tool_by_name(seen: Seen) -> None:
    runner = HookRunner(seen.hooks())
    async with runner.session() as session, session.turn("hi") as turn:
        value = wrap_tool(label, turn)("n", 1, 2, colour="red")

    assert value == "n[1, 2]{'colour': 'red'}"
    assert seen.calls == [ToolCall("label", {"name": "n", "values": (1, 2), "colour": "red"})]


async def test_arguments_a_hook_adds_reach_the_tools_var_keyword_parameter() -> None:
    @hooks.pre_tool_call_decide
    def add_size(call: ToolCall) -> HookResult:
        return HookResult(modified_args={"size": "XL"})

    runner = HookRunner([add_size])
    async with runner.session() as session, session.turn("hi") as turn:
        value = wrap_tool(label, turn)("n", 1)

    assert value == "n[1]{'size': 'XL'}"


async def test_denied_call_raises_tool_call_denied_with_the_message() -> None:
    runner = HookRunner([enforce([deny("lookup", name="no-weather", reason="offline")])])
    async with runner.session() as session, session.turn("hi") as turn:
        with pytest.raises(ToolCallDenied) as denied:
            await wrap_tool(lookup, turn)("Oslo")

    assert denied.value.message == "denied by policy rule 'no-weather': offline"
    assert denied.value.outcome.allowed is False


async def test_recovered_error_returns_the_recovery_value(seen: Seen) -> None:
    async def flaky() -> str:
        raise TimeoutError("slow")

    runner = HookRunner(seen.hooks())
    async with runner.session() as session, session.turn("hi") as turn:
        value = await wrap_tool(flaky, turn)()

    assert value == "fallback"
    assert seen.errors == ["TimeoutError"]


async def test_unrecovered_error_is_the_tools_own_exception(seen: Seen) -> None:
    async def broken() -> str:
        raise KeyError("missing")

    runner = HookRunner(seen.hooks())
    async with runner.session() as session, session.turn("hi") as turn:
        with pytest.raises(KeyError, match="missing"):
            await wrap_tool(broken, turn)()


async def test_tool_wrapped_with_a_runner_joins_the_running_agents_turn(
    seen: Seen, recorder: Recorder
) -> None:
    runner = HookRunner([*seen.hooks(), recorder])
    tool = wrap_tool(lookup, runner)

    class Bot:
        async def chat(self, prompt: str) -> str:
            return await tool(prompt)

    answer = await wrap_agent(Bot(), runner).chat("Rome")

    assert answer == "sunny in Rome (metric)"
    assert [c[1] for c in recorder.named("scope_started")] == [
        "SessionContext",
        "TurnContext",
        "OperationContext",
    ]


async def test_tool_wrapped_with_a_runner_outside_any_turn_says_how_to_fix_it() -> None:
    tool = wrap_tool(lookup, HookRunner())

    with pytest.raises(ScopeError, match=r"outside a turn of its runner; call it while an agent"):
        await tool("Oslo")


async def test_sync_tool_called_from_an_async_agent_runs_its_hooks(seen: Seen) -> None:
    runner = HookRunner(seen.hooks())
    tool = wrap_tool(shout, runner)

    class Bot:
        async def run(self, prompt: str) -> str:
            return tool(prompt)

    assert await wrap_agent(Bot(), runner).run("go") == "GO"
    assert seen.results == ["GO"]


async def test_sync_tool_whose_hook_suspends_raises_scope_error() -> None:
    @hooks.pre_tool_call_decide
    async def slow(call: ToolCall) -> None:
        await asyncio.sleep(0)

    runner = HookRunner([slow])
    async with runner.session() as session, session.turn("hi") as turn:
        with pytest.raises(ScopeError, match=r"make the tool or method async"):
            wrap_tool(shout, turn)("x")


def timed_hook(ran: list[str]) -> Any:
    @hooks.pre_tool_call_decide(timeout=5)
    async def quick(call: ToolCall) -> None:
        ran.append(call.name)

    return quick


async def test_sync_tool_with_a_timed_hook_raises_scope_error_naming_the_timeout() -> None:
    runner = HookRunner([timed_hook([])])
    async with runner.session() as session, session.turn("hi") as turn:
        with pytest.raises(ScopeError) as raised:
            wrap_tool(shout, turn)("x")

    assert str(raised.value) == (
        "a hook with a timeout ran while a synchronous tool or agent method was running: "
        "hookscope runs such a hook in a task it waits for, which suspends, and a synchronous "
        "caller cannot wait; make the tool or method async (async def), or register the hook "
        "without a timeout"
    )


async def test_sync_tool_with_a_timed_hook_leaves_no_hook_running() -> None:
    ran: list[str] = []
    runner = HookRunner([timed_hook(ran)])
    async with runner.session() as session, session.turn("hi") as turn:
        with pytest.raises(ScopeError):
            wrap_tool(shout, turn)("x")
        await asyncio.sleep(0)  # the task the timeout runs the hook in gets its turn now

    assert ran == []


async def test_each_call_outside_async_with_is_a_session_of_its_own(recorder: Recorder) -> None:
    class Bot:
        async def chat(self, prompt: str) -> str:
            return prompt[::-1]

    bot = wrap_agent(Bot(), HookRunner([recorder]), agent_name="echo")
    assert await bot.chat("abc") == "cba"
    assert await bot.chat("xy") == "yx"

    started = [c[1] for c in recorder.named("scope_started")]
    assert started == ["SessionContext", "TurnContext"] * 2


async def test_calls_inside_async_with_share_one_session(recorder: Recorder) -> None:
    responses: list[ChatResponse] = []

    @hooks.post_turn
    def keep(response: ChatResponse) -> None:
        responses.append(response)

    class Bot:
        entered = exited = False

        async def __aenter__(self) -> Bot:
            self.entered = True
            return self

        async def __aexit__(self, *exc: object) -> None:
            self.exited = True

        async def chat(self, prompt: str) -> str:
            return f"re: {prompt}"

    raw = Bot()
    async with wrap_agent(raw, HookRunner([recorder, keep])) as bot:
        await bot.chat("one")
        await bot.chat("two")
        assert raw.entered

    assert raw.exited
    assert [c[1] for c in recorder.named("scope_started")] == [
        "SessionContext",
        "TurnContext",
        "TurnContext",
    ]
    assert [r.text for r in responses] == ["re: one", "re: two"]


async def test_blocked_turn_raises_turn_blocked_and_skips_the_method() -> None:
    called: list[str] = []

    @hooks.pre_turn
    def gate(prompt: str) -> HookResult:
        return HookResult.deny("not today")

    class Bot:
        async def chat(self, prompt: str) -> str:
            called.append(prompt)
            return "never"

    with pytest.raises(TurnBlocked, match="not today"):
        await wrap_agent(Bot(), HookRunner([gate])).chat("hi")
    assert called == []


def test_wrapped_agent_passes_isinstance_and_attributes_through() -> None:
    class Bot:
        model = "m1"

        def run(self, prompt: str) -> str:
            return prompt

    bot = wrap_agent(Bot(), HookRunner())

    assert isinstance(bot, Bot)
    assert bot.model == "m1"
    assert bot.run("sync works") == "sync works"


def test_agent_without_a_chat_or_run_method_is_rejected_with_a_fix() -> None:
    with pytest.raises(TypeError, match=r"has no chat or run method; name the method"):
        wrap_agent(object(), HookRunner())
    with pytest.raises(TypeError, match=r"has no 'ask' method"):
        wrap_agent(object(), HookRunner(), method="ask")
