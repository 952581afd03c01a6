"""The governed agent's ``AgentHooks``: model responses and handoffs, then the user's hooks.

The SDK calls an agent's hooks in the run's own task, so the current :class:`~.runs.Run` is
the run they are about. A model response runs ``on_llm_response`` (a block ends the run: the
SDK cannot discard a response); a handoff starts the ``invoke_agent`` run of the agent handed
to. Every other method only passes the call on to the user's hooks, unchanged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agents import Agent, AgentHooks, ModelResponse, RunContextWrapper, Tool, TResponseInputItem

from hookscope.integrations.openai_agents.runs import current_run

if TYPE_CHECKING:
    from hookscope.integrations.openai_agents.governed import Binding

__all__ = ["GovernedHooks"]


class GovernedHooks(AgentHooks[Any]):
    """hookscope's agent hooks, delegating to the user's (``user``, may be ``None``).

    ``binding`` is how a copy of a governed agent (``governed.clone(...)``) is still known as
    governed, and by whom.
    """

    def __init__(self, user: Any, binding: Binding) -> None:
        self.user = user
        self.binding = binding

    async def on_start(self, context: Any, agent: Any) -> None:
        if self.user is not None:
            await self.user.on_start(context, agent)

    async def on_end(self, context: Any, agent: Any, output: Any) -> None:
        if self.user is not None:
            await self.user.on_end(context, agent, output)

    async def on_handoff(self, context: RunContextWrapper[Any], agent: Any, source: Any) -> None:
        run = current_run()
        if run is not None and isinstance(agent, Agent):
            run.handed_off(agent)
        if self.user is not None:
            await self.user.on_handoff(context=context, agent=agent, source=source)

    async def on_tool_start(self, context: Any, agent: Any, tool: Tool) -> None:
        if self.user is not None:
            await self.user.on_tool_start(context, agent, tool)

    async def on_tool_end(self, context: Any, agent: Any, tool: Tool, result: Any) -> None:
        if self.user is not None:
            await self.user.on_tool_end(context, agent, tool, result)

    async def on_llm_start(
        self,
        context: Any,
        agent: Any,
        system_prompt: str | None,
        input_items: list[TResponseInputItem],
    ) -> None:
        if self.user is not None:
            await self.user.on_llm_start(context, agent, system_prompt, input_items)

    async def on_llm_end(self, context: Any, agent: Any, response: ModelResponse) -> None:
        run = current_run()
        if run is not None:
            await run.model_response(agent, response)
        if self.user is not None:
            await self.user.on_llm_end(context, agent, response)
