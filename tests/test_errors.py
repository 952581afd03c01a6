"""Every exception hookscope defines derives from HookscopeError (DESIGN §9)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import hookscope
from hookscope import HookscopeError


def test_every_hookscope_exception_is_a_hookscope_error() -> None:
    defined: dict[str, type[BaseException]] = {}
    for module_info in pkgutil.walk_packages(hookscope.__path__, "hookscope."):
        module = importlib.import_module(module_info.name)
        for name, value in vars(module).items():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)
                and value.__module__.startswith("hookscope")
            ):
                defined[f"{value.__module__}.{name}"] = value
    assert len(defined) >= 15
    assert sorted(n for n, kind in defined.items() if not issubclass(kind, HookscopeError)) == []
