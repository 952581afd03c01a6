"""[policy] in configuration files: one PolicyEnforcer, same buckets, total validation, reload."""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import re
import textwrap
from pathlib import Path

import pytest

from hookscope import hooks, policy
from hookscope.cli import main
from hookscope.engine import ConfigError, load, load_policy, watch
from hookscope.policy import Decision, PolicyDecision, PolicyEnforcer
from hookscope.runner import HookRunner
from hookscope.types import Answer, Question, ToolCall

from .conftest import eventually

POLICY_TOML = """
[policy]
workspace_only = ["work"]
mcp_servers = ["github"]

[[policy.rules]]
effect = "deny"
tool = "*"
name = "deny-by-default"

[[policy.rules]]
effect = "allow"
tool = "view_file"

[[policy.rules]]
effect = "deny"
tool = "run_command"
name = "no-rm"
reason = "no recursive deletes"
args.CommandLine = { matches = '\\brm\\s+-rf\\b' }

[[policy.rules]]
effect = "ask"
tool = "run_command"
name = "confirm-commands"
reason = "run this command?"

[[policy.rules]]
effect = "allow"
tool = "*"
server = "github"

[[policy.rules]]
effect = "deny"
tool = "delete_repo"
server = "github"
name = "keep-repos"

[[policy.rules]]
effect = "allow"
tool = "deploy"
args.env = { equals = "staging" }

[[policy.rules]]
effect = "allow"
tool = "edit_file"
args.path = { glob = "work/src/**" }

[[policy.rules]]
effect = "deny"
tool = "send_mail"
args.to = { glob = "/etc/**" }
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "work" / "src").mkdir(parents=True)
    (tmp_path / "hookscope.toml").write_text(POLICY_TOML)
    return tmp_path


def decide(
    enforcer: PolicyEnforcer, name: str, server: str | None = None, **args: object
) -> PolicyDecision:
    return asyncio.run(enforcer.evaluate(ToolCall(name, args, server=server), ask=False))


def test_the_file_compiles_into_one_enforcer_listed_first(project: Path) -> None:
    table = load(project / "hookscope.toml")
    assert [(e.event, e.entry) for e in table.entries] == [("pre_tool_call", "policy")]
    enforcer = table[0]
    assert isinstance(enforcer, PolicyEnforcer)
    assert enforcer.name == "policy"
    assert enforcer.mcp_servers == frozenset({"github"})
    # 9 rules, then workspace_only's four file-tool denies.
    assert len(enforcer.policies) == 13


def test_decisions_follow_the_nine_buckets(project: Path) -> None:
    enforcer = load_policy(project / "hookscope.toml")
    assert enforcer is not None
    work = project / "work"

    assert decide(enforcer, "view_file", AbsolutePath=str(work / "a")) == PolicyDecision(
        Decision.ALLOW, "allowed", "allow:view_file", 2, "view_file is allowed"
    )
    assert decide(enforcer, "view_file", AbsolutePath="/etc/passwd") == PolicyDecision(
        Decision.DENY,
        "denied",
        "workspace_only",
        0,
        f"path argument AbsolutePath resolves outside the workspace ({work})",
    )
    assert decide(enforcer, "run_command", CommandLine="rm -rf /") == PolicyDecision(
        Decision.DENY, "denied", "no-rm", 0, "no recursive deletes"
    )
    assert decide(enforcer, "run_command", CommandLine="ls") == PolicyDecision(
        Decision.ASK_USER, "denied", "confirm-commands", 1, "would ask the user (not asked)"
    )
    assert decide(enforcer, "create_issue", server="github").rule == "allow:github/*"
    assert decide(enforcer, "create_issue", server="github").bucket == 5
    keep = decide(enforcer, "delete_repo", server="github")
    assert (keep.outcome, keep.rule, keep.bucket) == ("denied", "keep-repos", 0)
    assert decide(enforcer, "unknown_tool") == PolicyDecision(
        Decision.DENY, "denied", "deny-by-default", 6, "every tool is denied"
    )


def test_argument_conditions(project: Path, tmp_path: Path) -> None:
    enforcer = load_policy(project / "hookscope.toml")
    assert enforcer is not None
    assert decide(enforcer, "deploy", env="staging").outcome == "allowed"
    assert decide(enforcer, "deploy", env="production").rule == "deny-by-default"
    assert decide(enforcer, "deploy").rule == "deny-by-default"  # a missing argument
    # glob: relative to the file's directory, matched where the path really leads.
    inside = project / "work" / "src" / "main.py"
    assert decide(enforcer, "edit_file", path=str(inside)).outcome == "allowed"
    (project / "work" / "src" / "etc").symlink_to("/etc")
    escape = project / "work" / "src" / "etc" / "hosts"
    # A symlink out of src/ borrows nothing from the allow rule (and workspace_only denies).
    assert decide(enforcer, "edit_file", path=str(escape)).rule == "workspace_only"
    assert decide(enforcer, "edit_file", path="work/src/main.py").rule == "workspace_only"
    # A deny rule's glob meets the folded spelling and the resolved path; on doubt it denies.
    mail = decide(enforcer, "send_mail", to="/tmp/../etc/shadow")
    assert (mail.rule, mail.bucket) == ("deny:send_mail", 0)
    assert decide(enforcer, "send_mail", to="relative/path").rule == "deny:send_mail"
    assert decide(enforcer, "send_mail", to=42).rule == "deny:send_mail"
    assert decide(enforcer, "send_mail", to="/tmp/x").rule == "deny-by-default"


def test_a_non_string_argument_matches_deny_rules_not_allow_rules(tmp_path: Path) -> None:
    enforcer = load_policy(
        {
            "policy": {
                "rules": [
                    {"effect": "deny", "tool": "sh", "args": {"cmd": {"matches": "rm"}}},
                    {"effect": "allow", "tool": "ls", "args": {"dir": {"matches": "^/srv"}}},
                    {"effect": "deny", "tool": "*"},
                ]
            }
        }
    )
    assert enforcer is not None
    assert decide(enforcer, "sh", cmd=["rm", "-rf"]).rule == "deny:sh"
    assert decide(enforcer, "sh", cmd="echo").rule == "deny:*"
    assert decide(enforcer, "ls", dir=["/srv"]).rule == "deny:*"
    assert decide(enforcer, "ls", dir="/srv/app").outcome == "allowed"


def test_the_same_rules_in_python_decide_the_same(project: Path) -> None:
    from_file = load_policy(project / "hookscope.toml")
    assert from_file is not None
    in_python = policy.enforce(
        [
            policy.deny("*", name="deny-by-default"),
            policy.allow("view_file"),
            policy.deny(
                "run_command",
                when=lambda a: "rm -rf" in a.get("CommandLine", ""),
                name="no-rm",
                reason="no recursive deletes",
            ),
            policy.ask_user(
                "run_command", policy.CONFIRM, name="confirm-commands", reason="run this command?"
            ),
            policy.allow_mcp("github"),
            policy.deny_mcp("github", ["delete_repo"], name="keep-repos"),
            policy.workspace_only([str(project / "work")]),
        ],
        mcp_servers=["github"],
    )
    calls = [
        ("view_file", None, {"AbsolutePath": str(project / "work" / "x")}),
        ("run_command", None, {"CommandLine": "rm -rf /"}),
        ("run_command", None, {"CommandLine": "make"}),
        ("delete_repo", "github", {}),
        ("get_issue", "github", {}),
        ("other", None, {}),
    ]
    for name, server, args in calls:
        left = decide(from_file, name, server, **args)
        right = decide(in_python, name, server, **args)
        assert left == right, name


def test_an_ask_rule_asks_through_the_runner(project: Path) -> None:
    seen: list[Question] = []

    @hooks.on_interaction
    def approve(questions: list[Question]) -> list[Answer]:
        seen.extend(questions)
        return [Answer("allow", questions[0].id)]

    runner = HookRunner([*load(project / "hookscope.toml"), approve])

    async def run() -> object:
        async with runner.session() as session, session.turn("go") as turn:
            return await turn.call_tool(
                ToolCall("run_command", {"CommandLine": "make"}), lambda CommandLine: "ran"
            )

    outcome = asyncio.run(run())
    assert [q.text for q in seen] == ["run this command?"]
    assert outcome.allowed is True  # type: ignore[attr-defined]
    decision = outcome.decision  # type: ignore[attr-defined]
    assert (decision.rule, decision.asked_user, decision.user_approved) == (
        "confirm-commands",
        True,
        True,
    )


def test_pyproject_tool_hookscope_policy(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[[tool.hookscope.policy.rules]]\neffect = "deny"\n'
        'tool = "run_command"\n'
    )
    table = load(tmp_path / "pyproject.toml")
    assert [e.entry for e in table.entries] == ["tool.hookscope.policy"]
    enforcer = table[0]
    assert isinstance(enforcer, PolicyEnforcer)
    assert decide(enforcer, "run_command").rule == "deny:run_command"


BAD = """
[policy]
workspace_only = "not-a-list-of-dirs-but-ok"
colour = "blue"

[[policy.rules]]
effect = "forbid"
tool = "run_command"

[[policy.rules]]
effect = "deny"
tool = "run_*"

[[policy.rules]]
effect = "allow"
tool = "edit_file"
args.path = { glob = "src/[abc" }
args.mode = { regex = "x" }

[[policy.rules]]
effect = "deny"
tool = "run_command"
args.CommandLine = { matches = "(" }
when = "always"

[[policy.rules]]
effect = "deny"
tool = "x"
server = "gh"

[[hooks.pre_tool_call]]
type = "command"
"""


def test_validation_is_total_and_names_file_rule_and_fix(tmp_path: Path) -> None:
    path = tmp_path / "hookscope.toml"
    path.write_text(BAD)
    with pytest.raises(ConfigError) as caught:
        load(path)
    error = caught.value
    assert error.source == str(path)
    assert error.problems == (
        "policy: unknown key(s) ['colour']; allowed: ['mcp_servers', 'normalize', 'rules', "
        "'workspace_only', 'workspace_path_args', 'workspace_tools']",
        'policy.rules[0]: effect must be "deny", "ask" or "allow", got \'forbid\'',
        "policy.rules[1]: 'run_*': '*' is a wildcard only on its own or as 'server/*'; patterns "
        "such as 'run_*' are not supported (they would match nothing), so list the tools instead",
        "policy.rules[2]: args.path.glob: path glob "
        f"'{tmp_path}/src/[abc' has an unbalanced '['; close it with ']' or write '[[]' for a "
        "literal '['",
        "policy.rules[2]: args.mode has unknown condition(s) ['regex']; use matches, glob or "
        "equals",
        "policy.rules[3]: unknown key(s) ['when']; allowed: ['args', 'effect', 'name', 'reason', "
        "'server', 'tool']",
        "policy.rules[3]: args.CommandLine.matches '(' is not a valid regular expression "
        "(missing ), unterminated subpattern at position 0); escape it",
        'hooks.pre_tool_call[0]: give exactly one of command = "..." (run by /bin/sh) and '
        'args = ["prog", ...] (run without a shell)',
    )
    assert str(error).startswith(f"8 problems in {path}:\n  {path}: policy: unknown key(s)")


def test_an_unregistered_server_is_reported_after_the_rules_validate(tmp_path: Path) -> None:
    source = {
        "policy": {
            "mcp_servers": ["github"],
            "rules": [{"effect": "deny", "tool": "x", "server": "gitlab", "name": "r"}],
        }
    }
    with pytest.raises(ConfigError) as caught:
        load(source)
    assert caught.value.problems == (
        "policy: rule 'r' targets MCP server 'gitlab', which is not registered (mcp_servers: "
        "github); fix the rule's server name or add the server to mcp_servers",
    )


def replace_file(path: Path, text: str) -> None:
    temporary = path.with_suffix(".tmp")
    temporary.write_text(text)
    os.replace(temporary, path)


def test_watch_reloads_the_policy_and_keeps_it_through_a_bad_file(tmp_path: Path) -> None:
    path = tmp_path / "hookscope.toml"
    path.write_text('[[policy.rules]]\neffect = "deny"\ntool = "run_command"\n')
    runner = HookRunner()
    call = ToolCall("run_command", {})

    async def allowed() -> bool:
        async with runner.session() as session, session.turn("go") as turn:
            outcome = await turn.call_tool(call, lambda: "ran")
            return bool(outcome.allowed)

    handle = watch(runner, path, interval=0.02)
    try:
        assert asyncio.run(allowed()) is False
        replace_file(path, '[[policy.rules]]\neffect = "allow"\ntool = "run_command"\n')
        assert eventually(lambda: asyncio.run(allowed()) is True)
        replace_file(path, '[[policy.rules]]\neffect = "maybe"\ntool = "run_command"\n')
        assert eventually(lambda: handle.last_error is not None)
        assert asyncio.run(allowed()) is True  # the old policy stays
        assert len(runner.hooks) == 1
    finally:
        handle.stop()


def test_policy_explain_reads_a_config_file(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = str(project / "hookscope.toml")
    status = main(
        [
            "policy",
            "explain",
            "--config",
            config,
            "--call",
            '{"name": "run_command", "args": {"CommandLine": "rm -rf /"}}',
        ]
    )
    assert status == 1
    assert capsys.readouterr().out == textwrap.dedent(
        """\
        call      run_command {"CommandLine": "rm -rf /"}
        decision  deny
        outcome   denied
        bucket    0 (exact tool or server/tool, deny)
        rule      no-rm
        reason    no recursive deletes
        """
    )
    status = main(["policy", "explain", "--config", config, "--call", '{"name": "run_command"}'])
    assert status == 3
    assert "outcome   depends on the user's answer\n" in capsys.readouterr().out


def test_policy_explain_reports_a_bad_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "hookscope.toml"
    path.write_text('[[policy.rules]]\neffect = "deny"\n')
    status = main(["policy", "explain", "--config", str(path), "--call", '{"name": "x"}'])
    assert status == 2
    assert capsys.readouterr().err == (
        f"hookscope: error: 1 problem in {path}:\n  {path}: policy.rules[0]: needs tool = "
        '"name" (or "server/tool", "server/*", "*" for every tool)\n'
    )
    empty = tmp_path / "empty.toml"
    empty.write_text(
        '[[hooks.pre_turn]]\ntype = "python"\nhook = "hookscope.builtins:TokenBudget"'
        "\noptions = { max_tokens = 5 }\n"
    )
    assert main(["policy", "explain", "--config", str(empty), "--call", '{"name": "x"}']) == 2
    assert capsys.readouterr().err == (
        f"hookscope: error: {empty} has no policy; add [[policy.rules]] to it\n"
    )


def test_the_readme_example_loads_and_decides_as_the_readme_says(tmp_path: Path) -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    start = readme.index("## Policy in config files\n")
    section = readme[start : readme.index("\n## ", start + 1)]
    (toml,) = re.findall(r"```toml\n(.*?)```", section, re.DOTALL)
    (console,) = re.findall(r"```console\n(.*?)```", section, re.DOTALL)
    (tmp_path / "hookscope.toml").write_text(toml)
    (tmp_path / "src").mkdir()
    command, *expected = console.splitlines()
    call = command.split("--call ", 1)[1].strip("'")
    out = io.StringIO()
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        with contextlib.redirect_stdout(out):
            status = main(["policy", "explain", "--config", "hookscope.toml", "--call", call])
    finally:
        os.chdir(cwd)
    assert (status, out.getvalue().splitlines()) == (1, expected)
    enforcer = load_policy(tmp_path / "hookscope.toml")
    assert enforcer is not None
    assert decide(enforcer, "edit_file", path=str(tmp_path / "src" / "a.py")).outcome == "allowed"
    assert decide(enforcer, "get_issue", server="github").outcome == "allowed"
    assert decide(enforcer, "delete_repo", server="github").outcome == "denied"
