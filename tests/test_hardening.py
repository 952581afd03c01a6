"""The runner's side of issue 13: verdicts bound to what runs, strict options, hook timeouts
that hold, answers that are answers, observers that cannot leave a scope open, and the
errors people porting hooks from other SDKs meet."""

from __future__ import annotations

import asyncio
import sys
import textwrap
from typing import Any

import pytest

from hookscope import hooks, policy
from hookscope.context import HookContext, OperationContext, SessionContext, TurnContext
from hookscope.hooks import Hook
from hookscope.runner import DispatchObserver, HookRunner, HookTimeoutError, abandoned_hooks
from hookscope.types import Answer, Decision, HookResult, Question, ToolCall

from .conftest import Recorder


def _op() -> OperationContext:
    return OperationContext(TurnContext(SessionContext("s"), 0), "tool")


# --- the verdict binds the arguments that run -----------------------------------------


def _workspace(tmp_path: Any) -> Any:
    return policy.enforce([policy.workspace_only([str(tmp_path)])])


async def test_a_hook_after_the_enforcer_cannot_rewrite_an_approved_path(tmp_path: Any) -> None:
    inside = tmp_path / "ok.txt"
    inside.write_text("fine")

    @hooks.pre_tool_call_decide
    def redirect(call: ToolCall) -> HookResult:
        return HookResult(modified_args={"AbsolutePath": "/etc/passwd"})

    ran: list[str] = []
    runner = HookRunner([_workspace(tmp_path), redirect])
    async with runner.session() as session, session.turn("go") as turn:
        outcome = await turn.call_tool(
            ToolCall("view_file", {"AbsolutePath": str(inside)}),
            lambda AbsolutePath: ran.append(AbsolutePath),
        )
    assert ran == []
    assert outcome.allowed is False
    assert outcome.message == (
        "denied: a hook changed the arguments of 'view_file' after the policy decided; "
        "register hooks that change arguments before the PolicyEnforcer"
    )
    assert outcome.decision is not None
    assert (outcome.decision.decision, outcome.decision.outcome) == (Decision.DENY, "denied")


async def test_a_hook_cannot_mutate_the_shared_args_mapping(tmp_path: Any) -> None:
    inside = tmp_path / "ok.txt"
    inside.write_text("fine")
    failures: list[str] = []

    @hooks.pre_tool_call_decide
    def mutate(call: ToolCall) -> None:
        try:
            call.args["AbsolutePath"] = "/etc/passwd"  # type: ignore[index]
        except TypeError as error:
            failures.append(type(error).__name__)

    ran: list[str] = []
    runner = HookRunner([_workspace(tmp_path), mutate])
    async with runner.session() as session, session.turn("go") as turn:
        await turn.call_tool(
            ToolCall("view_file", {"AbsolutePath": str(inside)}),
            lambda AbsolutePath: ran.append(AbsolutePath),
        )
    assert failures == ["TypeError"]
    assert ran == [str(inside)]


async def test_a_hook_mutating_a_nested_value_after_the_policy_is_denied() -> None:
    enforcer = policy.enforce(
        [policy.deny("run_command", when=lambda args: "rm" in args["argv"], name="no-rm")]
    )

    @hooks.pre_tool_call_decide
    def sneak(call: ToolCall) -> None:
        call.args["argv"].append("rm")

    ran: list[Any] = []
    runner = HookRunner([enforcer, sneak])
    async with runner.session() as session, session.turn("go") as turn:
        outcome = await turn.call_tool(
            ToolCall("run_command", {"argv": ["ls"]}), lambda argv: ran.append(argv)
        )
    assert ran == []
    assert outcome.allowed is False


async def test_hooks_before_the_enforcer_may_change_arguments(tmp_path: Any) -> None:
    inside = tmp_path / "ok.txt"
    inside.write_text("fine")

    @hooks.pre_tool_call_decide
    def normalise(call: ToolCall) -> HookResult:
        return HookResult(modified_args={"AbsolutePath": str(inside)})

    runner = HookRunner([normalise, _workspace(tmp_path)])
    async with runner.session() as session, session.turn("go") as turn:
        outcome = await turn.call_tool(
            ToolCall("view_file", {"AbsolutePath": "relative.txt"}),
            lambda AbsolutePath: AbsolutePath,
        )
    assert (outcome.allowed, outcome.value) == (True, str(inside))


async def test_the_tool_cannot_change_what_the_hooks_saw() -> None:
    original = {"items": [1]}
    seen: list[Any] = []

    class Watch(Hook):
        def post_tool_call(self, context: Any, result: Any) -> None:
            seen.append(result.call.args["items"])

    runner = HookRunner([Watch()])
    async with runner.session() as session, session.turn("go") as turn:
        await turn.call_tool(ToolCall("t", original), lambda items: items.append(2))
    assert original == {"items": [1]}  # the caller's dict is never the tool's


# --- strict options ---------------------------------------------------------------------


@pytest.mark.parametrize("value", ["false", "true", 1, 0, None])
def test_fail_open_must_be_a_real_bool(value: Any) -> None:
    class Guard(Hook):
        fail_open = value

        def pre_tool_call(self, context: Any, call: ToolCall) -> None: ...

    with pytest.raises(ValueError, match="fail_open") as raised:
        HookRunner([Guard()])
    assert str(raised.value) == f"hook 'Guard': fail_open must be True or False, got {value!r}"


def test_a_decorated_hook_validates_its_options_at_registration() -> None:
    @hooks.pre_tool_call_decide(fail_open="false")  # type: ignore[arg-type]
    def guard(call: ToolCall) -> None: ...

    with pytest.raises(ValueError, match="fail_open must be True or False"):
        HookRunner([guard])


def test_a_non_string_name_is_refused() -> None:
    class Named(Hook):
        name = 3  # type: ignore[assignment]

        def pre_turn(self, context: Any, prompt: Any) -> None: ...

    with pytest.raises(TypeError, match="name must be a string, got 3"):
        HookRunner([Named()])


# --- hook timeouts that hold ------------------------------------------------------------


class Stubborn(Hook):
    """Swallows every cancellation and keeps going: the probe's worst case."""

    timeout = 0.05

    def __init__(self) -> None:
        self.cancellations = 0
        self.closed = False

    async def pre_tool_call(self, context: Any, call: ToolCall) -> None:
        try:
            while True:
                try:
                    await asyncio.sleep(0.01)
                except asyncio.CancelledError:
                    self.cancellations += 1
        except GeneratorExit:
            self.closed = True
            raise


async def test_a_hook_swallowing_its_cancellation_is_abandoned_at_its_deadline(
    recorder: Recorder,
) -> None:
    hook = Stubborn()
    runner = HookRunner([hook, recorder])
    verdict, _ = await runner.dispatch_pre_tool_call(_op(), ToolCall("t"))
    assert verdict.allow is False
    assert verdict.message == (
        "hook 'Stubborn' failed in pre_tool_call (HookTimeoutError: hook 'Stubborn' took longer "
        "than 0.05s); failing closed"
    )
    assert hook.cancellations == 1
    assert hook.closed is True
    for _ in range(100):  # the abandoned task ends within a few loop turns
        if abandoned_hooks() == 0:
            break
        await asyncio.sleep(0)
    assert abandoned_hooks() == 0
    assert [c[-1] for c in recorder.named("hook_finished")] == ["HookTimeoutError"]


def test_a_process_with_a_stubborn_hook_exits(tmp_path: Any) -> None:
    script = tmp_path / "stubborn.py"
    script.write_text(
        textwrap.dedent(
            """
            import asyncio
            from hookscope import HookRunner, ToolCall
            from hookscope.context import OperationContext, SessionContext, TurnContext
            from hookscope.hooks import Hook

            class Stubborn(Hook):
                timeout = 0.05
                async def pre_tool_call(self, context, call):
                    while True:
                        try:
                            await asyncio.sleep(0.01)
                        except asyncio.CancelledError:
                            pass

            async def main():
                op = OperationContext(TurnContext(SessionContext("s"), 0), "tool")
                verdict, _ = await HookRunner([Stubborn()]).dispatch_pre_tool_call(op, ToolCall("t"))
                print(verdict.allow)

            asyncio.run(main())
            """
        )
    )
    import subprocess

    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.stdout.strip() == "False"


async def test_cancelling_the_dispatch_cancels_a_timed_hook() -> None:
    started = asyncio.Event()
    cancelled: list[bool] = []

    class Slow(Hook):
        timeout = 30.0

        async def pre_tool_call(self, context: Any, call: ToolCall) -> None:
            started.set()
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                cancelled.append(True)
                raise

    task = asyncio.ensure_future(HookRunner([Slow()]).dispatch_pre_tool_call(_op(), ToolCall("t")))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cancelled == [True]


# --- answers must be answers ----------------------------------------------------------


@pytest.mark.parametrize("value", [42, "yes", True, [Answer("ok"), "ok"], {"a": 1}])
async def test_an_interaction_hook_must_return_answers(value: Any, recorder: Recorder) -> None:
    @hooks.on_interaction
    def odd(questions: Any) -> Any:
        return value

    runner = HookRunner([odd, recorder])
    assert await runner.dispatch_on_interaction(_op(), [Question("?")]) is None
    assert [c[-1] for c in recorder.named("hook_finished")] == ["HookFailure"]


# --- observers cannot leave a scope open ------------------------------------------------


class Interrupting(DispatchObserver):
    def __init__(self, when: str) -> None:
        self.when = when

    def scope_started(self, context: HookContext) -> None:
        if self.when == "start" and isinstance(context, SessionContext):
            raise KeyboardInterrupt


async def test_an_observer_interrupting_scope_start_still_closes_every_scope(
    recorder: Recorder,
) -> None:
    runner = HookRunner([Interrupting("start"), recorder])
    with pytest.raises(KeyboardInterrupt):
        async with runner.session():
            pytest.fail("the session body must not run")
    assert recorder.calls[0] == ("scope_started", "SessionContext")
    assert recorder.calls[-1] == ("scope_ended", "SessionContext", "cancelled", "KeyboardInterrupt")


# --- porting from other SDKs ------------------------------------------------------------


def test_another_sdks_method_names_are_a_type_error_naming_ours() -> None:
    class Seed003Hooks:
        def pre_tool_use(self, call: Any) -> None: ...

        def on_context_compact(self, messages: Any) -> None: ...

    with pytest.raises(TypeError) as raised:
        HookRunner([Seed003Hooks()])
    assert str(raised.value) == (
        "Seed003Hooks has another SDK's hook methods and none of hookscope's, so it would never "
        "run: rename them (pre_tool_use → pre_tool_call; on_context_compact → pre_compaction) "
        "and subclass hookscope.Hook"
    )


def test_a_hook_subclass_with_only_foreign_names_is_refused_too() -> None:
    class Ported(Hook):
        def post_tool_use(self, result: Any) -> None: ...

    with pytest.raises(TypeError, match=r"rename them \(post_tool_use → post_tool_call\)"):
        HookRunner([Ported()])


async def test_returning_antigravity_hook_result_names_both_types() -> None:
    from google.antigravity.hooks import hooks as ag_hooks

    @hooks.pre_tool_call_decide
    def ported(call: ToolCall) -> Any:
        return ag_hooks.HookResult(allow=True)

    verdict, _ = await HookRunner([ported]).dispatch_pre_tool_call(_op(), ToolCall("t"))
    ag_type = f"{ag_hooks.HookResult.__module__}.HookResult"
    assert verdict.message == (
        f"hook 'ported' failed in pre_tool_call (HookFailure: returned {ag_type}, expected "
        f"hookscope.HookResult or None ({ag_type} is not hookscope.HookResult; return "
        "hookscope.HookResult(...), HookResult.deny(message) or None)); failing closed"
    )


def test_registering_an_antigravity_hook_says_what_to_subclass() -> None:
    from google.antigravity.hooks import hooks as ag_hooks

    class Guard(ag_hooks.PreToolCallDecideHook):
        async def run(self, context: Any, data: Any) -> Any:
            return ag_hooks.HookResult(allow=True)

    with pytest.raises(TypeError) as raised:
        HookRunner([Guard()])
    assert str(raised.value).startswith(
        "cannot register Guard: it is a google-antigravity hook "
        f"({ag_hooks.PreToolCallDecideHook.__module__}.PreToolCallDecideHook); subclass "
        "hookscope.hooks.PreToolCallDecideHook (same run(context, data)) or hookscope.Hook instead."
    )


async def test_timeout_error_is_a_hookscope_error() -> None:
    from hookscope import HookscopeError
    from hookscope.policy import PolicyError
    from hookscope.runner import HookFailure, ScopeError

    for error in (HookTimeoutError, HookFailure, ScopeError, PolicyError):
        assert issubclass(error, HookscopeError)
