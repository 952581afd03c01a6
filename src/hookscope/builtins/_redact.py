"""Arguments as JSON-able data with secrets redacted, for the audit log.

The rules are the project's (:mod:`hookscope.telemetry.redaction`, importable without the
OpenTelemetry SDK): which keys are secret-looking, and — on request — which strings hold a
secret whatever their key. This module only walks the value and makes it JSON-able: mappings
become dicts with str keys, tuples lists, and any other object shows only its type, never its
``repr`` (which could carry a secret).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from hookscope.telemetry.redaction import REDACTED, is_secret_key, redact_text

__all__ = ["REDACTED", "redact"]

_MAX_DEPTH: Final = 20


def redact(value: Any, *, values: bool = False) -> Any:
    """``value`` as JSON-able data, every value under a secret-looking key replaced.

    Args:
        value: Tool arguments (any nesting of mappings, sequences and scalars).
        values: Also search every string (keys included) for secrets — token formats,
            ``Bearer`` headers, passwords in URLs, private keys — as the telemetry's content
            capture does. Thorough, and tens of microseconds per call.
    """
    return _walk(value, 0, redact_text if values else None)


def _walk(value: Any, depth: int, text: Callable[[str], str] | None) -> Any:
    if isinstance(value, str):
        return value if text is None else text(value)
    if value is None or isinstance(value, (int, float, bool)):
        return value
    if depth >= _MAX_DEPTH:
        return "[…]"
    depth += 1
    if isinstance(value, Mapping):
        result: dict[str, Any] = {}
        for key, item in value.items():
            name = key if isinstance(key, str) else str(key)
            secret = is_secret_key(name)
            if text is not None:
                name = text(name)
            result[name] = REDACTED if secret else _walk(item, depth, text)
        return result
    if isinstance(value, (list, tuple)):
        if len(value) == 2 and isinstance(value[0], str) and is_secret_key(value[0]):
            return [value[0] if text is None else text(value[0]), REDACTED]
        return [_walk(item, depth, text) for item in value]
    return f"<{type(value).__name__}>"
