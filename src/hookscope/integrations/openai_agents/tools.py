"""Function tools under governance: a guardrail decides, a wrapped invoker runs the call.

Per call the SDK runs, in order: ``needs_approval`` (the run stops for approval when it says
so), the tool input guardrails, ``on_tool_start``, ``on_invoke_tool``, the output guardrails.
hookscope decides in its tool input guardrail, appended after the user's own (a denial is the
SDK's ``reject_content``: the model reads the message as the tool's output and the tool does
not run), or in ``needs_approval`` with ``ask="native"`` (an ask interrupts the run for the
SDK's approval). The wrapped ``on_invoke_tool`` then runs the tool with the effective
arguments, reports ``post_tool_call``, and on an exception runs ``on_tool_error``: a recovery's
value is the tool's output; otherwise the user's ``failure_error_function`` (the SDK's default
message when they set none) answers the model as it would have, or the exception propagates.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
from typing import TYPE_CHECKING, Any

import wrapt
from agents import FunctionTool, ToolGuardrailFunctionOutput, ToolInputGuardrail
from agents.tool import maybe_invoke_function_tool_failure_error_function
from agents.tool_context import ToolContext
from agents.tool_guardrails import ToolInputGuardrailData

from hookscope.integrations._kit import ToolVerdict
from hookscope.integrations.openai_agents.runs import _OP, Run, current_run
from hookscope.integrations.openai_agents.values import (
    call_from_tool_context,
    tool_guardrail_output,
)
from hookscope.types import ToolCall

if TYPE_CHECKING:
    from hookscope.integrations.openai_agents.governed import Binding

__all__ = ["governed_tool", "tool_guardrail"]

_NO_RUN = (
    "hookscope denied this call: it ran outside a governed run (call the agent with "
    "Runner.run, run_streamed or run_sync)"
)


def governed_tool(tool: Any, binding: Binding) -> Any:
    """A governed copy of a function tool; any other tool (hosted, MCP) unchanged."""
    if not isinstance(tool, FunctionTool) or isinstance(tool.on_invoke_tool, GovernedInvoker):
        return tool
    changes: dict[str, Any] = {
        "tool_input_guardrails": [*(tool.tool_input_guardrails or ()), binding.guardrail],
        # The invoker below sees the tool's exception, and answers the model with the user's
        # failure_error_function itself when no hook recovers it.
        "_failure_error_function": None,
        "_use_default_failure_error_function": False,
    }
    if binding.ask == "native":
        changes["needs_approval"] = _native_approval(tool, binding)
    copy = dataclasses.replace(tool, **changes)  # rebinds the SDK's invoker to the copy
    copy.on_invoke_tool = GovernedInvoker(copy.on_invoke_tool, tool, binding)
    return copy


def tool_guardrail(binding: Binding) -> ToolInputGuardrail[Any]:
    """hookscope's tool input guardrail: ``pre_tool_call`` decides; a denial rejects."""

    async def hookscope_policy(data: ToolInputGuardrailData) -> ToolGuardrailFunctionOutput:
        context = data.context
        run = current_run()
        if run is None:
            return ToolGuardrailFunctionOutput.reject_content(_NO_RUN, output_info=None)
        verdict = await binding.governor.guard.decide(
            _decide(run, context, binding), _lazy_denial(context), "guardrail"
        )
        return tool_guardrail_output(verdict)

    return ToolInputGuardrail(guardrail_function=hookscope_policy, name="hookscope")


async def _decide(run: Run, context: ToolContext[Any], binding: Binding) -> ToolVerdict:
    op = run.ops.get(context.tool_call_id)
    if op is not None and op.verdict is not None and not op.verdict.pending:
        return op.verdict  # decided in needs_approval (ask="native")
    op = run.open_tool(call_from_tool_context(context, proposed=run.proposed))
    if binding.ask == "native" and _approved(context):
        # The user approved this call through the SDK in an earlier run: hookscope's hooks
        # decide again (a denial still wins), an ask is settled by that approval.
        verdict = await op.decide(native_ask=True)
        if verdict.pending:
            verdict = await op.answer(True)
    else:
        verdict = await op.decide()
    if verdict.allowed:
        run.ops[context.tool_call_id] = op
    return verdict


def _approved(context: ToolContext[Any]) -> bool:
    try:
        return context.is_tool_approved(context.tool_name, context.tool_call_id) is True
    except Exception:  # an SDK without approvals for this call: not approved
        return False


def _native_approval(tool: FunctionTool, binding: Binding) -> Any:
    """``needs_approval`` for ``ask="native"``: the user's own first, then hookscope's hooks."""
    user = tool.needs_approval

    async def needs_approval(context: Any, params: dict[str, Any], call_id: str) -> bool:
        if user is True or (callable(user) and await user(context, params, call_id)):
            return True
        run = current_run()
        if run is None:
            return False  # the guardrail denies it
        call = ToolCall(tool.name, params, call_id)

        async def decide() -> ToolVerdict:
            op = run.open_tool(call)
            run.ops[call_id] = op
            return await op.decide(native_ask=True)

        verdict = await binding.governor.guard.decide(decide(), _denial(call), "needs_approval")
        return verdict.pending

    return needs_approval


def _denial(call: ToolCall) -> Any:
    return lambda message: ToolVerdict(False, call, message)


def _lazy_denial(context: ToolContext[Any]) -> Any:
    # Built only when the adapter failed: the arguments are not parsed twice on every call.
    return lambda message: ToolVerdict(False, call_from_tool_context(context), message)


class GovernedInvoker(wrapt.ObjectProxy):  # type: ignore[type-arg]
    """The SDK's ``on_invoke_tool`` of a governed tool, run inside its hookscope call.

    A proxy, so the SDK still finds its own invoker's attributes (argument preparation for
    approvals, the wrapped function) on it.
    """

    def __init__(self, invoke: Any, original: FunctionTool, binding: Binding) -> None:
        super().__init__(invoke)
        self._self_original = original
        self._self_binding = binding
        self._self_signature: inspect.Signature | None = None

    @property
    def __signature__(self) -> inspect.Signature:
        # The SDK reads the invoker's signature on every call (to choose the context object it
        # passes): the wrapped invoker's, computed once, spares it the proxy's slow
        # introspection. Without one, no attribute: inspect then fails as it always did.
        signature = self._self_signature
        if signature is None:
            try:
                signature = inspect.signature(self.__wrapped__)
            except (TypeError, ValueError) as error:
                raise AttributeError("__signature__") from error
            self._self_signature = signature
        return signature

    def __agents_bind_function_tool__(self, tool: FunctionTool) -> GovernedInvoker:
        # The SDK rebinds an invoker when it copies a tool: the copy stays governed.
        rebind = getattr(self.__wrapped__, "__agents_bind_function_tool__", None)
        inner = rebind(tool) if callable(rebind) else self.__wrapped__
        return GovernedInvoker(inner, self._self_original, self._self_binding)

    async def __call__(self, context: ToolContext[Any], arguments: str) -> Any:
        run = current_run()
        if run is None:
            return _NO_RUN
        op = run.ops.pop(context.tool_call_id, None)
        if op is None:  # the SDK skipped the guardrails (a resumed nested run): decide here
            op = run.open_tool(call_from_tool_context(context, arguments))
            verdict = await self._self_binding.governor.guard.decide(
                op.decide(), _denial(op.call), "on_invoke_tool"
            )
            if not verdict.allowed:
                op.close()
                return verdict.message
        decided = op.verdict
        if decided is not None and decided.args is not None:
            arguments = json.dumps(dict(decided.args))
        token = _OP.set(op)
        try:
            with op.scope.current():
                value = await self.__wrapped__(context, arguments)
        except Exception as error:
            recovery = await op.failed(error)
            if recovery is not None:
                return recovery.value
            message = await maybe_invoke_function_tool_failure_error_function(
                function_tool=self._self_original, context=context, error=error
            )
            if message is None:
                raise
            return message
        except BaseException as error:
            op.close(error)
            raise
        finally:
            _OP.reset(token)
        await op.returned(value)
        return value
