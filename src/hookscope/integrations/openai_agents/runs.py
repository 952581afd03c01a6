"""Turns: one ``Runner.run`` / ``Runner.run_streamed`` is one hookscope turn.

The SDK calls no hook when a run fails or is cancelled, so the run itself is the seam: the
wrappers here bracket ``AgentRunner.run`` (which ``Runner.run`` and ``run_sync`` call) and the
streaming loop (``agents.run.start_streaming``, the task ``run_streamed`` starts) with a turn,
and make the run's :class:`Run` current for every callback the SDK makes inside it (tool
guardrails, the wrapped tool invoker, the model input filter, agent hooks). A run started inside
a governed run's tool (an agent used as a tool) is a subagent run under that tool's span; a
handoff starts a subagent run of the agent handed to, under the turn.
"""

from __future__ import annotations

import copy
import dataclasses
import weakref
from collections.abc import Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Final, final

from agents import Agent, InputGuardrailTripwireTriggered, RunConfig, RunState
from agents.run_config import CallModelData, ModelInputData
from agents.run_internal.run_steps import QueueCompleteSentinel

from hookscope.integrations._kit import SessionBinder, SubagentRun, ToolOp, Turn
from hookscope.integrations.openai_agents.values import (
    PROVIDER,
    ModelRequestBlocked,
    ModelResponseBlocked,
    Proposed,
    agent_model_name,
    input_data,
    llm_request,
    llm_response,
    prompt_text,
    tripwire,
    turn_blocker,
)
from hookscope.types import ChatResponse, Usage

if TYPE_CHECKING:
    from agents import ModelResponse

    from hookscope.context import TurnContext
    from hookscope.integrations.openai_agents.governed import Binding

__all__ = [
    "BINDINGS",
    "GOVERNED",
    "Run",
    "binding_for",
    "current_op",
    "current_run",
    "instrumented",
    "run_seam",
    "set_instrumented",
    "streamed_seam",
    "streaming_loop_seam",
]

#: The governed run whose callbacks the current task serves.
_RUN: Final[ContextVar[Run | None]] = ContextVar("hookscope_openai_agents_run", default=None)
#: The tool call whose tool is running in the current task (an agent-as-tool's nested run
#: starts under it).
_OP: Final[ContextVar[ToolOp | None]] = ContextVar("hookscope_openai_agents_op", default=None)


#: Governed clones → the binding that governs them (by identity, weakly).
GOVERNED: Final[SessionBinder[Agent[Any], Binding]] = SessionBinder()
#: Every binding alive (``end_session`` asks each).
BINDINGS: Final[weakref.WeakSet[Binding]] = weakref.WeakSet()
#: The instrumentor's binding, while instrumented: it governs every run.
_INSTRUMENTED: Final[list[Binding]] = []


def binding_for(agent: Any) -> Binding | None:
    """The binding that governs a run of ``agent``: its own (a governed clone), else the
    enclosing governed run's (an agent used as a tool), else the instrumentor's."""
    known = GOVERNED.get(agent) if agent is not None else None
    if known is not None:
        return known
    from hookscope.integrations.openai_agents.hooks import GovernedHooks  # (an import cycle)

    hooks = getattr(agent, "hooks", None)
    if isinstance(hooks, GovernedHooks):  # a copy the application made of a governed agent
        return hooks.binding
    run = _RUN.get()
    if run is not None:
        return run.binding
    return _INSTRUMENTED[-1] if _INSTRUMENTED else None


def set_instrumented(binding: Binding | None) -> None:
    """Make ``binding`` govern every run (``None``: stop)."""
    _INSTRUMENTED.clear()
    if binding is not None:
        _INSTRUMENTED.append(binding)


def instrumented() -> Binding | None:
    """The instrumentor's binding, while instrumented."""
    return _INSTRUMENTED[-1] if _INSTRUMENTED else None


def current_run() -> Run | None:
    """The governed run the calling task belongs to."""
    return _RUN.get()


def current_op() -> ToolOp | None:
    """The tool call whose tool the calling task runs."""
    return _OP.get()


@final
class Run:
    """One SDK run as hookscope sees it: its turn, or its subagent run inside a parent's turn.

    ``lane`` is where the run's model and tool calls are recorded: the agent handed to after a
    handoff, else the run's own subagent run (agent as tool), else the turn itself.
    """

    __slots__ = ("agent", "binding", "handoff", "handoffs", "ops", "own", "proposed", "turn")

    def __init__(
        self, binding: Binding, turn: Turn, agent: Agent[Any], own: SubagentRun | None = None
    ) -> None:
        self.binding = binding
        self.turn = turn
        self.agent = agent
        self.own = own
        self.handoff: SubagentRun | None = None
        self.handoffs = 0
        #: Calls decided before the SDK invokes their tool, by call id.
        self.ops: dict[str, ToolOp] = {}
        #: The function calls of the latest model response, parsed once (see
        #: :func:`~.values.call_from_tool_context`); the SDK runs them before the next one.
        self.proposed: Proposed = {}

    @property
    def lane(self) -> SubagentRun | None:
        """The subagent run calls are recorded in; ``None`` for the turn itself."""
        return self.handoff or self.own

    @property
    def context(self) -> TurnContext:
        """The turn context model calls are reported in."""
        lane = self.lane
        return lane.context if lane is not None else self.turn.context

    def open_tool(self, op_call: Any) -> ToolOp:
        """Open a tool call's scope in the current lane."""
        return self.turn.open_tool(op_call, self.lane)

    def finish(self, error: BaseException | None = None) -> None:
        """The run ended: the run of the agent it was handed to ends with it."""
        if self.handoff is not None:
            self.turn.end_subagent(self.handoff.run_id, error)
            self.handoff = None

    def handed_off(self, agent: Agent[Any]) -> None:
        """The run handed over to ``agent``: its calls go to an ``invoke_agent`` run of it."""
        turn = self.turn
        if self.handoff is not None:
            turn.end_subagent(self.handoff.run_id)
        self.handoffs += 1
        prefix = self.own.run_id + "/" if self.own is not None else ""
        run_id = f"{prefix}handoff-{self.handoffs}"
        self.handoff = turn.start_subagent(run_id, agent.name, _OP.get())
        self.agent = agent

    # --- model calls ---

    async def model_request(self, data: CallModelData[Any]) -> ModelInputData:
        """``pre_llm_request`` for the model call the SDK is about to make."""
        original = data.model_data
        agent = data.agent
        tools = tuple(t.name for t in getattr(agent, "tools", ()) or () if hasattr(t, "name"))
        request = llm_request(agent_model_name(agent), original, tools)
        lane = self.lane
        runner = self.turn.runner
        scope = lane.scope if lane is not None else self.turn.scope
        with scope.current():
            decision = await runner.dispatch_pre_llm_request(self.context, request)
        if decision.action == "block":
            raise ModelRequestBlocked(decision.message)
        if decision.action == "modify" and decision.request is not None:
            return input_data(decision.request, original)
        return original

    async def model_response(self, agent: Agent[Any], response: ModelResponse) -> None:
        """``on_llm_response`` for the model call that just returned (its span ends)."""
        lane = self.lane
        scope = lane.scope if lane is not None else self.turn.scope
        proposed: Proposed = {}
        self.proposed = proposed
        with scope.current():
            decision = await self.turn.runner.dispatch_on_llm_response(
                self.context, llm_response(agent_model_name(agent), response, proposed)
            )
        if decision.action != "accept":
            raise ModelResponseBlocked(decision.message)


def _prompt(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    value = args[1] if len(args) > 1 else kwargs.get("input")
    return prompt_text(value)


def _with_filter(binding: Binding, config: Any) -> RunConfig:
    """The run's config with hookscope's model input filter before the user's own."""
    if isinstance(config, dict):
        config = RunConfig(**config)
    chosen: RunConfig = config if isinstance(config, RunConfig) else RunConfig()
    user = chosen.call_model_input_filter
    if getattr(user, "__hookscope__", False):  # a nested run inherits the parent's config
        return chosen
    hookscope_filter = _model_input_filter(user) if user is not None else _FILTER
    if type(chosen) is not RunConfig:  # a subclass may be frozen or validate: rebuilt
        return dataclasses.replace(chosen, call_model_input_filter=hookscope_filter)
    # A shallow copy (the application's config stays as it was): replace() would build and
    # validate every field again, on every run.
    copied = copy.copy(chosen)
    copied.call_model_input_filter = hookscope_filter
    return copied


def _model_input_filter(user: Callable[..., Any] | None) -> Callable[..., Any]:
    async def hookscope_model_input_filter(data: CallModelData[Any]) -> ModelInputData:
        run = _RUN.get()
        if user is None:
            return data.model_data if run is None else await run.model_request(data)
        if run is not None:
            data = dataclasses.replace(data, model_data=await run.model_request(data))
        result = user(data)
        return await result if hasattr(result, "__await__") else result  # type: ignore[no-any-return]

    hookscope_model_input_filter.__hookscope__ = True  # type: ignore[attr-defined]
    return hookscope_model_input_filter


#: The filter of every run whose config has none of its own (one, not one per run).
_FILTER: Final = _model_input_filter(None)


def _response(result: Any, agent: Agent[Any]) -> ChatResponse:
    output = getattr(result, "final_output", None)
    usage = getattr(getattr(result, "context_wrapper", None), "usage", None)
    return ChatResponse(
        text=output if isinstance(output, str) else ("" if output is None else str(output)),
        model=agent_model_name(agent),
        usage=Usage(usage.input_tokens, usage.output_tokens) if usage is not None else None,
        provider=PROVIDER,
    )


async def _settle_interrupted(run: Run, result: Any) -> None:
    """Calls the run stopped at for the SDK's approval: asked, not answered in this turn."""
    for item in getattr(result, "interruptions", None) or ():
        call_id = getattr(getattr(item, "raw_item", None), "call_id", None)
        op = run.ops.pop(call_id, None) if isinstance(call_id, str) else None
        if op is not None:
            await op.answer(None)


async def _in_turn(
    binding: Binding,
    agent: Agent[Any],
    prompt: Any,
    sdk_session: Any,
    conversation_id: str | None,
    body: Callable[[Agent[Any]], Any],
    resumed: Callable[[BaseException], None] | None = None,
) -> Any:
    """Run ``body(agent)`` (the SDK's run) as a turn, or as a subagent run inside the current
    one. ``resumed``: the run resumes a ``RunState``; called with the exception that ends a
    blocked one (a streamed run's stream must be told)."""
    parent = _RUN.get()
    if parent is not None and not parent.turn.ended and parent.binding is binding:
        # Another runner's agent run inside this one's tool is a session of its own instead.
        return await _as_subagent(parent, binding, agent, lambda: body(agent))
    session, owned = await binding.session_for(sdk_session, agent, conversation_id)
    error: BaseException | None = None
    try:
        turn = await session.start_turn(prompt)
        if not turn.allowed:
            blocker = turn_blocker(turn.verdict.message)
            if resumed is None:
                # The SDK ends the run its own way: a blocking input guardrail trips before
                # the first model call (InputGuardrailTripwireTriggered, run and streamed).
                return await body(agent.clone(input_guardrails=[blocker]))
            # A resumed run (a RunState) runs no input guardrails: it is not started at all.
            tripped = tripwire(blocker, turn.verdict.message)
            resumed(tripped)
            raise tripped
        run = Run(binding, turn, agent)
        token = _RUN.set(run)
        try:
            result = await body(agent)
        except BaseException as failure:
            run.finish(failure)
            await turn.end(failure)
            raise
        finally:
            _RUN.reset(token)
        run.finish()
        await _settle_interrupted(run, result)
        turn.respond(_response(result, run.agent))
        await turn.end()
        return result
    except BaseException as failure:
        error = failure
        raise
    finally:
        if owned:
            await session.end(error if error is not None and not _blocked(error) else None)


def _blocked(error: BaseException) -> bool:
    # A turn pre_turn blocked ends its one-run session completed, as a blocked turn does.
    return isinstance(error, InputGuardrailTripwireTriggered)


async def _as_subagent(
    parent: Run, binding: Binding, agent: Agent[Any], body: Callable[[], Any]
) -> Any:
    turn = parent.turn
    op = _OP.get()
    run_id = f"{op.call_id if op is not None else 'run'}:{agent.name}"
    own = turn.start_subagent(run_id, agent.name, op)
    run = Run(binding, turn, agent, own)
    token = _RUN.set(run)
    try:
        result = await body()
    except BaseException as error:
        run.finish(error)
        turn.end_subagent(run_id, error)
        raise
    finally:
        _RUN.reset(token)
    run.finish()
    turn.end_subagent(run_id)
    return result


# --- the wrappers (wrapt signatures) ---


async def run_seam(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """``AgentRunner.run``: the run is a turn when its agent is governed."""
    starting = args[0] if args else kwargs.get("starting_agent")
    binding = binding_for(starting)
    if binding is None or not isinstance(starting, Agent):
        return await wrapped(*args, **kwargs)
    agent = binding.agent(starting)
    rest = args[1:]
    kwargs["run_config"] = _with_filter(binding, kwargs.get("run_config"))
    kwargs.pop("starting_agent", None)
    value = rest[0] if rest else kwargs.get("input")
    return await _in_turn(
        binding,
        agent,
        _prompt(args, kwargs),
        kwargs.get("session"),
        kwargs.get("conversation_id"),
        lambda chosen: wrapped(chosen, *rest, **kwargs),
        _nothing if isinstance(value, RunState) else None,
    )


def streamed_seam(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """``AgentRunner.run_streamed``: a governed agent runs as its governed clone, with the
    model input filter; the turn itself is the streaming loop's (:func:`streaming_loop_seam`)."""
    starting = args[0] if args else kwargs.get("starting_agent")
    binding = binding_for(starting)
    if binding is None or not isinstance(starting, Agent):
        return wrapped(*args, **kwargs)
    kwargs.pop("starting_agent", None)
    kwargs["run_config"] = _with_filter(binding, kwargs.get("run_config"))
    return wrapped(binding.agent(starting), *args[1:], **kwargs)


async def streaming_loop_seam(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """``start_streaming`` (in the task ``run_streamed`` started): the streamed run's turn."""
    agent = kwargs.get("starting_agent")
    binding = binding_for(agent)
    if binding is None or agent is None:
        return await wrapped(*args, **kwargs)
    streamed = kwargs.get("streamed_result")
    return await _in_turn(
        binding,
        agent,
        prompt_text(kwargs.get("starting_input")),
        kwargs.get("session"),
        kwargs.get("conversation_id"),
        lambda chosen: _streamed_body(wrapped, chosen, args, kwargs),
        (lambda error: _end_stream(streamed)) if kwargs.get("is_resumed_state") else None,
    )


def _nothing(error: BaseException) -> None:
    return None


def _end_stream(streamed: Any) -> None:
    # What the SDK's streaming loop does when a run ends with an AgentsException: the stream
    # completes, and stream_events() raises the task's exception.
    if streamed is not None:
        streamed.is_complete = True
        streamed._event_queue.put_nowait(QueueCompleteSentinel())


async def _streamed_body(
    wrapped: Any, agent: Agent[Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    await wrapped(*args, **{**kwargs, "starting_agent": agent})
    return kwargs.get("streamed_result")
