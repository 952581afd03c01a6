"""Fuzz: no policy bypass and no secret in exported telemetry, for whatever hypothesis makes up.

Runs on every ``make test`` with bounded example counts (seconds in all). The families:

* tool names: a denied tool stays denied under any allow rules; with ``normalize=True`` every
  look-alike spelling of it (case, fullwidth, Cyrillic/Greek letters, invisible characters,
  accents, padding) is denied too;
* server names: ``deny_mcp`` holds for every case/whitespace spelling of the server, with the
  call's ``server`` set or with a ``server/tool`` name; a local call never borrows an MCP allow;
* paths: every path ``workspace_only`` allows really resolves inside the workspace (checked
  against the operating system's own resolution);
* captured values: secrets planted in prompts, tool arguments, tool results and responses
  never appear in any span attribute or span event exported by an ``OTelHook`` that captures
  content on spans and events;
* path matchers (issue 19): every spelling that really reaches a guarded file (symlinks,
  ``..``, ``//``, ``/proc/self/root``) is seen by a ``paths`` matcher;
* odd strings (issue 19): surrogates, NULs, BOMs and bidi marks in a tool name and any
  argument reach hook programs as valid JSON and the audit log as a written line;
* reload storms (issue 19): edits of a watched file racing ``register()`` in another thread
  lose no update, leave the runner holding exactly the watch's table, and leak no file.
"""

from __future__ import annotations

import asyncio
import json
import os
import string
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from hookscope import policy
from hookscope._names import CONFUSABLES
from hookscope.matching import HookMatcher
from hookscope.policy import PolicyEnforcer
from hookscope.runner import HookRunner
from hookscope.telemetry import ContentCapture, OTelHook
from hookscope.types import ChatResponse, PolicyDecision, ToolCall

# Bounded for every run of the suite; HOOKSCOPE_FUZZ_EXAMPLES=5000 for a longer hunt.
EXAMPLES = int(os.environ.get("HOOKSCOPE_FUZZ_EXAMPLES", "150"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None)


def decide(enforcer: PolicyEnforcer, call: ToolCall) -> PolicyDecision:
    return asyncio.run(enforcer.evaluate(call))


# --- tool names ---------------------------------------------------------------------------

# A name starting "mcp__" is no local tool's: it is Claude Code's spelling of an MCP target,
# which must name a registered server (tests/test_policy_security.py covers that spelling).
names = st.text(string.ascii_lowercase + "_", min_size=2, max_size=16).filter(
    lambda n: n.strip("_") != "" and not n.startswith("mcp__")
)
# Latin letter -> look-alikes from the documented table (Cyrillic, Greek, ...).
LOOK_ALIKES: dict[str, list[str]] = {}
for _char, _latin in CONFUSABLES.items():
    if _latin in string.ascii_lowercase and len(_char) == 1:
        LOOK_ALIKES.setdefault(_latin, []).append(_char)
INVISIBLE = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad"]


@st.composite
def look_alike(draw: st.DrawFn, name: str) -> str:
    """``name`` spelled to look the same (or nearly) to a reader."""
    out = []
    for char in name:
        how = draw(st.sampled_from(["same", "same", "upper", "fullwidth", "confusable", "accent"]))
        if how == "upper":
            char = char.upper()
        elif how == "fullwidth" and char in string.ascii_lowercase:
            char = chr(ord(char) + 0xFEE0)
        elif how == "confusable" and LOOK_ALIKES.get(char):
            char = draw(st.sampled_from(LOOK_ALIKES[char]))
        elif how == "accent" and char.isalpha():
            char = unicodedata.normalize("NFC", char + "\u0301")
        if draw(st.integers(0, 5)) == 0:
            char += draw(st.sampled_from(INVISIBLE))
        out.append(char)
    pad = st.sampled_from(["", " ", "\t", "\u00a0", "\u3000"])
    return draw(pad) + "".join(out) + draw(pad)


@FUZZ
@given(name=names, server=st.sampled_from([None, "", " "]), noise=st.lists(names, max_size=5))
def test_a_denied_tool_stays_denied_under_any_allow_rules(
    name: str, server: str | None, noise: list[str]
) -> None:
    rules = [policy.allow_all(), policy.allow(name), *map(policy.allow, noise), policy.deny(name)]

    assert decide(policy.enforce(rules), ToolCall(name, server=server)).outcome == "denied"


@FUZZ
@given(data=st.data(), name=names)
def test_with_normalize_every_look_alike_of_a_denied_tool_is_denied(
    data: st.DataObject, name: str
) -> None:
    variant = data.draw(look_alike(name))
    rules = [policy.allow_all(), policy.allow(variant.strip() or "x"), policy.deny(name)]

    decision = decide(policy.enforce(rules, normalize=True), ToolCall(variant))

    assert (decision.outcome, decision.rule) == ("denied", f"deny:{name}")


@FUZZ
@given(data=st.data(), server=names, tool=names)
def test_with_normalize_look_alike_mcp_names_are_denied(
    data: st.DataObject, server: str, tool: str
) -> None:
    enforcer = policy.enforce(
        [policy.allow_all(), policy.allow_mcp(server), policy.deny_mcp(server, [tool])],
        mcp_servers=[server],
        normalize=True,
    )
    server_variant, tool_variant = data.draw(look_alike(server)), data.draw(look_alike(tool))

    as_mcp = decide(enforcer, ToolCall(tool_variant, server=server_variant))
    as_local = decide(enforcer, ToolCall(f"{server_variant}/{tool_variant}"))

    assert as_mcp.outcome == as_local.outcome == "denied"


@st.composite
def spelled(draw: st.DrawFn, server: str) -> str:
    """``server`` in another case, padded with whitespace: the same server by DESIGN §4."""
    chars = [c.upper() if draw(st.booleans()) else c for c in server]
    pad = st.sampled_from(["", " ", "  ", "\t"])
    return draw(pad) + "".join(chars) + draw(pad)


@FUZZ
@given(data=st.data(), server=names, tool=names)
def test_deny_mcp_holds_for_every_spelling_of_the_server(
    data: st.DataObject, server: str, tool: str
) -> None:
    enforcer = policy.enforce(
        [policy.allow_all(), policy.allow_mcp(server), policy.deny_mcp(server, [tool])],
        mcp_servers=[data.draw(spelled(server))],
    )
    spelling = data.draw(spelled(server))

    as_mcp = decide(enforcer, ToolCall(tool, server=spelling))
    as_local = decide(enforcer, ToolCall(f"{spelling}/{tool}"))

    assert as_mcp.outcome == as_local.outcome == "denied"


@FUZZ
@given(data=st.data(), server=names, tool=st.text(max_size=12))
def test_a_local_call_never_borrows_an_mcp_allow(
    data: st.DataObject, server: str, tool: str
) -> None:
    enforcer = policy.enforce([policy.deny_all(), policy.allow_mcp(server)], mcp_servers=[server])

    call = ToolCall(f"{data.draw(spelled(server))}/{tool}")

    assert decide(enforcer, call).outcome == "denied"


# --- paths --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """root/ws (the workspace, with links in and out, a loop, a dangling link), root/ws2,
    root/outside/secret.txt."""
    root = tmp_path_factory.mktemp("fuzz")
    ws = root / "ws"
    (ws / "docs").mkdir(parents=True)
    (ws / "main.py").write_text("x")
    (root / "ws2").mkdir()
    (root / "outside").mkdir()
    (root / "outside" / "secret.txt").write_text("s")
    (ws / "link_out").symlink_to(root / "outside", target_is_directory=True)
    (ws / "link_in").symlink_to(ws / "docs", target_is_directory=True)
    (ws / "file_out").symlink_to(root / "outside" / "secret.txt")
    (ws / "loop").symlink_to(ws / "loop")
    (ws / "dangling").symlink_to(root / "outside" / "missing")
    (ws / "up").symlink_to("..")
    return root


COMPONENTS = [
    "..", ".", "", "docs", "main.py", "link_out", "link_in", "file_out", "loop", "dangling",
    "up", "new", "ws", "ws2", "outside", "secret.txt", "x\x00y", "a" * 300, "~", "..."
]  # fmt: skip


@settings(
    max_examples=2 * EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    start=st.sampled_from(["ws", "root", "slash", "relative"]),
    parts=st.lists(st.sampled_from(COMPONENTS), max_size=8),
    tool=st.sampled_from(["view_file", "write_to_file"]),
)
def test_every_path_the_workspace_allows_resolves_inside_it(
    tree: Path, start: str, parts: list[str], tool: str
) -> None:
    ws = str(tree / "ws")
    base = {"ws": ws, "root": str(tree), "slash": "/", "relative": "ws"}[start]
    path = os.path.join(base, *parts) if parts else base
    enforcer = policy.enforce([policy.workspace_only([ws]), policy.allow_all()])

    decision = decide(enforcer, ToolCall(tool, {"path": path}))

    if decision.outcome == "allowed":
        real = os.path.realpath(path)  # the OS's own view, for the parts that exist
        assert real == ws or real.startswith(ws + os.sep), (path, real)
        assert "\x00" not in path
        assert os.path.isabs(path)
    else:
        # The reason never quotes the path (unless the path is part of the workspace's name).
        assert path not in decision.reason or path in ws


# --- secrets in exported telemetry --------------------------------------------------------

material = st.text(string.ascii_letters + string.digits, min_size=20, max_size=28)
LONG_WORDS = ["token", "secret", "password", "api_key", "authorization", "cookie", "bearer",
              "passphrase", "access_key", "ssh_key", "signature", "session_key"]  # fmt: skip
SHORT_WORDS = ["auth", "pwd", "otp", "jwt"]
noise = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30).map(
    lambda s: s.replace("\x00", "")
)


@st.composite
def secret_key(draw: st.DrawFn) -> str:
    word = draw(st.sampled_from(LONG_WORDS + SHORT_WORDS))
    style = draw(st.sampled_from(["plain", "upper", "title", "prefixed", "camel"]))
    if style == "upper":
        return word.upper()
    if style == "title":
        return word.title().replace("_", "-")
    prefix = draw(st.sampled_from(["x", "my", "db", "user"]))
    if style == "camel":
        return prefix + word.title()
    return prefix + draw(st.sampled_from(["_", "-", "."])) + word


@st.composite
def planted(draw: st.DrawFn, secret: str) -> Any:
    """A value carrying ``secret`` in one of the ways secrets travel."""
    kind = draw(st.integers(0, 12))
    before, after = draw(noise), draw(noise)
    key = draw(secret_key())
    if kind == 0:
        return {key: secret, "n": 1}
    if kind == 1:
        return {"headers": [{"name": draw(secret_key()), "value": secret}]}
    if kind == 2:
        return [(key, secret)]
    if kind == 3:
        return f"{before} Authorization: Bearer {secret} {after}"
    if kind == 4:
        return f"{before} {key}={secret}&page=2 {after}"
    if kind == 5:
        return f"{before} postgres://app:{secret}@db:5432/x {after}"
    if kind == 6:
        return f"{before} -----BEGIN PRIVATE KEY-----\n{secret}\n-----END PRIVATE KEY----- {after}"
    if kind == 7:
        return f"{before} ghp_{secret}{'x' * 10} {after}"
    if kind == 8:
        return f"{before} AKIA{secret[:16].upper()} {after}"
    if kind == 9:
        return f"{before} xoxb-{secret} {after}"
    if kind == 10:
        return f"{before} eyJ{secret}.eyJ{secret[::-1]}.sig {after}"
    if kind == 11:
        return f'{before} {{"{key}": "{secret}"}} {after}'
    return f"{before} sk-{secret} {after}"


def exported_text(exporter: InMemorySpanExporter) -> str:
    spans = exporter.get_finished_spans()
    parts: list[Any] = []
    for span in spans:
        parts += [span.name, dict(span.attributes or {}), span.status.description]
        parts += [(event.name, dict(event.attributes or {})) for event in span.events]
    return json.dumps(parts, default=str, ensure_ascii=False)


async def run_agent(hook: OTelHook, prompt: Any, args: Any, result: Any, answer: str) -> None:
    async with HookRunner([hook]).session() as session, session.turn(prompt) as turn:
        await turn.call_tool(ToolCall("fetch", args), lambda **_: result)
        turn.respond(ChatResponse(answer))


@FUZZ
@given(data=st.data(), bodies=st.lists(material, min_size=4, max_size=4))
def test_no_planted_secret_reaches_exported_telemetry(
    data: st.DataObject, bodies: list[str]
) -> None:
    # A distinct marker in front: no secret can be found inside another.
    secrets = [f"Zq{index}Q{body}" for index, body in enumerate(bodies)]
    prompt = json.dumps(data.draw(planted(secrets[0])))
    args = {"payload": data.draw(planted(secrets[1])), "url": "https://example.com"}
    result = {"body": data.draw(planted(secrets[2]))}
    answer = str(data.draw(planted(secrets[3])))
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    hook = OTelHook(tracer_provider, meter_provider, capture_content=ContentCapture.SPAN_AND_EVENT)
    try:
        asyncio.run(run_agent(hook, prompt, args, result, answer))
    finally:
        tracer_provider.shutdown()
        meter_provider.shutdown()

    text = exported_text(exporter)
    assert "gen_ai.tool.call.arguments" in text  # content was captured
    assert [s for s in secrets if s in text] == []


# --- issue 19: paths, odd strings, reload storms -----------------------------------------


@settings(
    max_examples=2 * EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    start=st.sampled_from(["ws", "root", "slash", "double", "proc"]),
    parts=st.lists(st.sampled_from(COMPONENTS), max_size=8),
)
def test_a_paths_matcher_sees_every_spelling_of_a_guarded_path(
    tree: Path, start: str, parts: list[str]
) -> None:
    """Whatever spelling reaches a file under ``outside/`` (symlinks, ``..``, ``//``,
    ``/proc/self/root``), the matcher guarding ``outside/**`` sees the call."""
    base = {
        "ws": str(tree / "ws"),
        "root": str(tree),
        "slash": "/",
        "double": "/" + str(tree),
        "proc": "/proc/self/root" + str(tree),
    }[start]
    path = os.path.join(base, *parts) if parts else base
    guarded = str(tree / "outside")
    matcher = HookMatcher(paths=[guarded + "/**"])
    if "\x00" in path:
        return  # no tool can open it; the resolver refuses it (and so the guard sees it)
    real = os.path.realpath(path)
    if real.startswith(guarded + os.sep):  # "outside/**" is what lies below outside/
        assert matcher.matches(ToolCall("write_to_file", {"path": path})), (path, real)


odd_text = st.text(
    st.one_of(
        st.characters(codec=None, exclude_categories=()),
        st.sampled_from(["\ud800", "\udfff", "\ud83d", "\ufeff", "\u202e", "\x00", "\u2028"]),
    ),
    max_size=12,
)
odd_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), odd_text),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(odd_text, inner, max_size=3)
    ),
    max_leaves=12,
)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(name=odd_text, args=st.dictionaries(odd_text, odd_values, max_size=4))
def test_any_string_the_model_produces_reaches_hooks_and_the_audit_log(
    name: str, args: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Surrogates, BOMs, NULs and bidi marks in the tool name and every argument: the
    envelope encodes (as valid UTF-8 JSON that decodes back to the same values) and the
    audit line is written, never dropped."""
    from hookscope.builtins.audit import AuditLog
    from hookscope.context import OperationContext, SessionContext, TurnContext
    from hookscope.engine.envelope import build_envelope, encode_envelope

    call = ToolCall(name, args, id="c1")
    context = OperationContext(TurnContext(SessionContext("s"), 0), "tool", call, "c1")
    payload = encode_envelope(build_envelope("pre_tool_call", context, call))
    decoded = json.loads(payload.decode("utf-8"))  # strict UTF-8: no raw surrogate slipped in
    assert (decoded["tool_name"], decoded["tool_input"]) == (name, json.loads(json.dumps(args)))

    directory = tmp_path_factory.mktemp("audit")
    audit = AuditLog(directory / "audit.jsonl")

    async def one_call() -> None:
        async with HookRunner([audit]).session() as session, session.turn("go") as turn:
            await turn.call_tool(call, lambda **_: "done")

    asyncio.run(one_call())
    audit.close()
    # JSON Lines end at b"\n" only (str.splitlines would also split at U+0085, U+2028 …)
    (line, end) = (directory / "audit.jsonl").read_bytes().split(b"\n")
    assert end == b""
    entry = json.loads(line.decode("utf-8"))
    assert (entry["tool"], entry["outcome"], audit.failed_lines) == (name, "succeeded", 0)


@settings(
    max_examples=max(10, EXAMPLES // 10),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    edits=st.lists(st.sampled_from(["valid", "invalid", "audit", "missing"]), max_size=12),
    registers=st.integers(0, 200),
)
def test_reload_storms_with_concurrent_register_keep_runner_and_watch_in_step(
    edits: list[str], registers: int, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Edits of a watched file (valid, invalid, with an AuditLog, deleted) while another
    thread registers hooks: no register is lost, the runner holds exactly the watch's current
    table plus the registered hooks, and no file descriptor leaks."""
    import threading

    from hookscope.engine import watch
    from hookscope.hooks import Hook

    class Noop(Hook):
        def pre_tool_call(self, context: Any, call: ToolCall) -> None:
            return None

    directory = tmp_path_factory.mktemp("storm")
    path = directory / "hookscope.toml"
    texts = {
        "valid": '[[hooks.pre_tool_call]]\ntype = "command"\ncommand = "exit 0"\nname = "v{n}"\n',
        "invalid": '[[hooks.pre_tool_call]]\ntype = "shell"\n',
        "audit": '[[hooks.pre_tool_call]]\ntype = "python"\nhook = "hookscope.builtins:AuditLog"\n'
        f'options = {{{{ path = "{directory / "audit.jsonl"}" }}}}\nname = "a{{n}}"\n',
    }
    path.write_text(texts["audit"].format(n=0))
    runner = HookRunner()
    handle = watch(runner, path, interval=3600)
    fds = len(os.listdir("/proc/self/fd"))
    extra = [Noop() for _ in range(registers)]
    worker = threading.Thread(target=lambda: [runner.register(h) for h in extra])
    worker.start()
    try:
        for n, edit in enumerate(edits, 1):
            if edit == "missing":
                path.unlink(missing_ok=True)
            else:
                path.write_text(texts[edit].format(n=n))
            for _ in range(3):
                if handle.check():
                    break
    finally:
        worker.join()
        handle.stop()
    hooks = runner.hooks
    assert all(any(h is hook for h in hooks) for hook in extra)
    assert [h for h in hooks if not isinstance(h, Noop)] == list(handle.table)
    handle.table.close()
    assert len(os.listdir("/proc/self/fd")) <= fds - 1  # the last AuditLog's file too, if any
