"""What the OpenAI Agents SDK tests share: the real SDK against the scripted model server.

Everything here is real: ``agents.Runner`` drives ``OpenAIChatCompletionsModel`` over HTTP to
:class:`~tests.support.model_server.ScriptedModelServer` on 127.0.0.1 (every reply reports
100 input and 10 output tokens). Tools are plain function tools; ``lines()`` turns a recording
into one readable line per span, so tests compare whole trees.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from agents import Agent, OpenAIChatCompletionsModel, function_tool
from openai import AsyncOpenAI

from hookscope import HookResult, hooks
from hookscope.testing import Recording
from hookscope.types import Recovery

#: Scenarios with concurrency in them run this many times.
ATTEMPTS: Final = range(3)

#: Attributes each line shows, in this order, with a short label.
SHOWN: Final = (
    ("hookscope.turn.outcome", "turn"),
    ("hookscope.tool.outcome", "tool"),
    ("hookscope.policy.decision", "decision"),
    ("hookscope.policy.decided_by", "by"),
    ("hookscope.session.outcome", "session"),
    ("gen_ai.usage.input_tokens", "in"),
    ("gen_ai.usage.output_tokens", "out"),
    ("error.type", "error"),
)


def lines(recording: Recording) -> list[str]:
    """One line per finished span: indent, name, status when ERROR, then :data:`SHOWN`."""
    out: list[str] = []

    def walk(nodes: Sequence[Mapping[str, Any]], depth: int) -> None:
        for node in nodes:
            attributes = node["attributes"]
            parts = [node["name"]]
            if node["status"] == "ERROR":
                parts.append("ERROR")
            parts += [f"{label}={attributes[key]}" for key, label in SHOWN if key in attributes]
            out.append("  " * depth + " ".join(str(p) for p in parts))
            walk(node.get("children", ()), depth + 1)

    walk(recording.span_tree(), 0)
    return out


def totals(recording: Recording, name: str, *keys: str) -> dict[tuple[Any, ...], Any]:
    """A metric's points summed by the values of ``keys`` (histograms: their counts)."""
    summed: dict[tuple[Any, ...], Any] = {}
    for attributes, value in recording.metric_points([name]).get(name, {}).items():
        found = dict(attributes)
        key = tuple(found.get(k) for k in keys)
        summed[key] = summed.get(key, 0) + value
    return summed


#: Clients made for a test, closed after it (the conftest).
CLIENTS: list[AsyncOpenAI] = []


def chat_model(base_url: str) -> OpenAIChatCompletionsModel:
    """The SDK's Chat Completions model, pointed at the scripted server."""
    client = AsyncOpenAI(base_url=base_url + "/v1", api_key="sk-test", max_retries=0)
    CLIENTS.append(client)
    return OpenAIChatCompletionsModel(model="scripted-model", openai_client=client)


# --- tools ---

RAN: list[str] = []  # what the tools really did, in order


@function_tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    RAN.append(f"add {a} {b}")
    return a + b


@function_tool
def delete_file(path: str) -> str:
    """Delete a file."""
    RAN.append(f"delete_file {path}")
    return "deleted"


@function_tool
def shell(command: str) -> str:
    """Run a shell command."""
    RAN.append(f"shell {command}")
    return "ran"


@function_tool
def write_note(path: str, text: str) -> str:
    """Write a note to a file."""
    RAN.append(f"write_note {path}")
    return f"wrote {path}"


@function_tool
def fetch(url: str) -> str:
    """Fetch a URL (always fails here)."""
    RAN.append(f"fetch {url}")
    raise ConnectionError("network unreachable")


@function_tool
def transfer(amount: int) -> str:
    """Transfer money."""
    RAN.append(f"transfer {amount}")
    return f"sent {amount}"


@function_tool
async def wait_forever(reason: str) -> str:
    """Wait until cancelled."""
    RAN.append(f"wait_forever {reason}")
    await asyncio.Event().wait()
    return "never"


def call(name: str, **arguments: Any) -> dict[str, Any]:
    """A scripted model reply that calls tool ``name`` with ``arguments``."""
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def agent(
    base_url: str, name: str = "assistant", tools: Iterable[Any] = (), **kw: Any
) -> Agent[Any]:
    """An agent on the scripted model with ``tools``."""
    return Agent(
        name=name, instructions="Use tools.", model=chat_model(base_url), tools=list(tools), **kw
    )


# --- hooks the scenarios use ---


@hooks.pre_tool_call_decide
def no_shell(call: Any) -> HookResult | None:
    """A hook (not the policy) that denies shell calls."""
    if call.name == "shell":
        return HookResult.deny("shell is off limits in this workspace")
    return None


@hooks.pre_tool_call_decide
def sandbox_paths(call: Any) -> HookResult | None:
    """A hook that moves every note into the sandbox."""
    if call.name == "write_note":
        return HookResult(modified_args={"path": "/sandbox/" + str(call.args["path"]).lstrip("/")})
    return None


@hooks.pre_tool_call_decide
def confirm_transfers(call: Any) -> HookResult | None:
    """A hook that asks before any transfer."""
    if call.name == "transfer":
        return HookResult.ask(f"send {call.args['amount']}?")
    return None


@hooks.on_interaction
def small_amounts_only(context: Any, questions: Any) -> Any:
    """Approves transfers under 100, rejects the rest."""
    from hookscope.types import Answer

    amount = context.call.args["amount"]
    return [Answer("allow" if amount < 100 else "deny", questions[0].id)]


@hooks.on_tool_error
def offline_fallback(context: Any, error: Exception) -> Recovery | None:
    """Recovers a failed fetch with a cached page."""
    if context.call.name == "fetch" and str(context.call.args["url"]).endswith("/cached"):
        return Recovery("cached page", "served from cache")
    return None
