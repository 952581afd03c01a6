"""What the adapter does once instead of on every call stays exact: the invoker's signature,
a call's parsed arguments, the run's config."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

from agents import ModelSettings, RunConfig, Runner, function_tool
from agents.run_config import CallModelData, ModelInputData

from hookscope import Hook, HookRunner
from hookscope.integrations.openai_agents import govern
from hookscope.testing import Recording
from hookscope.types import LlmResponse, ResponseDecision, ToolCall
from tests.integrations.oai.support import RAN, add, agent, call, lines
from tests.support.model_server import ScriptedModelServer


@function_tool
def total(numbers: list[int]) -> int:
    """Sum a list of integers."""
    RAN.append(f"total {numbers}")
    return sum(numbers)


class Tamper(Hook):
    """Changes the list argument of every call a model response proposes, in place, and
    records the arguments ``pre_tool_call`` is then given."""

    def __init__(self) -> None:
        self.decided: list[dict[str, Any]] = []

    def on_llm_response(self, context: Any, response: LlmResponse) -> ResponseDecision | None:
        for proposed in response.tool_calls:
            numbers = proposed.args.get("numbers")
            if isinstance(numbers, list):
                numbers.append(99)
        return None

    def pre_tool_call(self, context: Any, call: ToolCall) -> None:
        self.decided.append(
            {k: list(v) if isinstance(v, list) else v for k, v in call.args.items()}
        )


async def test_pre_tool_call_sees_the_models_arguments_whatever_a_response_hook_did_to_its_copy(
    rec: Recording,
) -> None:
    script = {"Sum them": [call("total", numbers=[1, 2]), {"text": "{tool_result}"}]}
    tamper = Tamper()
    with ScriptedModelServer(script) as server:
        governed = govern(agent(server.base_url, tools=[total]), HookRunner([rec.hook, tamper]))
        result = await Runner.run(governed, "Sum them")
    assert tamper.decided == [{"numbers": [1, 2]}]
    assert RAN == ["total [1, 2]"]
    assert result.final_output == "3"


class Arguments(Hook):
    """Records the calls ``pre_tool_call`` is given."""

    def __init__(self) -> None:
        self.calls: list[ToolCall] = []

    def pre_tool_call(self, context: Any, call: ToolCall) -> None:
        self.calls.append(call)


async def test_each_call_of_a_response_is_decided_with_its_own_arguments(rec: Recording) -> None:
    script = {
        "Add twice": [
            {
                "tool_calls": [
                    {"name": "add", "arguments": {"a": 1, "b": 2}},
                    {"name": "add", "arguments": {"a": 30, "b": 4}},
                ]
            },
            {"text": "done"},
        ]
    }
    seen = Arguments()
    with ScriptedModelServer(script) as server:
        governed = govern(agent(server.base_url, tools=[add]), HookRunner([rec.hook, seen]))
        await Runner.run(governed, "Add twice")
    assert sorted((c.name, c.args["a"], c.args["b"]) for c in seen.calls) == [
        ("add", 1, 2),
        ("add", 30, 4),
    ]
    assert len({c.id for c in seen.calls}) == 2
    assert sorted(RAN) == ["add 1 2", "add 30 4"]


def test_the_governed_invoker_has_the_sdk_invokers_signature() -> None:
    original = agent("http://127.0.0.1:9", tools=[add, total])
    governed = govern(original, HookRunner([]))
    for mine, theirs in zip(governed.tools, original.tools, strict=True):
        assert inspect.signature(mine.on_invoke_tool) == inspect.signature(theirs.on_invoke_tool)
        # A copy the SDK makes of a governed tool rebinds its invoker: the same signature.
        copied = dataclasses.replace(mine)
        assert inspect.signature(copied.on_invoke_tool) == inspect.signature(mine.on_invoke_tool)


async def test_the_applications_run_config_is_used_and_left_as_it_was(rec: Recording) -> None:
    filtered: list[int] = []

    def own_filter(data: CallModelData[Any]) -> ModelInputData:
        filtered.append(len(data.model_data.input))
        return data.model_data

    plain = RunConfig(model_settings=ModelSettings(temperature=0.5))
    with_filter = RunConfig(call_model_input_filter=own_filter)
    with ScriptedModelServer({"Say hi": [{"text": "hi"}, {"text": "hi again"}]}) as server:
        governed = govern(agent(server.base_url), HookRunner([rec.hook]))
        await Runner.run(governed, "Say hi", run_config=plain)
        await Runner.run(governed, "Say hi", run_config=with_filter)
        sent = [r.body for r in server.model_requests()]
    assert sent[0]["temperature"] == 0.5
    assert "temperature" not in sent[1]
    assert filtered == [1]
    assert plain.call_model_input_filter is None
    assert with_filter.call_model_input_filter is own_filter
    assert (
        lines(rec)
        == [
            "session assistant session=completed",
            "  invoke_agent assistant turn=completed in=100 out=10",
            "    chat scripted-model in=100 out=10",
        ]
        * 2
    )
