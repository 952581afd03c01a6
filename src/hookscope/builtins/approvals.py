"""``Approvals``: a person answers confirm questions, through a channel, with a deadline.

A confirm question (``HookResult.ask``, a policy ``ask`` rule, ``ToolTiers``) is put to a
channel and the call waits for the answer:

- ``"terminal"``: asked on the controlling terminal (``/dev/tty``), ``y`` approves;
- a directory (``Approvals("/var/lib/agent/approvals")``): one request file per question under
  ``pending/``; ``hookscope approvals list|approve ID [--as NAME]|deny ID`` answers it from any
  process. The answer file is created with ``O_EXCL``, so exactly one answer (a person's or the
  timeout's) wins; an unknown or already answered ID is refused with a message;
- an ``http(s)://`` URL: the question is POSTed as JSON; the reply either decides
  (``{"decision": "approve"|"deny", "approver": "…"}``) or names a ``poll_url`` that is polled
  until it does.

No answer within ``timeout_s`` is ``on_timeout`` (``"deny"``, the default, or ``"allow"``).
Recorded: a ``blocked_on_user`` span under the current (tool) span with
``hookscope.approval.{id,channel,outcome,approver}``, and the histogram
``hookscope.approval.duration`` (seconds a call waited for a person), through the OpenTelemetry
API (the global providers).
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import json
import os
import select
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final, Literal

from opentelemetry import metrics, trace

from hookscope._version import __version__
from hookscope.context import OperationContext
from hookscope.hooks import Hook
from hookscope.redaction import redact_json
from hookscope.types import Answer, HookscopeError, Question

__all__ = ["ApprovalError", "Approvals", "DirectoryQueue", "answer", "pending"]

#: Span and metric names (DESIGN §11); also in ``hookscope.telemetry.semconv``.
SPAN_BLOCKED: Final = "blocked_on_user"
METRIC_DURATION: Final = "hookscope.approval.duration"
ATTR_ID: Final = "hookscope.approval.id"
ATTR_CHANNEL: Final = "hookscope.approval.channel"
ATTR_OUTCOME: Final = "hookscope.approval.outcome"
ATTR_APPROVER: Final = "hookscope.approval.approver"

Outcome = Literal["approved", "denied", "timed_out"]


class ApprovalError(HookscopeError, ValueError):
    """An answer that cannot be given (unknown or already answered request); says why."""


# --- the directory queue --------------------------------------------------------------------


class DirectoryQueue:
    """Request files under ``pending/``, answer files under ``answers/`` (created ``O_EXCL``)."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self.pending = self.directory / "pending"
        self.answers = self.directory / "answers"

    def ask(self, request: dict[str, Any]) -> None:
        for folder in (self.pending, self.answers):
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        temporary = self.pending / f".{request['id']}.tmp"
        temporary.write_text(json.dumps(request, sort_keys=True))
        os.replace(temporary, self.pending / f"{request['id']}.json")

    def answer(self, request_id: str, outcome: Outcome, approver: str) -> dict[str, Any]:
        """Record the one answer of ``request_id``; refuse an unknown or answered one."""
        if not _valid_id(request_id) or not (self.pending / f"{request_id}.json").exists():
            raise ApprovalError(f"no pending approval request {request_id!r} in {self.directory}")
        self.answers.mkdir(parents=True, exist_ok=True, mode=0o700)
        record = {"outcome": outcome, "approver": approver, "answered_at": time.time()}
        try:
            fd = os.open(
                self.answers / f"{request_id}.json", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600
            )
        except FileExistsError:
            earlier = self.read_answer(request_id) or {}
            raise ApprovalError(
                f"approval request {request_id!r} was already answered "
                f"({earlier.get('outcome', 'answered')} by {earlier.get('approver', '?')})"
            ) from None
        with os.fdopen(fd, "w") as file:
            json.dump(record, file)
        return record

    def read_answer(self, request_id: str) -> dict[str, Any] | None:
        try:
            data = json.loads((self.answers / f"{request_id}.json").read_text())
        except (OSError, ValueError):
            return None  # not answered yet (or being written: read again)
        return data if isinstance(data, dict) else None

    def close(self, request_id: str) -> None:
        with contextlib.suppress(OSError):
            (self.pending / f"{request_id}.json").unlink()

    def list(self) -> list[dict[str, Any]]:
        """The requests still waiting, oldest first."""
        found = []
        for path in sorted(self.pending.glob("*.json")) if self.pending.is_dir() else ():
            if (self.answers / path.name).exists():
                continue
            with contextlib.suppress(OSError, ValueError):
                found.append(json.loads(path.read_text()))
        return sorted(found, key=lambda r: r.get("created", 0))


def _valid_id(text: str) -> bool:
    return bool(text) and all(c.isalnum() or c == "-" for c in text)


def pending(directory: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The requests waiting in a queue directory (``hookscope approvals list``)."""
    return DirectoryQueue(directory).list()


def answer(
    directory: str | os.PathLike[str], request_id: str, approve: bool, approver: str = ""
) -> dict[str, Any]:
    """Answer one request (``hookscope approvals approve|deny``).

    Raises:
        ApprovalError: the request is unknown or already answered.
    """
    who = approver or getpass.getuser()
    return DirectoryQueue(directory).answer(request_id, "approved" if approve else "denied", who)


# --- the hook -------------------------------------------------------------------------------


class Approvals(Hook):
    """Answers confirm questions through a person, over ``channel``, within ``timeout_s``.

    Args:
        channel: ``"terminal"``, a queue directory, or an ``http(s)://`` webhook URL.
        timeout_s: Seconds to wait for an answer.
        on_timeout: ``"deny"`` (default) or ``"allow"`` when nobody answers in time.
        poll_s: Seconds between looks at a queue directory or a webhook's ``poll_url``.
        tracer_provider: Where the ``blocked_on_user`` span goes; the global one when ``None``.
        meter_provider: Where ``hookscope.approval.duration`` goes; the global one when ``None``.
    """

    def __init__(
        self,
        channel: str | os.PathLike[str] = "terminal",
        *,
        timeout_s: float = 300.0,
        on_timeout: Literal["deny", "allow"] = "deny",
        poll_s: float = 0.2,
        tracer_provider: trace.TracerProvider | None = None,
        meter_provider: metrics.MeterProvider | None = None,
    ) -> None:
        if on_timeout not in ("deny", "allow"):
            raise ValueError(f"Approvals(on_timeout={on_timeout!r}): use 'deny' or 'allow'")
        for name, value in (("timeout_s", timeout_s), ("poll_s", poll_s)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ValueError(f"Approvals({name}={value!r}) must be a positive number")
        text = os.fspath(channel)
        self.kind = (
            "terminal"
            if text == "terminal"
            else "webhook"
            if text.startswith(("http://", "https://"))
            else "directory"
        )
        self.channel = text
        self.queue = DirectoryQueue(text) if self.kind == "directory" else None
        self.timeout_s = float(timeout_s)
        self.on_timeout = on_timeout
        self.poll_s = float(poll_s)
        self._tracer = trace.get_tracer("hookscope", __version__, tracer_provider=tracer_provider)
        meter = metrics.get_meter("hookscope", __version__, meter_provider=meter_provider)
        self._duration = meter.create_histogram(
            METRIC_DURATION, unit="s", description="Time a call waited for a person's approval"
        )

    async def on_interaction(
        self, context: OperationContext, questions: Sequence[Question]
    ) -> list[Answer] | None:
        """Put each confirm question to the channel; other questions are left to others."""
        confirms = [q for q in questions if q.kind == "confirm"]
        if not confirms:
            return None
        return [await self._decide(context, question) for question in confirms]

    async def _decide(self, context: OperationContext, question: Question) -> Answer:
        call = getattr(context, "call", None)
        request = {
            "id": uuid.uuid4().hex[:12],
            "question": question.text,
            "tool": None if call is None else call.qualified_name,
            "args": None if call is None else redact_json(dict(call.args)),
            "session_id": getattr(context, "session_id", None),
            "agent": getattr(context, "agent_name", None),
            "created": time.time(),
        }
        started = time.monotonic()
        with self._tracer.start_as_current_span(SPAN_BLOCKED) as span:
            span.set_attributes({ATTR_ID: str(request["id"]), ATTR_CHANNEL: self.kind})
            try:
                outcome, approver = await self._ask(request)
            except Exception:  # a channel that fails never approves: fail closed
                outcome, approver = "denied", ""
            span.set_attribute(ATTR_OUTCOME, outcome)
            if approver:
                span.set_attribute(ATTR_APPROVER, approver)
        waited = time.monotonic() - started
        agent = str(request["agent"] or "agent")
        self._duration.record(
            waited, {"gen_ai.agent.name": agent, ATTR_OUTCOME: outcome, ATTR_CHANNEL: self.kind}
        )
        allowed = outcome == "approved" or (outcome == "timed_out" and self.on_timeout == "allow")
        return Answer("allow" if allowed else "deny", question.id)

    async def _ask(self, request: dict[str, Any]) -> tuple[Outcome, str]:
        if self.kind == "directory":
            return await self._ask_directory(request)
        if self.kind == "webhook":
            return await self._ask_webhook(request)
        return await asyncio.to_thread(_ask_terminal, request, self.timeout_s)

    async def _ask_directory(self, request: dict[str, Any]) -> tuple[Outcome, str]:
        queue = self.queue
        assert queue is not None
        queue.ask(request)
        deadline = time.monotonic() + self.timeout_s
        try:
            while True:
                found = queue.read_answer(request["id"])
                if found is not None:
                    return _outcome(found)
                if time.monotonic() >= deadline:
                    try:  # the timeout answers too, so a late approval is refused, not lost
                        queue.answer(request["id"], "timed_out", "")
                        return "timed_out", ""
                    except ApprovalError:
                        continue  # a person answered just now: read it
                await asyncio.sleep(self.poll_s)
        finally:
            queue.close(request["id"])

    async def _ask_webhook(self, request: dict[str, Any]) -> tuple[Outcome, str]:
        import httpx

        deadline = time.monotonic() + self.timeout_s
        async with httpx.AsyncClient(timeout=min(self.timeout_s, 30.0)) as client:
            reply = (await client.post(self.channel, json=request)).json()
            while True:
                if isinstance(reply, dict) and reply.get("decision") in ("approve", "deny"):
                    outcome: Outcome = "approved" if reply["decision"] == "approve" else "denied"
                    return outcome, str(reply.get("approver") or "")
                poll = reply.get("poll_url") if isinstance(reply, dict) else None
                if not isinstance(poll, str) or time.monotonic() >= deadline:
                    return "timed_out", ""
                await asyncio.sleep(self.poll_s)
                reply = (await client.get(poll)).json()


def _outcome(found: dict[str, Any]) -> tuple[Outcome, str]:
    outcome = found.get("outcome")
    if outcome not in ("approved", "denied", "timed_out"):
        return "denied", ""
    return outcome, str(found.get("approver") or "")


def _ask_terminal(request: dict[str, Any], timeout_s: float) -> tuple[Outcome, str]:
    """Ask on the controlling terminal; no terminal, or no answer in time, is a timeout."""
    try:
        tty = open("/dev/tty", "r+")  # noqa: SIM115 - closed below
    except OSError:
        return "timed_out", ""
    with tty:
        tool = f" ({request['tool']})" if request.get("tool") else ""
        tty.write(f"\nhookscope approval{tool}: {request['question']} [y/N] ")
        tty.flush()
        ready, _, _ = select.select([tty], [], [], timeout_s)
        if not ready:
            tty.write("\n(no answer: timed out)\n")
            return "timed_out", ""
        reply = tty.readline().strip().lower()
    user = getpass.getuser()
    return ("approved", user) if reply in ("y", "yes") else ("denied", user)


# --- `hookscope approvals` -------------------------------------------------------------------

DEFAULT_DIRECTORY: Final = ".hookscope/approvals"


def add_parser(commands: Any) -> None:
    """Add ``hookscope approvals list|approve ID [--as NAME]|deny ID [--as NAME]``."""
    parser = commands.add_parser(
        "approvals",
        help="list and answer approval requests waiting in a queue directory",
        epilog="exit status: 0 done, 1 the request is unknown or already answered",
    )
    parser.add_argument(
        "--dir",
        default=os.environ.get("HOOKSCOPE_APPROVALS_DIR", DEFAULT_DIRECTORY),
        metavar="DIR",
        help=f"the queue directory given to Approvals (default: $HOOKSCOPE_APPROVALS_DIR or "
        f"{DEFAULT_DIRECTORY})",
    )
    actions = parser.add_subparsers(dest="approvals_command", required=True, metavar="ACTION")
    actions.add_parser("list", help="the requests waiting, oldest first")
    for name in ("approve", "deny"):
        action = actions.add_parser(name, help=f"{name} one request")
        action.add_argument("id", metavar="ID")
        action.add_argument(
            "--as",
            dest="approver",
            default="",
            metavar="NAME",
            help="who answers (default: the login name)",
        )
    parser.set_defaults(handler=_run)


def _run(args: Any) -> int:
    import sys

    if args.approvals_command == "list":
        waiting = pending(args.dir)
        for request in waiting:
            age = time.time() - float(request.get("created", time.time()))
            tool = request.get("tool") or "-"
            print(f"{request['id']}  {age:6.0f}s  {tool}  {request.get('question', '')}")
        if not waiting:
            print(f"no approval requests waiting in {args.dir}")
        return 0
    try:
        record = answer(args.dir, args.id, args.approvals_command == "approve", args.approver)
    except ApprovalError as error:
        print(f"hookscope: error: {error}", file=sys.stderr)
        return 1
    print(f"{args.id}: {record['outcome']} by {record['approver']}")
    return 0
