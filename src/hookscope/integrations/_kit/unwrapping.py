"""Undo a ``wrapt.wrap_function_wrapper(module, "Owner.attribute", …)`` by the same names.

Wrapping takes a module and a dotted attribute path; ``unwrap`` wants the owning object. Every
instrumentation that wraps by name unwraps by name, so the path is resolved here, once.
"""

from __future__ import annotations

import importlib
from typing import Any

from opentelemetry.instrumentation.utils import unwrap

__all__ = ["unwrap_path"]


def unwrap_path(module: str, path: str) -> None:
    """Restore ``module``'s ``path`` (``"Class.method"`` or ``"function"``) as it was wrapped.

    Raises:
        ImportError: ``module`` cannot be imported.
        AttributeError: an owner on ``path`` is missing.
    """
    owner_path, _, attribute = path.rpartition(".")
    owner: Any = importlib.import_module(module)
    for part in filter(None, owner_path.split(".")):
        owner = getattr(owner, part)
    unwrap(owner, attribute)
