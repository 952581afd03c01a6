"""The ``hookscope`` command.

``hookscope policy explain (--policies MODULE:ATTR | --config FILE) --call JSON [--mcp-server N]``
    Load the rules ``ATTR`` names in the importable module ``MODULE`` (a list of rules, a
    single rule, or a built ``PolicyEnforcer``), or the policy a configuration file compiles
    (``[policy]`` in hookscope.toml or pyproject.toml), decide one tool call as the enforcer would,
    and print the decision, its bucket, the deciding rule and why. ``JSON`` is an object
    ``{"name": "...", "args": {...}, "server": null, "id": ""}``; only ``name`` is required.
    ``--mcp-server`` registers the MCP servers ``server/...`` rules name (an enforcer brings
    its own). The current directory is importable. Conditions run; ask handlers are **not**
    called: a call that would ask the user is reported as such.

    Exit status: 0 the call is allowed, 1 it is denied, 3 it depends on the user's answer,
    2 bad input (one line on stderr saying what is wrong).

Example::

    $ hookscope policy explain --policies myagent.rules:POLICIES \\
        --call '{"name": "run_command", "args": {"CommandLine": "ls"}}'
    call      run_command {"CommandLine": "ls"}
    decision  deny
    outcome   denied
    bucket    0 (exact tool or server/tool, deny)
    rule      confirm_run_command
    reason    run_command is disabled by default; ...
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from hookscope._version import __version__
from hookscope.policy import Decision, PolicyEnforcer, PolicyError
from hookscope.types import HookscopeError, ToolCall

__all__ = ["main"]

EXIT_ALLOWED, EXIT_DENIED, EXIT_USAGE, EXIT_ASK = 0, 1, 2, 3
EXIT_INTERRUPTED = 130

_TIERS = ("exact tool or server/tool", "server/*", "*")
_DECISIONS = ("deny", "ask_user", "allow")
_CALL_KEYS = frozenset({"name", "args", "server", "id"})


class _InputError(HookscopeError):
    """Bad input: reported as one line on stderr, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # One line, not argparse's usage block: the message names what to fix.
        raise _InputError(f"{message} (see {self.prog} --help)")


def _build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="hookscope", description="OpenTelemetry-native hooks for AI agents.")
    parser.add_argument("--version", action="version", version=f"hookscope {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    policy = commands.add_parser("policy", help="inspect tool-call policies")
    policy_commands = policy.add_subparsers(dest="policy_command", required=True, metavar="ACTION")
    explain = policy_commands.add_parser(
        "explain",
        help="show which bucket and rule decide a tool call, and why",
        description="Decide one tool call with the given policies (ask handlers are not called).",
        epilog="exit status: 0 allowed, 1 denied, 3 would ask the user, 2 bad input",
    )
    source = explain.add_mutually_exclusive_group(required=True)
    source.add_argument("--policies", metavar="MODULE:ATTR", help="e.g. myagent.rules:POLICIES")
    source.add_argument(
        "--config", metavar="FILE", help="hookscope.toml, pyproject.toml or .claude/settings.json"
    )
    explain.add_argument(
        "--call", required=True, metavar="JSON", help='e.g. \'{"name": "view_file", "args": {}}\''
    )
    explain.add_argument(
        "--mcp-server",
        action="append",
        default=[],
        metavar="NAME",
        help="a registered MCP server (repeatable)",
    )
    explain.set_defaults(handler=_explain)

    demo = commands.add_parser(
        "demo",
        help="run a scripted coding agent with hookscope and show its sessions",
        description=(
            "Run seeded demo sessions through HookRunner([OTelHook(), enforce(...), ...]). "
            "Without --otlp, telemetry goes to the embedded default files (see `hookscope view`)."
        ),
    )
    demo.add_argument("--sessions", type=int, default=5, metavar="N", help="sessions to run (5)")
    demo.add_argument("--seed", type=int, default=0, metavar="S", help="script seed (0)")
    demo.add_argument("--otlp", metavar="URL", help="export to this OTLP endpoint instead")
    demo.add_argument(
        "--prometheus-port", type=_port, metavar="P", help="serve metrics at 127.0.0.1:P/metrics"
    )
    demo.add_argument(
        "--serve", action="store_true", help="with --prometheus-port: keep serving until Ctrl-C"
    )
    demo.add_argument(
        "--agents",
        type=_agents,
        default=("demo-coder",),
        metavar="A,B",
        help="demo agents to run, each its --sessions: demo-coder, careful (denies ~2%% of its "
        "calls), reckless (~50%%: HookscopeDeniedCallRateHigh), stuck (retries a refused "
        "command: HookscopeDenyStorm too) (demo-coder)",
    )
    demo.add_argument(
        "--duration",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="spread the sessions over this long, so alert windows see traffic over time (0)",
    )
    demo.add_argument(
        "--layout", choices=("session", "turn"), default="session", help="trace layout (session)"
    )
    demo.add_argument(
        "--directory", default=".hookscope", metavar="DIR", help="embedded default's directory"
    )
    demo.set_defaults(handler=_demo)

    view = commands.add_parser(
        "view",
        help="print the sessions the embedded default wrote",
        description="Print session timelines and a summary from the embedded default's files.",
    )
    view.add_argument("directory", nargs="?", default=".hookscope", metavar="DIR")
    view.add_argument("--session", metavar="ID", help="only this session")
    view.add_argument(
        "--last", type=_positive, default=20, metavar="N", help="draw the latest N sessions (20)"
    )
    view.set_defaults(handler=_view)

    from hookscope.engine import cli as engine_cli  # `hookscope hooks check|run`

    engine_cli.add_parser(commands)
    from hookscope.builtins import approvals  # `hookscope approvals list|approve|deny`

    approvals.add_parser(commands)
    return parser


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1, got {text!r}")
    return value


def _agents(text: str) -> tuple[str, ...]:
    from hookscope.demo.agent import TEMPERS  # no rich or OTel SDK: the agent module is light

    names = tuple(name.strip() for name in text.split(",") if name.strip())
    unknown = [name for name in names if name not in TEMPERS]
    if not names or unknown:
        raise argparse.ArgumentTypeError(
            f"choose demo agents from {', '.join(TEMPERS)} (comma-separated), got {text!r}"
        )
    return tuple(dict.fromkeys(names))


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be a port number from 1 to 65535, got {text!r}")
    return value


def _need(module: str, extra: str, what: str) -> None:
    """Fail with the install command when an optional dependency is missing."""
    try:
        importlib.import_module(module)
    except ImportError:
        raise _InputError(
            f"{what} needs the {extra!r} extra ({module} is not installed): "
            f"pip install 'hookscope[{extra}]'"
        ) from None


def _demo(args: argparse.Namespace) -> int:
    if args.serve and args.prometheus_port is None:
        raise _InputError("--serve needs --prometheus-port")
    _need("rich", "cli", "hookscope demo")
    if args.prometheus_port is not None:
        _need("opentelemetry.exporter.prometheus", "prometheus", "--prometheus-port")
    from hookscope.demo import commands  # the demo and its terminal UI load on demand

    try:
        return commands.run_demo(args)
    except commands.CommandError as error:
        raise _InputError(str(error)) from None


def _view(args: argparse.Namespace) -> int:
    _need("rich", "cli", "hookscope view")
    from hookscope.demo import commands

    try:
        return commands.view(args)
    except commands.CommandError as error:
        raise _InputError(str(error)) from None


def _load_enforcer(spec: str, mcp_servers: list[str]) -> PolicyEnforcer:
    module_name, colon, attr = spec.partition(":")
    if not colon or not module_name or not attr:
        raise _InputError(f"--policies must look like module.path:ATTR, got {spec!r}")
    cwd = os.getcwd()
    added = cwd not in sys.path
    if added:  # the user's own modules are importable, after (never shadowing) installed ones
        sys.path.append(cwd)
    try:
        module = importlib.import_module(module_name)
    except Exception as error:
        raise _InputError(
            f"cannot import {module_name!r}: {type(error).__name__}: {error}"
        ) from None
    finally:
        if added:
            sys.path.remove(cwd)
    target: Any = module
    for part in attr.split("."):
        if not hasattr(target, part):
            raise _InputError(f"module {module_name!r} has no attribute {attr!r}")
        target = getattr(target, part)
    if isinstance(target, PolicyEnforcer):
        if mcp_servers:
            raise _InputError("--mcp-server applies to rule lists; the enforcer has its own")
        return target
    try:
        return PolicyEnforcer(target, mcp_servers)
    except (PolicyError, TypeError) as error:
        raise _InputError(f"{spec} cannot be enforced: {error}") from None


def _parse_call(text: str) -> ToolCall:
    from hookscope._reader import InputError, read_json

    try:
        data = read_json(text, "--call")
    except InputError as error:
        raise _InputError(f"--call is not valid JSON: {error.detail}") from None
    if not isinstance(data, dict):
        raise _InputError(f"--call must be a JSON object, got {type(data).__name__}")
    unknown = sorted(set(data) - _CALL_KEYS)
    if unknown:
        raise _InputError(f"--call has unknown key(s) {unknown}; expected name, args, server, id")
    name, args = data.get("name"), data.get("args", {})
    server, call_id = data.get("server"), data.get("id", "")
    if not isinstance(name, str):
        raise _InputError('--call needs "name": the tool\'s name as a string')
    if not isinstance(args, dict):
        raise _InputError(f'--call "args" must be an object, got {type(args).__name__}')
    if server is not None and not isinstance(server, str):
        raise _InputError(f'--call "server" must be a string or null, got {server!r}')
    if not isinstance(call_id, str):
        raise _InputError(f'--call "id" must be a string, got {call_id!r}')
    return ToolCall(name=name, args=args, id=call_id, server=server)


def _config_enforcer(path: str, mcp_servers: list[str]) -> PolicyEnforcer:
    from hookscope.engine import ConfigError, load_policy

    if mcp_servers:
        raise _InputError("--mcp-server applies to --policies; a file lists its own servers")
    try:
        enforcer = load_policy(path)
    except ConfigError as error:
        raise _InputError(str(error)) from None
    if enforcer is None:
        raise _InputError(f"{path} has no policy; add [[policy.rules]] to it")
    return enforcer


def _explain(args: argparse.Namespace) -> int:
    if args.config is not None:
        enforcer = _config_enforcer(args.config, args.mcp_server)
    else:
        enforcer = _load_enforcer(args.policies, args.mcp_server)
    call = _parse_call(args.call)
    decision = asyncio.run(enforcer.evaluate(call, ask=False))
    would_ask = decision.decision is Decision.ASK_USER and not decision.asked_user
    if decision.bucket is None:
        bucket = "- (no rule matches: allowed by default)"
    else:
        tier, rank = divmod(decision.bucket, 3)
        bucket = f"{decision.bucket} ({_TIERS[tier]}, {_DECISIONS[rank]})"
    rows = [
        ("call", f"{call.qualified_name} {json.dumps(dict(call.args), sort_keys=True)}"),
        ("decision", decision.decision.value),
        ("outcome", "depends on the user's answer" if would_ask else decision.outcome),
        ("bucket", bucket),
        ("rule", decision.rule or "-"),
        ("reason", decision.reason),
    ]
    for label, value in rows:
        print(f"{label:<9} {value}")
    if would_ask:
        return EXIT_ASK
    return EXIT_ALLOWED if decision.outcome == "allowed" else EXIT_DENIED


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``hookscope`` command; return its exit status."""
    parser = _build_parser()
    try:
        args = parser.parse_args(argv)
        status: int = args.handler(args)
    except _InputError as error:
        print(f"hookscope: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:  # open scopes were closed and telemetry flushed on the way out
        print("hookscope: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except SystemExit as exit_:  # --help and --version exit through argparse
        return 0 if exit_.code is None else exit_.code if isinstance(exit_.code, int) else 1
    return status


if __name__ == "__main__":
    raise SystemExit(main())
