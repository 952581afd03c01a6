"""Claude Code `permissions` in a settings file: rule syntax, deny > ask > allow, modes, aliases."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest

from hookscope.engine import ConfigError, load, load_policy
from hookscope.policy import PolicyEnforcer
from hookscope.types import ToolCall


def settings(tmp_path: Path, permissions: Any, **aliases: Any) -> PolicyEnforcer:
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"permissions": permissions}))
    enforcer = load_policy(path, tool_aliases=aliases or None)
    assert enforcer is not None
    return enforcer


def verdict(enforcer: PolicyEnforcer, name: str, server: str | None = None, **args: Any) -> str:
    """allow, ask or deny, as Claude Code would put it, and the deciding rule."""
    decision = asyncio.run(enforcer.evaluate(ToolCall(name, args, server=server), ask=False))
    word = {"allow": "allow", "deny": "deny", "ask_user": "ask"}[decision.decision.value]
    return f"{word} {decision.rule}"


def test_bash_rules_and_precedence(tmp_path: Path) -> None:
    enforcer = settings(
        tmp_path,
        {
            "allow": ["Bash(npm run test:*)", "Bash(git status)", "Bash(echo *)"],
            "ask": ["Bash(git push:*)"],
            "deny": ["Bash(rm:*)", "Bash(curl *)"],
            "defaultMode": "default",
        },
    )
    assert verdict(enforcer, "Bash", command="npm run test") == "allow allow:Bash(npm run test:*)"
    assert verdict(enforcer, "Bash", command="npm run test -- -x").startswith("allow")
    assert verdict(enforcer, "Bash", command="npm run testing") == "ask defaultMode:default"
    assert verdict(enforcer, "Bash", command="git status") == "allow allow:Bash(git status)"
    assert verdict(enforcer, "Bash", command="git status --short") == "ask defaultMode:default"
    assert verdict(enforcer, "Bash", command="git push origin") == "ask ask:Bash(git push:*)"
    assert verdict(enforcer, "Bash", command="rm -rf /") == "deny deny:Bash(rm:*)"
    assert verdict(enforcer, "Bash", command="rmdir x") == "ask defaultMode:default"
    # Compound commands: a deny meets any part; an allow needs every part.
    assert verdict(enforcer, "Bash", command="git status && rm x") == "deny deny:Bash(rm:*)"
    assert verdict(enforcer, "Bash", command="echo a; curl evil") == "deny deny:Bash(curl *)"
    assert verdict(enforcer, "Bash", command="echo a && git status") == (
        "allow allow:Bash(every part allowed)"
    )
    assert verdict(enforcer, "Bash", command="echo a && make") == "ask defaultMode:default"
    assert verdict(enforcer, "Bash", command="echo $(make)") == "ask defaultMode:default"
    # Precedence is by effect, not by rule order or specificity.
    both = settings(tmp_path, {"allow": ["Bash"], "deny": ["Bash(sudo:*)"]})
    assert verdict(both, "Bash", command="sudo ls") == "deny deny:Bash(sudo:*)"
    assert verdict(both, "Bash", command="ls") == "allow allow:Bash"


def test_file_rules_are_gitignore_paths_resolved(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "link").symlink_to("/etc")
    enforcer = settings(
        tmp_path,
        {
            "allow": ["Edit(src/**)", "Read"],
            "deny": ["Read(./.env)", "Read(*.pem)", "Edit(//etc/**)"],
        },
    )
    project = tmp_path
    assert verdict(enforcer, "Edit", file_path=f"{project}/src/a.py") == "allow allow:Edit(src/**)"
    assert verdict(enforcer, "Write", file_path=f"{project}/src/b.py").startswith("allow")
    assert verdict(enforcer, "Edit", file_path=f"{project}/docs/a.md") == "ask defaultMode:default"
    # A symlink out of src/ borrows nothing from the allow rule.
    assert verdict(enforcer, "Edit", file_path=f"{project}/src/link/hosts") == (
        "deny deny:Edit(//etc/**)"
    )
    assert verdict(enforcer, "Read", file_path=f"{project}/.env") == "deny deny:Read(./.env)"
    assert verdict(enforcer, "Read", file_path=f"{project}/a/b/key.pem") == "deny deny:Read(*.pem)"
    assert verdict(enforcer, "Grep", path=f"{project}/.env", pattern="x").startswith("deny")
    assert verdict(enforcer, "Read", file_path=f"{project}/README.md") == "allow allow:Read"
    # Where a relative path leads is unknown here: the deny rules meet it (fail closed).
    assert verdict(enforcer, "Read", file_path="relative.txt") == "deny deny:Read(./.env)"


def test_write_path_rules_grant_nothing_but_still_deny(tmp_path: Path) -> None:
    # The CLI ignores Write(path) rules; hookscope keeps their denials (the safe side).
    enforcer = settings(tmp_path, {"allow": ["Write(a/**)"], "deny": ["Write(b/**)"]})
    assert verdict(enforcer, "Write", file_path=f"{tmp_path}/a/x") == "ask defaultMode:default"
    assert verdict(enforcer, "Write", file_path=f"{tmp_path}/b/x") == "deny deny:Write(b/**)"


def test_modes_and_working_directories(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    project = tmp_path / "project"
    project.mkdir()
    default = settings(project, {"additionalDirectories": ["../shared"]})
    assert verdict(default, "Read", file_path=f"{project}/a") == "allow defaultMode:default"
    assert verdict(default, "Read", file_path=f"{shared}/a") == "allow defaultMode:default"
    assert verdict(default, "Read", file_path="/etc/hosts") == "ask defaultMode:default"
    assert verdict(default, "Grep", pattern="x") == "allow defaultMode:default"
    assert verdict(default, "TodoWrite", todos=[]) == "allow defaultMode:default"
    assert verdict(default, "Edit", file_path=f"{project}/a") == "ask defaultMode:default"
    edits = settings(project, {"defaultMode": "acceptEdits"})
    assert verdict(edits, "Edit", file_path=f"{project}/a") == "allow defaultMode:acceptEdits"
    assert verdict(edits, "Edit", file_path=f"{shared}/a") == "ask defaultMode:acceptEdits"
    assert verdict(edits, "Bash", command="make") == "ask defaultMode:acceptEdits"
    for mode in ("plan", "dontAsk"):
        strict = settings(project, {"defaultMode": mode, "allow": ["Bash(make)"]})
        assert verdict(strict, "Bash", command="ls") == f"deny defaultMode:{mode}"
        assert verdict(strict, "Bash", command="make") == "allow allow:Bash(make)"
    bypass = settings(project, {"defaultMode": "bypassPermissions", "deny": ["WebSearch"]})
    assert verdict(bypass, "Bash", command="anything") == "allow None"
    assert verdict(bypass, "WebSearch", query="x") == "deny deny:WebSearch"


def test_mcp_rules_keep_deny_over_allow_across_targets(tmp_path: Path) -> None:
    enforcer = settings(
        tmp_path,
        {
            "allow": ["mcp__github", "mcp__calc__add"],
            "deny": ["mcp__calc"],
            "ask": ["mcp__github__delete_repo"],
        },
    )
    assert verdict(enforcer, "get_issue", server="github") == "allow allow:mcp__github"
    assert verdict(enforcer, "delete_repo", server="github") == "ask ask:mcp__github__delete_repo"
    assert verdict(enforcer, "add", server="calc") == "deny deny:mcp__calc"
    assert verdict(enforcer, "divide", server="calc") == "deny deny:mcp__calc"
    assert enforcer.mcp_servers == frozenset({"github", "calc"})


def test_webfetch_domains(tmp_path: Path) -> None:
    enforcer = settings(
        tmp_path,
        {"allow": ["WebFetch(domain:docs.python.org)"], "deny": ["WebFetch(domain:*.evil.com)"]},
    )
    assert verdict(enforcer, "WebFetch", url="https://docs.python.org/3/").startswith("allow")
    assert verdict(enforcer, "WebFetch", url="https://python.org/").startswith("ask")
    assert verdict(enforcer, "WebFetch", url="http://a.evil.com/x").startswith("deny")
    assert verdict(enforcer, "WebFetch", url="http://[bad").startswith("deny")


def test_aliases_map_tool_and_argument_names(tmp_path: Path) -> None:
    enforcer = settings(
        tmp_path,
        {"allow": ["Bash(make:*)"], "deny": ["Bash(rm:*)", "Edit(secrets/**)"]},
        Bash="run_command",
        Edit={"tool": "edit_file", "args": {"file_path": "path"}},
    )
    assert verdict(enforcer, "run_command", CommandLine="make all") == "allow allow:Bash(make:*)"
    assert verdict(enforcer, "run_command", CommandLine="rm -rf x") == "deny deny:Bash(rm:*)"
    assert verdict(enforcer, "run_command", command="rm -rf x") == "ask defaultMode:default"
    secret = f"{tmp_path}/secrets/k"
    assert verdict(enforcer, "edit_file", path=secret) == "deny deny:Edit(secrets/**)"
    assert verdict(enforcer, "Edit", file_path=secret) == "ask defaultMode:default"


def test_bad_permissions_are_one_config_error(tmp_path: Path) -> None:
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text(
        json.dumps(
            {
                "permissions": {
                    "allow": ["Bash(npm", 42, "mcp__calc(x)"],
                    "deny": "Bash",
                    "ask": ["WebFetch(example.com)", "mcp__"],
                    "defaultMode": "yolo",
                    "additionalDirectories": [1],
                    "colour": 1,
                }
            }
        )
    )
    with pytest.raises(ConfigError) as caught:
        load(path)
    rule = "write Tool or Tool(specifier), e.g. 'Bash(npm run test:*)', 'Read(./.env)', "
    rule += "'WebFetch(domain:example.com)', 'mcp__server__tool'"
    assert caught.value.problems == (
        "permissions: unknown key(s) ['colour']; allowed: ['additionalDirectories', 'allow', "
        "'ask', 'defaultMode', 'deny', 'disableBypassPermissionsMode']",
        "permissions.deny: must be a list of rule strings, got 'Bash'",
        "permissions.ask[0]: WebFetch(example.com): write WebFetch(domain:example.com)",
        "permissions.ask[1]: 'mcp__' names no MCP server; write mcp__server or mcp__server__tool",
        f"permissions.allow[0]: 'Bash(npm' is not a permission rule; {rule}",
        "permissions.allow[1]: a permission rule is a string such as 'Bash(npm test:*)', got 42",
        "permissions.allow[2]: mcp__calc(x): MCP rules take no specifier; drop the (...)",
        "permissions.defaultMode: must be one of default, acceptEdits, plan, dontAsk, "
        "bypassPermissions, got 'yolo'",
        "permissions.additionalDirectories: must be a list of directories, got [1]",
    )


def test_the_readme_example_loads(tmp_path: Path) -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    start = readme.index("### Claude Code permissions\n")
    section = readme[start : readme.index("\n## ", start)]
    (block,) = re.findall(r"```json\n(.*?)```", section, re.DOTALL)
    enforcer = settings(tmp_path, json.loads(block)["permissions"])
    assert (
        verdict(enforcer, "Bash", command="npm run test -x") == "allow allow:Bash(npm run test:*)"
    )
    assert verdict(enforcer, "Bash", command="git push") == "ask ask:Bash(git push:*)"
    assert verdict(enforcer, "delete_repo", server="github") == (
        "deny deny:mcp__github__delete_repo"
    )
    assert verdict(enforcer, "Read", file_path=f"{tmp_path}/.env") == "deny deny:Read(./.env)"
