"""Opt-in capture of prompts, tool arguments, results and responses.

Content is not recorded unless ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` says
where: ``SPAN_ONLY`` (span attributes), ``EVENT_ONLY`` (the matching span events) or
``SPAN_AND_EVENT``. ``NO_CONTENT`` or an unset variable keeps it off; any other value is a
configuration error, never a silent default. Captured values are JSON, truncated, and redacted
by :mod:`hookscope.telemetry.redaction` (secret-looking keys at any depth, secrets inside
strings).
"""

from __future__ import annotations

import enum
import json
import os
from collections.abc import Mapping
from typing import Any, Final

from hookscope.telemetry.redaction import DEFAULT, REDACTED, Redactor, redact

__all__ = [
    "CAPTURE_ENV",
    "DEFAULT_MAX_LENGTH",
    "REDACTED",
    "ContentCapture",
    "capture_from_env",
    "redact",
    "render",
]

CAPTURE_ENV: Final = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
#: Characters kept of a captured value; longer values end with an ellipsis marker.
DEFAULT_MAX_LENGTH: Final = 2048
# Searched beyond the cut, so a secret straddling it is still recognised whole.
_REDACTION_MARGIN: Final = 1024


class ContentCapture(enum.Enum):
    """Where captured content goes."""

    NO_CONTENT = "NO_CONTENT"
    SPAN_ONLY = "SPAN_ONLY"
    EVENT_ONLY = "EVENT_ONLY"
    SPAN_AND_EVENT = "SPAN_AND_EVENT"

    @property
    def on_spans(self) -> bool:
        """Whether content goes into span attributes."""
        return self in (ContentCapture.SPAN_ONLY, ContentCapture.SPAN_AND_EVENT)

    @property
    def on_events(self) -> bool:
        """Whether content goes into span event attributes."""
        return self in (ContentCapture.EVENT_ONLY, ContentCapture.SPAN_AND_EVENT)


def capture_from_env(environ: Mapping[str, str] | None = None) -> ContentCapture:
    """Read the capture mode from ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``.

    Raises:
        ValueError: the variable holds something other than the four modes.
    """
    raw = (os.environ if environ is None else environ).get(CAPTURE_ENV, "").strip()
    if not raw:
        return ContentCapture.NO_CONTENT
    try:
        return ContentCapture(raw.upper())
    except ValueError:
        modes = ", ".join(mode.value for mode in ContentCapture)
        raise ValueError(
            f"{CAPTURE_ENV}={raw!r} is not a capture mode; use one of {modes} "
            "(or unset it to record no content)"
        ) from None


def render(value: Any, max_length: int = DEFAULT_MAX_LENGTH, redactor: Redactor = DEFAULT) -> str:
    """``value`` redacted by ``redactor``, as JSON, truncated. Never raises.

    Objects JSON cannot hold are reduced to their fields (dataclasses, pydantic models, plain
    objects) so secret-looking fields are redacted too; anything else shows only its type, never
    its ``repr`` (which could carry secrets).
    """
    limit, unseen = max_length + _REDACTION_MARGIN, 0
    try:
        if isinstance(value, str):
            unseen = max(0, len(value) - limit)  # cut before redaction; still counted
            text = redactor.redact_text(value, limit)
        else:
            text = json.dumps(redactor.redact(_plain(value, 0), limit))
    except (TypeError, ValueError, RecursionError):
        text = f"[unrenderable {type(value).__name__}]"
    if len(text) > max_length:
        return f"{text[:max_length]}…[truncated {len(text) - max_length + unseen} chars]"
    return text


_MAX_DEPTH: Final = 20


def _plain(value: Any, depth: int) -> Any:
    """``value`` as JSON-able data: str keys, lists, fields of objects."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if depth > _MAX_DEPTH:
        return "[…]"
    depth += 1
    if isinstance(value, Mapping):
        return {str(key): _plain(item, depth) for key, item in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_plain(item, depth) for item in value]
    fields = getattr(type(value), "__dataclass_fields__", None)
    if fields is not None:  # hookscope's own values (ChatResponse, Question …) and others
        return {name: _plain(getattr(value, name), depth) for name in fields}
    dump = getattr(value, "model_dump", None)  # pydantic models
    if callable(dump):
        return _plain(dump(), depth)
    if hasattr(value, "__dict__"):
        return {str(k): _plain(v, depth) for k, v in vars(value).items() if not k.startswith("_")}
    return f"<{type(value).__name__}>"
