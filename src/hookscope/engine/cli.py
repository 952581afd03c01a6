"""``hookscope hooks check`` and ``hookscope hooks run``: look at and try hook configurations.

``hookscope hooks check [FILE]``
    Validate FILE (default: ``hookscope.toml``, else ``pyproject.toml`` with
    ``[tool.hookscope]``, else ``.claude/settings.json``) and print its table: event, matcher,
    type, timeout, failure mode and name per hook. Exit 0 when valid, 1 with every problem
    on stderr when not.

``hookscope hooks run FILE EVENT [--tool NAME] [--input JSON]``
    Run the hooks FILE configures for EVENT (hookscope's or Claude Code's name) on a
    synthetic envelope: ``--tool`` names the tool of a tool event, ``--input`` is its
    arguments (or the prompt, the response text … for other events). Prints one line per hook
    that ran — name, verdict (allow, deny, ask, none, or failed), message, milliseconds — and
    exits 0 when the event is allowed, 2 when it is denied or blocked, 1 on a configuration
    or input error.

Both take ``--tool-alias THEIRS=OURS`` (repeatable) for a Claude Code settings file, as
``load(..., tool_aliases=...)`` does: ``--tool-alias Bash=run_command``.
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
_DEFAULT_FILES: Final = ("hookscope.toml", "pyproject.toml", ".claude/settings.json")


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
        "file", nargs="?", metavar="FILE", help="default: " + ", ".join(_DEFAULT_FILES)
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
    run.add_argument("--input", metavar="JSON", help="the tool's arguments, or the event's data")
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


def _default_file() -> Path:
    for name in _DEFAULT_FILES:
        path = Path(name)
        if name == "pyproject.toml" and path.is_file():
            if "[tool.hookscope" in path.read_text(encoding="utf-8", errors="replace"):
                return path
        elif path.is_file():
            return path
    raise _CliError(f"no hook configuration here (looked for {', '.join(_DEFAULT_FILES)})")


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
    from hookscope.engine.config import load

    path = Path(args.file) if args.file else _default_file()
    # References are resolved, never called: checking a file must not run its code.
    table = load(path, tool_aliases=_aliases(args), call_references=False)
    rows = [("EVENT", "MATCHER", "TYPE", "TIMEOUT", "ON FAILURE", "NAME")]
    for entry in table.entries:
        hook = entry.hook
        timeout = getattr(hook, "timeout", None)
        rows.append(
            (
                entry.event,
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
    print(f"{path}: {len(table)} hook{'s' * (len(table) != 1)}, valid")
    return EXIT_ALLOWED


def _run(args: argparse.Namespace) -> int:
    from hookscope.engine._synthetic import SyntheticInputError, run_event
    from hookscope.engine.config import load
    from hookscope.engine.envelope import CLAUDE_EVENTS
    from hookscope.hooks import EVENTS

    event = CLAUDE_EVENTS.get(args.event, args.event)
    if event not in EVENTS:
        raise _CliError(f"unknown event {args.event!r}; use one of {', '.join(EVENTS)}")
    from hookscope._reader import InputError, read_json

    try:
        given = None if args.input is None else read_json(args.input, "--input")
    except InputError as error:
        raise _CliError(f"--input is not valid JSON: {error.detail}") from None
    table = load(Path(args.file), tool_aliases=_aliases(args))
    try:
        lines, allowed = asyncio.run(run_event(table, event, args.tool, given))
    except SyntheticInputError as error:
        raise _CliError(str(error)) from None
    for line in lines:
        print(line)
    return EXIT_ALLOWED if allowed else EXIT_DENIED
