"""The one validating loader: hook configuration files into an immutable :class:`HookTable`.

Three sources, one shape of result:

- ``hookscope.toml`` (or any ``.toml``): ``[[hooks.<event>]]`` tables, one per hook;
- ``pyproject.toml``: the same under ``[tool.hookscope]``;
- a Claude Code settings file (``.claude/settings.json``), read as it is: its ``"hooks"``
  object (event → matcher groups → handlers), recognised by Claude Code's event names, with
  ``tool_aliases`` mapping its tool names to the agent's.

Validation is total: every problem in a file is reported at once, each naming the file, the
entry and the fix, in one :class:`ConfigError`; nothing is built from a file that has one.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from hookscope._reader import MAX_BYTES, InputError, read_json, read_toml
from hookscope._registry import close_hooks
from hookscope.engine._claude_config import (
    ClaudeLoad,
    Idle,
    is_claude_settings,
    load_claude,
    transcript_writer,
)
from hookscope.engine._reference import PythonReference, build_python_hook
from hookscope.engine._table import ConfigError, HookEntry, HookTable, Problems
from hookscope.engine.claude import ClaudeNames, parse_aliases
from hookscope.engine.command import DEFAULT_TIMEOUT, CommandHook
from hookscope.engine.envelope import TOOL_EVENTS
from hookscope.engine.http import HttpHook
from hookscope.engine.prompt import DEFAULT_PROMPT_TIMEOUT, PromptHook
from hookscope.engine.sections import (
    SECTIONS,
    apply_sections,
    load_claude_sections,
    load_sections,
)
from hookscope.hooks import EVENTS, HookEvent
from hookscope.matching import HookMatcher
from hookscope.runner import HookRunner

__all__ = ["ConfigError", "HookEntry", "HookTable", "Idle", "load"]

_TYPES: Final = ("command", "prompt", "python")
_COMMON_KEYS: Final = frozenset({"type", "name", "matcher", "timeout", "on_failure"})
_KEYS: Final[Mapping[str, frozenset[str]]] = {
    "command": _COMMON_KEYS | {"command", "args"},
    "prompt": _COMMON_KEYS | {"prompt", "model", "base_url", "api_key_env"},
    "python": _COMMON_KEYS | {"hook", "options"},
}
_MATCHER_KEYS: Final = frozenset({"tools", "paths", "tiers"})
_FAILURE_MODES: Final = ("hookscope", "claude")


def _read(path: Path, content: bytes | None = None) -> tuple[Any, str]:
    """The decoded file (``content``, when the caller read it already) and the prefix under
    which its hooks live (for entry names), by the one reader of untrusted input."""
    label = str(path)
    if path.suffix not in (".json", ".toml"):
        raise ConfigError(
            label,
            [
                "unsupported file type; use hookscope.toml, pyproject.toml or a Claude Code "
                "settings .json file"
            ],
        )
    if content is None:
        content = read_config_bytes(path)
    try:
        if path.suffix == ".json":
            return read_json(content, label), ""
        data = read_toml(content, label)
    except InputError as error:
        where = "" if error.line is None else f"line {error.line}: "
        fix = "; fix the syntax" if error.problem.startswith("invalid") else ""
        raise ConfigError(label, [f"{where}{error.problem}{fix}"]) from None
    if path.name == "pyproject.toml":
        section = data.get("tool", {}).get("hookscope")
        if section is None:
            raise ConfigError(
                label,
                ["no [tool.hookscope] table; add hooks as [[tool.hookscope.hooks.pre_tool_call]]"],
            )
        return section, "tool.hookscope."
    return data, ""


def read_config_bytes(path: Path) -> bytes:
    """A configuration file's bytes, at most :data:`~hookscope._reader.MAX_BYTES` of them.

    Raises:
        ConfigError: the file is missing, unreadable or too large.
    """
    label = str(path)
    try:
        with path.open("rb") as file:
            content = file.read(MAX_BYTES + 1)
    except FileNotFoundError:
        raise ConfigError(label, ["file not found; check the path"]) from None
    except OSError as error:
        raise ConfigError(label, [f"cannot read it ({error}); check its permissions"]) from None
    if len(content) > MAX_BYTES:
        raise ConfigError(label, [f"is larger than {MAX_BYTES} bytes; hookscope reads no more"])
    return content


def _project_dir(path: Path | None) -> Path:
    if path is None:
        return Path.cwd()
    directory = path.resolve().parent
    if directory.name == ".claude":
        return directory.parent
    if _plugin_root(path) is not None:  # a plugin's hooks serve the project Claude runs in
        return Path.cwd()
    return directory


def _plugin_root(path: Path | None) -> str | None:
    """A plugin's root for its ``hooks/hooks.json`` (``${CLAUDE_PLUGIN_ROOT}``)."""
    if path is None or path.name != "hooks.json" or path.resolve().parent.name != "hooks":
        return None
    return str(path.resolve().parent.parent)


def load(
    source: str | os.PathLike[str] | Mapping[str, Any],
    *,
    tool_aliases: Mapping[str, Any] | None = None,
    failure: str = "hookscope",
    transcript: bool = True,
    project_dir: str | os.PathLike[str] | None = None,
    call_references: bool = True,
    content: bytes | None = None,
) -> HookTable:
    """Load and validate a hook configuration.

    Args:
        source: A ``.toml`` file (``hookscope.toml``; ``pyproject.toml`` reads
            ``[tool.hookscope]``), a Claude Code settings ``.json`` file, or a mapping in the
            TOML file's shape (``{"hooks": {"pre_tool_call": [...]}}``).
        tool_aliases: For Claude Code settings: their tool names → the agent's
            (``{"Bash": "run_command"}``, or ``{"Bash": {"tool": "run_command", "args":
            {"command": "CommandLine"}}}`` with the argument names); matchers match the
            Claude names, and the hook programs see the names and arguments they know.
        failure: ``"hookscope"`` (a failing hook denies: fail closed) or ``"claude"``
            (Claude Code's semantics: only exit 2 blocks; other failures are logged, counted
            and let through). In hookscope.toml: a top-level ``failure = "claude"``.
        transcript: Keep the session transcript Claude Code hooks read (``transcript_path``);
            with ``False`` the field names an empty file.
        project_dir: The project the hooks serve (``cwd``, ``CLAUDE_PROJECT_DIR``); by default
            the config file's (the directory above ``.claude/``), else the current directory.
        call_references: ``False`` resolves Python references (imports the module, finds
            the name, binds the options to its signature) without calling them: the table
            holds :class:`~hookscope.engine._reference.PythonReference` placeholders where
            the hooks would be (``hookscope hooks check``).
        content: The file's bytes, when the caller read them already (``watch()`` reads a
            file once per check); ``source`` is then only its name.

    Returns:
        The hooks, in file order.

    Raises:
        ConfigError: the file is missing, unreadable or invalid; it lists every problem.
    """
    path = None if isinstance(source, Mapping) else Path(source)
    label = "<mapping>" if path is None else str(path)
    data, prefix = (source, "") if path is None else _read(path, content)
    problems = Problems()
    entries: list[HookEntry] = []
    claude = path is not None and path.suffix == ".json"
    sections = (*SECTIONS, "permissions") if claude else SECTIONS
    if isinstance(data, Mapping) and "hooks" not in data and any(k in data for k in sections):
        data = {**data, "hooks": {}}  # policy or permissions only
    if not isinstance(data, Mapping) or not isinstance(data.get("hooks"), Mapping):
        if isinstance(data, Mapping) and data.get("disableAllHooks") is True:
            return HookTable((), None if path is None else label)
        raise ConfigError(
            label, [f'no "{prefix}hooks" table; add one, e.g. [[{prefix}hooks.pre_tool_call]]']
        )
    hooks: Mapping[str, Any] = data["hooks"]
    if is_claude_settings(hooks) or (path is not None and path.suffix == ".json"):
        if failure not in _FAILURE_MODES:
            problems.add("failure", f'must be "hookscope" or "claude", got {failure!r}')
        return _load_claude_file(
            data, path, label, problems, failure, transcript, tool_aliases, project_dir
        )
    extra = sorted(set(data) - {"hooks", "failure", *SECTIONS})
    if extra:
        problems.add(
            prefix or "top level",
            f"unknown key(s) {extra}; only 'hooks', 'failure', 'policy' and 'prices' are read",
        )
    if tool_aliases:
        problems.add("tool_aliases", "apply only to Claude Code settings files; drop them")
    failure = data.get("failure", failure)
    if failure not in _FAILURE_MODES:
        problems.add(f"{prefix}failure", f'must be "hookscope" or "claude", got {failure!r}')
    root = Path(project_dir).resolve() if project_dir is not None else _project_dir(path)
    context = _Context(root, {}, problems, failure == "claude", call_references)
    for event, hook, entry in load_sections(data, prefix, root, problems.add):
        entries.append(HookEntry(event, hook, entry))
    _load_hookscope(hooks, prefix, context, entries)
    if problems.found:
        close_hooks(context.built)  # what an invalid file opened (an AuditLog's file) closes
        raise ConfigError(label, problems.found)
    if call_references:  # applied, not only checked
        apply_sections(data)
    return HookTable(entries, None if path is None else label, built=context.built)


def _load_claude_file(
    data: Mapping[str, Any],
    path: Path | None,
    label: str,
    problems: Problems,
    failure: str,
    transcript: bool,
    tool_aliases: Mapping[str, Any] | None,
    project_dir: str | os.PathLike[str] | None,
) -> HookTable:
    try:
        names = ClaudeNames(parse_aliases(tool_aliases))
    except ValueError as error:
        problems.add("tool_aliases", str(error))
        names = ClaudeNames()
    if data.get("disableAllHooks") is True:
        return HookTable((), None if path is None else label)
    root = Path(project_dir).resolve() if project_dir is not None else _project_dir(path)
    context = _Context(root, dict(names.names), problems, failure == "claude")

    def build(
        event: HookEvent, item: Mapping[str, Any], where: str, extra: dict[str, Any]
    ) -> object | None:
        if item.get("type") == "http":
            hook = _http(event, item, where, context, extra)
        else:
            hook = _handler(event, item, where, context, item_matcher=False, extra=extra)
        if hook is not None:
            _check_registration(hook, where, context)
        return hook

    load = ClaudeLoad(
        project_dir=root,
        names=names,
        failure=failure,
        transcript=transcript,
        plugin_root=_plugin_root(path),
        add_problem=problems.add,
        build=build,
    )
    # Claude Code's permissions: one PolicyEnforcer, listed first (DESIGN §11).
    permissions = load_claude_sections(data, root, tool_aliases, problems.add)
    load_claude(data["hooks"], load)
    if problems.found:
        close_hooks(context.built)
        raise ConfigError(label, problems.found)
    entries = [HookEntry(event, hook, entry) for event, hook, entry in permissions + load.hooks]
    if entries and transcript:
        entries.insert(0, HookEntry("pre_turn", transcript_writer(load), "transcript"))
    return HookTable(
        entries, None if path is None else label, load.idle, load.notes, built=context.built
    )


@dataclass
class _Context:
    project_dir: Path
    tool_names: dict[str, str]  # agent tool name → Claude Code's
    problems: Problems
    fail_open: bool = False  # failure="claude": a hook's failure lets the event through
    call_references: bool = True
    #: Hooks this load constructed (closed again when the file turns out invalid).
    built: list[object] = field(default_factory=list)


def _load_hookscope(
    hooks: Mapping[str, Any], prefix: str, context: _Context, entries: list[HookEntry]
) -> None:
    for event, items in hooks.items():
        where = f"{prefix}hooks.{event}"
        if event not in EVENTS:
            context.problems.add(where, f"unknown event {event!r}; use one of {', '.join(EVENTS)}")
            continue
        if not isinstance(items, list):
            context.problems.add(where, f"must be a list of tables ([[{where}]]), got {items!r}")
            continue
        for index, item in enumerate(items):
            hook = _handler(event, item, f"{where}[{index}]", context, item_matcher=True)
            if hook is not None:
                entries.append(HookEntry(event, hook, f"{where}[{index}]"))


def _handler(
    event: HookEvent,
    item: Any,
    where: str,
    context: _Context,
    *,
    item_matcher: bool,
    extra: Mapping[str, Any] | None = None,
) -> object | None:
    """Build one hook from its entry, or record why not and return ``None``."""
    problems = context.problems
    if not isinstance(item, Mapping):
        problems.add(where, f"must be a table of hook settings, got {item!r}")
        return None
    kind = item.get("type")
    if kind not in _TYPES:
        problems.add(where, f"type must be one of {', '.join(_TYPES)}, got {kind!r}")
        return None
    allowed = _KEYS[kind] if item_matcher else _KEYS[kind] - {"matcher"}
    unknown = sorted(set(item) - allowed)
    before = len(problems.found)
    if unknown:
        problems.add(
            where, f"unknown key(s) {unknown} for a {kind} hook; allowed: {sorted(allowed)}"
        )
    options = _options(event, item, where, context, kind)
    if len(problems.found) > before:
        return None
    if extra:
        options.update(extra)
        if kind != "command":  # only command hooks take Claude Code's run options
            options.pop("claude", None)
    if kind == "command":
        hook: object = _command(event, item, where, context, options)
    elif kind == "prompt":
        hook = _prompt(event, item, where, context, options)
    else:
        hook = build_python_hook(
            event,
            item,
            where,
            context.problems.add,
            context.project_dir,
            options,
            context.built,
            call=context.call_references,
        )
    if hook is not None and kind != "python":
        context.built.append(hook)
    if hook is not None and item_matcher:
        _check_registration(hook, where, context)
    return hook


def _options(
    event: HookEvent, item: Mapping[str, Any], where: str, context: _Context, kind: str
) -> dict[str, Any]:
    problems = context.problems
    options: dict[str, Any] = {}
    if "name" in item:
        if isinstance(item["name"], str) and item["name"].strip():
            options["name"] = item["name"]
        else:
            problems.add(where, f"name must be a non-empty string, got {item['name']!r}")
    default = {"command": DEFAULT_TIMEOUT, "prompt": DEFAULT_PROMPT_TIMEOUT}.get(kind)
    timeout = item.get("timeout", default)
    if timeout is not None and (
        isinstance(timeout, bool)
        or not isinstance(timeout, (int, float))
        or not math.isfinite(timeout)
        or timeout <= 0
    ):
        problems.add(where, f"timeout must be a positive number of seconds, got {timeout!r}")
    elif "timeout" in item or default is not None:
        options["timeout"] = None if timeout is None else float(timeout)
    on_failure = item.get("on_failure", "allow" if context.fail_open else "deny")
    if on_failure not in ("deny", "allow"):
        problems.add(
            where, f'on_failure must be "deny" (fail closed) or "allow", got {on_failure!r}'
        )
    elif "on_failure" in item or kind != "python" or context.fail_open:
        options["fail_open"] = on_failure == "allow"
    if "matcher" in item:
        matcher = _matcher(event, item["matcher"], where, context)
        if matcher is not None:
            options["matcher"] = matcher
    return options


def _matcher(event: HookEvent, value: Any, where: str, context: _Context) -> HookMatcher | None:
    problems = context.problems
    if event not in TOOL_EVENTS:
        problems.add(
            where,
            f"a matcher applies to tool events ({', '.join(sorted(TOOL_EVENTS))}); remove it "
            f"from this {event} hook",
        )
        return None
    if isinstance(value, str):
        value = {"tools": value}
    if not isinstance(value, Mapping):
        problems.add(where, f"matcher must be a tools pattern or a table, got {value!r}")
        return None
    unknown = sorted(set(value) - _MATCHER_KEYS)
    if unknown:
        problems.add(where, f"unknown matcher key(s) {unknown}; allowed: paths, tiers, tools")
        return None
    for key in ("tools", "paths", "tiers"):
        given = value.get(key)
        if given is not None and not (
            isinstance(given, str)
            or (isinstance(given, list) and all(isinstance(v, str) for v in given))
        ):
            problems.add(where, f"matcher {key} must be a string or a list of strings")
            return None
    try:
        return HookMatcher(
            tools=value.get("tools"), paths=value.get("paths"), tiers=value.get("tiers")
        )
    except ValueError as error:
        problems.add(where, str(error))
        return None


def _command(
    event: HookEvent,
    item: Mapping[str, Any],
    where: str,
    context: _Context,
    options: dict[str, Any],
) -> object | None:
    command, args = item.get("command"), item.get("args")
    if (command is None) == (args is None):
        context.problems.add(
            where,
            'give exactly one of command = "..." (run by /bin/sh) and args = ["prog", ...] '
            "(run without a shell)",
        )
        return None
    try:
        return CommandHook(
            event,
            command=command,
            args=args,
            project_dir=context.project_dir,
            tool_names=context.tool_names,
            **options,
        )
    except ValueError as error:
        context.problems.add(where, str(error))
        return None


def _http(
    event: HookEvent,
    item: Mapping[str, Any],
    where: str,
    context: _Context,
    extra: Mapping[str, Any],
) -> object | None:
    problems = context.problems
    before = len(problems.found)
    options = _options(event, item, where, context, "command")
    url, headers = item.get("url"), item.get("headers")
    allowed = item.get("allowedEnvVars", [])
    if not isinstance(allowed, list) or not all(isinstance(v, str) for v in allowed):
        problems.add(where, f"allowedEnvVars must be a list of variable names, got {allowed!r}")
    if len(problems.found) > before:
        return None
    try:
        hook = HttpHook(
            event,
            url=url if isinstance(url, str) else "",
            headers=headers,
            allowed_env_vars=allowed,
            project_dir=context.project_dir,
            **options,
            **extra,
        )
        context.built.append(hook)
        return hook
    except ValueError as error:
        problems.add(where, str(error))
        return None


def _prompt(
    event: HookEvent,
    item: Mapping[str, Any],
    where: str,
    context: _Context,
    options: dict[str, Any],
) -> object | None:
    missing = [key for key in ("prompt", "model", "base_url") if key not in item]
    if missing:
        context.problems.add(
            where,
            f"a prompt hook needs {', '.join(missing)}: the template, the model and an "
            "OpenAI-compatible base_url such as https://api.openai.com/v1",
        )
        return None
    api_key_env = item.get("api_key_env")
    if api_key_env is not None and not (isinstance(api_key_env, str) and api_key_env):
        context.problems.add(
            where, f"api_key_env must name an environment variable, got {api_key_env!r}"
        )
        return None
    try:
        return PromptHook(
            event,
            prompt=item["prompt"],
            model=item["model"],
            base_url=item["base_url"],
            api_key_env=api_key_env,
            tool_names=context.tool_names,
            **options,
        )
    except (ValueError, AttributeError) as error:
        context.problems.add(where, str(error))
        return None


def _check_registration(hook: object, where: str, context: _Context) -> None:
    """Let the runner's own validation speak now, not when the table is applied."""
    if isinstance(hook, PythonReference):  # not called, so nothing to register yet
        return
    try:
        HookRunner([hook])
    except (TypeError, ValueError) as error:
        context.problems.add(where, str(error))
