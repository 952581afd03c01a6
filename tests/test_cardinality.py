"""Many agents times many tools: metrics stay labelled by agent and outcome (issue 13)."""

from __future__ import annotations

from hookscope import HookRunner, ToolCall
from hookscope.telemetry.instruments import SERIES_BUDGET
from hookscope.testing import recording


async def test_a_fleet_of_agents_and_tools_never_loses_the_agent_label() -> None:
    agents, tools = 40, 60  # 2,400 (agent, tool) pairs: past the budget, within the SDK limit
    with recording() as rec:
        runner = HookRunner([rec.hook])
        for a in range(agents):
            async with runner.session(agent_name=f"agent{a}") as session, session.turn() as turn:
                for t in range(tools):
                    await turn.call_tool(ToolCall(f"tool{t}"), lambda: None)
        series = rec.metric_points(["hookscope.tool.calls"])["hookscope.tool.calls"]
    labelled = [dict(key) for key in series]
    assert sum(series.values()) == agents * tools
    assert all("gen_ai.agent.name" in attrs for attrs in labelled)
    assert all(attrs["hookscope.tool.outcome"] == "succeeded" for attrs in labelled)
    assert not any("otel.metric.overflow" in attrs for attrs in labelled)
    named = [attrs for attrs in labelled if attrs["gen_ai.tool.name"] != "_other"]
    assert len(named) == SERIES_BUDGET
    folded = {
        attrs["gen_ai.agent.name"] for attrs in labelled if attrs["gen_ai.tool.name"] == "_other"
    }
    assert (
        len(folded) == agents - SERIES_BUDGET // tools
    )  # every agent past the budget keeps its name
