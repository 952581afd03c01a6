"""A scripted agent fleet whose telemetry is known in advance.

Each :class:`Profile` is one agent. Every round it runs one session of one turn through
``HookRunner([OTelHook(...), enforce(...), ...])``: a model request and response (with token
usage), ``allowed`` tool calls cycling through :data:`ALLOWED_CALLS` and ``denied`` calls
cycling through :data:`DENIED_CALLS`, a question to the user and a compaction on some
rounds, and a turn blocked by a budget hook on others. A profile's denied-call ratio is
exactly ``denied / (allowed + denied)`` in every round it makes calls.

Between them the rounds exercise every metric in ``semconv.PROMETHEUS_NAMES`` and every label
the dashboards and alert rules use: recovered and unrecovered tool errors, a failing inspect
hook, decisions with and without a rule.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import NoOpTracerProvider

from hookscope import hooks
from hookscope.hooks import Hook
from hookscope.policy import allow, deny, enforce
from hookscope.runner import HookRunner
from hookscope.telemetry import OTelHook
from hookscope.types import (
    Answer,
    ChatResponse,
    HookResult,
    LlmRequest,
    LlmResponse,
    Question,
    Recovery,
    RequestDecision,
    ResponseDecision,
    ToolCall,
    Usage,
)

MODEL: Final = "scripted-model"
#: A model without a price, answering every UNPRICED_EVERY-th round.
UNPRICED_MODEL: Final = "scripted-model-preview"
UNPRICED_EVERY: Final = 4
INPUT_TOKENS: Final = 1200
OUTPUT_TOKENS: Final = 300
#: Every BLOCKED_EVERY-th round's turn is blocked by the budget hook (no calls that round).
BLOCKED_EVERY: Final = 10
#: Every QUESTION_EVERY-th round the agent asks its user a question (answered by a hook).
QUESTION_EVERY: Final = 3
#: Every COMPACT_EVERY-th round the agent compacts its context.
COMPACT_EVERY: Final = 4


class FlakyNetwork(TimeoutError):
    """What fetch_url raises for a slow page (recovered with a cached copy)."""


def _ok(**args: Any) -> str:
    return "ok"


def _timeout(**args: Any) -> str:
    raise FlakyNetwork("upstream took too long")


def _refused(**args: Any) -> str:
    raise ConnectionRefusedError("connection refused")


#: What allowed calls do, in order: three succeed, one is recovered, one fails unrecovered.
ALLOWED_CALLS: Final[tuple[tuple[ToolCall, Callable[..., Any]], ...]] = (
    (ToolCall("view_file", {"path": "README.md"}), _ok),
    (ToolCall("grep", {"pattern": "TODO"}), _ok),
    (ToolCall("edit_file", {"path": "app.py"}), _ok),
    (ToolCall("fetch_url", {"url": "https://example.org/slow"}), _timeout),
    (ToolCall("fetch_url", {"url": "https://example.org/down"}), _refused),
)
#: Calls the policy denies, in order, and the rule that denies each.
DENIED_CALLS: Final[tuple[tuple[ToolCall, str], ...]] = (
    (ToolCall("run_command", {"command": "rm -rf /"}), "no-rm"),
    (ToolCall("delete_file", {"path": "app.py"}), "no-delete"),
)
#: The hook that fails on every grep call (an inspect hook: the agent carries on).
FAILING_HOOK: Final = "audit"


@dataclass(frozen=True, slots=True)
class Profile:
    """One scripted agent.

    Args:
        agent: The session's agent name (``gen_ai.agent.name``).
        allowed: Allowed tool calls per round.
        denied: Denied tool calls per round.
        every: Play a round every ``every`` ticks.
        rounds: Stop after this many rounds (``None``: until the workload stops).
    """

    agent: str
    allowed: int
    denied: int
    every: int = 1
    rounds: int | None = None

    @property
    def denied_ratio(self) -> float:
        return self.denied / (self.allowed + self.denied)


class Guardrails(Hook):
    """Lets every model request and response through (so guardrail verdicts are recorded)."""

    def pre_llm_request(self, context: Any, request: LlmRequest) -> RequestDecision:
        return RequestDecision.proceed()

    def on_llm_response(self, context: Any, response: LlmResponse) -> ResponseDecision:
        return ResponseDecision.accept()


def _runner(meter_provider: MeterProvider) -> HookRunner:
    @hooks.pre_turn
    def budget(prompt: str) -> HookResult | None:
        return HookResult.deny("over budget") if prompt == "over budget" else None

    @hooks.on_tool_error
    def cached_copy(error: BaseException) -> Recovery | None:
        return Recovery("cached copy") if isinstance(error, FlakyNetwork) else None

    @hooks.post_tool_call(name=FAILING_HOOK)
    def audit(context: Any, result: Any) -> None:
        if result.call.name == "grep":
            raise OSError("audit log unavailable")

    @hooks.on_interaction
    def auto_answer(questions: Sequence[Question]) -> list[Answer]:
        return [Answer("yes", question.id) for question in questions]

    return HookRunner(
        [
            OTelHook(
                tracer_provider=NoOpTracerProvider(),
                meter_provider=meter_provider,
                prices={MODEL: {"input": 3.0, "output": 15.0}},  # hookscope_cost_total
            ),
            enforce(
                [
                    deny(
                        "run_command",
                        when=lambda args: args["command"].startswith("rm "),
                        name="no-rm",
                    ),
                    deny("delete_file", name="no-delete"),
                    allow("view_file", name="reads-are-fine"),
                ]
            ),
            budget,
            Guardrails(),
            cached_copy,
            audit,
            auto_answer,
        ]
    )


async def play_round(runner: HookRunner, profile: Profile, index: int) -> None:
    """One session of ``profile``'s agent: round ``index`` of its script."""
    blocked = index % BLOCKED_EVERY == BLOCKED_EVERY - 1
    async with runner.session(agent_name=profile.agent) as session:
        prompt = "over budget" if blocked else f"round {index}"
        async with session.turn(prompt) as turn:
            if not turn.allowed:
                return
            await turn.llm_request(LlmRequest(MODEL, [{"role": "user", "content": prompt}]))
            # Every UNPRICED_EVERY-th response names a model without a price (a preview
            # build): counted in hookscope_cost_unpriced_total, never priced.
            answered_by = UNPRICED_MODEL if index % UNPRICED_EVERY == 1 else MODEL
            await turn.llm_response(
                LlmResponse(answered_by, "calling tools", usage=Usage(INPUT_TOKENS, OUTPUT_TOKENS))
            )
            for n in range(profile.allowed):
                call, fn = ALLOWED_CALLS[(index * profile.allowed + n) % len(ALLOWED_CALLS)]
                # Unrecovered: the agent loop sees the tool's own exception.
                with contextlib.suppress(ConnectionRefusedError):
                    await turn.call_tool(call, fn)
            for n in range(profile.denied):
                call, _ = DENIED_CALLS[(index * profile.denied + n) % len(DENIED_CALLS)]
                outcome = await turn.call_tool(call, _ok)
                assert not outcome.allowed, outcome
            if index % QUESTION_EVERY == 0:
                await turn.ask([Question("Proceed?", ("yes", "no"), id="q1")])
            if index % COMPACT_EVERY == 0:
                await turn.compact("summary of the work so far")
            turn.respond(ChatResponse("done", model=MODEL))


async def play(meter_provider: MeterProvider, profiles: Sequence[Profile], rounds: int) -> None:
    """Play ``rounds`` rounds of every profile (each profile's ``rounds`` cap still applies)."""
    runner = _runner(meter_provider)
    for index in range(rounds):
        for profile in profiles:
            if profile.rounds is None or index < profile.rounds:
                await play_round(runner, profile, index)


class Workload:
    """Plays ``profiles`` in a background thread, one tick every ``tick_s``, until stopped.

    Pacing is the workload's nature (agents make calls over time), not synchronisation:
    tests wait on what Prometheus reports, with deadlines.
    """

    def __init__(
        self, meter_provider: MeterProvider, profiles: Sequence[Profile], tick_s: float = 0.1
    ) -> None:
        self._runner = _runner(meter_provider)
        self._profiles = tuple(profiles)
        self._tick_s = tick_s
        self._stop = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="hookscope-workload", daemon=True)
        self.ticks = 0

    def __enter__(self) -> Workload:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop after the current tick; re-raise whatever failed in the workload thread."""
        self._stop.set()
        self._thread.join(timeout=30)
        if self._thread.is_alive():
            raise RuntimeError("the workload thread did not stop within 30 s")
        if self._error is not None:
            raise RuntimeError("the scripted agents failed") from self._error

    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as error:  # surfaced by stop()
            self._error = error

    async def _main(self) -> None:
        rounds = dict.fromkeys((p.agent for p in self._profiles), 0)
        while not self._stop.is_set():
            for profile in self._profiles:
                done = rounds[profile.agent]
                if self.ticks % profile.every or (
                    profile.rounds is not None and done >= profile.rounds
                ):
                    continue
                await play_round(self._runner, profile, done)
                rounds[profile.agent] = done + 1
            self.ticks += 1
            await asyncio.sleep(self._tick_s)
