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
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, final, overload

from hookscope._reader import MAX_BYTES, InputError, read_json, read_toml
from hookscope._registry import close_hooks
from hookscope.engine._reference import PythonReference, build_python_hook
from hookscope.engine.command import DEFAULT_TIMEOUT, CommandHook
from hookscope.engine.envelope import CLAUDE_EVENTS, TOOL_EVENTS
from hookscope.engine.prompt import DEFAULT_PROMPT_TIMEOUT, PromptHook
from hookscope.hooks import EVENTS, HookEvent
from hookscope.matching import HookMatcher
from hookscope.runner import HookRunner
from hookscope.types import HookscopeError

__all__ = ["ConfigError", "HookEntry", "HookTable", "load"]

_TYPES: Final = ("command", "prompt", "python")
_COMMON_KEYS: Final = frozenset({"type", "name", "matcher", "timeout", "on_failure"})
_KEYS: Final[Mapping[str, frozenset[str]]] = {
    "command": _COMMON_KEYS | {"command", "args"},
    "prompt": _COMMON_KEYS | {"prompt", "model", "base_url", "api_key_env"},
    "python": _COMMON_KEYS | {"hook", "options"},
}
_MATCHER_KEYS: Final = frozenset({"tools", "paths", "tiers"})
# What Claude Code's matchers on non-tool events are matched against, as hookscope runs them.
_CLAUDE_SOURCES: Final[Mapping[str, str]] = {"SessionStart": "startup", "PreCompact": "auto"}
_CLAUDE_NAMES: Final = {ours: theirs for theirs, ours in CLAUDE_EVENTS.items()}
_NAMES: Final = re.compile(r"[\w\-]+(?:\|[\w\-]+)*")


class ConfigError(HookscopeError, ValueError):
    """A hook configuration failed validation; nothing from it was applied.

    Attributes:
        source: The file (or ``<mapping>``) that failed.
        problems: Every problem found, each ``"<entry>: <what is wrong>; <fix>"``.
    """

    def __init__(self, source: str, problems: Sequence[str]) -> None:
        self.source = source
        self.problems = tuple(problems)
        listed = "\n".join(f"  {source}: {problem}" for problem in self.problems)
        count = len(self.problems)
        super().__init__(f"{count} problem{'s' * (count != 1)} in {source}:\n{listed}")


@dataclass(frozen=True, slots=True)
class HookEntry:
    """One configured hook: the event it was listed under, the hook, and where it came from."""

    event: HookEvent
    hook: object
    entry: str


@final
class HookTable(Sequence[object]):
    """An immutable sequence of configured hooks, in file order.

    ``HookRunner(table)``, ``runner.register(h) for h in table`` and
    ``runner.replace(old_table, new_table)`` all work. :attr:`entries` keeps the event each
    hook was listed under (``hookscope hooks check`` prints it). :meth:`close` closes the
    hooks the table built (``watch()`` calls it on the table a reload replaces).
    """

    __slots__ = ("_built", "entries", "source")

    def __init__(
        self,
        entries: Sequence[HookEntry] = (),
        source: str | None = None,
        *,
        built: Iterable[object] = (),
    ) -> None:
        self.entries: tuple[HookEntry, ...] = tuple(entries)
        #: The file the table was loaded from; ``None`` for a mapping.
        self.source = source
        self._built = tuple(built)

    def close(self) -> None:
        """Close (``close()``, where a hook has one) every hook this table built: command and
        prompt hooks and instantiated classes, never an object a reference names as it is
        (it may serve elsewhere)."""
        close_hooks(self._built)

    @overload
    def __getitem__(self, index: int) -> object: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[object, ...]: ...
    def __getitem__(self, index: int | slice) -> object:
        if isinstance(index, slice):
            return tuple(entry.hook for entry in self.entries[index])
        return self.entries[index].hook

    def __len__(self) -> int:
        return len(self.entries)

    def __iter__(self) -> Iterator[object]:
        return (entry.hook for entry in self.entries)

    def __repr__(self) -> str:
        return f"HookTable({len(self.entries)} hooks from {self.source or '<mapping>'})"


class _Problems:
    """Collects every problem of one file instead of stopping at the first."""

    def __init__(self) -> None:
        self.found: list[str] = []

    def add(self, entry: str, problem: str) -> None:
        self.found.append(f"{entry}: {problem}")


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
    return directory.parent if directory.name == ".claude" else directory


def load(
    source: str | os.PathLike[str] | Mapping[str, Any],
    *,
    tool_aliases: Mapping[str, str] | None = None,
    call_references: bool = True,
    content: bytes | None = None,
) -> HookTable:
    """Load and validate a hook configuration.

    Args:
        source: A ``.toml`` file (``hookscope.toml``; ``pyproject.toml`` reads
            ``[tool.hookscope]``), a Claude Code settings ``.json`` file, or a mapping in the
            TOML file's shape (``{"hooks": {"pre_tool_call": [...]}}``).
        tool_aliases: For Claude Code settings: their tool names → the agent's
            (``{"Bash": "run_command"}``); matchers are translated, and the hook programs
            still see the names they know.
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
    problems = _Problems()
    entries: list[HookEntry] = []
    if not isinstance(data, Mapping) or not isinstance(data.get("hooks"), Mapping):
        raise ConfigError(
            label, [f'no "{prefix}hooks" table; add one, e.g. [[{prefix}hooks.pre_tool_call]]']
        )
    hooks: Mapping[str, Any] = data["hooks"]
    context = _Context(_project_dir(path), dict(tool_aliases or {}), problems, call_references)
    if any(name in CLAUDE_EVENTS for name in hooks):
        _load_claude(hooks, context, entries)
    else:
        extra = sorted(set(data) - {"hooks"})
        if extra:
            problems.add(prefix or "top level", f"unknown key(s) {extra}; only 'hooks' is read")
        if tool_aliases:
            problems.add("tool_aliases", "apply only to Claude Code settings files; drop them")
        _load_hookscope(hooks, prefix, context, entries)
    if problems.found:
        close_hooks(context.built)  # what an invalid file opened (an AuditLog's file) closes
        raise ConfigError(label, problems.found)
    return HookTable(entries, None if path is None else label, built=context.built)


@dataclass
class _Context:
    project_dir: Path
    aliases: dict[str, str]
    problems: _Problems
    call_references: bool = True
    #: Hooks this load constructed (closed again when the file turns out invalid).
    built: list[object] = field(default_factory=list)

    @property
    def tool_names(self) -> dict[str, str]:
        return {ours: theirs for theirs, ours in self.aliases.items()}


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


def _load_claude(hooks: Mapping[str, Any], context: _Context, entries: list[HookEntry]) -> None:
    for name, groups in hooks.items():
        where = f"hooks.{name}"
        if name in EVENTS:  # read as Claude Code settings because other keys are Claude's
            context.problems.add(
                where,
                f"hookscope's event names cannot be mixed with Claude Code's in one file; "
                f"write {_CLAUDE_NAMES.get(name, name)!r} here, or move this to hookscope.toml",
            )
            continue
        if name not in CLAUDE_EVENTS:
            context.problems.add(
                where,
                f"event {name!r} is not supported; hookscope runs "
                f"{', '.join(CLAUDE_EVENTS)}: remove the entry or move it to another file",
            )
            continue
        event = CLAUDE_EVENTS[name]
        if not isinstance(groups, list):
            context.problems.add(where, f"must be a list of matcher groups, got {groups!r}")
            continue
        for g, group in enumerate(groups):
            here = f"{where}[{g}]"
            if not isinstance(group, Mapping):
                context.problems.add(here, 'must be an object {"matcher": ..., "hooks": [...]}')
                continue
            unknown = sorted(set(group) - {"matcher", "hooks"})
            if unknown:
                context.problems.add(here, f"unknown key(s) {unknown}; expected matcher, hooks")
            handlers = group.get("hooks")
            if not isinstance(handlers, list) or not handlers:
                context.problems.add(here, '"hooks" must be a non-empty list of handlers')
                continue
            keep, matcher = _claude_matcher(name, event, group.get("matcher"), here, context)
            for h, handler in enumerate(handlers):
                entry = f"{here}.hooks[{h}]"
                if isinstance(handler, Mapping) and handler.get("type") == "python":
                    context.problems.add(entry, 'type must be "command" or "prompt" here')
                    continue
                hook = _handler(event, handler, entry, context, item_matcher=False)
                if hook is not None and keep:
                    hook.matcher = matcher  # type: ignore[attr-defined]
                    _check_registration(hook, entry, context)
                    entries.append(HookEntry(event, hook, entry))


def _claude_matcher(
    name: str, event: HookEvent, value: Any, where: str, context: _Context
) -> tuple[bool, HookMatcher | None]:
    """(whether the group's hooks ever run here, the matcher for them)."""
    if value is None or (isinstance(value, str) and value.strip() in ("", "*")):
        return True, None
    if not isinstance(value, str):
        context.problems.add(where, f"matcher must be a string, got {value!r}")
        return False, None
    if event not in TOOL_EVENTS:
        if name not in _CLAUDE_SOURCES:
            context.problems.add(where, f"a matcher has no effect on {name}; remove it")
            return False, None
        try:
            return bool(re.fullmatch(value, _CLAUDE_SOURCES[name])), None
        except re.error as error:
            context.problems.add(where, f"matcher {value!r} is not a valid regex ({error})")
            return False, None
    if context.aliases and _NAMES.fullmatch(value):
        value = "|".join(context.aliases.get(part, part) for part in value.split("|"))
    try:
        return True, HookMatcher(tools=value)
    except ValueError as error:
        context.problems.add(where, str(error))
        return False, None


def _handler(
    event: HookEvent, item: Any, where: str, context: _Context, *, item_matcher: bool
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
    on_failure = item.get("on_failure", "deny")
    if on_failure not in ("deny", "allow"):
        problems.add(
            where, f'on_failure must be "deny" (fail closed) or "allow", got {on_failure!r}'
        )
    elif "on_failure" in item or kind != "python":
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
