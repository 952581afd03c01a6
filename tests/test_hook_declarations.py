"""Hooks left out of a dispatch by declaration change nothing but its cost.

A ``LoggingHook`` whose logger is off, ``AllowAll`` and a ``ToolTiers`` looking at an
observe-tier tool provably do nothing, so the runner does not call them (observers do not see
them run); hooks whose name matchers refuse a tool are narrowed out once per tool. Everything
else — what is logged once a logger is enabled, what is asked, which hooks are listed — stays.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest

from hookscope import Hook, HookResult, OperationContext, ToolCall
from hookscope.builtins import AllowAll, LoggingHook, ToolTiers
from hookscope.context import HookContext
from hookscope.hooks import HookEvent
from hookscope.matching import HookMatcher
from hookscope.runner import DispatchObserver, HookRunner
from hookscope.types import Answer


def _tool(**kwargs: Any) -> str:
    return "ok"


class Runs(DispatchObserver):
    """Records (event, hook) for every hook run the runner reports."""

    def __init__(self) -> None:
        self.runs: list[tuple[str, str]] = []

    def hook_finished(
        self,
        event: HookEvent,
        hook_name: str,
        context: HookContext,
        result: Any,
        error: BaseException | None,
        duration_s: float,
    ) -> None:
        self.runs.append((event, hook_name))


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.events: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.events.append(record.hookscope["event"])  # type: ignore[attr-defined]


@pytest.fixture
def logger(request: pytest.FixtureRequest) -> Iterator[tuple[logging.Logger, Records]]:
    """A fresh logger that is off (WARNING), with a handler recording LoggingHook's events."""
    log = logging.getLogger(f"hookscope.test.declarations.{request.node.name}")
    log.setLevel(logging.WARNING)
    log.propagate = False
    records = Records()
    log.addHandler(records)
    yield log, records
    log.removeHandler(records)
    log.disabled = False
    logging.disable(logging.NOTSET)


async def _one_session(runner: HookRunner, calls: int = 1) -> None:
    async with runner.session() as session, session.turn("go") as turn:
        for i in range(calls):
            await turn.call_tool(ToolCall("view_file", {"path": "a"}, f"c{i}"), _tool)


async def test_a_logging_hook_on_a_logger_that_is_off_is_listed_but_not_run(
    logger: tuple[logging.Logger, Records],
) -> None:
    log, records = logger
    runs = Runs()
    runner = HookRunner([LoggingHook(logger=log, level="INFO"), runs])
    assert runner.hook_names("pre_tool_call") == ("LoggingHook",)
    observed = HookRunner([LoggingHook(logger=log, level="INFO")])
    assert observed.idle("on_session_end")  # no other hook, no observer: nothing to dispatch
    await _one_session(runner)
    assert records.events == []
    assert runs.runs == []


async def test_a_logger_enabled_mid_session_logs_from_the_next_dispatch_and_stops_again(
    logger: tuple[logging.Logger, Records],
) -> None:
    log, records = logger
    runner = HookRunner([LoggingHook(logger=log, level="INFO")])
    async with runner.session() as session, session.turn("go") as turn:
        await turn.call_tool(ToolCall("view_file", {}, "c0"), _tool)
        assert records.events == []
        log.setLevel(logging.INFO)
        await turn.call_tool(ToolCall("view_file", {}, "c1"), _tool)
        assert records.events == ["pre_tool_call", "post_tool_call"]
        log.setLevel(logging.ERROR)
        await turn.call_tool(ToolCall("view_file", {}, "c2"), _tool)
    assert records.events == ["pre_tool_call", "post_tool_call"]
    assert runner.idle("on_session_end")


async def test_a_parent_logger_level_logging_disable_and_disabled_are_followed(
    logger: tuple[logging.Logger, Records],
) -> None:
    log, records = logger
    log.setLevel(logging.NOTSET)  # the level comes from the parent
    parent = logging.getLogger(log.name.rpartition(".")[0])
    previous = parent.level
    parent.setLevel(logging.ERROR)
    try:
        runner = HookRunner([LoggingHook(logger=log, level="INFO")])
        await _one_session(runner)
        assert records.events == []
        parent.setLevel(logging.DEBUG)
        await _one_session(runner)
        assert records.events.count("pre_tool_call") == 1
        logging.disable(logging.CRITICAL)
        await _one_session(runner)
        assert records.events.count("pre_tool_call") == 1
        logging.disable(logging.NOTSET)
        log.disabled = True  # what dictConfig does to loggers it was not told about
        await _one_session(runner)
        assert records.events.count("pre_tool_call") == 1
        log.disabled = False
        await _one_session(runner)
        assert records.events.count("pre_tool_call") == 2
        assert records.events[-1] == "on_session_end"
    finally:
        parent.setLevel(previous)


async def test_a_logger_class_with_its_own_is_enabled_for_is_asked_on_every_dispatch() -> None:
    class Switched(logging.Logger):
        on = False

        def isEnabledFor(self, level: int) -> bool:  # logging's name
            return self.on

    log = Switched("hookscope.test.declarations.switched")
    records = Records()
    log.addHandler(records)
    runner = HookRunner([LoggingHook(logger=log, level="INFO")])
    await _one_session(runner)
    assert records.events == []
    log.on = True  # no cache of logging's to tell: the gate must ask again
    await _one_session(runner)
    assert records.events[:2] == ["on_session_start", "pre_turn"]


async def test_a_logging_hook_subclass_that_overrides_a_method_is_always_run(
    logger: tuple[logging.Logger, Records],
) -> None:
    log, _ = logger
    seen: list[str] = []

    class Counting(LoggingHook):
        def pre_tool_call(self, context: OperationContext, call: ToolCall) -> HookResult | None:
            seen.append(call.name)
            return super().pre_tool_call(context, call)

    await _one_session(HookRunner([Counting(logger=log)]))
    assert seen == ["view_file"]


async def test_allow_all_is_listed_never_run_and_a_subclass_is_run() -> None:
    runs = Runs()
    runner = HookRunner([AllowAll(), runs])
    assert runner.hook_names("pre_tool_call") == ("AllowAll",)
    await _one_session(runner)
    assert runs.runs == []

    class Denying(AllowAll):
        def pre_tool_call(self, context: OperationContext, call: ToolCall) -> HookResult | None:
            return HookResult.deny("no")

    runner = HookRunner([Denying()])
    async with runner.session() as session, session.turn("go") as turn:
        outcome = await turn.call_tool(ToolCall("view_file", {}, "c0"), _tool)
    assert not outcome.allowed
    assert outcome.decided_by == "Denying"


async def test_tool_tiers_runs_only_for_confirm_tier_tools_and_still_asks() -> None:
    asked: list[str] = []

    class Answer_(Hook):
        def on_interaction(self, context: OperationContext, questions: Any) -> list[Answer] | None:
            asked.extend(q.text for q in questions)
            return [Answer(question_id=q.id, text="deny") for q in questions]

    runs = Runs()
    tiers = ToolTiers({"run_command": "confirm", "github/get_issue": "confirm"}, default="observe")
    runner = HookRunner([tiers, Answer_(), runs])
    async with runner.session() as session, session.turn("go") as turn:
        for name in ("view_file", "run_command", "view_file", "get_issue"):
            await turn.call_tool(ToolCall(name, {}, name), _tool)
        mcp = await turn.call_tool(ToolCall("get_issue", {}, "m1", server="github"), _tool)
        other = await turn.call_tool(ToolCall("get_issue", {}, "m2", server="gitlab"), _tool)
    tool_runs = [hook for event, hook in runs.runs if event == "pre_tool_call"]
    assert tool_runs == ["ToolTiers", "ToolTiers"]  # run_command and github/get_issue only
    assert asked == [
        "Confirm run_command? It is a confirm-tier tool.",
        "Confirm github/get_issue? It is a confirm-tier tool.",
    ]
    assert not mcp.allowed
    assert other.allowed
    with pytest.raises(AttributeError):
        tiers.default = "confirm"  # type: ignore[misc]  # read-only: the runner relies on it


async def test_name_matchers_narrow_per_tool_and_path_matchers_still_see_each_call() -> None:
    seen: list[tuple[str, str]] = []

    class Seen(Hook):
        def __init__(self, name: str, matcher: Any) -> None:
            self.name = name
            self.matcher = matcher

        def pre_tool_call(self, context: OperationContext, call: ToolCall) -> None:
            seen.append((self.name, call.qualified_name))

        def post_tool_call(self, context: OperationContext, result: Any) -> None:
            seen.append((self.name + ".post", result.call.qualified_name))

    runner = HookRunner(
        [
            Seen("names", "run_command|github/*"),
            Seen("regex", "mcp__fs__.*"),
            Seen("paths", HookMatcher(tools="view_file", paths=["/etc/**"])),
        ]
    )
    calls = [
        ToolCall("view_file", {"path": "/etc/hosts"}),
        ToolCall("view_file", {"path": "/tmp/x"}),
        ToolCall("run_command", {}),
        ToolCall("list", {}, server="github"),
        ToolCall("mcp__fs__read", {}),
        ToolCall("view_file", {"path": "/etc/passwd"}),
    ]
    async with runner.session() as session, session.turn("go") as turn:
        for call in calls:
            await turn.call_tool(call, _tool)
    assert seen == [
        ("paths", "view_file"),
        ("paths.post", "view_file"),
        ("names", "run_command"),
        ("names.post", "run_command"),
        ("names", "github/list"),
        ("names.post", "github/list"),
        ("regex", "mcp__fs__read"),
        ("regex.post", "mcp__fs__read"),
        ("paths", "view_file"),
        ("paths.post", "view_file"),
    ]


async def test_narrowing_past_its_cache_and_after_a_swap_stays_exact() -> None:
    seen: list[str] = []

    class Guard(Hook):
        matcher = "tool_7|tool_700"

        def pre_tool_call(self, context: OperationContext, call: ToolCall) -> None:
            seen.append(call.name)

    runner = HookRunner([Guard()])
    async with runner.session() as session, session.turn("go") as turn:
        for i in range(800):  # more tools than the per-event cache remembers
            await turn.call_tool(ToolCall(f"tool_{i}", {}), _tool)
        await turn.call_tool(ToolCall("tool_700", {}), _tool)
        runner.register(Guard())  # a new table: a fresh narrowing, both guards in it
        await turn.call_tool(ToolCall("tool_7", {}), _tool)
    assert seen == ["tool_7", "tool_700", "tool_700", "tool_7", "tool_7"]


async def test_declarations_of_other_hooks_are_asked_once_per_tool() -> None:
    asked: list[tuple[str, str]] = []

    class Picky(Hook):
        def pre_tool_call(self, context: OperationContext, call: ToolCall) -> HookResult | None:
            return HookResult.deny("picky")

        def _hookscope_acts_on(self, event: HookEvent, call: ToolCall) -> bool:
            asked.append((event, call.name))
            return call.name == "rm"

    runner = HookRunner([Picky()])
    async with runner.session() as session, session.turn("go") as turn:
        names = ["ls", "rm", "ls", "rm"]
        allowed = [(await turn.call_tool(ToolCall(n, {}), _tool)).allowed for n in names]
    assert allowed == [True, False, True, False]
    assert asked == [("pre_tool_call", "ls"), ("pre_tool_call", "rm")]  # once per tool


async def test_an_observer_is_told_of_the_dispatch_starts_it_declares_and_no_other() -> None:
    class Starts(DispatchObserver):
        _hookscope_started_events: frozenset[str] | None = None  # declared by the class

        def __init__(self, events: frozenset[str] | None) -> None:
            self._hookscope_started_events = events
            self.started: list[str] = []
            self.finished: list[str] = []

        def dispatch_started(self, event: HookEvent, context: HookContext, data: Any) -> None:
            self.started.append(event)

        def dispatch_finished(self, event: HookEvent, *args: Any) -> None:
            self.finished.append(event)

    picky, every = Starts(frozenset({"pre_tool_call"})), Starts(None)
    for observers in ([picky], [picky, every]):
        picky.started.clear()
        every.started.clear()
        await _one_session(HookRunner(observers))
        assert picky.started == ["pre_tool_call"]
        assert picky.finished[-4:] == [
            "pre_tool_call",
            "post_tool_call",
            "post_turn",
            "on_session_end",
        ]
    assert every.started == [
        "on_session_start",
        "pre_turn",
        "pre_tool_call",
        "post_tool_call",
        "post_turn",
        "on_session_end",
    ]


async def test_otel_hook_starts_only_model_events_unless_a_subclass_overrides_it() -> None:
    from opentelemetry.sdk.trace import TracerProvider

    from hookscope.telemetry import OTelHook

    started: list[str] = []

    class Mine(OTelHook):
        def dispatch_started(self, event: HookEvent, context: HookContext, data: Any) -> None:
            started.append(event)
            super().dispatch_started(event, context, data)

    assert OTelHook(tracer_provider=TracerProvider())._hookscope_started_events == frozenset(
        {"pre_llm_request", "on_llm_response"}
    )
    await _one_session(HookRunner([Mine(tracer_provider=TracerProvider())]))
    assert started[:3] == ["on_session_start", "pre_turn", "pre_tool_call"]
