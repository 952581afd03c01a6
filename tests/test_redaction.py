"""Redaction: which keys and which strings are secrets, and the ways to add patterns."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hookscope import redaction, telemetry
from hookscope.redaction import (
    REDACTED,
    Redactor,
    add_redaction_pattern,
    is_secret_key,
    mask_url,
    redact,
    redact_text,
)
from hookscope.telemetry.content import render

PROBE_KEYS = [
    "token", "secret", "password", "api_key", "authorization", "cookie", "bearer", "auth",
    "pwd", "passphrase", "access_key", "jwt", "ssh_key", "signature", "session_key", "otp",
]  # fmt: skip


@pytest.fixture
def undo() -> Iterator[list[Any]]:
    """Collects the removers of process-wide patterns a test adds, and calls them after it."""
    removers: list[Any] = []
    yield removers
    for remove in removers:
        remove()


# --- keys ---------------------------------------------------------------------------------


@pytest.mark.parametrize("key", PROBE_KEYS)
def test_every_key_of_the_probe_is_secret(key: str) -> None:
    assert redact({key: "v4lue"}) == {key: REDACTED}


@pytest.mark.parametrize(
    "key",
    [
        "X-Api-Key", "apiKey", "API_KEY", "AWS_SECRET_ACCESS_KEY", "accessKey", "Proxy-Authorization",
        "set-cookie", "x-auth", "authToken", "basicAuth", "db_pwd", "otp_code", "sessionKey",
        "private_key", "client_secret", "refresh_token", "X-Amz-Signature", "jwtToken", "oauth",
        "SSH-KEY", "Pass",
    ],
)  # fmt: skip
def test_secret_keys_are_found_whatever_their_case_and_separators(key: str) -> None:
    assert is_secret_key(key)


@pytest.mark.parametrize("key", ["author", "footprint", "path", "url", "name", "passage", "n"])
def test_ordinary_keys_stay_readable(key: str) -> None:
    assert not is_secret_key(key)


def test_a_name_value_header_list_hides_the_secret_values_only() -> None:
    headers = [
        {"name": "Authorization", "value": "Basic dXNlcjpwdw=="},
        {"name": "Accept", "value": "json"},
        {"key": "X-Api-Key", "value": "k-123"},
    ]

    assert redact({"headers": headers}) == {
        "headers": [
            {"name": "Authorization", "value": REDACTED},
            {"name": "Accept", "value": "json"},
            {"key": "X-Api-Key", "value": REDACTED},
        ]
    }


def test_header_pairs_hide_their_values() -> None:
    assert redact([("Cookie", "sid=1"), ("Accept", "json")]) == [
        ["Cookie", REDACTED],
        ["Accept", "json"],
    ]


# --- values -------------------------------------------------------------------------------

GITHUB = "ghp_" + "A1b2C3d4E5" * 4
AWS_ID = "AKIA" + "ABCDEFGH12345678"
SLACK = "xoxb-1234567890-abcdefghij"
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJlLXBhcnQ"
OPENAI = "sk-proj-" + "Z9y8X7w6V5" * 3
PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA1\nabc\n-----END RSA PRIVATE KEY-----"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Authorization: Bearer abc.def-123", f"Authorization: {REDACTED}"),
        ("curl -H 'authorization: Basic dXNlcjpwdw=='", f"curl -H 'authorization: {REDACTED}'"),
        ("use bearer eyabcdefgh12345 now", f"use bearer {REDACTED} now"),
        ("Cookie: sid=1; theme=dark", f"Cookie: {REDACTED}"),
        ("postgres://app:hunter2@db:5432/x", f"postgres://app:{REDACTED}@db:5432/x"),
        ("redis://:p@ss@cache/0", f"redis://:{REDACTED}@cache/0"),
        ("https://host/path?access_token=abc&page=2", f"https://host/path?access_token={REDACTED}&page=2"),
        ("API_KEY=abc123\nDEBUG=1", f"API_KEY={REDACTED}\nDEBUG=1"),
        ('{"password": "a b c", "n": 1}', f'{{"password": "{REDACTED}", "n": 1}}'),
        ("psql --password hunter2 -h db", f"psql --password {REDACTED} -h db"),
        (f"key:\n{PEM}\nend", "key:\n[REDACTED PRIVATE KEY]\nend"),
        ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk", "[REDACTED PRIVATE KEY]"),
        (f"token {GITHUB} used", f"token {REDACTED} used"),
        (f"id={AWS_ID}", f"id={REDACTED}"),
        (f"slack {SLACK}", f"slack {REDACTED}"),
        (f"jwt {JWT}", f"jwt {REDACTED}"),
        (f"openai {OPENAI}", f"openai {REDACTED}"),
        ("task-1234567890123456789012345 stays", "task-1234567890123456789012345 stays"),
        ("https://example.com:8080/a?page=2", "https://example.com:8080/a?page=2"),
        ("author: Ada; note: hello", "author: Ada; note: hello"),
    ],
)  # fmt: skip
def test_secrets_inside_strings_are_redacted(text: str, expected: str) -> None:
    assert redact_text(text) == expected


def test_tool_results_are_redacted_like_arguments() -> None:
    result = {"stdout": f"export GITHUB_TOKEN={GITHUB}\n", "files": [{"content": PEM}]}

    assert render(result) == (
        f'{{"stdout": "export GITHUB_TOKEN={REDACTED}\\n", '
        '"files": [{"content": "[REDACTED PRIVATE KEY]"}]}'
    )


def test_a_secret_straddling_the_truncation_point_is_still_redacted() -> None:
    text = "x" * 2040 + " " + GITHUB

    rendered = render(text)

    assert GITHUB[:8] not in rendered
    assert rendered == "x" * 2040 + " [REDACT…[truncated 3 chars]"


def test_a_huge_string_is_searched_only_up_to_the_cut() -> None:
    assert Redactor().redact_text("a" * 10 + GITHUB, limit=12) == "a" * 10 + "gh"


# --- adding patterns ----------------------------------------------------------------------


def test_a_process_wide_pattern_applies_to_every_redactor_until_removed(undo: list[Any]) -> None:
    undo.append(add_redaction_pattern(r"EMP-\d{6}"))
    mine = Redactor()

    assert render({"who": "EMP-123456"}) == f'{{"who": "{REDACTED}"}}'
    assert mine.redact_text("id EMP-654321") == f"id {REDACTED}"
    undo.pop()()
    assert mine.redact_text("id EMP-654321") == "id EMP-654321"


def test_a_text_searched_before_a_pattern_was_added_is_searched_again(undo: list[Any]) -> None:
    """Short texts' redactions are remembered; a pattern added or removed since applies."""
    mine = Redactor()
    text = "denied: id EMP-246810 may not run this"
    assert mine.redact_text(text) == text  # searched, remembered
    assert mine.redact_text(text) == text  # answered from memory
    undo.append(add_redaction_pattern(r"EMP-\d{6}"))
    assert mine.redact_text(text) == f"denied: id {REDACTED} may not run this"
    assert redact_text(text, 256) == f"denied: id {REDACTED} may not run this"
    undo.pop()()
    assert mine.redact_text(text) == text


def test_remembered_texts_stay_within_their_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(redaction, "_REMEMBERED_CHARS", 100)
    mine = Redactor()
    texts = [f"token={i:08d}abcdef and some words" for i in range(50)]
    for _ in range(2):
        assert [mine.redact_text(t) for t in texts] == [
            f"token={REDACTED} and some words" for _ in texts
        ]
    held = mine._remembered[1]
    assert 0 < sum(map(len, held)) <= 100
    assert mine.redact_text("x" * 5000) == "x" * 5000  # too long to remember: searched each time
    assert "x" * 5000 not in mine._remembered[1]


@settings(max_examples=300, deadline=None)
@given(
    text=st.one_of(
        st.text(max_size=300),
        st.builds(
            lambda a, b: f"{a} token={b}", st.text(max_size=40), st.text("abcdef0123", min_size=8)
        ),
    ),
    limit=st.one_of(st.none(), st.integers(min_value=0, max_value=300)),
)
def test_a_remembered_redaction_is_the_search_s(text: str, limit: int | None) -> None:
    mine = Redactor(extra_patterns=[r"case-\d+"])
    fresh = Redactor(extra_patterns=[r"case-\d+"])
    first = mine.redact_text(text, limit)
    assert mine.redact_text(text, limit) == first  # the second answer may be remembered
    cut = text if limit is None else text[:limit]
    assert first == fresh._search(cut, redaction._global)


def test_hookscope_telemetry_exports_add_redaction_pattern() -> None:
    assert telemetry.add_redaction_pattern is add_redaction_pattern


def test_groups_limit_what_a_pattern_redacts(undo: list[Any]) -> None:
    undo.append(add_redaction_pattern(re.compile(r"badge (\d+) of (\w+)")))

    assert redact_text("badge 42 of ada!") == f"badge {REDACTED} of {REDACTED}!"


def test_per_redactor_patterns_apply_only_to_that_redactor() -> None:
    mine = Redactor(extra_patterns=[r"case-\d+"])

    assert render({"ref": "case-77"}, redactor=mine) == f'{{"ref": "{REDACTED}"}}'
    assert render({"ref": "case-77"}) == '{"ref": "case-77"}'


@pytest.mark.parametrize(
    ("pattern", "error", "message"),
    [
        ("(", ValueError, "is not a valid regex"),
        ("a*", ValueError, "matches the empty string"),
        (re.compile(b"x"), TypeError, "a compiled str pattern"),
        (42, TypeError, "a regex string or a compiled str pattern"),
    ],
)
def test_bad_patterns_are_rejected_with_the_fix(pattern: Any, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        add_redaction_pattern(pattern)
    with pytest.raises(error, match=message):
        Redactor(extra_patterns=[pattern])


# --- URLs ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://user:pa55@collector:4318/v1", f"https://user:{REDACTED}@collector:4318/v1"),
        ("user:pa55@collector:4317", f"user:{REDACTED}@collector:4317"),
        ("https://collector:4318/v1?api_key=k1", f"https://collector:4318/v1?api_key={REDACTED}"),
        (f"https://{GITHUB}@github.com/o/r.git", f"https://{REDACTED}@github.com/o/r.git"),
        ("http://localhost:4318", "http://localhost:4318"),
    ],
)
def test_mask_url_hides_credentials(url: str, expected: str) -> None:
    assert mask_url(url) == expected


def test_mask_url_never_raises() -> None:
    assert mask_url(None) == "<NoneType>"  # type: ignore[arg-type]


def test_redaction_imports_without_the_opentelemetry_sdk() -> None:
    script = textwrap.dedent(
        """
        import sys

        class Block:
            def find_spec(self, name, path=None, target=None):
                if name == "opentelemetry.sdk" or name.startswith("opentelemetry.sdk."):
                    raise ImportError(f"blocked: {name}")
                return None

        sys.meta_path.insert(0, Block())
        from hookscope.redaction import redact
        from hookscope.telemetry import add_redaction_pattern
        from hookscope.telemetry.redaction import mask_url
        print(redact({"token": "t"}), sorted(m for m in sys.modules if "opentelemetry" in m))
        """
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "{'token': '[REDACTED]'} []"


def test_the_old_names_are_the_core_module_s_names() -> None:
    import hookscope.redaction as core
    import hookscope.telemetry.redaction as old

    for name in old.__all__:
        assert getattr(old, name) is getattr(core, name), name
    assert telemetry.add_redaction_pattern is core.add_redaction_pattern


def test_the_builtins_and_the_engine_redact_without_importing_telemetry() -> None:
    code = (
        "import sys, hookscope.builtins, hookscope.engine; "
        "print(sorted(m for m in sys.modules if m.startswith('hookscope.telemetry')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_a_new_pattern_starts_the_remembered_texts_and_their_count_afresh() -> None:
    mine = Redactor()
    for i in range(20):
        mine.redact_text(f"note {i:04d}")
    assert mine._remembered_chars == sum(map(len, mine._remembered[1])) == 20 * 9
    remove = redaction.add_redaction_pattern(r"EMP-\d{6}")
    try:
        assert mine.redact_text("ask EMP-123456") == f"ask {REDACTED}"
    finally:
        remove()
    assert list(mine._remembered[1]) == ["ask EMP-123456"]
    assert mine._remembered_chars == len("ask EMP-123456")
