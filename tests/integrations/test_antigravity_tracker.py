"""Tracker: hookscope scopes driven from an SDK's reports, keyed by hookscope's own state."""

from __future__ import annotations

from typing import Any

from hookscope.integrations._kit.report import DispatchReport as Dispatch
from hookscope.integrations._kit.scopes import CallInterrupted, TurnInterrupted
from hookscope.integrations.antigravity.operations import LINGER_S, MAX_CLOSED, OpIndex
from hookscope.integrations.antigravity.reported_op import CALL_INTERRUPTED
from hookscope.integrations.antigravity.sessions import TURN_INTERRUPTED, SdkProbe, Tracker
from hookscope.runner import DispatchObserver, HookRunner
from hookscope.types import ChatResponse, HookResult, Recovery, ToolCall, Usage

from ..conftest import Recorder

CALL = ToolCall("get_weather", {"city": "Oslo"}, "call_1")


def observed_by(observer: object) -> HookRunner:
    runner = HookRunner()
    runner.observe(observer)
    return runner


def tracker_with(recorder: Recorder) -> Tracker:
    return Tracker(observed_by(recorder), "bot")


def test_observers_see_what_a_hook_runner_would_tell_them(recorder: Recorder) -> None:
    tracker = tracker_with(recorder)
    session = tracker.open_session("s1", SdkProbe("m"))
    tracker.session_started(session)
    tracker.start_turn(session, "hi")
    op = tracker.op_for_request(session, "t", CALL)
    op.start()
    op.returned("sunny", hooks_pending=False)
    tracker.close_op(session, op)
    tracker.end_turn(session)
    tracker.close_session(session, None)

    allow = HookResult()
    assert [c for c in recorder.calls if c[0] != "hook_finished"] == [
        ("scope_started", "SessionContext"),
        ("dispatch_started", "on_session_start"),
        ("dispatch_finished", "on_session_start", None, None),
        ("scope_started", "TurnContext"),
        ("dispatch_started", "pre_turn"),
        ("dispatch_finished", "pre_turn", allow, None),
        ("scope_started", "OperationContext"),
        ("dispatch_started", "pre_tool_call"),
        ("dispatch_finished", "pre_tool_call", allow, None),
        ("dispatch_started", "post_tool_call"),
        ("dispatch_finished", "post_tool_call", None, None),
        ("scope_ended", "OperationContext", None, None),
        ("dispatch_started", "post_turn"),
        ("dispatch_finished", "post_turn", None, None),
        ("scope_ended", "TurnContext", "completed", None),
        ("dispatch_started", "on_session_end"),
        ("dispatch_finished", "on_session_end", None, None),
        ("scope_ended", "SessionContext", "completed", None),
    ]


def test_the_same_call_id_in_two_sessions_is_two_calls(recorder: Recorder) -> None:
    tracker = tracker_with(recorder)
    first, second = tracker.open_session("a"), tracker.open_session("b")

    one = tracker.op_for_request(first, "t", CALL)
    other = tracker.op_for_request(second, "t", CALL)

    assert one is not other
    assert one.context.session_id == "a"
    assert other.context.session_id == "b"


def test_a_closed_call_releases_its_id_for_a_later_call(recorder: Recorder) -> None:
    tracker = tracker_with(recorder)
    session = tracker.open_session("s")
    first = tracker.op_for_step(session, ("t", 1), CALL)
    tracker.close_op(session, first)

    again = tracker.op_for_request(session, "t", CALL)

    assert again is not first
    assert tracker.op_for_step(session, ("t", 3), CALL) is again


def test_a_request_finds_the_call_its_step_opened_by_trajectory_and_tool(
    recorder: Recorder,
) -> None:
    # A harness tool's step carries no call id; the request that names it does.
    tracker = tracker_with(recorder)
    session = tracker.open_session("s")
    step_args = {"file_path": "file:///w/a.txt"}
    by_step = tracker.op_for_step(session, ("t", 1), ToolCall("view_file", step_args))

    found = tracker.op_for_request(
        session, "t", ToolCall("view_file", {"AbsolutePath": "/w/a.txt"}, "call_7")
    )

    assert found is by_step
    assert found.call_id == "call_7"
    assert session.ops.late("call_7") is by_step


def test_a_step_finds_the_call_its_request_opened_without_arithmetic(recorder: Recorder) -> None:
    # Requests number steps in the harness's own numbering (2, 6, 10 …); steps do not.
    tracker = tracker_with(recorder)
    session = tracker.open_session("s")
    requested = tracker.op_for_request(session, "t", ToolCall("view_file", {}, "call_7"))

    assert tracker.op_for_step(session, ("t", 4), ToolCall("view_file")) is requested
    assert tracker.op_for_step(session, ("t", 4), ToolCall("view_file")) is requested


def test_a_call_of_another_trajectory_or_tool_is_not_merged(recorder: Recorder) -> None:
    tracker = tracker_with(recorder)
    session = tracker.open_session("s")
    requested = tracker.op_for_request(session, "t", ToolCall("view_file", {}, "call_7"))

    other_tool = tracker.op_for_step(session, ("t", 1), ToolCall("list_dir"))
    other_trajectory = tracker.op_for_step(session, ("sub", 1), ToolCall("view_file"))

    assert len({id(requested), id(other_tool), id(other_trajectory)}) == 3


def test_among_same_named_calls_the_one_whose_arguments_match_is_chosen(
    recorder: Recorder,
) -> None:
    tracker = tracker_with(recorder)
    session = tracker.open_session("s")
    a = tracker.op_for_request(session, "t", ToolCall("view_file", {"AbsolutePath": "/w/a"}, "c1"))
    b = tracker.op_for_request(session, "t", ToolCall("view_file", {"AbsolutePath": "/w/b"}, "c2"))

    step = tracker.op_for_step(
        session, ("t", 5), ToolCall("view_file", {"file_path": "file:///w/b"})
    )

    assert step is b
    assert tracker.op_for_step(session, ("t", 6), ToolCall("view_file")) is a


def test_a_denial_step_claims_the_call_python_saw_denied(recorder: Recorder) -> None:
    tracker = tracker_with(recorder)
    session = tracker.open_session("s")
    denied = tracker.op_for_request(session, "t", CALL)
    denied.deny(HookResult.deny("no"), "antigravity.policy")

    op, new = tracker.op_for_denial_step(session, ("t", 4), "no", lambda: ToolCall("_unknown"))

    assert (op, new) == (denied, False)


def test_a_denial_step_never_claims_a_call_python_is_still_deciding(recorder: Recorder) -> None:
    # Concurrent calls: the harness waits for an ask handler on view_file while its static
    # rule denies delete_file, a sibling Python never heard of. The denial step is the
    # sibling's; taking view_file's call would deny it and open a phantom for its real step.
    tracker = tracker_with(recorder)
    session = tracker.open_session("s")
    asked = tracker.op_for_request(session, "t", ToolCall("view_file", {"p": "a"}, id="call_1"))
    asked.evaluating += 1  # as the policy and pre-tool wrappers do while Python decides

    op, new = tracker.op_for_denial_step(
        session, ("t", 6), "no-deletes", lambda: ToolCall("delete_file")
    )

    assert new
    assert op is not asked
    assert op.call.name == "delete_file"
    assert (asked.decided, asked.step_key) == (False, None)
    # Its evaluation over without a verdict (a `when` rule that did not match), the call is
    # one a static rule may deny afterwards: a denial step then names it.
    asked.evaluating -= 1
    later, new = tracker.op_for_denial_step(session, ("t", 7), "x", lambda: ToolCall("_unknown"))
    assert (later, new) == (asked, False)


def test_a_denial_step_with_no_call_seen_is_a_new_call(recorder: Recorder) -> None:
    tracker = tracker_with(recorder)
    session = tracker.open_session("s")

    op, new = tracker.op_for_denial_step(session, ("t", 4), "no", lambda: ToolCall("_unknown"))

    assert new
    assert op.call.name == "_unknown"


def test_a_late_callback_finds_its_closed_call(recorder: Recorder) -> None:
    tracker = tracker_with(recorder)
    session = tracker.open_session("s")
    op = tracker.op_for_request(session, "t", CALL)
    tracker.close_op(session, op)

    assert session.ops.late("call_1") is op
    assert tracker.op_for_step(session, ("t", 9), CALL) is not op  # a new call may reuse it


def test_an_error_the_sdk_hooks_never_reported_on_ends_unrecovered(recorder: Recorder) -> None:
    tracker = tracker_with(recorder)
    session = tracker.open_session("s")
    op = tracker.op_for_request(session, "t", CALL)
    op.failed(ValueError("boom"), hooks_pending=True)

    tracker.close_op(session, op)

    assert recorder.named("dispatch_finished")[-1] == (
        "dispatch_finished",
        "on_tool_error",
        None,
        None,
    )


def test_a_recovery_is_a_non_empty_replacement_message(recorder: Recorder) -> None:
    tracker = tracker_with(recorder)
    session = tracker.open_session("s")
    recovered, unrecovered = (
        tracker.op_for_request(session, "t", ToolCall(CALL.name, CALL.args, i))
        for i in ("c1", "c2")
    )
    for op in (recovered, unrecovered):
        op.failed(ValueError("boom"), hooks_pending=True)

    recovered.recovered("try Rome")
    unrecovered.recovered(None)

    finished = [c[2] for c in recorder.named("dispatch_finished") if c[1] == "on_tool_error"]
    assert finished == [Recovery("try Rome"), None]


def test_closing_a_session_fails_its_unfinished_turn(recorder: Recorder) -> None:
    tracker = tracker_with(recorder)
    session = tracker.open_session("s")
    tracker.start_turn(session, "hi")
    tracker.op_for_request(session, "t", CALL)

    tracker.close_session(session, None)

    ended = recorder.named("scope_ended")
    assert ended == [
        ("scope_ended", "OperationContext", None, "TurnInterrupted"),
        ("scope_ended", "TurnContext", "failed", "TurnInterrupted"),
        ("scope_ended", "SessionContext", "completed", None),
    ]
    assert "read the whole response" in str(TurnInterrupted(TURN_INTERRUPTED))


# --- calls in flight when their turn or session ends ------------------------------------------


def test_an_undecided_call_at_turn_end_is_never_recorded_as_allowed(recorder: Recorder) -> None:
    tracker = tracker_with(recorder)
    session = tracker.open_session("s")
    tracker.start_turn(session, "hi")
    tracker.op_for_request(session, "t", CALL)

    tracker.end_turn(session, RuntimeError("cancelled"))

    allow = HookResult()
    assert recorder.calls == [
        ("scope_started", "SessionContext"),
        ("scope_started", "TurnContext"),
        ("dispatch_started", "pre_turn"),
        ("dispatch_finished", "pre_turn", allow, None),
        ("scope_started", "OperationContext"),
        ("dispatch_started", "pre_tool_call"),
        ("scope_ended", "OperationContext", None, "RuntimeError"),
        ("scope_ended", "TurnContext", "failed", "RuntimeError"),
    ]


def test_a_running_call_at_turn_end_ends_with_the_turns_error(recorder: Recorder) -> None:
    tracker = tracker_with(recorder)
    session = tracker.open_session("s")
    tracker.start_turn(session, "hi")
    op = tracker.op_for_request(session, "t", CALL)
    op.start()

    tracker.end_turn(session, RuntimeError("cancelled"))

    assert recorder.named("scope_ended")[0] == (
        "scope_ended",
        "OperationContext",
        None,
        "RuntimeError",
    )


def test_a_call_in_flight_when_its_turn_completes_is_interrupted(recorder: Recorder) -> None:
    tracker = tracker_with(recorder)
    session = tracker.open_session("s")
    tracker.start_turn(session, "hi")
    op = tracker.op_for_request(session, "t", CALL)
    op.start()

    tracker.end_turn(session)

    assert recorder.named("scope_ended")[0] == (
        "scope_ended",
        "OperationContext",
        None,
        "CallInterrupted",
    )
    assert (
        str(CallInterrupted(CALL_INTERRUPTED))
        == "the turn ended before this tool call was decided or had run"
    )


def test_a_call_that_ran_ends_normally_with_its_turn(recorder: Recorder) -> None:
    tracker = tracker_with(recorder)
    session = tracker.open_session("s")
    tracker.start_turn(session, "hi")
    op = tracker.op_for_request(session, "t", CALL)
    op.returned("sunny", hooks_pending=True)  # post_tool_call hooks never reported

    tracker.end_turn(session, RuntimeError("cancelled"))

    assert recorder.named("scope_ended")[0] == ("scope_ended", "OperationContext", None, None)


def test_a_denied_call_ends_normally_with_its_turn(recorder: Recorder) -> None:
    tracker = tracker_with(recorder)
    session = tracker.open_session("s")
    tracker.start_turn(session, "hi")
    op = tracker.op_for_request(session, "t", CALL)
    op.deny(HookResult.deny("no"), "rule")

    tracker.end_turn(session, RuntimeError("cancelled"))

    assert recorder.named("scope_ended")[0] == ("scope_ended", "OperationContext", None, None)


def test_a_late_verdict_for_an_interrupted_call_is_ignored(recorder: Recorder) -> None:
    tracker = tracker_with(recorder)
    session = tracker.open_session("s")
    tracker.start_turn(session, "hi")
    op = tracker.op_for_request(session, "t", CALL)
    tracker.end_turn(session, RuntimeError("cancelled"))
    before = list(recorder.calls)

    op.deny(HookResult.deny("too late"), "rule")
    op.returned("sunny", hooks_pending=False)

    assert recorder.calls == before


def test_pre_turn_undecided_when_the_turn_fails_is_not_recorded_as_allowed(
    recorder: Recorder,
) -> None:
    tracker = tracker_with(recorder)
    session = tracker.open_session("s")
    session.probe.has_hooks = lambda event: event == "pre_turn"  # the SDK's hooks decide it
    tracker.start_turn(session, "hi")

    tracker.end_turn(session, RuntimeError("cancelled"))

    assert [c for c in recorder.calls if c[0] != "scope_started"] == [
        ("dispatch_started", "pre_turn"),
        ("scope_ended", "TurnContext", "failed", "RuntimeError"),
    ]


class Keep(DispatchObserver):
    """Keeps what each dispatch started with."""

    def __init__(self) -> None:
        self.data: dict[str, list[Any]] = {}

    def dispatch_started(self, event: Any, context: Any, data: Any) -> None:
        self.data.setdefault(event, []).append(data)


def test_turn_usage_is_what_the_session_used_since_the_turn_began() -> None:
    keep = Keep()
    tracker = Tracker(observed_by(keep), "bot")
    session = tracker.open_session("s", SdkProbe("m"))
    used = [Usage(100, 40)]
    session.probe.usage = lambda: used[-1]
    tracker.start_turn(session, "hi")
    used.append(Usage(130, 52))

    tracker.end_turn(session)

    assert keep.data["post_turn"] == [ChatResponse("", "m", Usage(30, 12))]


def test_tool_result_carries_the_value_and_the_effective_call() -> None:
    keep = Keep()
    tracker = Tracker(observed_by(keep), "bot")
    session = tracker.open_session("s")
    op = tracker.op_for_request(session, "t", CALL)
    op.start()
    op.returned("sunny", hooks_pending=False)

    assert [(r.call, r.value) for r in keep.data["post_tool_call"]] == [(CALL, "sunny")]


def test_a_hook_that_gives_no_answers_decides_no_interaction(recorder: Recorder) -> None:
    # As in HookRunner: an empty answer list answers nothing, so that hook stopped nothing.
    tracker = tracker_with(recorder)
    session = tracker.open_session("s")
    op = tracker.interaction(session)
    dispatch = Dispatch(tracker.notify, "on_interaction", op.context, [])

    dispatch.hook_finished("answers_nothing", [], None, 0.0)
    dispatch.finish(None)

    assert recorder.named("dispatch_finished") == [
        ("dispatch_finished", "pre_turn", HookResult(), None),
        ("dispatch_finished", "on_interaction", None, None),
    ]


def test_a_closed_call_is_findable_for_a_bounded_time_only(recorder: Recorder) -> None:
    now = [100.0]
    tracker = tracker_with(recorder)
    session = tracker.open_session("s")
    session.ops = OpIndex(clock=lambda: now[0])
    op = tracker.op_for_request(session, "t", CALL)
    tracker.close_op(session, op)

    now[0] += LINGER_S
    assert session.ops.late("call_1") is op
    now[0] += 0.001
    assert session.ops.late("call_1") is None


def test_at_most_max_closed_calls_stay_findable(recorder: Recorder) -> None:
    tracker = tracker_with(recorder)
    session = tracker.open_session("s")
    ops = []
    for index in range(MAX_CLOSED + 1):
        op = tracker.op_for_request(session, "t", ToolCall("get_weather", {}, f"c{index}"))
        tracker.close_op(session, op)
        ops.append(op)

    assert session.ops.late("c0") is None
    assert session.ops.late(f"c{MAX_CLOSED}") is ops[-1]
