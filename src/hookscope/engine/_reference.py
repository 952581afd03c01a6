"""Python hooks by reference: ``hook = "package.module:Name"`` with ``options``.

A class is instantiated with the options as keyword arguments; any other object (an instance,
a decorated function) is used as it is. The project directory is importable while the
reference is resolved, after (never shadowing) installed packages.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from hookscope.hooks import EVENTS, CategoryHook, Hook, HookEvent
from hookscope.runner import DispatchObserver

__all__ = ["build_python_hook"]


def build_python_hook(
    event: HookEvent,
    item: Mapping[str, Any],
    where: str,
    add_problem: Callable[[str, str], None],
    project_dir: Path,
    options: Mapping[str, Any],
) -> object | None:
    """The hook an entry references, with ``options`` set on it; ``None`` after a problem."""
    reference, kwargs = item.get("hook"), item.get("options", {})
    module_name, colon, attr = (
        reference.partition(":") if isinstance(reference, str) else ("", "", "")
    )
    if not (module_name and colon and attr):
        add_problem(where, f'hook must read "package.module:Name", got {reference!r}')
        return None
    if not isinstance(kwargs, Mapping):
        add_problem(where, f"options must be a table of keyword arguments, got {kwargs!r}")
        return None
    target = _import(module_name, attr, where, add_problem, project_dir)
    if target is None:
        return None
    hook: object
    if isinstance(target, type):
        try:
            hook = target(**kwargs)
        except Exception as error:  # a constructor's own validation: say what it said
            add_problem(where, f"{reference}(**options) failed: {type(error).__name__}: {error}")
            return None
    elif kwargs:
        add_problem(where, f"{reference} is not a class; options apply only to classes")
        return None
    else:
        hook = target
    handles = _events_of(hook)
    if handles is not None and event not in handles:
        add_problem(
            where,
            f"{reference} handles {', '.join(handles) or 'no event'}, not {event}; list it "
            f"under hooks.{handles[0] if handles else '<its event>'}",
        )
        return None
    for key, value in options.items():
        setattr(hook, key, value)
    return hook


def _import(
    module_name: str,
    attr: str,
    where: str,
    add_problem: Callable[[str, str], None],
    project_dir: Path,
) -> Any:
    root = str(project_dir)
    added = root not in sys.path
    if added:  # the project's own modules are importable, never shadowing installed ones
        sys.path.append(root)
    try:
        target: Any = importlib.import_module(module_name)
    except Exception as error:
        add_problem(
            where,
            f"cannot import {module_name!r} ({type(error).__name__}: {error}); check the module "
            "path and that it is installed or in the project directory",
        )
        return None
    finally:
        if added:
            sys.path.remove(root)
    for part in attr.split("."):
        if not hasattr(target, part):
            add_problem(where, f"module {module_name!r} has no attribute {attr!r}")
            return None
        target = getattr(target, part)
    return target


def _events_of(hook: object) -> list[str] | None:
    """The events a Python hook serves; ``None`` for a pure observer (any listing is fine)."""
    if isinstance(hook, Hook):
        return [e for e in EVENTS if getattr(type(hook), e) is not getattr(Hook, e)]
    if isinstance(hook, CategoryHook):
        return [hook.event]
    if isinstance(hook, DispatchObserver):
        return None
    return []
