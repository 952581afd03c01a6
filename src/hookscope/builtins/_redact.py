"""Redaction of values under secret-looking keys, as DESIGN §5 specifies for telemetry.

The telemetry package's own helper (``hookscope.telemetry.content.redact``) cannot be imported
without the OpenTelemetry SDK (the package ``__init__`` loads it), and the builtins must import
without it; this is the same rule, importable from the core. One import in ``audit.py`` uses it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

__all__ = ["REDACTED", "redact"]

REDACTED: Final = "[REDACTED]"
_SECRET_KEY: Final = re.compile(
    r"token|secret|passw(or)?d|api[_-]?key|authorization|cookie|credential|private[_-]?key",
    re.IGNORECASE,
)
_MAX_DEPTH: Final = 20
#: Keys already classified. Argument names repeat call after call, so most lookups are one
#: dict hit instead of a regex search; bounded, so odd keys cannot grow it without limit.
_SECRET_KEYS: dict[str, bool] = {}
_MAX_CACHED_KEYS: Final = 4096


def _is_secret(key: str) -> bool:
    secret = _SECRET_KEYS.get(key)
    if secret is None:
        secret = _SECRET_KEY.search(key) is not None
        if len(_SECRET_KEYS) < _MAX_CACHED_KEYS:
            _SECRET_KEYS[key] = secret
    return secret


def redact(value: Any, depth: int = 0) -> Any:
    """``value`` as JSON-able data with every value under a secret-looking key replaced.

    Mappings become dicts (keys as str), lists and tuples lists, ``(key, value)`` pairs with a
    secret-looking key keep the key only; any other object shows only its type, never its
    ``repr`` (which could carry a secret).
    """
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if depth >= _MAX_DEPTH:
        return "[…]"
    depth += 1
    if isinstance(value, Mapping):
        return {
            str(key): REDACTED if _is_secret(str(key)) else redact(item, depth)
            for key, item in value.items()
        }
    if isinstance(value, (list, tuple)):
        if len(value) == 2 and isinstance(value[0], str) and _is_secret(value[0]):
            return [value[0], REDACTED]
        return [redact(item, depth) for item in value]
    return f"<{type(value).__name__}>"
