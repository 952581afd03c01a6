"""Python hooks by reference: ``hook = "package.module:Name"`` with ``options``.

A class is instantiated with the options as keyword arguments; any other object (an instance,
a decorated function) is used as it is. The project directory is importable while the
reference is resolved, after (never shadowing) installed packages.
"""

from __future__ import annotations

import importlib
import inspect
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from hookscope.hooks import EVENTS, CategoryHook, Hook, HookEvent
from hookscope.runner import DispatchObserver

__all__ = ["PythonReference", "build_python_hook"]


class PythonReference:
    """Where a Python hook would stand, resolved but not called (``hookscope hooks check``).

    Attributes:
        reference: ``"package.module:Name"`` as written.
        target: The object it names (a class, never instantiated here).
        name: The hook's ``name`` option, else the referenced name.
    """

    hook_type = "python"

    def __init__(self, reference: str, target: object, options: Mapping[str, Any]) -> None:
        self.reference = reference
        self.target = target
        self.name: str = reference.rpartition(":")[2]
        self.timeout: float | None = None
        self.fail_open = False
        self.matcher: Any = None
        for key, value in options.items():
            setattr(self, key, value)

    def __repr__(self) -> str:
        return f"<PythonReference {self.reference}>"


def build_python_hook(
    event: HookEvent,
    item: Mapping[str, Any],
    where: str,
    add_problem: Callable[[str, str], None],
    project_dir: Path,
    options: Mapping[str, Any],
    built: list[object] | None = None,
    *,
    call: bool = True,
) -> object | None:
    """The hook an entry references, with ``options`` set on it; ``None`` after a problem.

    An instance made here (of a referenced class) is appended to ``built``, so the caller
    can close it again (even when it is then rejected). With ``call=False`` nothing is
    called: a class's options are bound to its signature, its events read from the class,
    and a :class:`PythonReference` stands for the hook.
    """
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
    if not call:
        return _resolved(event, str(reference), target, kwargs, where, add_problem, options)
    if isinstance(target, type):
        try:
            hook = target(**kwargs)
        except Exception as error:  # a constructor's own validation: say what it said
            add_problem(where, f"{reference}(**options) failed: {type(error).__name__}: {error}")
            return None
        if built is not None:
            built.append(hook)
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


def _resolved(
    event: HookEvent,
    reference: str,
    target: Any,
    kwargs: Mapping[str, Any],
    where: str,
    add_problem: Callable[[str, str], None],
    options: Mapping[str, Any],
) -> PythonReference | None:
    """Check a reference as :func:`build_python_hook` would, calling nothing."""
    if isinstance(target, type):
        try:
            inspect.signature(target).bind(**kwargs)
        except TypeError as error:
            add_problem(where, f"{reference}(**options) would fail: {error}")
            return None
        except ValueError:  # no signature to read (a builtin): the options stay unchecked
            pass
        handles = _class_events(target)
    elif kwargs:
        add_problem(where, f"{reference} is not a class; options apply only to classes")
        return None
    else:
        handles = _events_of(target)
    if handles is not None and event not in handles:
        add_problem(
            where,
            f"{reference} handles {', '.join(handles) or 'no event'}, not {event}; list it "
            f"under hooks.{handles[0] if handles else '<its event>'}",
        )
        return None
    return PythonReference(reference, target, options)


def _class_events(cls: type) -> list[str] | None:
    """The events instances of ``cls`` would serve, read from the class."""
    if issubclass(cls, Hook):
        return [e for e in EVENTS if getattr(cls, e) is not getattr(Hook, e)]
    if issubclass(cls, CategoryHook):
        event = getattr(cls, "event", None)
        return [event] if isinstance(event, str) else None  # set per instance: unknown here
    if issubclass(cls, DispatchObserver):
        return None
    return []  # as load() finds for an instance of it: no event it handles
