"""`hookscope policy explain`: run in-process through main(), checking output and exit status."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from hookscope.cli import main

RULES = """
from hookscope import policy

def confirm(call):
    raise AssertionError("explain must not call ask handlers")

POLICIES = [
    policy.deny_all(),
    policy.allow("view_file"),
    policy.confirm_run_command(),
    policy.ask_user("edit_file", confirm),
    policy.deny("write_to_file", when=lambda args: args["x"] > 1, name="big-writes"),
]
MCP = policy.allow_mcp("gh")
ENFORCER = policy.enforce([policy.deny_mcp("gh", ["delete_repo"])], mcp_servers=["gh"])
NOT_RULES = 42
"""


@pytest.fixture
def rules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A module of rules in the current directory; returns its (test-unique) name."""
    name = f"rules_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(RULES))
    monkeypatch.chdir(tmp_path)
    return name


def explain(spec: str, call: object, *extra: str) -> int:
    text = call if isinstance(call, str) else json.dumps(call)
    return main(["policy", "explain", "--policies", spec, "--call", text, *extra])


def test_a_denied_call_prints_bucket_rule_and_reason_and_exits_1(
    rules: str, capsys: pytest.CaptureFixture[str]
) -> None:
    status = explain(f"{rules}:POLICIES", {"name": "run_command", "args": {"CommandLine": "ls"}})

    assert status == 1
    assert capsys.readouterr().out.splitlines() == [
        'call      run_command {"CommandLine": "ls"}',
        "decision  deny",
        "outcome   denied",
        "bucket    0 (exact tool or server/tool, deny)",
        "rule      confirm_run_command",
        "reason    run_command is disabled by default; the agent's owner can enable it with "
        "confirm_run_command(handler=...) or allow('run_command')",
    ]


def test_an_allowed_call_exits_0(rules: str, capsys: pytest.CaptureFixture[str]) -> None:
    status = explain(f"{rules}:POLICIES", {"name": "view_file"})

    assert status == 0
    assert capsys.readouterr().out.splitlines()[1:5] == [
        "decision  allow",
        "outcome   allowed",
        "bucket    2 (exact tool or server/tool, allow)",
        "rule      allow:view_file",
    ]


def test_a_call_that_would_ask_exits_3_without_calling_the_handler(
    rules: str, capsys: pytest.CaptureFixture[str]
) -> None:
    status = explain(f"{rules}:POLICIES", {"name": "edit_file"})

    assert status == 3
    assert capsys.readouterr().out.splitlines()[1:5] == [
        "decision  ask_user",
        "outcome   depends on the user's answer",
        "bucket    1 (exact tool or server/tool, ask_user)",
        "rule      ask_user:edit_file",
    ]


def test_conditions_run(rules: str, capsys: pytest.CaptureFixture[str]) -> None:
    statuses = [
        explain(f"{rules}:POLICIES", {"name": "write_to_file", "args": {"x": x}}) for x in (2, 0)
    ]
    rule_lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("rule")]

    assert (statuses, rule_lines) == ([1, 1], ["rule      big-writes", "rule      deny_all"])


def test_a_call_no_rule_matches_says_so(rules: str, capsys: pytest.CaptureFixture[str]) -> None:
    status = explain(f"{rules}:MCP", {"name": "x"}, "--mcp-server", "gh")

    assert status == 0
    assert capsys.readouterr().out.splitlines()[3:5] == [
        "bucket    - (no rule matches: allowed by default)",
        "rule      -",
    ]


def test_an_enforcer_brings_its_own_mcp_servers(
    rules: str, capsys: pytest.CaptureFixture[str]
) -> None:
    status = explain(f"{rules}:ENFORCER", {"name": "delete_repo", "server": "gh"})

    assert status == 1
    assert capsys.readouterr().out.splitlines()[0] == "call      gh/delete_repo {}"


@pytest.mark.parametrize(
    ("spec", "call", "extra", "error"),
    [
        ("nocolon", {"name": "x"}, [], "--policies must look like module.path:ATTR, got 'nocolon'"),
        (
            "no_such_module_xyz:P",
            {"name": "x"},
            [],
            "cannot import 'no_such_module_xyz': ModuleNotFoundError: "
            "No module named 'no_such_module_xyz'",
        ),
        ("{rules}:MISSING", {"name": "x"}, [], "module '{rules}' has no attribute 'MISSING'"),
        (
            "{rules}:NOT_RULES",
            {"name": "x"},
            [],
            "{rules}:NOT_RULES cannot be enforced: enforce() takes Policy objects and lists of "
            "them, got 42; build rules with policy.allow(), policy.deny(), policy.ask_user() "
            "and the other builders",
        ),
        (
            "{rules}:MCP",
            {"name": "x"},
            [],
            "{rules}:MCP cannot be enforced: rule 'allow:gh/*' targets MCP server 'gh', but "
            "enforce() got no mcp_servers; pass mcp_servers=[...] with the servers the agent "
            "registers",
        ),
        (
            "{rules}:ENFORCER",
            {"name": "x"},
            ["--mcp-server", "gh"],
            "--mcp-server applies to rule lists; the enforcer has its own",
        ),
        (
            "{rules}:POLICIES",
            "{not json",
            [],
            "--call is not valid JSON: Expecting property name enclosed in double quotes: "
            "line 1 column 2 (char 1)",
        ),
        ("{rules}:POLICIES", [], [], "--call must be a JSON object, got list"),
        ("{rules}:POLICIES", {"args": {}}, [], '--call needs "name": the tool\'s name as a string'),
        (
            "{rules}:POLICIES",
            {"name": "x", "args": []},
            [],
            '--call "args" must be an object, got list',
        ),
        (
            "{rules}:POLICIES",
            {"name": "x", "server": 1},
            [],
            '--call "server" must be a string or null, got 1',
        ),
        (
            "{rules}:POLICIES",
            {"name": "x", "tool": "y"},
            [],
            "--call has unknown key(s) ['tool']; expected name, args, server, id",
        ),
    ],
)
def test_bad_input_is_one_line_on_stderr_and_exit_2(
    rules: str,
    capsys: pytest.CaptureFixture[str],
    spec: str,
    call: object,
    extra: list[str],
    error: str,
) -> None:
    status = explain(spec.format(rules=rules), call, *extra)

    captured = capsys.readouterr()
    assert (status, captured.out) == (2, "")
    assert captured.err == f"hookscope: error: {error.format(rules=rules)}\n"


def test_a_missing_option_is_one_line_on_stderr_and_exit_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status = main(["policy", "explain", "--call", "{}"])

    assert (status, capsys.readouterr().err) == (
        2,
        "hookscope: error: one of the arguments --policies --config is required "
        "(see hookscope policy explain --help)\n",
    )


def test_no_command_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert capsys.readouterr().err.startswith("hookscope: error: the following arguments")


def test_help_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["policy", "explain", "--help"]) == 0
    assert "exit status: 0 allowed, 1 denied, 3 would ask the user" in capsys.readouterr().out
