"""The tables of a hookscope configuration file besides ``hooks``: each becomes hooks too.

``[policy]`` compiles into one ``PolicyEnforcer`` (:mod:`hookscope.engine.policy_config`),
listed first, as a ``pre_tool_call`` hook, so ``watch()`` reloads it with the file's hooks.
A Claude Code settings file's ``permissions`` do the same
(:mod:`hookscope.engine.claude_permissions`). ``[prices]`` is validated with the file and, once
the whole file is, installed as the process-wide price table (:mod:`hookscope.telemetry.cost`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

from hookscope.engine.claude_permissions import compile_permissions
from hookscope.engine.policy_config import compile_policy
from hookscope.hooks import HookEvent
from hookscope.pricing import parse_prices, set_prices

__all__ = ["SECTIONS", "apply_sections", "load_claude_sections", "load_sections"]

#: The top-level tables read here.
SECTIONS: Final = ("policy", "prices")


def load_sections(
    data: Mapping[str, Any], prefix: str, project_dir: Path, report: Callable[[str, str], None]
) -> list[tuple[HookEvent, object, str]]:
    """(event, hook, entry name) for every section ``data`` has; problems go to ``report``."""
    built: list[tuple[HookEvent, object, str]] = []
    if "policy" in data:
        where = f"{prefix}policy"
        enforcer = compile_policy(data["policy"], where, project_dir, report)
        if enforcer is not None:
            built.append(("pre_tool_call", enforcer, where))
    if "prices" in data:
        for problem in parse_prices(data["prices"], f"{prefix}prices")[1]:
            entry, _, text = problem.partition(": ")
            report(entry, text)
    return built


def apply_sections(data: Any) -> None:
    """Install what a validated file sets process-wide: its ``[prices]`` (as
    ``configure(prices=...)`` does), so a reload through ``watch()`` updates them too."""
    if isinstance(data, Mapping) and "prices" in data:
        set_prices(parse_prices(data["prices"])[0])


def load_claude_sections(
    data: Mapping[str, Any],
    project_dir: Path,
    tool_aliases: Mapping[str, Any] | None,
    report: Callable[[str, str], None],
) -> list[tuple[HookEvent, object, str]]:
    """The hooks a Claude Code settings file's ``permissions`` compile into."""
    if "permissions" not in data:
        return []
    enforcer = compile_permissions(
        data["permissions"], "permissions", project_dir, tool_aliases, report
    )
    return [] if enforcer is None else [("pre_tool_call", enforcer, "permissions")]
