"""``hookscope hooks check`` and ``hookscope hooks run``: look at and try hook configurations.

``hookscope hooks check [FILE ...]``
    Validate each FILE (default: every one of ``hookscope.toml``, ``pyproject.toml`` with
    ``[tool.hookscope]``, ``.claude/settings.json`` and ``.claude/settings.local.json`` found
    here) and print, per file, what will run (event, matcher, type, timeout, failure mode and
    name per hook), what loads but never fires in hookscope and why, and notes. A file that
    fails validation is refused: every problem goes to stderr. Exit 0 when every file is
    valid, 1 when one is not.

``hookscope hooks run FILE EVENT [--tool NAME] [--input JSON|@FILE|-] [--session ID] [--cwd DIR]``
    Run the hooks FILE configures for EVENT (hookscope's or Claude Code's name) on a
    synthetic envelope: ``--tool`` names the tool of a tool event, ``--input`` is its
    arguments (or the prompt, the response text … for other events), inline, from a file
    (``@input.json``, any size) or from stdin (``-``); ``--session`` the session id and
    ``--cwd`` the project directory the hooks run in. Prints one line per hook that ran —
    name, verdict (allow, deny, ask, none, or failed), message, milliseconds — then what the
    hooks asked the agent for (``continue:`` a Stop hook's reason, ``context:`` text for the
    model), and exits 0 when the event is allowed, 2 when it is denied or blocked, 1 on a
    configuration or input error.

Both take ``--tool-alias THEIRS=OURS`` (repeatable) for a Claude Code settings file, as
``load(..., tool_aliases=...)`` does: ``--tool-alias Bash=run_command``, and
``--failure claude`` for Claude Code's failure semantics.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any, Final

from hookscope.types import HookscopeError

__all__ = ["add_parser"]

EXIT_ALLOWED, EXIT_ERROR, EXIT_DENIED = 0, 1, 2
_DEFAULT_FILES: Final = (
    "hookscope.toml",
    "pyproject.toml",
    ".claude/settings.json",
    ".claude/settings.local.json",
)


class _CliError(HookscopeError):
    """Bad input: one line on stderr, exit status 1."""


def add_parser(commands: Any) -> None:
    """Add the ``hooks`` command to the ``hookscope`` command's subparsers."""
    hooks = commands.add_parser("hooks", help="check and try hook configuration files")
    actions = hooks.add_subparsers(dest="hooks_command", required=True, metavar="ACTION")
    check = actions.add_parser(
        "check",
        help="validate a hook configuration and print its table",
        epilog="exit status: 0 valid, 1 invalid (every problem on stderr)",
    )
    check.add_argument(
        "file", nargs="*", metavar="FILE", help="default: each of " + ", ".join(_DEFAULT_FILES)
    )
    _alias_option(check)
    check.set_defaults(handler=_guarded(_check))
    run = actions.add_parser(
        "run",
        help="run the hooks configured for one event on a synthetic envelope",
        epilog="exit status: 0 allowed, 2 denied or blocked, 1 configuration or input error",
    )
    run.add_argument("file", metavar="FILE")
    run.add_argument("event", metavar="EVENT", help="e.g. pre_tool_call or PreToolUse")
    run.add_argument("--tool", metavar="NAME", help="the tool of a tool event")
    run.add_argument(
        "--input",
        metavar="JSON",
        help="the tool's arguments, or the event's data: JSON, @FILE (any size) or - (stdin)",
    )
    run.add_argument("--session", metavar="ID", default="hooks-run", help="the session id")
    run.add_argument("--cwd", metavar="DIR", help="the project directory the hooks run in")
    _alias_option(run)
    run.set_defaults(handler=_guarded(_run))


def _alias_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--tool-alias",
        action="append",
        default=[],
        metavar="THEIRS=OURS",
        help="for Claude Code settings: a tool name and the agent's (repeatable), e.g. "
        "Bash=run_command",
    )
    parser.add_argument(
        "--failure",
        choices=("hookscope", "claude"),
        default="hookscope",
        help="claude: a failing hook lets the event through, as in Claude Code (default: "
        "hookscope, fail closed)",
    )


def _aliases(args: argparse.Namespace) -> dict[str, str] | None:
    aliases: dict[str, str] = {}
    for pair in args.tool_alias:
        theirs, equals, ours = pair.partition("=")
        if not (equals and theirs.strip() and ours.strip()):
            raise _CliError(
                f"--tool-alias must read THEIRS=OURS (e.g. Bash=run_command), got {pair!r}"
            )
        aliases[theirs.strip()] = ours.strip()
    return aliases or None


def _guarded(handler: Any) -> Any:
    def call(args: argparse.Namespace) -> int:
        from hookscope.engine.config import ConfigError

        try:
            status: int = handler(args)
        except ConfigError as error:
            print(f"hookscope: {error}", file=sys.stderr)
            return EXIT_ERROR
        except _CliError as error:
            print(f"hookscope: error: {error}", file=sys.stderr)
            return EXIT_ERROR
        return status

    return call


def _default_files() -> list[Path]:
    found: list[Path] = []
    for name in _DEFAULT_FILES:
        path = Path(name)
        if name == "pyproject.toml" and path.is_file():
            if "[tool.hookscope" in path.read_text(encoding="utf-8", errors="replace"):
                found.append(path)
        elif path.is_file():
            found.append(path)
    if not found:
        raise _CliError(f"no hook configuration here (looked for {', '.join(_DEFAULT_FILES)})")
    return found


def _describe_matcher(matcher: Any) -> str:
    if matcher is None:
        return "*"
    if isinstance(matcher, str):
        return matcher
    parts = [
        f"{key}={value if isinstance(value, str) else ','.join(sorted(value))}"
        for key in ("tools", "paths", "tiers")
        if (value := getattr(matcher, key, None)) is not None
    ]
    return " ".join(parts) or "*"


def _check(args: argparse.Namespace) -> int:
    from hookscope.engine.config import ConfigError

    paths = [Path(file) for file in args.file] if args.file else _default_files()
    status = EXIT_ALLOWED
    for index, path in enumerate(paths):
        if index:
            print()
        try:
            _check_one(path, args)
        except ConfigError as error:
            print(f"{path}: refused (nothing in it is applied)")
            print(f"hookscope: {error}", file=sys.stderr)
            status = EXIT_ERROR
    return status


def _check_one(path: Path, args: argparse.Namespace) -> None:
    from hookscope.engine.config import load
    from hookscope.engine.transcript import TranscriptWriter

    # References are resolved, never called: checking a file must not run its code.
    table = load(path, tool_aliases=_aliases(args), failure=args.failure, call_references=False)
    rows = [("EVENT", "MATCHER", "TYPE", "TIMEOUT", "ON FAILURE", "NAME")]
    count = 0
    for entry in table.entries:
        hook = entry.hook
        if isinstance(hook, TranscriptWriter):
            continue
        count += 1
        timeout = getattr(hook, "timeout", None)
        claude = getattr(hook, "claude", None)
        event = entry.event if claude is None else f"{claude.event}→{entry.event}"
        rows.append(
            (
                event,
                _describe_matcher(getattr(hook, "matcher", None)),
                str(getattr(hook, "hook_type", "python")),
                "-" if timeout is None else f"{timeout:g}s",
                "allow" if getattr(hook, "fail_open", False) else "deny",
                str(getattr(hook, "name", "") or type(hook).__name__),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        cells = (cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        print("  ".join(cells).rstrip())
    if table.idle:
        print("loads, never fires here:")
        for idle in table.idle:
            print(f"  {idle.entry} ({idle.event}): {idle.reason}")
    for note in table.notes:
        print(f"note: {note}")
    if len(table.entries) > count:
        print("note: the session transcript (transcript_path) is kept in .hookscope/transcripts/")
    summary = f"{path}: {count} hook{'s' * (count != 1)}, valid"
    if table.idle:
        summary += f"; {len(table.idle)} never fire{'s' * (len(table.idle) == 1)} here"
    print(summary)


def _input(given: str | None) -> Any:
    """``--input``: JSON inline, ``@file`` or ``-`` (stdin), of any size up to the reader's
    bound (16 MiB), read by the one reader of untrusted input."""
    from hookscope._reader import InputError, read_json

    if given is None:
        return None
    text, source = given, "--input"
    if given == "-":
        text, source = sys.stdin.read(), "--input - (stdin)"
    elif given.startswith("@"):
        try:
            text = Path(given[1:]).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise _CliError(f"cannot read --input {given}: {error}") from None
        source = f"--input {given}"
    try:
        return read_json(text, source)
    except InputError as error:
        raise _CliError(f"{source} is not valid JSON: {error.detail}") from None


def _run(args: argparse.Namespace) -> int:
    from hookscope.engine._synthetic import SyntheticInputError, run_event
    from hookscope.engine.config import load
    from hookscope.engine.envelope import CLAUDE_EVENTS
    from hookscope.hooks import EVENTS

    event = CLAUDE_EVENTS.get(args.event, args.event)
    if event not in EVENTS:
        raise _CliError(f"unknown event {args.event!r}; use one of {', '.join(EVENTS)}")
    given = _input(args.input)
    if args.cwd is not None and not Path(args.cwd).is_dir():
        raise _CliError(f"--cwd {args.cwd!r} is not a directory")
    table = load(
        Path(args.file), tool_aliases=_aliases(args), failure=args.failure, project_dir=args.cwd
    )
    try:
        lines, allowed = asyncio.run(
            run_event(table, event, args.tool, given, session_id=args.session)
        )
    except SyntheticInputError as error:
        raise _CliError(str(error)) from None
    for line in lines:
        print(line)
    return EXIT_ALLOWED if allowed else EXIT_DENIED
