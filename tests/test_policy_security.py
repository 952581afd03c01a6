"""Security: workspace containment, and tool names that must not slip past a deny."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from hookscope import policy
from hookscope._paths import MAX_SYMLINKS, NAME_MAX, PATH_MAX
from hookscope.policy import PolicyEnforcer, PolicyError
from hookscope.runner import HookRunner
from hookscope.telemetry import ContentCapture, OTelHook
from hookscope.types import ToolCall


@pytest.fixture
def app(tmp_path: Path) -> Path:
    """tmp/app (the workspace, holding main.py and docs/) beside tmp/outside/secret.txt."""
    (tmp_path / "app" / "docs").mkdir(parents=True)
    (tmp_path / "app" / "main.py").write_text("print('hi')\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("s3cret\n")
    return tmp_path / "app"


@pytest.fixture
def guarded(app: Path) -> PolicyEnforcer:
    return policy.enforce([policy.workspace_only([app]), policy.allow_all()])


async def outcome(enforcer: PolicyEnforcer, path: Any, tool: str = "view_file") -> str:
    return (await enforcer.evaluate(ToolCall(tool, {"AbsolutePath": path}))).outcome


async def reason(enforcer: PolicyEnforcer, args: dict[str, Any], tool: str = "view_file") -> str:
    decision = await enforcer.evaluate(ToolCall(tool, args))
    assert (decision.outcome, decision.rule, decision.bucket) == ("denied", "workspace_only", 0)
    return decision.reason


# --- containment --------------------------------------------------------------------------


async def test_an_existing_file_inside_the_workspace_is_allowed(
    guarded: PolicyEnforcer, app: Path
) -> None:
    assert await outcome(guarded, str(app / "main.py")) == "allowed"


async def test_the_workspace_root_itself_is_inside(guarded: PolicyEnforcer, app: Path) -> None:
    assert await outcome(guarded, str(app)) == "allowed"


async def test_a_new_file_in_new_directories_inside_the_workspace_is_allowed(
    guarded: PolicyEnforcer, app: Path
) -> None:
    path = str(app / "src" / "pkg" / "__init__.py")

    assert await outcome(guarded, path, tool="write_to_file") == "allowed"


async def test_dot_dot_traversal_out_of_the_workspace_is_denied(
    guarded: PolicyEnforcer, app: Path
) -> None:
    path = f"{app}/docs/../../outside/secret.txt"

    assert await reason(guarded, {"AbsolutePath": path}) == (
        f"path argument AbsolutePath resolves outside the workspace ({app})"
    )


async def test_dot_dot_below_a_directory_that_does_not_exist_is_denied(
    guarded: PolicyEnforcer, app: Path
) -> None:
    path = f"{app}/new/../../outside/x.txt"

    assert await reason(guarded, {"TargetFile": path}, tool="create_file") == (
        "path argument TargetFile uses '.' or '..' below a directory that does not exist yet"
    )


async def test_a_symlinked_directory_pointing_outside_is_denied(
    guarded: PolicyEnforcer, app: Path
) -> None:
    (app / "link").symlink_to(app.parent / "outside", target_is_directory=True)

    assert await outcome(guarded, str(app / "link" / "secret.txt")) == "denied"
    assert await outcome(guarded, str(app / "link" / "new.txt"), tool="create_file") == "denied"


async def test_a_symlinked_file_pointing_outside_is_denied(
    guarded: PolicyEnforcer, app: Path
) -> None:
    (app / "notes.txt").symlink_to(app.parent / "outside" / "secret.txt")

    assert await outcome(guarded, str(app / "notes.txt"), tool="edit_file") == "denied"


async def test_a_dangling_symlink_that_would_create_a_file_outside_is_denied(
    guarded: PolicyEnforcer, app: Path
) -> None:
    (app / "drop.txt").symlink_to(app.parent / "outside" / "planted.txt")
    path = str(app / "drop.txt")

    assert await reason(guarded, {"TargetFile": path}, tool="write_to_file") == (
        "path argument TargetFile goes through a dangling symlink"
    )


async def test_a_symlink_that_stays_inside_is_allowed(guarded: PolicyEnforcer, app: Path) -> None:
    (app / "readme").symlink_to(app / "main.py")

    assert await outcome(guarded, str(app / "readme")) == "allowed"


async def test_a_symlink_loop_is_denied(guarded: PolicyEnforcer, app: Path) -> None:
    (app / "loop").symlink_to(app / "loop")

    assert await outcome(guarded, str(app / "loop" / "x")) == "denied"


async def test_a_file_used_as_a_directory_is_denied(guarded: PolicyEnforcer, app: Path) -> None:
    assert await outcome(guarded, str(app / "main.py" / "x")) == "denied"


async def test_a_sibling_directory_sharing_the_prefix_is_outside(tmp_path: Path) -> None:
    (tmp_path / "app").mkdir()
    (tmp_path / "app2").mkdir()
    (tmp_path / "app2" / "x.txt").write_text("x")
    enforcer = policy.enforce([policy.workspace_only([tmp_path / "app"])])

    assert await outcome(enforcer, str(tmp_path / "app2" / "x.txt")) == "denied"


async def test_prefix_comparison_is_by_whole_components_for_paths_not_on_disk() -> None:
    enforcer = policy.enforce([policy.workspace_only(["/w/app"])])

    outcomes = [await outcome(enforcer, p) for p in ("/w/app2/x", "/w/app/x", "/w/ap", "/w/app")]

    assert outcomes == ["denied", "allowed", "denied", "allowed"]


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("main.py", "is not an absolute path"),
        ("./main.py", "is not an absolute path"),
        ("", "is not an absolute path"),
        ("/w/app/x\x00.txt", "contains a NUL byte"),
        (None, "is a NoneType, not a path string"),
        (42, "is a int, not a path string"),
        (b"/w/app/x", "is a bytes, not a path string"),
        (["/w/app/x"], "is a list, not a path string"),
    ],
)
async def test_paths_that_cannot_be_anchored_are_denied(path: Any, why: str) -> None:
    enforcer = policy.enforce([policy.workspace_only(["/w/app"]), policy.allow_all()])

    assert await reason(enforcer, {"path": path}) == f"path argument path {why}"


async def test_a_call_with_no_path_argument_is_denied(guarded: PolicyEnforcer) -> None:
    assert await reason(guarded, {"Content": "x"}, tool="create_file") == (
        "no path argument (AbsolutePath, TargetFile, path, file_path) to check against the "
        "workspace"
    )


async def test_every_path_argument_present_must_be_inside(
    guarded: PolicyEnforcer, app: Path
) -> None:
    args = {"path": str(app / "main.py"), "file_path": str(app.parent / "outside" / "x")}

    assert (await guarded.evaluate(ToolCall("edit_file", args))).outcome == "denied"


async def test_no_allow_rule_overrides_the_workspace(app: Path) -> None:
    enforcer = policy.enforce(
        [policy.allow("view_file"), policy.allow_all(), policy.workspace_only([app])]
    )

    assert await outcome(enforcer, str(app.parent / "outside" / "secret.txt")) == "denied"


async def test_tools_outside_the_guarded_list_are_untouched(guarded: PolicyEnforcer) -> None:
    decision = await guarded.evaluate(ToolCall("run_command", {"path": "/etc/passwd"}))

    assert (decision.outcome, decision.rule) == ("allowed", "allow_all")


async def test_tools_and_path_arguments_can_be_chosen(app: Path) -> None:
    enforcer = policy.enforce(
        [policy.workspace_only([app], tools=["list_directory"], path_args=["DirectoryPath"])]
    )

    inside = ToolCall("list_directory", {"DirectoryPath": str(app / "docs")})
    outside = ToolCall("list_directory", {"DirectoryPath": "/etc"})
    untouched = ToolCall("view_file", {"AbsolutePath": "/etc/passwd"})

    outcomes = [(await enforcer.evaluate(c)).outcome for c in (inside, outside, untouched)]
    assert outcomes == ["allowed", "denied", "allowed"]


async def test_a_symlinked_workspace_root_is_resolved_once(tmp_path: Path, app: Path) -> None:
    (tmp_path / "current").symlink_to(app, target_is_directory=True)
    enforcer = policy.enforce([policy.workspace_only(tmp_path / "current")])

    assert await outcome(enforcer, str(app / "main.py")) == "allowed"
    assert await outcome(enforcer, str(tmp_path / "current" / "main.py")) == "allowed"


def test_a_relative_workspace_root_is_rejected() -> None:
    with pytest.raises(PolicyError, match="needs absolute directory paths, got 'app'"):
        policy.workspace_only(["app"])


def test_no_workspace_root_is_rejected() -> None:
    with pytest.raises(PolicyError, match="needs at least one workspace directory"):
        policy.workspace_only([])


def test_workspace_rules_are_bucket_zero_denies_named_workspace_only() -> None:
    rules = policy.workspace_only([os.sep + "w"])

    assert [(r.tool, r.decision.value, r.name) for r in rules] == [
        ("view_file", "deny", "workspace_only"),
        ("create_file", "deny", "workspace_only"),
        ("edit_file", "deny", "workspace_only"),
        ("write_to_file", "deny", "workspace_only"),
    ]


# --- tool names ---------------------------------------------------------------------------

LOOK_ALIKES = [
    "view_f\u0456le",  # CYRILLIC SMALL LETTER BYELORUSSIAN-UKRAINIAN I
    "vi\u0435w_file",  # CYRILLIC SMALL LETTER IE
    "\uff56\uff49\uff45\uff57_file",  # FULLWIDTH LATIN (NFKC folds it to view_file)
    "view\u200b_file",  # ZERO WIDTH SPACE
    "view_file ",
    " view_file",
    "view_file\x00",
    "View_File",
    "view_file/",
    "/view_file",
    "srv/view_file",
    "view_file/*",
    "*",
    "",
]


@pytest.mark.parametrize("name", LOOK_ALIKES)
async def test_names_resembling_an_allowed_tool_fall_to_deny_all(name: str) -> None:
    enforcer = policy.enforce([policy.deny_all(), policy.allow("view_file")])

    decision = await enforcer.evaluate(ToolCall(name))

    assert (decision.outcome, decision.rule) == ("denied", "deny_all")


@pytest.mark.parametrize("name", ["gh/x", "gh/*", "gh"])
async def test_a_local_call_named_like_an_allowed_mcp_tool_is_denied(name: str) -> None:
    enforcer = policy.enforce([policy.deny_all(), policy.allow_mcp("gh")], mcp_servers=["gh"])

    assert (await enforcer.evaluate(ToolCall(name))).outcome == "denied"


@pytest.mark.parametrize("server", ["gh/x", "g h", "gh_", "*", "gh/*", "g\u0068\u200b"])
async def test_an_mcp_call_from_a_look_alike_server_is_denied(server: str) -> None:
    enforcer = policy.enforce([policy.deny_all(), policy.allow_mcp("gh")], mcp_servers=["gh"])

    assert (await enforcer.evaluate(ToolCall("x", server=server))).outcome == "denied"


@pytest.mark.parametrize("name", ["", "*", "x/y", "delete_repo"])
async def test_every_name_on_a_denied_server_is_denied(name: str) -> None:
    enforcer = policy.enforce([policy.deny_mcp("gh"), policy.allow_all()], mcp_servers=["gh"])

    decision = await enforcer.evaluate(ToolCall(name, server="gh"))

    assert (decision.outcome, decision.rule) == ("denied", "deny:gh/*")


@pytest.mark.parametrize("server", [None, ""])
async def test_a_denied_local_tool_stays_denied_with_no_or_empty_server(
    server: str | None,
) -> None:
    enforcer = policy.enforce([policy.deny("run_command"), policy.allow_all()])

    decision = await enforcer.evaluate(ToolCall("run_command", server=server))

    assert decision.outcome == "denied"


# --- issue 13: MCP names --------------------------------------------------------------------


def github_policy(*rules: Any) -> PolicyEnforcer:
    return policy.enforce(list(rules), mcp_servers=["github"])


async def test_a_local_call_named_server_tool_meets_the_servers_deny() -> None:
    enforcer = github_policy(policy.deny_mcp("github", ["delete_branch"]), policy.allow_all())

    decision = await enforcer.evaluate(ToolCall("github/delete_branch"))

    assert (decision.outcome, decision.rule) == ("denied", "deny:github/delete_branch")


@pytest.mark.parametrize("spelling", ["GitHub", " github", "github ", "GITHUB", "\tGitHub "])
async def test_server_names_match_whatever_their_case_and_padding(spelling: str) -> None:
    enforcer = github_policy(policy.deny_mcp("github", ["delete_branch"]), policy.allow_all())

    as_mcp = await enforcer.evaluate(ToolCall("delete_branch", server=spelling))
    as_local = await enforcer.evaluate(ToolCall(f"{spelling}/delete_branch"))

    assert (as_mcp.outcome, as_local.outcome) == ("denied", "denied")


def test_registered_server_names_are_folded_too() -> None:
    enforcer = policy.enforce([policy.deny_mcp("github")], mcp_servers=[" GitHub "])

    assert enforcer.mcp_servers == frozenset({"GitHub"})


async def test_a_local_call_meets_the_servers_ask_rule() -> None:
    asked: list[ToolCall] = []

    def refuse(call: ToolCall) -> bool:
        asked.append(call)
        return False

    enforcer = github_policy(
        policy.ask_user_mcp("github", ["push"], handler=refuse), policy.allow_all()
    )

    decision = await enforcer.evaluate(ToolCall("github/push"))

    assert (decision.outcome, decision.rule, decision.asked_user) == (
        "denied",
        "ask_user:github/push",
        True,
    )
    assert asked == [ToolCall("github/push")]


@pytest.mark.parametrize("name", ["github/list", "GitHub/list", "github/*"])
async def test_a_local_call_never_gains_the_servers_allow(name: str) -> None:
    enforcer = github_policy(policy.deny_all(), policy.allow_mcp("github", ["list"]))

    decision = await enforcer.evaluate(ToolCall(name))

    assert (decision.outcome, decision.rule) == ("denied", "deny_all")


async def test_a_local_call_named_like_an_unregistered_server_is_a_plain_name() -> None:
    enforcer = github_policy(policy.deny_mcp("github"), policy.allow_all())

    decision = await enforcer.evaluate(ToolCall("gitlab/delete_branch"))

    assert (decision.outcome, decision.rule) == ("allowed", "allow_all")


# --- issue 13: look-alikes with normalize=True ------------------------------------------

# Greek nu for v, a combining acute accent, capitals, then the Cyrillic/fullwidth/invisible ones.
NORMALIZED_LOOK_ALIKES = [*LOOK_ALIKES[:8], "VIEW_FILE", "vie\u0301w_file", "\u03bdiew_file"]


@pytest.mark.parametrize("name", NORMALIZED_LOOK_ALIKES)
async def test_with_normalize_look_alikes_of_a_denied_tool_are_denied(name: str) -> None:
    rules = [policy.deny("view_file"), policy.allow_all()]

    normalized = await policy.enforce(rules, normalize=True).evaluate(ToolCall(name))
    exact = await policy.enforce(rules).evaluate(ToolCall(name))

    assert (normalized.outcome, normalized.rule) == ("denied", "deny:view_file")
    assert (exact.outcome, exact.rule) == ("allowed", "allow_all")


@pytest.mark.parametrize("name", ["VIEW_FILE", "view_f\u0456le", "\uff56iew_file"])
async def test_normalize_never_widens_an_allow(name: str) -> None:
    enforcer = policy.enforce([policy.deny_all(), policy.allow("view_file")], normalize=True)

    decision = await enforcer.evaluate(ToolCall(name))

    assert (decision.outcome, decision.rule) == ("denied", "deny_all")


async def test_with_normalize_a_look_alike_server_meets_its_deny() -> None:
    enforcer = policy.enforce(
        [policy.deny_mcp("github"), policy.allow_all()], mcp_servers=["github"], normalize=True
    )

    as_mcp = await enforcer.evaluate(ToolCall("x", server="g\u0456thub"))
    as_local = await enforcer.evaluate(ToolCall("\uff47ithub\uff0fx"))

    assert (as_mcp.rule, as_local.rule) == ("deny:github/*", "deny:github/*")


def test_normalize_takes_a_real_bool() -> None:
    with pytest.raises(TypeError, match="normalize= takes True or False, got 'yes'"):
        policy.enforce([policy.allow_all()], normalize="yes")  # type: ignore[arg-type]


# --- issue 13: reasons never quote argument values ----------------------------------------

SECRET_PATH = "/w/sk-live-0123456789abcdef/../../etc/passwd"


@pytest.mark.parametrize(
    "value",
    [SECRET_PATH, "sk-live-0123456789abcdef", "/w/app/sk-live-0123456789abcdef\x00", "/" * 5000],
)
async def test_a_workspace_denial_never_quotes_the_path(value: str) -> None:
    enforcer = policy.enforce([policy.workspace_only(["/w/app"]), policy.allow_all()])

    result = await enforcer.pre_tool_call(None, ToolCall("view_file", {"path": value}))  # type: ignore[arg-type]

    assert result.decision is not None
    assert "0123456789abcdef" not in result.decision.reason
    assert "0123456789abcdef" not in result.message
    assert "/////" not in result.message


async def test_an_odd_value_a_condition_returns_is_named_by_type_only() -> None:
    enforcer = policy.enforce([policy.deny("t", when=lambda args: args["token"])])

    decision = await enforcer.evaluate(ToolCall("t", {"token": "sk-live-0123456789abcdef"}))

    assert (
        decision.reason == "the condition of rule 'deny:t' returned str, not bool; failing closed"
    )


# --- issue 13: long paths ---------------------------------------------------------------------


@pytest.fixture
def lstat_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every path the workspace check lstat()s, in order."""
    calls: list[str] = []
    real = os.lstat

    def counting(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        calls.append(os.fspath(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "lstat", counting)
    return calls


async def test_a_path_over_path_max_is_rejected_before_touching_the_disk(
    guarded: PolicyEnforcer, app: Path, lstat_calls: list[str]
) -> None:
    path = f"{app}/" + "a/" * (125 * 1024)  # 250 KiB

    assert await reason(guarded, {"AbsolutePath": path}) == (
        f"path argument AbsolutePath is longer than the system's PATH_MAX ({PATH_MAX - 1} bytes)"
    )
    assert lstat_calls == []


async def test_the_check_costs_one_lstat_per_component_up_to_the_first_missing_one(
    guarded: PolicyEnforcer, app: Path, lstat_calls: list[str]
) -> None:
    path = f"{app}/" + "a/" * ((PATH_MAX - len(str(app)) - 2) // 2)  # just under PATH_MAX

    assert await outcome(guarded, path, tool="create_file") == "allowed"
    assert lstat_calls == [str(Path(*app.parts[: i + 1])) for i in range(1, len(app.parts))] + [
        f"{app}/a"
    ]


async def test_a_component_over_name_max_is_rejected(guarded: PolicyEnforcer, app: Path) -> None:
    path = f"{app}/new/" + "n" * (NAME_MAX + 1)

    assert await reason(guarded, {"TargetFile": path}, tool="create_file") == (
        f"path argument TargetFile has a component longer than NAME_MAX ({NAME_MAX} bytes)"
    )


async def test_dot_dot_through_a_file_is_denied(guarded: PolicyEnforcer, app: Path) -> None:
    assert await reason(guarded, {"path": f"{app}/main.py/../main.py"}) == (
        "path argument path goes through something that is not a directory"
    )


async def test_more_symlinks_than_the_kernel_follows_are_denied(
    guarded: PolicyEnforcer, app: Path
) -> None:
    (app / "here").symlink_to(".", target_is_directory=True)
    within = str(app / "/".join(["here"] * MAX_SYMLINKS) / "main.py")
    beyond = str(app / "/".join(["here"] * (MAX_SYMLINKS + 1)) / "main.py")

    assert await outcome(guarded, within) == "allowed"
    assert await reason(guarded, {"path": beyond}) == (
        f"path argument path goes through more than {MAX_SYMLINKS} symbolic links"
    )


async def test_with_capture_off_no_exported_span_quotes_a_denied_path(
    tracer_provider: TracerProvider,
    meter_provider: MeterProvider,
    span_exporter: InMemorySpanExporter,
    app: Path,
) -> None:
    secret = "sk-live-0123456789abcdef"
    path = f"{app}/../{secret}/id_rsa"
    hook = OTelHook(tracer_provider, meter_provider, capture_content=ContentCapture.NO_CONTENT)
    enforcer = policy.enforce([policy.workspace_only([app]), policy.allow_all()])

    async with HookRunner([enforcer, hook]).session() as session, session.turn("go") as turn:
        outcome = await turn.call_tool(
            ToolCall("view_file", {"AbsolutePath": path}), lambda **_: ""
        )

    spans = span_exporter.get_finished_spans()
    tool = next(s for s in spans if s.name == "execute_tool view_file")
    assert (tool.attributes or {}).get("hookscope.policy.reason") == (
        f"path argument AbsolutePath resolves outside the workspace ({app})"
    )
    exported = repr([(s.attributes, [e.attributes for e in s.events]) for s in spans])
    assert secret not in exported
    assert secret not in outcome.message


# --- rules written in Claude Code's MCP spelling ----------------------------------------------


@pytest.mark.parametrize(
    ("rule", "servers", "call", "bucket"),
    [
        ("mcp__calc__add", ["calc"], ToolCall("add", server="calc"), 0),
        ("mcp__calc", ["calc"], ToolCall("add", server="calc"), 3),
        ("mcp__Calc__add", [" calc "], ToolCall("add", server="CALC"), 0),
        # Claude Code writes corp.files as corp_files.
        ("mcp__corp_files__read", ["corp.files"], ToolCall("read", server="corp.files"), 0),
        ("mcp__corp_files", ["corp.files"], ToolCall("read", server="corp.files"), 3),
        # The longest registered reading wins: server "a__b", tool "c".
        ("mcp__a__b__c", ["a", "a__b"], ToolCall("c", server="a__b"), 0),
        # A local call named server/tool meets the server's deny, as for 'calc/add'.
        ("mcp__calc__add", ["calc"], ToolCall("calc/add"), 0),
    ],
)
async def test_a_deny_in_claudes_mcp_spelling_denies_the_servers_call(
    rule: str, servers: list[str], call: ToolCall, bucket: int
) -> None:
    enforcer = policy.enforce([policy.deny(rule), policy.allow_all()], mcp_servers=servers)

    decision = await enforcer.evaluate(call)

    assert (decision.outcome, decision.rule, decision.bucket) == ("denied", f"deny:{rule}", bucket)


async def test_an_allow_in_claudes_spelling_allows_only_that_servers_tool() -> None:
    enforcer = policy.enforce(
        [policy.deny_all(), policy.allow("mcp__calc__add")], mcp_servers=["calc", "other"]
    )

    allowed = await enforcer.evaluate(ToolCall("add", server="calc"))
    elsewhere = await enforcer.evaluate(ToolCall("add", server="other"))
    local = await enforcer.evaluate(ToolCall("add"))

    assert (allowed.outcome, elsewhere.outcome, local.outcome) == ("allowed", "denied", "denied")


@pytest.mark.parametrize("server", ["mcp__", "mcp__corp", "MCP__x"])
async def test_a_server_whose_name_starts_like_claudes_spelling_is_governed_by_its_rules(
    server: str,
) -> None:
    """'server/tool' targets are hookscope's spelling whatever the server is called (Claude's
    spelling never has a '/'): found by the fuzz test with a server named 'mcp__'."""
    enforcer = policy.enforce(
        [policy.deny_all(), *policy.allow_mcp(server), *policy.deny_mcp(server, ["rm"])],
        mcp_servers=[server],
    )

    read = await enforcer.evaluate(ToolCall("read", server=server))
    removed = await enforcer.evaluate(ToolCall("rm", server=server))
    local = await enforcer.evaluate(ToolCall("read"))

    assert (read.outcome, removed.outcome, local.outcome) == ("allowed", "denied", "denied")
    assert removed.rule == f"deny:{server}/rm"


@pytest.mark.parametrize(
    ("rule", "servers", "named"),
    [
        ("mcp__nope__add", ["calc"], "'nope'"),
        ("mcp__nope", ["calc"], "'nope'"),
        ("mcp__calc__add", [], "'calc'"),
        ("mcp__calc__", ["calc"], "'calc'"),  # names no tool
        ("mcp__corp.files__read", ["corp.files"], "'corp.files'"),  # Claude never writes '.'
    ],
)
def test_a_rule_in_claudes_spelling_naming_no_registered_server_is_rejected(
    rule: str, servers: list[str], named: str
) -> None:
    with pytest.raises(ValueError, match=f"MCP server {named}, which is not registered"):
        policy.enforce([policy.deny(rule)], mcp_servers=servers)
