"""Running one hook program: feed it, read it (capped), know when it exits, end what it left.

A program runs in a session of its own (``setsid``), so its process group is everything it
started that did not leave on purpose. Its verdict is read when *it* exits: output it wrote is
in the pipe by then, so a background child that keeps the pipe open (``sleep 30 & echo
'{"allow": false}'``) cannot turn an answer into a timeout. Such children get
:data:`PIPE_GRACE_S` to let go of the pipes, then the group is killed and the verdict stands.

Output is capped (:data:`OUTPUT_LIMIT` bytes on stdout and, separately, on stderr): the cap
trips the moment it is passed — input still unread is dropped, the run fails, the group is
ended — whatever the timeout, even with none.

When a run is abandoned (its timeout, the agent's cancellation, a cap) the group gets SIGTERM,
then SIGKILL :data:`KILL_GRACE_S` later. What escapes a group kill is a process that calls
``setsid`` itself (a daemon): every run's environment carries :data:`RUN_MARK` with a random
value, and on Linux the processes still carrying it — the daemon included — are found in
``/proc`` and signalled with the group. A daemon that calls ``setsid`` *and* re-executes with a
cleaned environment is out of reach, as is one running under another user; a process that
merely outlives a run that ended normally (and let go of the pipes) is left alone, as Claude
Code leaves it. (``PR_SET_CHILD_SUBREAPER`` would make the whole agent process adopt every
orphan of every library, and reaping them would race asyncio's and ``subprocess``'s own
``waitpid``; cgroups need privileges an agent rarely has. Neither is used.)
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shlex
import signal
from collections.abc import Mapping, Sequence
from typing import Final
from urllib.parse import urlsplit

from hookscope.types import HookscopeError

__all__ = [
    "KILL_GRACE_S",
    "OUTPUT_LIMIT",
    "PIPE_GRACE_S",
    "RUN_MARK",
    "OutputTooLarge",
    "default_name",
    "executable_name",
    "run_program",
]

#: Bytes of stdout (and, separately, of stderr) past which a run is a failure.
OUTPUT_LIMIT: Final = 1024 * 1024
#: Seconds between SIGTERM and SIGKILL to an abandoned run's process group.
KILL_GRACE_S: Final = 2.0
#: Seconds the pipes may stay open after the program exited before its group is killed.
PIPE_GRACE_S: Final = 0.25
#: The environment variable that marks every process of one run (see the module docstring).
RUN_MARK: Final = "HOOKSCOPE_HOOK_RUN"
_CHUNK: Final = 64 * 1024
_PROC: Final = "/proc"
#: Background tasks ending abandoned runs, kept referenced until done.
_REAPERS: Final[set[asyncio.Future[None]]] = set()


class OutputTooLarge(HookscopeError):
    """A program wrote more than :data:`OUTPUT_LIMIT` bytes on one stream."""

    def __init__(self, stream: str) -> None:
        super().__init__(f"wrote more than {OUTPUT_LIMIT // (1024 * 1024)} MiB on {stream}")
        self.stream = stream


# --- names that are safe to record ------------------------------------------------------------

_ASSIGNMENT: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def _words(command: str | None, args: Sequence[str] | None) -> list[str]:
    if args:
        return list(args)
    try:
        return shlex.split(command or "")
    except ValueError:  # the shell will say what is wrong with the quoting
        return (command or "").split()


def _program_index(words: Sequence[str]) -> int:
    """Where the program is in a command's words: past ``VAR=value`` and ``env [-i] VAR=...``."""
    index = 0
    while index < len(words) and _ASSIGNMENT.match(words[index]):
        index += 1
    if index < len(words) and os.path.basename(words[index]) == "env":
        index += 1
        while index < len(words) and (
            _ASSIGNMENT.match(words[index]) or words[index].startswith("-")
        ):
            index += 1
    return index


def _safe_base(word: str) -> str:
    """A word's base name without a URL's user, password, query or fragment."""
    if "://" in word:
        with contextlib.suppress(ValueError):
            word = urlsplit(word).path or urlsplit(word).hostname or ""
    word = word.split("?", 1)[0].split("#", 1)[0]
    base = os.path.basename(word.rstrip("/"))
    if "@" in base:  # user:password@host without a scheme
        base = base.rsplit("@", 1)[1]
    return base if base and not _ASSIGNMENT.match(base) else ""


#: Words that open a compound command: a shell string starting with one (``if grep -q …;
#: then …; fi``) runs no program of that name, the shell runs it all.
_SHELL_SYNTAX: Final = frozenset({"if", "for", "while", "until", "case", "select", "!", "{", "[["})


def executable_name(command: str | None, args: Sequence[str] | None) -> str:
    """The base name of the program a hook runs, safe to record (the command line never is):
    never a ``VAR=value`` prefix, a URL's query or its user and password; ``sh`` for a shell
    string that is shell syntax rather than a program (``if …``, ``(cd …)``)."""
    words = _words(command, args)
    index = _program_index(words)
    name = _safe_base(words[index]) if index < len(words) else ""
    if command is not None and (name in _SHELL_SYNTAX or name.startswith(("(", "{"))):
        return "sh"
    return name or ("sh" if command is not None else "command")


def default_name(command: str | None, args: Sequence[str] | None) -> str:
    """A readable default hook name: the script a command runs (``guard.py``), else its
    program; safe to record as :func:`executable_name`."""
    words = _words(command, args)
    index = _program_index(words)
    script = next(
        (
            word
            for word in words[index + 1 :]
            if "/" in word and not word.startswith("-") and not _ASSIGNMENT.match(word)
        ),
        None,
    )
    name = _safe_base(script) if script is not None else ""
    return name or executable_name(command, args)


# --- running ----------------------------------------------------------------------------------


class _Protocol(asyncio.subprocess.SubprocessStreamProtocol):
    """asyncio's own protocol, also telling when the program exits: ``Process.wait()`` waits
    for the pipes to close too, which a background child can put off for good."""

    def __init__(self, exited: asyncio.Future[None], loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(limit=_CHUNK, loop=loop)
        self.exited = exited

    def process_exited(self) -> None:
        super().process_exited()
        if not self.exited.done():
            self.exited.set_result(None)


async def _read(stream: asyncio.StreamReader | None, label: str, chunks: list[bytes]) -> None:
    if stream is None:
        return
    size = 0
    while chunk := await stream.read(_CHUNK):
        size += len(chunk)
        if size > OUTPUT_LIMIT:
            raise OutputTooLarge(label)
        chunks.append(chunk)


async def _feed(stdin: asyncio.StreamWriter | None, payload: bytes) -> None:
    if stdin is None:
        return
    try:
        stdin.write(payload)
        await stdin.drain()
    except (BrokenPipeError, ConnectionResetError):
        pass  # a program that does not read its input is allowed to exit first
    except BaseException:
        # Abandoned: drop what the program never read. A graceful close would wait for it to
        # be read, which a program that does not read puts off for good.
        stdin.transport.abort()
        raise
    finally:
        if not stdin.transport.is_closing():
            stdin.close()
        # Collects the pipe's own closing error too (Python 3.10 logs it as never retrieved).
        with contextlib.suppress(Exception):
            await stdin.wait_closed()


def _raise_failed(tasks: set[asyncio.Task[None]]) -> None:
    for task in tasks:
        if not task.cancelled() and task.exception() is not None:
            raise task.exception()  # type: ignore[misc]


async def run_program(
    argv: Sequence[str], payload: bytes, *, cwd: str, env: Mapping[str, str]
) -> tuple[int, bytes, bytes]:
    """Run ``argv`` on ``payload``; return its exit status, stdout and stderr.

    Raises:
        OSError: the program cannot be started.
        OutputTooLarge: it wrote past :data:`OUTPUT_LIMIT` (the run is already being ended).
        asyncio.CancelledError: the run was cancelled (a timeout); it is being ended.
    """
    loop = asyncio.get_running_loop()
    exited: asyncio.Future[None] = loop.create_future()
    mark = os.urandom(8).hex()
    spawn = asyncio.ensure_future(
        loop.subprocess_exec(
            lambda: _Protocol(exited, loop),
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
            cwd=cwd,
            env={**env, RUN_MARK: mark},
        )
    )
    try:
        # Shielded: cancelled half-way, asyncio would kill the program but not its children.
        transport, protocol = await asyncio.shield(spawn)
    except asyncio.CancelledError:
        with contextlib.suppress(Exception):
            transport, protocol = await spawn
            _abandon(asyncio.subprocess.Process(transport, protocol, loop), exited, mark)
        raise
    process = asyncio.subprocess.Process(transport, protocol, loop)
    out: list[bytes] = []
    err: list[bytes] = []
    readers = {
        asyncio.ensure_future(_read(process.stdout, "stdout", out)),
        asyncio.ensure_future(_read(process.stderr, "stderr", err)),
    }
    feed = asyncio.ensure_future(_feed(process.stdin, payload))
    try:
        pending: set[asyncio.Future[None]] = {exited, *readers}
        while not exited.done():  # a cap trips at once, exited or not
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            _raise_failed({task for task in done if task is not exited})  # type: ignore[misc]
        await _settle(process, readers, mark)
        if not feed.done():  # the program exited: input it never read no longer matters
            feed.cancel()
        await asyncio.gather(feed, return_exceptions=True)
    except BaseException:
        feed.cancel()
        for task in readers:
            task.cancel()
        _abandon(process, exited, mark)
        raise
    status = transport.get_returncode()
    assert status is not None
    return status, b"".join(out), b"".join(err)


async def _settle(
    process: asyncio.subprocess.Process, readers: set[asyncio.Task[None]], mark: str
) -> None:
    """The program exited: collect its output; end whatever still holds the pipes."""
    pending = {task for task in readers if not task.done()}
    _raise_failed(readers - pending)
    if pending:
        done, pending = await asyncio.wait(pending, timeout=PIPE_GRACE_S)
        _raise_failed(done)
    if not pending:
        return
    # A child of the program holds the pipes: the verdict is in, end the rest of the run.
    _signal_group(process.pid, signal.SIGKILL)
    _signal_marked(mark, signal.SIGKILL)
    done, pending = await asyncio.wait(pending, timeout=PIPE_GRACE_S)
    _raise_failed(done)
    for task in pending:  # out of reach (see the module docstring): keep what was read
        task.cancel()
    if pending:
        await asyncio.gather(*pending, return_exceptions=True)
        transport = process._transport  # type: ignore[attr-defined]
        transport.close()


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _signal_marked(mark: str, sig: signal.Signals) -> int:
    """Signal every process (of ours) whose environment carries this run's mark; how many."""
    needle = f"\0{RUN_MARK}={mark}\0".encode()
    try:
        entries = os.listdir(_PROC)
    except OSError:  # no /proc (not Linux): the group kill is all there is
        return 0
    signalled = 0
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"{_PROC}/{entry}/environ", "rb") as file:
                environment = file.read()
        except OSError:  # gone, or another user's
            continue
        if needle in b"\0" + environment:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(int(entry), sig)
                signalled += 1
    return signalled


def _abandon(process: asyncio.subprocess.Process, exited: asyncio.Future[None], mark: str) -> None:
    """Terminate the run's group now; SIGKILL and reap it in the background."""
    # The group, not only the program: a child it started may hold our pipes open.
    _signal_group(process.pid, signal.SIGTERM)
    reaper = asyncio.ensure_future(_reap(process, exited, mark))
    _REAPERS.add(reaper)
    reaper.add_done_callback(_REAPERS.discard)


async def _drain(stream: asyncio.StreamReader | None) -> None:
    while stream is not None and await stream.read(_CHUNK):
        pass


async def _reap(
    process: asyncio.subprocess.Process, exited: asyncio.Future[None], mark: str
) -> None:
    """Wait out the grace period, SIGKILL whatever is left of the run, and reap it all."""
    try:
        _signal_marked(mark, signal.SIGTERM)
        with contextlib.suppress(asyncio.TimeoutError):
            # process.wait() would also wait for the pipes, which a daemon may hold for good.
            await asyncio.wait_for(asyncio.shield(exited), KILL_GRACE_S)
        # Even when the program itself exited on SIGTERM, a child of it may have ignored it.
        _signal_group(process.pid, signal.SIGKILL)
        _signal_marked(mark, signal.SIGKILL)
        await exited
    except asyncio.CancelledError:  # the loop is closing: do not wait out the grace
        _signal_group(process.pid, signal.SIGKILL)
        _signal_marked(mark, signal.SIGKILL)
        await exited
        raise
    finally:
        try:
            # Read the pipes to their end (the run is gone, so the end comes): the transport
            # closes only then. A process out of reach could hold them: give up after grace.
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(
                    asyncio.gather(_drain(process.stdout), _drain(process.stderr)), KILL_GRACE_S
                )
        finally:
            transport = process._transport  # type: ignore[attr-defined]
            transport.close()
