"""Loading a Claude Code settings file (or a plugin's ``hooks/hooks.json``) as it is.

Every Claude Code event and handler key loads (DESIGN §7a). Hooks whose event or type has a
hookscope counterpart run there; the rest load, never fire, and are listed with the reason
(``HookTable.idle``, printed by ``hookscope hooks check``). Only keys and events Claude Code
itself does not know are errors. All the hooks one file lists for one hookscope event form a
parallel group: they run concurrently and their verdicts merge, as in Claude Code.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final

from hookscope.engine.claude import (
    CLAUDE_EVENTS,
    HANDLER_KEYS,
    IDLE_EVENTS,
    IDLE_TYPES,
    TYPE_KEYS,
    ClaudeNames,
    ClaudeOptions,
    if_condition,
    value_matches,
)
from hookscope.engine.envelope import TOOL_EVENTS
from hookscope.engine.transcript import TranscriptWriter
from hookscope.hooks import EVENTS, HookEvent
from hookscope.matching import HookMatcher

__all__ = ["ClaudeLoad", "Idle", "load_claude"]

#: What hookscope sends in the field a Claude Code matcher on a non-tool event is matched
#: against, per (Claude event, hookscope event): a matcher that does not match it never fires.
_SOURCES: Final[Mapping[tuple[str, str], str]] = {
    ("SessionStart", "on_session_start"): "startup",
    ("SessionStart", "on_compaction"): "compact",
    ("SessionEnd", "on_session_end"): "other",
    ("PreCompact", "pre_compaction"): "auto",
    ("PostCompact", "on_compaction"): "auto",
    ("Notification", "on_interaction"): "permission_prompt",
}
#: Events whose matcher is checked when the hook runs (a tool name, a subagent's name).
_RUNTIME_MATCHED: Final = frozenset({"PermissionRequest", "SubagentStart", "SubagentStop"})
#: Claude Code ignores matchers on these events.
_NO_MATCHER: Final = frozenset({"UserPromptSubmit", "Stop"})
_PLUGIN_ROOT: Final = "${CLAUDE_PLUGIN_ROOT}"


@dataclass(frozen=True, slots=True)
class Idle:
    """A hook that loaded but never fires here, and why."""

    event: str
    entry: str
    reason: str


@dataclass
class ClaudeLoad:
    """What one settings file asks for, as the generic loader hands it over."""

    project_dir: Path
    names: ClaudeNames
    failure: str
    transcript: bool
    plugin_root: str | None
    add_problem: Callable[[str, str], None]
    build: Callable[[HookEvent, Mapping[str, Any], str, dict[str, Any]], object | None]
    hooks: list[tuple[HookEvent, object, str]] = field(default_factory=list)
    idle: list[Idle] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def is_claude_settings(hooks: Mapping[str, Any]) -> bool:
    """Whether a ``hooks`` object uses Claude Code's event names."""
    return any(name in CLAUDE_EVENTS or name in IDLE_EVENTS for name in hooks)


def load_claude(hooks: Mapping[str, Any], load: ClaudeLoad) -> None:
    """Read a settings file's ``hooks`` object into ``load``."""
    groups_by_event: dict[HookEvent, object] = {}
    for name, groups in hooks.items():
        where = f"hooks.{name}"
        if name in EVENTS:
            load.add_problem(
                where,
                "hookscope's event names cannot be mixed with Claude Code's in one file; use "
                "Claude Code's name here, or move this to hookscope.toml",
            )
            continue
        if name not in CLAUDE_EVENTS and name not in IDLE_EVENTS:
            known = ", ".join([*CLAUDE_EVENTS, *IDLE_EVENTS])
            load.add_problem(where, f"unknown event {name!r}; Claude Code's events are {known}")
            continue
        if not isinstance(groups, list):
            load.add_problem(where, f"must be a list of matcher groups, got {groups!r}")
            continue
        for g, group in enumerate(groups):
            _group(name, group, f"{where}[{g}]", load, groups_by_event)


def _group(
    name: str,
    group: Any,
    here: str,
    load: ClaudeLoad,
    groups_by_event: dict[HookEvent, object],
) -> None:
    if not isinstance(group, Mapping):
        load.add_problem(here, 'must be an object {"matcher": ..., "hooks": [...]}')
        return
    unknown = sorted(set(group) - {"matcher", "hooks", "description"})
    if unknown:
        load.add_problem(here, f"unknown key(s) {unknown}; expected matcher, hooks")
    handlers = group.get("hooks")
    if not isinstance(handlers, list) or not handlers:
        load.add_problem(here, '"hooks" must be a non-empty list of handlers')
        return
    matcher = group.get("matcher")
    if matcher is not None and not isinstance(matcher, str):
        load.add_problem(here, f"matcher must be a string, got {matcher!r}")
        return
    pattern = "" if matcher is None or matcher.strip() in ("", "*") else matcher
    if pattern:
        try:
            re.compile(pattern)
        except re.error as error:
            load.add_problem(here, f"matcher {pattern!r} is not a valid regex ({error})")
            return
    if name in IDLE_EVENTS:
        for h, handler in enumerate(handlers):
            _check_keys(handler, f"{here}.hooks[{h}]", load)
            load.idle.append(Idle(name, f"{here}.hooks[{h}]", IDLE_EVENTS[name]))
        return
    if pattern and name in _NO_MATCHER:
        load.notes.append(f"{here}: Claude Code ignores a matcher on {name}; so does hookscope")
        pattern = ""
    targets: list[tuple[HookEvent, str | None]] = [(CLAUDE_EVENTS[name], None)]
    if name == "SessionStart":  # Claude Code runs SessionStart again after a compaction
        targets = [("on_session_start", "startup"), ("on_compaction", "compact")]
    for h, handler in enumerate(handlers):
        entry = f"{here}.hooks[{h}]"
        if not _check_keys(handler, entry, load):
            continue
        kind = handler.get("type")
        if kind in IDLE_TYPES or (kind == "prompt" and "base_url" not in handler):
            reason = IDLE_TYPES.get(
                str(kind),
                "a Claude Code prompt hook asks Claude's own model; add base_url and model "
                "(an OpenAI-compatible endpoint) to run it in hookscope",
            )
            load.idle.append(Idle(name, entry, reason))
            continue
        for event, source in targets:
            if pattern and event not in TOOL_EVENTS and name not in _RUNTIME_MATCHED:
                value = _SOURCES.get((name, event), "")
                if not value_matches(pattern, value):
                    load.idle.append(
                        Idle(
                            name,
                            entry,
                            f"matcher {pattern!r} never matches {value!r}, what hookscope "
                            f"sends in {name}" + (f" on {event}" if name == "SessionStart" else ""),
                        )
                    )
                    continue
            hook = _handler(name, event, source, handler, entry, pattern, load)
            if hook is None:
                continue
            hook.parallel_group = groups_by_event.setdefault(event, object())  # type: ignore[attr-defined]
            load.hooks.append((event, hook, entry))


def _check_keys(handler: Any, entry: str, load: ClaudeLoad) -> bool:
    if not isinstance(handler, Mapping):
        load.add_problem(entry, f"must be an object with a type, got {handler!r}")
        return False
    kind = handler.get("type")
    if kind == "python":
        load.add_problem(entry, 'type "python" belongs in hookscope.toml; here use "command"')
        return False
    if kind not in TYPE_KEYS:
        load.add_problem(entry, f"type must be one of {', '.join(TYPE_KEYS)}, got {kind!r}")
        return False
    allowed = HANDLER_KEYS | TYPE_KEYS[str(kind)]
    unknown = sorted(set(handler) - allowed)
    if unknown:
        load.add_problem(
            entry, f"unknown key(s) {unknown} for a {kind} hook; allowed: {sorted(allowed)}"
        )
        return False
    return True


def _substitute(value: Any, root: str | None) -> Any:
    if root is None:
        return value
    if isinstance(value, str):
        return value.replace(_PLUGIN_ROOT, root)
    if isinstance(value, list):
        return [_substitute(item, root) for item in value]
    return value


def _handler(
    name: str,
    event: HookEvent,
    source: str | None,
    handler: Mapping[str, Any],
    entry: str,
    pattern: str,
    load: ClaudeLoad,
) -> object | None:
    options: dict[str, Any] = {}
    item = dict(handler)
    condition = None
    if "if" in item:
        rule = item.pop("if")
        try:
            condition = if_condition(rule) if isinstance(rule, str) else None
        except ValueError as error:
            load.add_problem(entry, str(error))
            return None
        if condition is None:
            load.add_problem(entry, f"if must be a permission rule string, got {rule!r}")
            return None
    for flag in ("once", "async", "asyncRewake"):
        if flag in item and not isinstance(item[flag], bool):
            load.add_problem(entry, f"{flag} must be true or false, got {item[flag]!r}")
            return None
    claude = ClaudeOptions(
        event=name,
        names=load.names,
        source=source if event == "on_compaction" else None,
        condition=condition,
        once=bool(item.pop("once", False)),
        background=bool(item.pop("async", False) or item.get("asyncRewake", False)),
        rewake=bool(item.pop("asyncRewake", False)),
        rewake_message=str(item.pop("rewakeMessage", "") or ""),
        plugin_root=load.plugin_root,
        transcript=load.transcript,
    )
    for display in ("statusMessage", "description", "rewakeSummary", "holdsTools", "cloud"):
        item.pop(display, None)  # display text and Claude-internal switches: nothing to run
    shell = item.pop("shell", "bash")
    if shell not in ("bash", None):
        load.idle.append(Idle(name, entry, f"shell {shell!r}: hookscope runs /bin/sh only"))
        return None
    on_failure = item.pop("onFailure", None)
    if on_failure not in (None, "continue", "block"):
        load.add_problem(entry, f'onFailure must be "continue" or "block", got {on_failure!r}')
        return None
    if "on_failure" not in item:
        # hookscope fails closed; failure="claude" lets failures through as Claude Code does;
        # a hook's own onFailure wins either way.
        fails_open = load.failure == "claude" if on_failure is None else on_failure == "continue"
        item["on_failure"] = "allow" if fails_open else "deny"
    if event in TOOL_EVENTS and pattern:
        options["matcher"] = HookMatcher.claude(pattern, load.names.names)
    elif event == "on_interaction" and pattern and name == "PermissionRequest":
        # PermissionRequest's matcher is a tool name; on_interaction carries no matcher, so
        # the hook checks it when it runs.
        claude = replace(claude, tool_matcher=HookMatcher.claude(pattern, load.names.names))
    elif pattern and name in ("SubagentStart", "SubagentStop"):
        claude = replace(claude, agent_matcher=pattern)
    item["command"] = _substitute(item.get("command"), load.plugin_root)
    if item.get("args") is not None:
        item["args"] = _substitute(item["args"], load.plugin_root)
    else:
        item.pop("args", None)
    if item["command"] is None:
        item.pop("command")
    options["claude"] = claude
    return load.build(event, item, entry, options)


def transcript_writer(load: ClaudeLoad) -> TranscriptWriter:
    """The writer that keeps the transcript the loaded hooks read."""
    return TranscriptWriter(load.project_dir, load.names)
