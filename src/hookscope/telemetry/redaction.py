"""The redaction rules under their first name: :mod:`hookscope.redaction` re-exported.

The rules live in the core (the audit log and the ready-made hooks use them without the
OpenTelemetry SDK); this module keeps ``hookscope.telemetry.redaction`` imports working.
"""

from __future__ import annotations

from hookscope.redaction import (
    DEFAULT,
    REDACTED,
    SECRET_KEY_SHORT_WORDS,
    SECRET_KEY_WORDS,
    TOKEN_PATTERNS,
    Redactor,
    add_redaction_pattern,
    is_secret_key,
    mask_url,
    redact,
    redact_json,
    redact_text,
)

__all__ = [
    "DEFAULT",
    "REDACTED",
    "SECRET_KEY_SHORT_WORDS",
    "SECRET_KEY_WORDS",
    "TOKEN_PATTERNS",
    "Redactor",
    "add_redaction_pattern",
    "is_secret_key",
    "mask_url",
    "redact",
    "redact_json",
    "redact_text",
]
