"""Content capture: what a captured value looks like, and what never appears in it."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from hookscope.telemetry.content import ContentCapture, capture_from_env, render


@dataclasses.dataclass
class Creds:
    user: str
    api_key: str


class Session:
    def __init__(self) -> None:
        self.cookie = "c=1"
        self.host = "h"
        self._private = "p"


class Opaque:
    __slots__ = ("secret",)

    def __init__(self) -> None:
        self.secret = "s3"

    def __repr__(self) -> str:
        return "Opaque(secret='s3')"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"password": "hunter2", "n": 1}, '{"password": "[REDACTED]", "n": 1}'),
        (
            [("Authorization", "Bearer x"), ("Accept", "json")],
            '[["Authorization", "[REDACTED]"], ["Accept", "json"]]',
        ),
        ({"login": Creds("ada", "k-1")}, '{"login": {"user": "ada", "api_key": "[REDACTED]"}}'),
        (Session(), '{"cookie": "[REDACTED]", "host": "h"}'),
        (Opaque(), '"<Opaque>"'),
        ({b"raw": 1, 2: "two"}, """{"b'raw'": 1, "2": "two"}"""),
        (
            {"nested": [{"x": {"secret_token": "t"}}]},
            '{"nested": [{"x": {"secret_token": "[REDACTED]"}}]}',
        ),
        ("plain text", "plain text"),
    ],
    ids=[
        "secret-key",
        "header-pairs",
        "dataclass-field",
        "object-attribute",
        "opaque-object",
        "non-str-keys",
        "nested",
        "string",
    ],
)
def test_render_redacts_and_never_leaks_a_repr(value: Any, expected: str) -> None:
    assert render(value) == expected


def test_render_never_raises() -> None:
    looped: list[Any] = []
    looped.append(looped)
    assert render(looped).startswith("[[[[")
    assert render(float("nan")) == "NaN"


def test_capture_mode_values(monkeypatch: pytest.MonkeyPatch) -> None:
    assert capture_from_env({}) is ContentCapture.NO_CONTENT
    assert (
        capture_from_env({"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "span_only"})
        is ContentCapture.SPAN_ONLY
    )
    assert (
        capture_from_env({"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": " NO_CONTENT "})
        is ContentCapture.NO_CONTENT
    )
