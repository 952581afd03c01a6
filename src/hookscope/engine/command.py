"""Command hooks: an external program decides, Claude Code's hook protocol.

The program receives the envelope (:mod:`hookscope.engine.envelope`) as one JSON object on
stdin and answers with its exit status and stdout: exit 0 with a JSON verdict (or nothing),
exit 2 to deny with stderr as the reason. Anything else — another status, a crash, malformed
JSON, output past the cap, a timeout — is a hook failure, which on a decide event fails closed
unless the hook was configured with ``on_failure = "allow"``.

Programs run in their own session (process group) through asyncio, never blocking the loop;
when a run is abandoned (its timeout, or the agent's cancellation) the whole group gets
SIGTERM, then SIGKILL two seconds later, so no grandchild outlives it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shlex
import signal
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from opentelemetry import propagate

from hookscope.context import HookContext
from hookscope.engine import _run
from hookscope.engine.claude import ClaudeNames, ClaudeOptions
from hookscope.engine.envelope import build_envelope, encode_envelope
from hookscope.engine.transcript import transcript_path
from hookscope.engine.verdicts import Verdict, add_context, event_result, parse_verdict
from hookscope.hooks import CategoryHook, HookEvent
from hookscope.runner import HookFailure
from hookscope.types import HookscopeError, ToolCall

__all__ = ["DEFAULT_TIMEOUT", "KILL_GRACE_S", "OUTPUT_LIMIT", "CommandHook"]

logger = logging.getLogger("hookscope.engine")

#: Seconds a command may run when its configuration names no timeout.
DEFAULT_TIMEOUT: Final = 60.0
#: Bytes of stdout (and, separately, of stderr) past which a run is a failure.
OUTPUT_LIMIT: Final = 1024 * 1024
#: Seconds between SIGTERM and SIGKILL to an abandoned run's process group.
KILL_GRACE_S: Final = 2.0
_CHUNK: Final = 64 * 1024
_SHELL: Final = "/bin/sh"
# A process group of its own is what lets an abandoned run be ended whole (killpg). Where
# Python can (3.11+), only the group is new: a new *session* (setsid) also puts the program in
# its own scheduler autogroup on Linux, which on a busy machine made every run measurably
# slower (bench/bench_engine.py) for nothing a hook needs.
_OWN_GROUP: Final[dict[str, Any]] = (
    {"process_group": 0} if sys.version_info >= (3, 11) else {"start_new_session": True}
)


class _OutputTooLarge(HookscopeError):
    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.stream = stream


def _executable(command: str | None, args: Sequence[str] | None) -> str:
    """The base name of the program a hook runs (recorded; the command line never is)."""
    if args:
        return os.path.basename(args[0])
    assert command is not None
    try:
        words = shlex.split(command)
    except ValueError:  # the shell will say what is wrong with the quoting
        words = command.split()
    return os.path.basename(words[0]) if words else _SHELL


def _default_name(command: str | None, args: Sequence[str] | None) -> str:
    """A readable default name: the script a command runs (``guard.py``), else its program."""
    try:
        words = list(args) if args else shlex.split(command or "")
    except ValueError:
        words = (command or "").split()
    script = next((w for w in words[1:] if "/" in w and not w.startswith("-")), None)
    return os.path.basename(script or (words[0] if words else "command"))


async def _read_capped(stream: asyncio.StreamReader | None, label: str) -> bytes:
    if stream is None:
        return b""
    chunks: list[bytes] = []
    size = 0
    while chunk := await stream.read(_CHUNK):
        size += len(chunk)
        if size > OUTPUT_LIMIT:
            raise _OutputTooLarge(label)
        chunks.append(chunk)
    return b"".join(chunks)


async def _feed(stdin: asyncio.StreamWriter | None, payload: bytes) -> None:
    if stdin is None:
        return
    try:
        stdin.write(payload)
        await stdin.drain()
    except (BrokenPipeError, ConnectionResetError):
        pass  # a program that does not read its input is allowed to exit first
    finally:
        stdin.close()
        # Collects the pipe's own closing error too (Python 3.10 logs it as never retrieved).
        with contextlib.suppress(Exception):
            await stdin.wait_closed()


async def _communicate(process: asyncio.subprocess.Process, payload: bytes) -> tuple[bytes, bytes]:
    out = asyncio.ensure_future(_read_capped(process.stdout, "stdout"))
    err = asyncio.ensure_future(_read_capped(process.stderr, "stderr"))
    feed = asyncio.ensure_future(_feed(process.stdin, payload))
    try:
        await asyncio.gather(feed, out, err)
    except BaseException:
        for task in (feed, out, err):
            task.cancel()
        await asyncio.gather(feed, out, err, return_exceptions=True)
        raise
    return out.result(), err.result()


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


async def _drain(stream: asyncio.StreamReader | None) -> None:
    while stream is not None and await stream.read(_CHUNK):
        pass


async def _reap(process: asyncio.subprocess.Process) -> None:
    """Wait out the grace period, SIGKILL whatever is left of the group, and reap it all."""
    try:
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.shield(process.wait()), KILL_GRACE_S)
        # Even when the program itself exited on SIGTERM, a child of it may have ignored it.
        _signal_group(process.pid, signal.SIGKILL)
        await process.wait()
    except asyncio.CancelledError:  # the loop is closing: do not wait out the grace
        _signal_group(process.pid, signal.SIGKILL)
        await process.wait()
        raise
    finally:
        # Read the pipes to their end (the group is gone, so the end comes): the transport
        # closes only then. A process that left the group could hold them: give up after
        # the grace.
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(
                asyncio.gather(_drain(process.stdout), _drain(process.stderr)), KILL_GRACE_S
            )


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
            ``once``, ``async``, plugin root, transcript …); ``None`` for a hookscope hook.

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
        self.name = name or _default_name(command, args)
        self.timeout = timeout
        self.fail_open = fail_open
        self.matcher = matcher
        self.project_dir = str(Path(project_dir or os.getcwd()).resolve())
        self.tool_names = dict(tool_names or {})
        self.claude = claude
        self.names = claude.names if claude is not None else ClaudeNames.of(self.tool_names)
        self.executable = _executable(command, args)
        self._argv = argv
        #: Runs being terminated in the background (kept referenced until reaped).
        self._reapers: set[asyncio.Future[None]] = set()
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
        return await self._run_program(context, data)

    def _in_background(self, context: HookContext, data: Any) -> None:
        """``async`` hooks: run without waiting; an ``asyncRewake`` exit 2 adds context."""
        claude = self.claude
        assert claude is not None

        async def background() -> None:
            try:
                result = await asyncio.wait_for(
                    self._run_program(context, data, verdict=False), self.timeout
                )
            except Exception as error:  # nobody waits for it: log, never raise
                logger.warning("background hook %r failed: %s", self.name, error)
                return
            if claude.rewake and isinstance(result, str) and result:
                add_context(context, self.event, f"{claude.rewake_message}{result}".strip())

        task = asyncio.ensure_future(background())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _run_program(self, context: HookContext, data: Any, verdict: bool = True) -> Any:
        payload = encode_envelope(self.envelope(context, data))
        _run.record(_run.PROCESS_EXECUTABLE_NAME, self.executable)
        try:
            process = await asyncio.create_subprocess_exec(
                *self._argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                **_OWN_GROUP,
                cwd=self.project_dir,
                env=self._environment(),
            )
        except OSError as error:
            raise HookFailure(
                f"cannot start {self.executable!r} ({error.strerror or type(error).__name__})"
            ) from None
        try:
            stdout, stderr = await _communicate(process, payload)
            status = await process.wait()
        except _OutputTooLarge as too_large:
            self._abandon(process)
            raise HookFailure(
                f"wrote more than {OUTPUT_LIMIT // (1024 * 1024)} MiB on {too_large.stream}"
            ) from None
        except BaseException:  # the runner's timeout, or the agent's cancellation
            self._abandon(process)
            raise
        _run.record(_run.PROCESS_EXIT_CODE, status)
        if not verdict:  # a background run: only an exit 2's reason matters (asyncRewake)
            return stderr.decode(errors="replace").strip() if status == 2 else None
        return self._result(context, data, status, stdout, stderr)

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

    def _abandon(self, process: asyncio.subprocess.Process) -> None:
        """Terminate ``process``'s group now; SIGKILL and reap it in the background."""
        # The group, not only the program: a child it started may hold our pipes open.
        _signal_group(process.pid, signal.SIGTERM)
        reaper = asyncio.ensure_future(_reap(process))
        self._reapers.add(reaper)
        reaper.add_done_callback(self._reapers.discard)
