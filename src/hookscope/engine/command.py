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

import asyncio
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
from hookscope.engine.claude import ClaudeNames, ClaudeOptions
from hookscope.engine.envelope import STOP_HOOK_ACTIVE_KEY, build_envelope, encode_envelope
from hookscope.engine.transcript import transcript_path
from hookscope.engine.verdicts import Verdict, add_context, event_result, parse_verdict
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
        claude: How a hook from a Claude Code settings file runs (its event name, ``if``,
            ``once``, ``async``, plugin root …); ``None`` for a hookscope hook.

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
        claude: ClaudeOptions | None = None,
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
        self.claude = claude
        self.names = claude.names if claude is not None else ClaudeNames.of(self.tool_names)
        self.executable = executable_name(command, args)
        self._argv = argv
        #: Background (``async``) runs in flight, kept referenced until they end.
        self._background: set[asyncio.Future[Any]] = set()
        #: Sessions a ``once`` hook already ran in.
        self._ran_in: set[str] = set()
        #: Hooks of one settings file and event share a group: they run concurrently and
        #: identical commands run once (the runner reads both attributes).
        self.parallel_group: object | None = None
        self.dedupe_key: object | None = (command, tuple(args or ()), self.event)

    def __repr__(self) -> str:
        return f"<CommandHook {self.name!r} on {self.event}>"

    def _environment(self) -> dict[str, str]:
        env = dict(os.environ)
        env["HOOKSCOPE_PROJECT_DIR"] = env["CLAUDE_PROJECT_DIR"] = self.project_dir
        if self.claude is not None and self.claude.plugin_root is not None:
            env["CLAUDE_PLUGIN_ROOT"] = self.claude.plugin_root
        carrier: dict[str, str] = {}
        propagate.inject(carrier)
        # The agent's own inherited TRACEPARENT names its parent's span, not the hook's.
        for header, variable in (("traceparent", "TRACEPARENT"), ("tracestate", "TRACESTATE")):
            if header in carrier:
                env[variable] = carrier[header]
            else:
                env.pop(variable, None)
        return env

    def envelope(self, context: HookContext, data: Any) -> dict[str, Any]:
        """The JSON object the program receives for ``data`` (DESIGN §7, §7a)."""
        claude = self.claude
        session_id = str(getattr(context, "session_id", "") or "")
        return build_envelope(
            self.event,
            context,
            data,
            self.names,
            wire_event=claude.event if claude is not None else None,
            project_dir=self.project_dir,
            transcript_path=transcript_path(self.project_dir, session_id, create=True),
            source=claude.source if claude is not None else None,
        )

    async def run(self, context: HookContext, data: Any) -> Any:
        """Run the program on the envelope for ``data``; return the event's result.

        A hook from a Claude Code settings file runs as Claude Code would run it: not at all
        when its ``if`` rule or ``once`` says so, without waiting when ``async``.

        Raises:
            HookFailure: the program failed (see the module docstring).
        """
        claude = self.claude
        if claude is not None:
            if claude.skips(context, data):
                return None
            if claude.once:
                session_id = str(getattr(context, "session_id", ""))
                if session_id in self._ran_in:
                    return None
                self._ran_in.add(session_id)
            if claude.background:
                self._in_background(context, data)
                return None
        status, stdout, stderr = await self._run_program(context, data)
        return self._result(context, data, status, stdout, stderr)

    def _in_background(self, context: HookContext, data: Any) -> None:
        """``async`` hooks: run without waiting; an ``asyncRewake`` exit 2 adds context."""
        claude = self.claude
        assert claude is not None

        async def background() -> None:
            try:
                status, _, stderr = await asyncio.wait_for(
                    self._run_program(context, data), self.timeout
                )
            except Exception as error:  # nobody waits for it: log, never raise
                logger.warning("background hook %r failed: %s", self.name, error)
                return
            reason = stderr.decode(errors="replace").strip()
            if claude.rewake and status == 2 and reason:
                add_context(context, self.event, f"{claude.rewake_message}{reason}".strip())

        task = asyncio.ensure_future(background())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _run_program(self, context: HookContext, data: Any) -> tuple[int, bytes, bytes]:
        try:
            payload = encode_envelope(self.envelope(context, data))
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
        return status, stdout, stderr

    def _result(
        self, context: HookContext, data: Any, status: int, stdout: bytes, stderr: bytes
    ) -> Any:
        event: HookEvent = self.event
        call = data if isinstance(data, ToolCall) else None
        if status == 0:
            # Claude Code reads SessionStart's and UserPromptSubmit's plain stdout as context.
            plain = self.claude is not None and event in ("on_session_start", "pre_turn")
            verdict = parse_verdict(stdout.decode(errors="replace"), plain_is_context=plain)
            add_context(context, event, verdict.context)
            if call is not None and verdict.replace and verdict.modified_args is not None:
                # updatedInput speaks Claude Code's argument names: back to the agent's.
                verdict = Verdict(
                    verdict.kind,
                    verdict.message,
                    self.names.agent_input(call, verdict.modified_args),
                    True,
                    verdict.context,
                    verdict.halt,
                )
            return self._steer(context, event_result(event, verdict, self.name, call))
        reason = stderr.decode(errors="replace").strip()
        if status == 2:
            return self._steer(
                context, event_result(event, Verdict("deny", reason), self.name, call)
            )
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

    def _steer(self, context: HookContext, result: Any) -> Any:
        # A Stop hook that asked to go on is asked again, with stop_hook_active, when the
        # agent next wants to stop within the same turn (as Claude Code does).
        if self.event == "post_turn" and result is not None:
            context.set(STOP_HOOK_ACTIVE_KEY, True)
        return result
