"""The runner's fast paths change nothing an agent, a hook or an observer can see.

Scopes skip dispatches with no hook and no observer; session ids come from a pooled read; the
dispatch folds into the ``Dispatch`` it returns; one observer is told without the fan-out loop;
hook durations are counted in process from any thread.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.trace import INVALID_SPAN

from hookscope import Hook, HookResult, OperationContext, ToolCall
from hookscope._events import ALLOW
from hookscope.context import SessionContext, TurnContext, new_session_id
from hookscope.runner import Dispatch, DispatchObserver, HookRunner
from hookscope.telemetry import semconv as sc
from hookscope.telemetry._metadata import (
    call_metadata,
    metadata,
    session_metadata,
    turn_metadata,
)
from hookscope.telemetry._scopes import SessionRecord
from hookscope.telemetry.instruments import Instruments
from hookscope.testing import metric_points


def _tool(path: str) -> str:
    return "ok"


async def test_an_idle_runner_still_opens_and_closes_scopes_with_their_outcomes() -> None:
    runner = HookRunner()
    assert runner.idle("pre_turn")
    async with runner.session(agent_name="a") as session:
        async with session.turn("go") as turn:
            assert turn.result is ALLOW  # pre_turn's default, as an empty dispatch returns it
            outcome = await turn.call_tool(ToolCall("read", {"path": "x"}, "c0"), _tool)
            assert outcome.value == "ok"
        assert turn.context.outcome == "completed"
    assert session.context.outcome == "completed"


async def test_a_hook_registered_mid_session_hears_the_events_after_it() -> None:
    heard: list[str] = []

    class Late(Hook):
        async def post_turn(self, context: TurnContext, response: Any) -> None:
            heard.append("post_turn")

        async def on_session_end(self, context: SessionContext) -> None:
            heard.append("on_session_end")

    runner = HookRunner()
    async with runner.session() as session, session.turn("go"):
        assert runner.idle("post_turn")
        runner.register(Late())
        assert not runner.idle("post_turn")
    assert heard == ["post_turn", "on_session_end"]


async def test_an_observer_makes_no_dispatch_idle() -> None:
    seen: list[str] = []

    class Watch(DispatchObserver):
        def dispatch_started(self, event: Any, context: Any, data: Any) -> None:
            seen.append(event)

    runner = HookRunner()
    runner.observe(Watch())
    assert not runner.idle("on_session_start")
    async with runner.session() as session, session.turn("go"):
        pass
    assert seen == ["on_session_start", "pre_turn", "post_turn", "on_session_end"]


def test_session_ids_are_32_hex_digits_and_never_repeat() -> None:
    ids = [new_session_id() for _ in range(2000)]  # several pooled reads
    assert len(set(ids)) == len(ids)
    assert all(len(i) == 32 and int(i, 16) >= 0 for i in ids)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX-only")
def test_a_forked_child_does_not_repeat_its_parent_s_session_ids() -> None:
    new_session_id()  # the pool holds ids now
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report its next id and leave at once
        os.close(read)
        os.write(write, new_session_id().encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        child = pipe.read()
    os.waitpid(pid, 0)
    assert len(child) == 32
    assert child != new_session_id()


async def test_a_dispatch_hands_back_its_result_data_and_decider() -> None:
    class Deny(Hook):
        name = "deny"

        def pre_tool_call(self, context: OperationContext, call: ToolCall) -> HookResult:
            return HookResult.deny("no")

    class Modify(Hook):
        name = "modify"

        def pre_tool_call(self, context: OperationContext, call: ToolCall) -> HookResult:
            return HookResult(modified_args={"path": "y"})

    call = ToolCall("read", {"path": "x"}, "c0")
    context = OperationContext(TurnContext(SessionContext("s"), 0), "tool", call, "c0")
    modified = await HookRunner([Modify()]).dispatch("pre_tool_call", context, call)
    assert isinstance(modified, Dispatch)
    assert (modified.result.allow, dict(modified.data.args), modified.decided_by) == (
        True,
        {"path": "y"},
        None,
    )
    denied = await HookRunner([Modify(), Deny()]).dispatch("pre_tool_call", context, call)
    assert (denied.result.allow, denied.result.message, denied.decided_by) == (False, "no", "deny")
    assert repr(denied) == f"Dispatch(result={denied.result!r}, decided_by='deny')"


async def test_a_single_raising_observer_is_logged_once_and_the_agent_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Raises(DispatchObserver):
        def scope_started(self, context: Any) -> None:
            raise RuntimeError("observer bug")

        def hook_finished(self, *args: Any) -> None:
            raise RuntimeError("observer bug")

    class Noop(Hook):
        def pre_tool_call(self, context: OperationContext, call: ToolCall) -> None:
            return None

    runner = HookRunner([Raises(), Noop()])
    with caplog.at_level(logging.ERROR, logger="hookscope"):
        for _ in range(2):
            async with runner.session() as session, session.turn("go") as turn:
                outcome = await turn.call_tool(ToolCall("read", {"path": "x"}, "c0"), _tool)
                assert outcome.value == "ok"
    assert len([r for r in caplog.records if "observer" in r.getMessage()]) == 1


async def test_a_single_observer_s_interruption_reaches_the_agent() -> None:
    class Interrupts(DispatchObserver):
        def dispatch_started(self, event: Any, context: Any, data: Any) -> None:
            if event == "pre_turn":
                raise KeyboardInterrupt

    runner = HookRunner([Interrupts()])
    with pytest.raises(KeyboardInterrupt):
        async with runner.session() as session, session.turn("go"):
            pass  # pragma: no cover - the turn never starts


def _in_threads(work: Callable[[int], None], threads: int, reader: InMemoryMetricReader) -> None:
    """Run ``work(0)`` … ``work(threads - 1)`` in threads of their own while ``reader`` collects
    over and over, as a periodic exporter would."""
    stop = threading.Event()

    def collect() -> None:
        while not stop.is_set():
            reader.get_metrics_data()

    collector = threading.Thread(target=collect)
    collector.start()
    workers = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    stop.set()
    collector.join()


def test_hook_durations_from_many_threads_are_all_counted() -> None:
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    instruments = Instruments(provider)
    assert instruments.hook_duration.buckets is not None
    runs, threads = 5000, 4

    def record(index: int) -> None:
        for i in range(runs):
            instruments.hook_ran("agent", f"hook{index}", "pre_tool_call", (i % 7) * 1e-4)

    _in_threads(record, threads, reader)
    points = metric_points(reader.get_metrics_data(), [sc.METRIC_HOOK_DURATION])
    assert sorted(points[sc.METRIC_HOOK_DURATION].values()) == [runs] * threads
    provider.shutdown()


def test_queued_counts_from_many_threads_are_all_counted() -> None:
    # Increments of one are queued and counted in batches (every FLUSH_THRESHOLD, and when a
    # reader collects); other amounts are counted at once. Neither loses or repeats one.
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    instruments = Instruments(provider)
    runs, threads = 5000, 4

    def count(index: int) -> None:
        for i in range(runs):
            instruments.tool_calls.add((f"tool{i % 3}", f"agent{index}", "succeeded"))
            instruments.sessions_active.add((f"agent{index}",))
            instruments.sessions_active.add((f"agent{index}",), -1)

    _in_threads(count, threads, reader)
    points = metric_points(
        reader.get_metrics_data(), [sc.METRIC_TOOL_CALLS, sc.METRIC_SESSIONS_ACTIVE]
    )
    calls = points[sc.METRIC_TOOL_CALLS]
    assert len(calls) == 3 * threads
    assert sum(calls.values()) == runs * threads
    assert set(points[sc.METRIC_SESSIONS_ACTIVE].values()) == {0}
    provider.shutdown()


# --- OpenInference metadata: the remembered and pre-formatted forms are metadata()'s JSON ---

_names = st.one_of(st.none(), st.text(max_size=12))


@settings(max_examples=200, deadline=None)
@given(
    outcome=st.text(max_size=12),
    counts=st.tuples(*(st.integers(min_value=0, max_value=10**12) for _ in range(4))),
)
def test_session_metadata_is_the_json_metadata_builds(
    outcome: str, counts: tuple[int, int, int, int]
) -> None:
    record = SessionRecord(INVALID_SPAN, 0, "a", "a", None)
    record.turns, record.tool_calls, record.denied_calls, record.tool_errors = counts
    expected = metadata(
        {
            sc.META_OUTCOME: outcome,
            sc.META_TURNS: counts[0],
            sc.META_TOOL_CALLS: counts[1],
            sc.META_DENIED_CALLS: counts[2],
            sc.META_TOOL_ERRORS: counts[3],
        }
    )
    assert session_metadata(outcome, record) == expected
    assert json.loads(expected)[sc.META_OUTCOME] == outcome


@settings(max_examples=200, deadline=None)
@given(outcome=st.text(max_size=12), by=_names, error=_names, rule=_names, recovered=_names)
def test_remembered_call_and_turn_metadata_is_the_json_metadata_builds(
    outcome: str, by: str | None, error: str | None, rule: str | None, recovered: str | None
) -> None:
    for _ in range(2):  # the first call serializes, the second is remembered
        assert turn_metadata(outcome, by, error) == metadata(
            {sc.META_OUTCOME: outcome, sc.META_DECIDED_BY: by, sc.META_ERROR_TYPE: error}
        )
        assert call_metadata(outcome, rule, by, error, recovered) == metadata(
            {
                sc.META_OUTCOME: outcome,
                sc.META_RULE: rule,
                sc.META_DECIDED_BY: by,
                sc.META_ERROR_TYPE: error,
                sc.META_RECOVERED_BY: recovered,
            }
        )


def test_a_turn_and_a_call_with_the_same_values_keep_their_own_metadata() -> None:
    """The cache is shared: a turn's entry never answers for a call's with equal values."""
    turn = turn_metadata("blocked", "gate", None)
    call = call_metadata("blocked", "gate", None, None, None)
    assert json.loads(turn) == {sc.META_OUTCOME: "blocked", sc.META_DECIDED_BY: "gate"}
    assert json.loads(call) == {sc.META_OUTCOME: "blocked", sc.META_RULE: "gate"}
