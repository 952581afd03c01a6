"""Tool operations in flight, and how SDK reports find the operation they belong to.

One tool call is reported to Python several times, from several tasks, each report carrying
a different part of its identity:

* policy-decision and hook requests (``PreToolArgs`` and friends): trajectory, the model's
  call id, tool name and arguments, and a ``step_index`` in the harness's *own* numbering;
* step updates: trajectory and step index in the *client's* numbering (the two numberings
  drift apart by one more each turn, so no arithmetic maps one onto the other), the tool name
  and arguments as the harness normalised them, and the call id only for Python tools (a
  harness tool's step carries its step id instead);
* Python tool execution: the call id and name;
* a denial the harness enforced itself: a step in an error state naming neither tool nor id.

:class:`OpIndex` matches them by identity, in this order (the documented fallback):

1. the call id, within the session (OpenAI-style ids repeat across sessions);
2. the step key ``(trajectory, client step index)`` for step updates;
3. otherwise the oldest open operation *of the same trajectory and tool name* that lacks the
   identity the report brings (a request binds its call id to an operation a step update
   opened, and a step update binds its step key to an operation a request opened), preferring
   one whose argument values the report's arguments contain;
4. a denial step with no tool binds to the oldest operation of its trajectory that Python
   already saw denied and that no step has claimed yet, else to the oldest one Python let
   through without a verdict (a hook or ``when`` rule passed it before a static rule denied
   it), never one whose evaluation is still running (the harness is waiting for that answer,
   so the denial is about a sibling call); only when there is none is it a call the harness
   denied before Python heard of it.

A closed operation stays findable by its call id and step key for :data:`LINGER_S` seconds
(at most :data:`MAX_CLOSED` per session), so a callback that arrives after the operation's
turn ended is recognised as late and attached to it, never mistaken for a new call.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from time import monotonic
from typing import TYPE_CHECKING, Any, final

from hookscope.integrations._kit.correlate import LINGER_S, MAX_CLOSED
from hookscope.types import ToolCall

if TYPE_CHECKING:
    from hookscope.integrations.antigravity.reported_op import ReportedOp, StepKey

__all__ = ["LINGER_S", "MAX_CLOSED", "OpIndex"]


def _contains_args(step_args: dict[str, Any], request_args: dict[str, Any]) -> bool:
    """Whether every string argument of a request occurs in the step's (normalised) values."""
    wanted = [v for v in request_args.values() if isinstance(v, str) and v]
    if not wanted:
        return False
    have = [v for v in step_args.values() if isinstance(v, str)]
    return all(any(w in h for h in have) for w in wanted)


@final
class OpIndex:
    """A session's tool operations, found by what each SDK report carries (module docs)."""

    __slots__ = ("_by_call", "_by_step", "_clock", "_closed", "open")

    def __init__(self, clock: Callable[[], float] = monotonic) -> None:
        self._clock = clock
        #: Open operations in the order they opened.
        self.open: dict[int, ReportedOp] = {}
        #: Open calls by the model's call id: subagents' calls may reuse their parent's ids.
        self._by_call: dict[str, list[ReportedOp]] = {}
        self._by_step: dict[StepKey, ReportedOp] = {}
        self._closed: OrderedDict[tuple[str, object], tuple[ReportedOp, float]] = OrderedDict()

    # --- the look-ups, one per kind of report (module docs give the order) ---

    def for_request(self, trajectory: str | None, call: ToolCall) -> ReportedOp | None:
        """The open call a policy or hook request (or a Python tool run) is about.

        By its call id, else the call a step update opened for the same trajectory and tool
        (which learns the call id now); ``None`` when it is a new call.
        """
        op = self.by_call(call.id, trajectory)
        if op is None:
            op = self.unbound(trajectory, call, lacking="call")
            if op is None:
                return None
            if call.id:
                self.bind_call(op, call.id)
        op.learn_trajectory(trajectory)
        return op

    def for_step(self, step_key: StepKey, call: ToolCall) -> ReportedOp | None:
        """The call a tool step update is about (open or closed moments ago), bound to the
        step; ``None`` when it is a new call (bind its step with :meth:`bind_step`).

        A Python tool's step carries the call id; a harness tool's does not, and is matched to
        the request that named the same tool in the same trajectory.
        """
        op = self.by_step(step_key) or self.recently_closed(step_key=step_key)
        if op is not None:
            return op
        op = self.by_call(call.id, step_key[0]) or self.unbound(step_key[0], call, lacking="step")
        if op is not None:
            self.bind_step(op, step_key)
        return op

    def for_denial_step(self, step_key: StepKey, message: str) -> ReportedOp | None:
        """The call a denial step (which names no tool) reports, bound to the step; ``None``
        for a call the harness denied before Python heard of it."""
        op = self.by_step(step_key) or self.recently_closed(step_key=step_key)
        if op is not None:
            return op
        op = self.denial_target(step_key[0], message)
        if op is not None:
            self.bind_step(op, step_key)
        return op

    def late(self, call_id: str | None) -> ReportedOp | None:
        """The open call with ``call_id``, or one that closed moments ago (a late callback)."""
        return self.by_call(call_id) or self.recently_closed(call_id=call_id)

    # --- indexing ---

    def add(self, op: ReportedOp) -> None:
        """Index a newly opened operation."""
        self.open[id(op)] = op
        if op.call_id is not None:
            self._by_call.setdefault(op.call_id, []).append(op)

    def bind_call(self, op: ReportedOp, call_id: str) -> None:
        """Give ``op`` the model's call id (the first one it learns stays)."""
        if op.call_id is None:
            op.learn_call_id(call_id)
            if not op.closed:
                self._by_call.setdefault(call_id, []).append(op)

    def bind_step(self, op: ReportedOp, step_key: StepKey) -> None:
        """Give ``op`` its step key (client numbering)."""
        if op.step_key is None:
            op.learn_step(step_key)
            if not op.closed:
                self._by_step.setdefault(step_key, op)

    def by_call(self, call_id: str | None, trajectory: str | None = None) -> ReportedOp | None:
        """The open operation with the model's call id (in ``trajectory``, when known)."""
        ops = self._by_call.get(call_id, ()) if call_id else ()
        for op in ops:
            if trajectory is None or op.trajectory in (None, trajectory):
                return op
        return None

    def by_step(self, step_key: StepKey) -> ReportedOp | None:
        """The open operation whose step is ``step_key``."""
        return self._by_step.get(step_key)

    def unbound(self, trajectory: str | None, call: ToolCall, *, lacking: str) -> ReportedOp | None:
        """The oldest open call of ``trajectory`` and ``call``'s tool lacking a call id or step.

        ``lacking`` is ``"call"`` (a request looks for an operation a step opened) or
        ``"step"`` (a step looks for an operation a request opened). A call with another call
        id than ``call``'s never matches. Among several, one whose arguments match wins; then
        the oldest.
        """
        args = dict(call.args)
        candidates = [
            op
            for op in self.open.values()
            if op.call.name == call.name
            and op.context.kind == "tool"
            and (trajectory is None or op.trajectory in (None, trajectory))
            and (op.call_id is None if lacking == "call" else op.step_key is None)
            and (not call.id or op.call_id in (None, call.id))
            # A denied call runs no step: only a denial step (denial_target) claims it.
            and not (lacking == "step" and op.denied)
        ]
        if len(candidates) > 1:
            for op in candidates:
                step_args, request_args = (
                    (args, dict(op.call.args)) if lacking == "step" else (dict(op.call.args), args)
                )
                if _contains_args(step_args, request_args):
                    return op
        return candidates[0] if candidates else None

    def denial_target(self, trajectory: str, message: str) -> ReportedOp | None:
        """The call of ``trajectory`` a denial step is about, when Python has seen it.

        The oldest call Python saw denied with the step's ``message``, else with any message,
        that no step claimed yet; else the oldest call with no step and no verdict whose
        evaluation in Python is over (an SDK hook or a ``when`` rule let it through, then a
        static rule the harness checks afterwards denied it).
        """
        stepless = [
            op
            for op in self.open.values()
            if op.step_key is None
            and op.context.kind == "tool"
            and op.trajectory in (None, trajectory)
        ]
        denied = [op for op in stepless if op.denied]
        same = [op for op in denied if op.denial_message == message]
        # Not a call Python is still deciding: the harness awaits that answer, so its denial
        # step is about another call (concurrent calls: an ask pending while a static rule
        # denies a sibling the harness never asked Python about).
        undecided = [op for op in stepless if not op.decided and not op.evaluating]
        for found in (same, denied, undecided):
            if found:
                return found[0]
        return None

    def latest(self, trajectory: str, name: str) -> ReportedOp | None:
        """The newest call of ``trajectory`` to tool ``name``, open or closed moments ago."""
        for op in reversed(self.open.values()):
            if op.trajectory == trajectory and op.call.name == name:
                return op
        for op, _ in reversed(self._closed.values()):
            if op.trajectory == trajectory and op.call.name == name:
                return op
        return None

    def close(self, op: ReportedOp) -> None:
        """Remove ``op`` from the open operations; keep it findable for late callbacks."""
        self.open.pop(id(op), None)
        now = self._clock()
        if op.call_id is not None:
            same = self._by_call.get(op.call_id, [])
            if op in same:
                same.remove(op)
                if not same:
                    del self._by_call[op.call_id]
            self._remember(("call", op.call_id), op, now)
        if op.step_key is not None:
            if self._by_step.get(op.step_key) is op:
                del self._by_step[op.step_key]
            self._remember(("step", op.step_key), op, now)

    def _remember(self, key: tuple[str, object], op: ReportedOp, now: float) -> None:
        self._closed.pop(key, None)
        self._closed[key] = (op, now)
        while len(self._closed) > MAX_CLOSED:
            self._closed.popitem(last=False)

    def recently_closed(
        self, call_id: str | None = None, step_key: StepKey | None = None
    ) -> ReportedOp | None:
        """A closed operation with this call id or step key, if it closed under LINGER_S ago."""
        now = self._clock()
        while self._closed:  # oldest first: drop what has lingered long enough
            key, (_, closed_at) = next(iter(self._closed.items()))
            if now - closed_at <= LINGER_S:
                break
            del self._closed[key]
        for key in (("call", call_id), ("step", step_key)):
            if key[1] is not None:
                found = self._closed.get(key)
                if found is not None:
                    return found[0]
        return None
