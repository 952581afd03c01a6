"""Personal data (DESIGN §11): e-mail, phone, Luhn-checked cards and IBANs are redacted by
default in captured content and in AuditLog lines; look-alikes that fail the checks stay."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from hookscope import HookRunner, ToolCall
from hookscope.builtins import AuditLog
from hookscope.redaction import redact_json, redact_pii, redact_text
from hookscope.telemetry.content import ContentCapture
from hookscope.testing import recording


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("write to bob.smith+x@example.co.uk now", "write to [REDACTED EMAIL] now"),
        ("card 4111 1111 1111 1111, exp 12/29", "card [REDACTED CARD], exp 12/29"),
        ("amex 3782-822463-10005", "amex [REDACTED CARD]"),
        ("pay DE89 3704 0044 0532 0130 00 today", "pay [REDACTED IBAN] today"),
        ("iban GB82WEST12345698765432", "iban [REDACTED IBAN]"),
        ("call +44 20 7946 0958 or (212) 555-0198", "call [REDACTED PHONE] or [REDACTED PHONE]"),
        # look-alikes that fail a check, and numbers that are no personal data
        ("card 4111 1111 1111 1112", "card 4111 1111 1111 1112"),  # Luhn fails
        ("iban GB82WEST12345698765433", "iban GB82WEST12345698765433"),  # mod 97 fails
        ("epoch ms 1732612345678", "epoch ms 1732612345678"),  # no card network starts with 1
        ("on 2024-01-15 12:30 at 10.0.0.1, v1.2.3, port 8080", None),
        ("uuid 550e8400-e29b-41d4-a716-446655440000", None),
        ("total 123,456.78 of 1700000000", None),
    ],
)
def test_pii_patterns(text: str, expected: str | None) -> None:
    assert redact_pii(text) == (text if expected is None else expected)
    assert redact_text(text) == (text if expected is None else expected)


def test_json_copies_redact_pii_by_default() -> None:
    value = {"to": "ana@example.org", "body": {"lines": ["card 5555 5555 5555 4444"]}, "n": 5}
    assert redact_json(value) == {
        "to": "[REDACTED EMAIL]",
        "body": {"lines": ["card [REDACTED CARD]"]},
        "n": 5,
    }
    assert redact_json(value, pii=False) == value


def test_captured_content_and_audit_lines_carry_no_pii(tmp_path: Path) -> None:
    audit = AuditLog(tmp_path / "audit.jsonl")
    call = ToolCall("send_mail", {"to": "ana@example.org", "body": "IBAN DE89370400440532013000"})
    with recording(capture_content=ContentCapture.SPAN_ONLY) as rec:

        async def run() -> None:
            runner = HookRunner([rec.hook, audit])
            async with runner.session() as session, session.turn("mail ana@example.org") as turn:
                await turn.call_tool(call, lambda to, body: f"sent to {to}")

        asyncio.run(run())
        audit.close()
        captured = json.dumps([dict(span.attributes or {}) for span in rec.spans])
    assert "ana@example.org" not in captured
    assert "DE89370400440532013000" not in captured
    assert "[REDACTED EMAIL]" in captured
    assert "[REDACTED IBAN]" in captured
    (line,) = (tmp_path / "audit.jsonl").read_text().splitlines()
    assert json.loads(line)["args"] == {"to": "[REDACTED EMAIL]", "body": "IBAN [REDACTED IBAN]"}
