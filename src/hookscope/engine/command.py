"""Command hooks: an external program decides, Claude Code's hook protocol.

The program receives the envelope (:mod:`hookscope.engine.envelope`) as one JSON object on
stdin and answers with its exit status and stdout: exit 0 with a JSON verdict (or nothing),
exit 2 to deny with stderr as the reason. Anything else — another status, a crash, malformed
JSON, output past the cap, a timeout — is a hook failure, which on a decide event fails closed
unless the hook was configured with ``on_failure = "allow"``.

Programs run in their own session through asyncio, never blocking the loop
(:mod:`hookscope.engine._process`): the verdict is read when the program exits, children that
keep its pipes open are killed with its group after a short grace, output is capped, and an
abandoned run (its timeout, the agent's cancellation) is ended whole — SIGTERM, then SIGKILL
two seconds later. A daemon that calls ``setsid`` leaves the group; the module docstring of
``_process`` says what still reaches it and what does not.
"""

from __future__ import annotations

import logging
import os
import signal
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from opentelemetry import propagate

from hookscope.context import HookContext
from hookscope.engine import _run
from hookscope.engine._process import (
    KILL_GRACE_S,
    OUTPUT_LIMIT,
    OutputTooLarge,
    default_name,
    executable_name,
    run_program,
)
from hookscope.engine.envelope import (
    Verdict,
    build_envelope,
    encode_envelope,
    event_result,
    parse_verdict,
)
from hookscope.hooks import CategoryHook, HookEvent
from hookscope.runner import HookFailure
from hookscope.types import ToolCall

__all__ = ["DEFAULT_TIMEOUT", "KILL_GRACE_S", "OUTPUT_LIMIT", "CommandHook"]

logger = logging.getLogger("hookscope.engine")

#: Seconds a command may run when its configuration names no timeout.
DEFAULT_TIMEOUT: Final = 60.0
_SHELL: Final = "/bin/sh"


class CommandHook(CategoryHook):
    """An external program as a hook, for any event.

    Args:
        event: The event the program serves (``"pre_tool_call"`` …).
        command: A shell command line, run through ``/bin/sh -c``.
        args: A program and its arguments, run without a shell. Give exactly one of
            ``command`` and ``args``.
        name: Used in messages and telemetry; the script's (or program's) base name if empty.
        timeout: Seconds the program may run (enforced by the runner: the process group is
            then terminated and the run counts as failed); ``None`` for no limit.
        fail_open: When the program fails, go on as if it allowed (``on_failure = "allow"``).
        matcher: Which tool calls the hook sees (tool events only).
        project_dir: ``HOOKSCOPE_PROJECT_DIR``/``CLAUDE_PROJECT_DIR`` for the program, and its
            working directory; the current directory when ``None``.
        tool_names: Agent tool name → the name the program expects in ``tool_name`` (the
            reverse of a settings file's ``tool_aliases``).

    Raises:
        ValueError: neither or both of ``command`` and ``args``, or an empty one.
    """

    hook_type = "command"

    def __init__(
        self,
        event: HookEvent,
        *,
        command: str | None = None,
        args: Sequence[str] | None = None,
        name: str = "",
        timeout: float | None = DEFAULT_TIMEOUT,
        fail_open: bool = False,
        matcher: Any = None,
        project_dir: str | os.PathLike[str] | None = None,
        tool_names: Mapping[str, str] | None = None,
    ) -> None:
        if (command is None) == (args is None):
            raise ValueError("a command hook needs exactly one of command= (shell) and args=")
        if command is not None and not (isinstance(command, str) and command.strip()):
            raise ValueError(f"command must be a non-empty string, got {command!r}")
        if args is not None:
            if isinstance(args, str) or not args or not all(isinstance(a, str) for a in args):
                raise ValueError(
                    f"args must be a non-empty list of strings (program first), got {args!r}"
                )
            args = tuple(args)
            argv: tuple[str, ...] = args
        else:
            argv = (_SHELL, "-c", str(command))
        self.event = event  # type: ignore[misc]  # one class serves every event
        self.command = command
        self.args = args
        self.name = name or default_name(command, args)
        self.timeout = timeout
        self.fail_open = fail_open
        self.matcher = matcher
        self.project_dir = str(Path(project_dir or os.getcwd()).resolve())
        self.tool_names = dict(tool_names or {})
        self.executable = executable_name(command, args)
        self._argv = argv

    def __repr__(self) -> str:
        return f"<CommandHook {self.name!r} on {self.event}>"

    def _environment(self) -> dict[str, str]:
        env = dict(os.environ)
        env["HOOKSCOPE_PROJECT_DIR"] = env["CLAUDE_PROJECT_DIR"] = self.project_dir
        carrier: dict[str, str] = {}
        propagate.inject(carrier)
        # The agent's own inherited TRACEPARENT names its parent's span, not the hook's.
        for header, variable in (("traceparent", "TRACEPARENT"), ("tracestate", "TRACESTATE")):
            if header in carrier:
                env[variable] = carrier[header]
            else:
                env.pop(variable, None)
        return env

    async def run(self, context: HookContext, data: Any) -> Any:
        """Run the program on the envelope for ``data``; return the event's result.

        Raises:
            HookFailure: the program failed (see the module docstring).
        """
        event: HookEvent = self.event
        try:
            payload = encode_envelope(build_envelope(event, context, data, self.tool_names))
        except Exception as error:  # a value that cannot be shown: this hook failed, loudly
            raise HookFailure(f"cannot be given its input ({type(error).__name__})") from None
        _run.record(_run.PROCESS_EXECUTABLE_NAME, self.executable)
        try:
            status, stdout, stderr = await run_program(
                self._argv, payload, cwd=self.project_dir, env=self._environment()
            )
        except OSError as error:
            raise HookFailure(
                f"cannot start {self.executable!r} ({error.strerror or type(error).__name__})"
            ) from None
        except OutputTooLarge as too_large:
            raise HookFailure(str(too_large)) from None
        _run.record(_run.PROCESS_EXIT_CODE, status)
        return self._result(event, data, status, stdout, stderr)

    def _result(
        self, event: HookEvent, data: Any, status: int, stdout: bytes, stderr: bytes
    ) -> Any:
        call = data if isinstance(data, ToolCall) else None
        if status == 0:
            verdict = parse_verdict(stdout.decode(errors="replace"))
            return event_result(event, verdict, self.name, call)
        reason = stderr.decode(errors="replace").strip()
        if status == 2:
            return event_result(event, Verdict("deny", reason), self.name, call)
        if reason:
            # Logged, not put in the denial: the model and the spans see only the status.
            logger.warning(
                "command hook %r exited with %d; stderr: %s", self.name, status, reason[-2000:]
            )
        if status < 0:
            try:
                signame = signal.Signals(-status).name
            except ValueError:
                signame = f"signal {-status}"
            raise HookFailure(f"was killed by {signame}")
        raise HookFailure(f"exited with status {status}")
