"""One scripted turn per agent SDK, run in-process: the workload of ``bench_sdk_adapters``.

Each SDK's real agent loop runs with a model that answers from memory (no HTTP, so the SDK's
and the instrumentation's own costs are what is timed): the model asks for ``CALLS`` calls of
one trivial tool in one response, then answers; the turns of a round are one conversation
(one session, ended with the round). Three ways per SDK: bare; governed by hookscope
(``govern()`` with a 10-rule policy and an ``OTelHook``); traced by OpenInference's
instrumentation for that SDK. Both instrumented ways export to the same kind of provider.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

from hookscope import HookRunner
from hookscope.policy import allow, deny, enforce
from hookscope.telemetry import OTelHook

#: Tool calls the model asks for in each turn.
CALLS = 10
#: Whether hookscope's ``OTelHook`` records content on its spans, as OpenInference's
#: instrumentations do by default (``bench_sdk_adapters --content``); off is hookscope's default.
CONTENT = False

Turn = Callable[[], Awaitable[Any]]
Way = Callable[[TracerProvider], "AsyncIterator[Turn]"]


class Counting(SpanExporter):
    """Counts the spans it is given, and keeps them when asked (for the trees)."""

    def __init__(self, keep: bool = False) -> None:
        self.count = 0
        self.kept: list[ReadableSpan] = []
        self.keep = keep

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.count += len(spans)
        if self.keep:
            self.kept.extend(spans)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        return None


def provider(exporter: SpanExporter, *processors: Any) -> TracerProvider:
    traces = TracerProvider()
    for processor in processors:
        traces.add_span_processor(processor)
    traces.add_span_processor(SimpleSpanProcessor(exporter))
    return traces


def policy_runner(traces: TracerProvider) -> HookRunner:
    """The governance every hookscope case runs: 10 policy rules and an OTelHook."""
    rules = [deny(f"forbidden_{i}") for i in range(8)] + [deny("delete_file"), allow("add")]
    capture = "SPAN_ONLY" if CONTENT else None
    return HookRunner([OTelHook(tracer_provider=traces, capture_content=capture), enforce(rules)])


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


# --- pydantic-ai ---------------------------------------------------------------------------


def _pydantic_model() -> Any:
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel

    def respond(messages: list[Any], info: Any) -> ModelResponse:
        if any(p.part_kind == "tool-return" for p in messages[-1].parts):
            return ModelResponse(parts=[TextPart("done")])
        calls = [ToolCallPart("add", {"a": i, "b": 1}, tool_call_id=f"c{i}") for i in range(CALLS)]
        return ModelResponse(parts=calls)

    return FunctionModel(respond, model_name="scripted-model")


@asynccontextmanager
async def pydantic_ai(way: str, traces: TracerProvider | None) -> AsyncIterator[Turn]:
    from pydantic_ai import Agent

    options: dict[str, Any] = {}
    if way == "openinference":
        from pydantic_ai.capabilities import Instrumentation
        from pydantic_ai.models.instrumented import InstrumentationSettings

        settings = InstrumentationSettings(tracer_provider=traces)
        options["capabilities"] = [Instrumentation(settings=settings)]
    agent = Agent(_pydantic_model(), name="coder", **options)
    agent.tool_plain(add)
    if way == "hookscope":
        from hookscope.integrations.pydantic_ai import end_sessions, govern

        assert traces is not None
        govern(agent, policy_runner(traces))
        yield lambda: agent.run("Add numbers", conversation_id="bench")
        await end_sessions()
        return
    yield lambda: agent.run("Add numbers", conversation_id="bench")


def pydantic_ai_openinference_processors() -> list[Any]:
    from openinference.instrumentation.pydantic_ai import OpenInferenceSpanProcessor

    return [OpenInferenceSpanProcessor()]


# --- LangGraph -----------------------------------------------------------------------------


def _langchain_model() -> Any:
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage, ToolMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    class ScriptedChat(BaseChatModel):
        model: str = "scripted-model"

        @property
        def _llm_type(self) -> str:
            return "scripted"

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

        def _generate(
            self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any
        ) -> ChatResult:
            usage = {"input_tokens": 100, "output_tokens": 10, "total_tokens": 110}
            if isinstance(messages[-1], ToolMessage):
                message = AIMessage("done", usage_metadata=usage)
            else:
                calls = [
                    {"name": "add", "args": {"a": i, "b": 1}, "id": f"c{i}"} for i in range(CALLS)
                ]
                message = AIMessage("", tool_calls=calls, usage_metadata=usage)
            return ChatResult(generations=[ChatGeneration(message=message)])

    return ScriptedChat()


@asynccontextmanager
async def langgraph(way: str, traces: TracerProvider | None) -> AsyncIterator[Turn]:
    from langchain.agents import create_agent

    instrumentor = None
    if way == "openinference":
        from openinference.instrumentation.langchain import LangChainInstrumentor

        instrumentor = LangChainInstrumentor()
        instrumentor.instrument(tracer_provider=traces)

    from langchain_core.tools import StructuredTool

    async def add_async(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    tool = StructuredTool.from_function(coroutine=add_async, name="add")
    graph = create_agent(_langchain_model(), [tool], name="coder")
    prompt = {"messages": [("user", "Add numbers")]}
    thread = {"configurable": {"thread_id": "bench"}}  # no checkpointer: no history kept
    try:
        if way == "hookscope":
            from hookscope.integrations.langgraph import end_sessions, govern

            assert traces is not None
            govern(graph, policy_runner(traces))
            yield lambda: graph.ainvoke(prompt, thread)
            await end_sessions()
        else:
            yield lambda: graph.ainvoke(prompt, thread)
    finally:
        if instrumentor is not None:
            instrumentor.uninstrument()


# --- Google ADK ----------------------------------------------------------------------------


def _adk_model() -> Any:
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_response import LlmResponse
    from google.genai import types

    class ScriptedLlm(BaseLlm):
        async def generate_content_async(self, llm_request: Any, stream: bool = False) -> Any:
            last = llm_request.contents[-1]
            usage = types.GenerateContentResponseUsageMetadata(
                prompt_token_count=100, candidates_token_count=10, total_token_count=110
            )
            if any(p.function_response for p in last.parts or []):
                parts = [types.Part(text="done")]
            else:
                parts = [
                    types.Part(
                        function_call=types.FunctionCall(
                            id=f"c{i}", name="add", args={"a": i, "b": 1}
                        )
                    )
                    for i in range(CALLS)
                ]
            yield LlmResponse(
                content=types.Content(role="model", parts=parts),
                model_version=self.model,
                usage_metadata=usage,
            )

    return ScriptedLlm(model="scripted-model")


@asynccontextmanager
async def google_adk(way: str, traces: TracerProvider | None) -> AsyncIterator[Turn]:
    from google.adk.agents import LlmAgent
    from google.adk.runners import InMemoryRunner
    from google.genai import types

    instrumentor = None
    if way == "openinference":
        from openinference.instrumentation.google_adk import GoogleADKInstrumentor

        instrumentor = GoogleADKInstrumentor()
        instrumentor.instrument(tracer_provider=traces)
    agent = LlmAgent(name="coder", model=_adk_model(), tools=[add])
    runner = InMemoryRunner(agent=agent, app_name="bench")
    if way == "hookscope":
        from hookscope.integrations.google_adk import govern

        assert traces is not None
        govern(runner, policy_runner(traces))
    message = types.Content(role="user", parts=[types.Part(text="Add numbers")])
    session = await runner.session_service.create_session(app_name="bench", user_id="u")

    async def turn() -> None:
        async for _ in runner.run_async(user_id="u", session_id=session.id, new_message=message):
            pass

    try:
        yield turn
    finally:
        await runner.close()
        if instrumentor is not None:
            instrumentor.uninstrument()


#: SDK → (workload, extra span processors OpenInference needs on the provider).
SDKS: dict[str, tuple[Callable[..., Any], Callable[[], list[Any]]]] = {
    "pydantic-ai": (pydantic_ai, pydantic_ai_openinference_processors),
    "langgraph": (langgraph, list),
    "google-adk": (google_adk, list),
}


def run(coroutine: Awaitable[Any]) -> Any:
    return asyncio.run(coroutine)  # type: ignore[arg-type]
