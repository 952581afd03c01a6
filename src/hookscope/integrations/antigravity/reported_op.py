"""One tool call the SDK runs and reports piecemeal: its phases and their only writers.

A call's ``pre_tool_call`` is reported while the SDK's hooks, its Python-evaluated rules, the
harness's static rules (and a governing runner's hooks) decide; the tool runs in Python or in
the harness; its ``post_tool_call`` or ``on_tool_error`` is reported when the SDK's hooks for it
ran (the harness may call them after the step that ends the call). :class:`ReportedOp` walks
those phases, each through one method::

    deciding ──allow()──▶ allowed ──start()──▶ running ──returned()/failed()──▶ reporting
        │                                                                          │
        └──deny()──▶ denied                                      close() ◀─────────┘ ▶ done

Nothing else writes its fields. Where a call is found from an SDK report is
:class:`~.operations.OpIndex`'s business, never the op's.
"""

from __future__ import annotations

from time import perf_counter
from typing import TYPE_CHECKING, Any, Final, Literal, final

from hookscope.context import OperationContext
from hookscope.integrations._kit.report import DispatchReport
from hookscope.integrations._kit.scopes import CallInterrupted, DetachedScope
from hookscope.types import HookResult, Recovery, ToolCall, ToolResult

if TYPE_CHECKING:
    from hookscope.runner import HookRunner

__all__ = ["CALL_INTERRUPTED", "Phase", "ReportedOp", "StepKey"]

#: ``deciding`` → ``allowed`` → ``running`` → ``reporting`` → ``done``, or ``denied``.
Phase = Literal["deciding", "allowed", "running", "reporting", "done", "denied"]
#: A step update's identity: ``(trajectory, step index in the client's numbering)``.
StepKey = tuple[str, int]

_ALLOW: Final = HookResult()
#: Why a call ends in error when its turn ended, without an error, before the call did.
CALL_INTERRUPTED: Final = "the turn ended before this tool call was decided or had run"


@final
class ReportedOp:
    """One tool call of a turn (or a subagent run), open until its step is done.

    Args:
        runner: Whose notifier reports the call (read at each use).
        context: The call's hookscope context (its turn's or subagent run's child).
        call: The call as first seen; its id is the call's one id (learned later for a
            harness tool whose step came first).
        trajectory: The SDK trajectory the call belongs to, when known.
    """

    __slots__ = (
        "_runner",
        "call",
        "decision_report",
        "denial_message",
        "evaluating",
        "pending_allow",
        "phase",
        "result_report",
        "scope",
        "started",
        "step_done",
        "step_key",
        "subagent_runs",
        "trajectory",
        "unrecovered_error",
    )

    def __init__(
        self,
        runner: HookRunner,
        context: OperationContext,
        call: ToolCall,
        trajectory: str | None = None,
    ) -> None:
        self._runner = runner
        self.scope: DetachedScope[OperationContext] = DetachedScope(context, runner.notifier)
        self.call = call
        self.trajectory = trajectory or None
        self.phase: Phase = "deciding"
        #: ``pre_tool_call``: reported from the call's first sight until it is decided.
        self.decision_report = DispatchReport(runner.notifier, "pre_tool_call", context, call)
        #: The allow the call will be reported with (it may carry a rule's decision).
        self.pending_allow: HookResult = _ALLOW
        #: ``post_tool_call`` or ``on_tool_error``, once the tool has run.
        self.result_report: DispatchReport | None = None
        #: The tool's error while no hook recovered it (the span ends with it).
        self.unrecovered_error: BaseException | None = None
        #: The denial's message, to match the harness's denial step by.
        self.denial_message = ""
        #: How many of Python's evaluations of the call (a ``when`` rule, an ask handler, the
        #: SDK's pre-tool hooks) are still running: the harness awaits their answer, so no
        #: denial step it sends meanwhile can be about this call.
        self.evaluating = 0
        self.step_key: StepKey | None = None
        #: Whether the harness reported the call's step done (its hooks may still report).
        self.step_done = False
        #: How many subagent runs this call (an ``invoke_subagent``) has started.
        self.subagent_runs = 0
        self.started = 0.0

    # --- what it is ---

    @property
    def context(self) -> OperationContext:
        """The call's hookscope context."""
        return self.scope.context

    @property
    def call_id(self) -> str | None:
        """The model's id for the call, once known."""
        return self.call.id or None

    @property
    def closed(self) -> bool:
        """Whether the call's span has ended."""
        return self.scope.ended

    @property
    def decided(self) -> bool:
        """Whether ``pre_tool_call`` has finished (allowed, denied or abandoned)."""
        return self.decision_report.finished

    @property
    def denied(self) -> bool:
        """Whether the call was denied."""
        return self.phase == "denied"

    @property
    def in_flight(self) -> bool:
        """Whether the call still awaits its decision or its tool's end."""
        return self.phase in ("deciding", "allowed", "running")

    @property
    def hooks_pending(self) -> bool:
        """Whether the SDK's post-call or error hooks have yet to report."""
        return self.result_report is not None and not self.result_report.finished

    # --- deciding ---

    def learn_call_id(self, call_id: str) -> None:
        """The call's id, from a report that names it (the first one learned stays)."""
        if not self.call.id and call_id:
            self.call = ToolCall(self.call.name, self.call.args, call_id, self.call.server)

    def learn_step(self, step_key: StepKey) -> None:
        """The call's step, from the first step update about it."""
        if self.step_key is None:
            self.step_key = step_key

    def learn_trajectory(self, trajectory: str | None) -> None:
        """The call's trajectory, from the first report that names it."""
        if self.trajectory is None and trajectory:
            self.trajectory = trajectory

    def allow_pending(self, result: HookResult) -> None:
        """A rule or hook allowed the call with ``result``; others may still deny it."""
        if self.phase == "deciding":
            self.pending_allow = result

    def modify(self, args: dict[str, Any]) -> None:
        """The SDK's hooks changed arguments: the call runs, and is reported, with them."""
        if self.phase != "deciding":
            return
        self.call = self.call.with_args({**self.call.args, **args})
        self.pending_allow = HookResult(
            allow=True, modified_args=args, decision=self.pending_allow.decision
        )

    def deny(self, result: HookResult, decided_by: str | None) -> None:
        """The call was denied (by a hook, a rule, the harness); it will not run."""
        if self.decided:
            return
        self.phase = "denied"
        self.denial_message = result.message
        self.decision_report.finish(result, decided_by, data=self.call)

    def allow(self) -> None:
        """The call goes ahead: ``pre_tool_call`` ends with the allow it has."""
        if self.phase == "deciding":
            self.phase = "allowed"
            self.decision_report.finish(self.pending_allow, data=self.call)

    # --- running and reporting ---

    def start(self) -> None:
        """The tool starts running in Python now."""
        self.allow()
        if self.phase == "allowed":
            self.phase = "running"
            self.started = perf_counter()

    def returned(self, value: Any, hooks_pending: bool) -> None:
        """The tool returned ``value``; ``post_tool_call`` ends now or when the SDK's hooks ran."""
        self.allow()
        if self.closed or self.result_report is not None:  # closed: its turn ended first
            return
        duration = perf_counter() - self.started if self.started else 0.0
        self._report("post_tool_call", ToolResult(self.call, value, duration), hooks_pending)

    def failed(self, error: BaseException, hooks_pending: bool) -> None:
        """The tool failed; ``on_tool_error`` ends now or when the SDK's error hooks ran."""
        self.allow()
        if self.closed or self.result_report is not None:
            return
        self.unrecovered_error = error  # until a hook recovers it
        self._report("on_tool_error", error, hooks_pending)

    def _report(self, event: Any, data: Any, hooks_pending: bool) -> None:
        self.phase = "reporting"
        report = DispatchReport(self._runner.notifier, event, self.context, data)
        self.result_report = report
        if not hooks_pending:
            report.finish(None)

    def recovered(self, value: str | None) -> None:
        """The SDK's error hooks ran: a non-empty string replaced the error for the model."""
        report = self.result_report
        if report is not None and report.event == "on_tool_error":
            if value:
                self.unrecovered_error = None
            report.finish(Recovery(value) if value else None)

    def finish_step(self) -> bool:
        """The harness reports the call's step done; whether the call can close now (its
        SDK hooks may report after the step)."""
        self.step_done = True
        return not self.hooks_pending

    def next_subagent(self) -> int:
        """A subagent run this call delegated to starts: its index among the call's runs."""
        index = self.subagent_runs
        self.subagent_runs += 1
        return index

    # --- the end ---

    def close(self, interruption: BaseException | None = None) -> bool:
        """End the call's span: its step is done, or its turn or session ended.

        A call still in flight (undecided, or allowed but not yet returned) was interrupted:
        it ends with ``interruption`` (the turn's or session's error; a
        ``CallInterrupted`` when there is none), and an undecided
        ``pre_tool_call`` is abandoned, never finished as an allow. A call whose tool failed,
        unrecovered, ends with the tool's error; one that ran or was denied ends normally.

        Returns:
            ``False`` when it had already ended.
        """
        if self.closed:
            return False
        error = (
            (interruption or CallInterrupted(CALL_INTERRUPTED))
            if self.in_flight
            else self.unrecovered_error
        )
        if not self.decision_report.finished:
            self.decision_report.abandon()
        if self.result_report is not None:  # the tool ran; the SDK's hooks never reported
            self.result_report.finish(None)
        if self.phase != "denied":
            self.phase = "done"
        return self.scope.end(self._runner.notifier, error)
