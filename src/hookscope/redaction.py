"""Redaction: secrets never reach a span, an event, a log line or a file.

Used on every captured value (prompts, tool arguments and results, responses), by the audit log
and the ready-made hooks, and for URLs shown in logs and reprs. A core module: it imports
nothing from OpenTelemetry (``hookscope.telemetry.redaction`` re-exports it under its old name).

Two layers:

* **Keys.** A value under a secret-looking key is replaced whole by ``[REDACTED]``, at any
  depth: mapping keys, the first item of ``(key, value)`` pairs, and name/value records such as
  ``[{"name": "Authorization", "value": ...}]``. A key is secret-looking when one of
  :data:`SECRET_KEY_WORDS` occurs in it once separators and case are ignored (``X-Api-Key``,
  ``apiKey``, ``AWS_SECRET_ACCESS_KEY``), or one of :data:`SECRET_KEY_SHORT_WORDS` is one of its
  words (``x-auth``, ``db_pwd``, ``otp_code``; not ``author``).
* **Values.** Every string is searched for secrets whatever its key: ``key=value`` and
  ``"key": "value"`` with a secret-looking key (``.env`` files, query strings, JSON text,
  headers such as ``Authorization: Bearer ...``), ``Bearer`` tokens, ``Cookie:`` headers,
  passwords in URLs and DSNs (``postgres://user:pw@host``), PEM private-key blocks, and the
  token formats of :data:`TOKEN_PATTERNS` (GitHub, GitLab, AWS, Slack, JWT, OpenAI-style
  ``sk-``, Google, Stripe, npm, Hugging Face, PyPI).
* **Personal data.** E-mail addresses, phone numbers, Luhn-checked card numbers and
  mod-97-checked IBANs (:data:`PII_PATTERNS`), in captured content and in ``AuditLog`` lines.

More patterns: :func:`add_redaction_pattern` (process-wide) or ``Redactor(extra_patterns=...)``
(one user, e.g. one ``OTelHook``). A pattern's whole match is replaced, or only its capturing
groups when it has any.
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, final

__all__ = [
    "PII_PATTERNS",
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
    "redact_pii",
    "redact_text",
]

REDACTED: Final = "[REDACTED]"

#: Words that make a key secret-looking wherever they occur in it (compared without case and
#: without ``_``, ``-``, ``.`` or spaces, so ``api_key``, ``apiKey`` and ``API-KEY`` all match).
SECRET_KEY_WORDS: Final = (
    "token",
    "secret",
    "password",
    "passwd",
    "passphrase",
    "apikey",
    "authorization",
    "cookie",
    "bearer",
    "accesskey",
    "sshkey",
    "signature",
    "sessionkey",
    "credential",
    "privatekey",
    "clientsecret",
)
#: Short words that make a key secret-looking only as a word of their own (``x-auth``,
#: ``authToken``, ``db_pwd``), so ``author`` or ``footprint`` stay readable.
SECRET_KEY_SHORT_WORDS: Final = ("auth", "oauth", "pwd", "pass", "otp", "totp", "jwt", "mfa")

#: Token formats redacted wherever they appear, by name.
TOKEN_PATTERNS: Final[dict[str, str]] = {
    "github": r"(?:gh[pousr]_[A-Za-z0-9]{30,255}|github_pat_[A-Za-z0-9_]{22,255})",
    "gitlab": r"glpat-[A-Za-z0-9_\-]{20,}",
    "aws_access_key_id": r"(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Za-z0-9])",
    "slack": r"(?:xox[abposrce]-[A-Za-z0-9-]{10,}|xapp-\d-[A-Za-z0-9-]{10,})",
    "slack_webhook": r"hooks\.slack\.com/services/[A-Za-z0-9/_-]+",
    "jwt": r"eyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*",
    "sk": r"(?<![A-Za-z0-9])sk-[A-Za-z0-9_-]{20,}",
    "google_api_key": r"AIza[0-9A-Za-z_-]{35}",
    "stripe": r"(?<![A-Za-z0-9])[rsp]k_(?:live|test)_[0-9A-Za-z]{10,}",
    "npm": r"npm_[A-Za-z0-9]{36}",
    "huggingface": r"(?<![A-Za-z0-9])hf_[A-Za-z0-9]{30,}",
    "pypi": r"pypi-[A-Za-z0-9_-]{50,}",
}

_WORD: Final = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_SEPARATORS: Final = re.compile(r"[\s_.\-]+")
_SHORT: Final = frozenset(SECRET_KEY_SHORT_WORDS)
_NAME_FIELDS: Final = frozenset({"name", "key", "header", "field", "id"})
_VALUE_FIELDS: Final = frozenset({"value", "values", "val", "content", "data"})


def is_secret_key(key: str) -> bool:
    """Whether values under ``key`` are secrets (see the module docstring)."""
    # Keys repeat; caching only short ones keeps odd long keys from filling the cache.
    return _cached_is_secret_key(key) if len(key) <= 128 else _is_secret_key(key)


@functools.lru_cache(maxsize=4096)
def _cached_is_secret_key(key: str) -> bool:
    return _is_secret_key(key)


def _is_secret_key(key: str) -> bool:
    compact = _SEPARATORS.sub("", key).lower()
    if any(word in compact for word in SECRET_KEY_WORDS):
        return True
    return any(word.lower() in _SHORT for word in _WORD.findall(key))


# --- value patterns ---------------------------------------------------------------------------

_PRIVATE_KEY: Final = re.compile(
    r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----.*?"
    r"(?:-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
    re.DOTALL,
)
# scheme://user:password@host — the password runs to the last "@" before the path.
_URL_PASSWORD: Final = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://[^\s/?#@:]*:)([^\s/?#]*)@")
# scheme://long-token@host — a user part that is really a token.
_URL_TOKEN_USER: Final = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)([A-Za-z0-9_\-]{16,})@")
_COOKIE: Final = re.compile(r"(?im)\b((?:set-)?cookie[ \t]*:[ \t]*)[^\r\n]+")
_BEARER: Final = re.compile(r"(?i)\b(bearer[ \t]+)[A-Za-z0-9\-._~+/]{8,}=*")
# key=value, key: value, "key": "value", --key value. Each pass finds a key and its separator,
# judges the key (is_secret_key), and only then reads the value: values of ordinary keys are
# never scanned, so the passes stay linear in the text's length.
# A quoted value: "...", '...', or \"...\" (JSON text inside a JSON string).
_QUOTED: Final = r"""(?:"[^"\n]*"|'[^'\n]*'|\\"(?:[^"\\\n]|\\[^"\n])*\\")"""
_QUOTE: Final = r"""\\?["']"""
_KEY_SEP: Final = re.compile(
    rf"""(?<![A-Za-z0-9_.])(?P<key>[A-Za-z_][A-Za-z0-9_.\-]{{0,80}})(?:{_QUOTE})?[ \t]*[:=][ \t]*"""
)
_ANY_VALUE: Final = re.compile(
    rf"""{_QUOTED}|(?:(?i:bearer|basic|digest|token|negotiate|ntlm)[ \t]+)?[^\s"'\\,;&<>]+"""
)
# ('key', 'value') and ["key", "value"] as printed by Python or JSON.
_PAIR_SEP: Final = re.compile(
    rf"""(?P<q>{_QUOTE})(?P<key>[A-Za-z_][A-Za-z0-9_.\-]{{0,80}})(?P=q)[ \t]*,[ \t]*"""
)
_QUOTED_VALUE: Final = re.compile(rf"""{_QUOTED}(?![ \t]*\\?:)""")
# {"name": "Authorization", "value": "..."} as JSON or Python text (HAR-style header lists).
_RECORD_SEP: Final = re.compile(
    rf"""(?P<q>{_QUOTE})(?:name|key|header|field)(?P=q)[ \t]*:[ \t]*(?P<k>{_QUOTE})"""
    rf"""(?P<key>[^"'\\\n]{{1,80}})(?P=k)[ \t]*,[ \t]*(?P<v>{_QUOTE})"""
    r"""(?:value|val|content|data)(?P=v)[ \t]*:[ \t]*"""
)
_FLAG_SEP: Final = re.compile(r"(?<![A-Za-z0-9_-])--?(?P<key>[A-Za-z][A-Za-z0-9_-]*)[ \t]+")
_FLAG_VALUE: Final = re.compile(r"[^\s\-]\S*")
_TOKENS: Final = re.compile("|".join(f"(?:{p})" for p in TOKEN_PATTERNS.values()))


def _quote_of(value: str) -> str:
    """The quote around ``value`` (``"``, ``'``, ``\\"``), or ``""`` for a bare value."""
    for quote in ('\\"', "\\'", '"', "'"):
        if len(value) >= 2 * len(quote) and value.startswith(quote) and value.endswith(quote):
            return quote
    return ""


def _pairs(key_sep: re.Pattern[str], value: re.Pattern[str]) -> Callable[[str], str]:
    """A pass replacing the values that follow secret-looking keys.

    Not a plain ``sub``: an ordinary key (``https:`` in a URL) must not swallow what follows,
    which may hold a secret pair of its own (``?access_token=...``); scanning resumes right
    after its separator.
    """

    def apply(text: str) -> str:
        pieces: list[str] = []
        done = position = 0  # text[:done] is in pieces
        while (match := key_sep.search(text, position)) is not None:
            position = match.end()
            if not is_secret_key(match["key"]):
                continue
            found = value.match(text, position)
            if found is None:
                continue
            quote = _quote_of(found[0])
            pieces += (text[done:position], f"{quote}{REDACTED}{quote}")
            done = position = found.end()
        pieces.append(text[done:])
        return "".join(pieces)

    return apply


# --- personal data (PII) --------------------------------------------------------------------

#: Personal data redacted by default wherever content is captured and in ``AuditLog`` lines,
#: by name: e-mail addresses, phone numbers (international ``+…`` or ``(555) 123-4567``-style
#: with separators, so bare ids and timestamps stay), payment card numbers (13 to 19 digits
#: with a card network's prefix that pass the Luhn check) and IBANs (that pass the ISO 7064
#: mod-97 check). Each match becomes ``[REDACTED <NAME>]``.
PII_PATTERNS: Final[dict[str, str]] = {
    "email": r"(?<![\w.%+-])[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63})*"
    r"\.[A-Za-z]{2,24}(?![\w-])",
    "card": r"(?<![\w-])[2-6](?:[ -]?\d){12,18}(?![\w-])",
    "iban": r"(?<![\w])[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}(?![\w])",
    "phone": r"(?<![\w+])(?:\+\d{1,3}[ .-]?(?:\(\d{1,4}\)[ .-]?)?\d{1,4}(?:[ .-]?\d{1,4}){1,5}"
    r"|\(?\d{3}\)?[ .-]\d{3}[ .-]\d{4})(?![\w])",
}


def _luhn(digits: str) -> bool:
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = ord(char) - 48
        if index % 2:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def _iban_valid(text: str) -> bool:
    code = text.replace(" ", "")
    if not 15 <= len(code) <= 34:
        return False
    moved = code[4:] + code[:4]
    number = "".join(str(int(c, 36)) for c in moved)
    return int(number) % 97 == 1


def _check_card(match: re.Match[str]) -> str:
    digits = re.sub(r"[ -]", "", match.group())
    return "[REDACTED CARD]" if 13 <= len(digits) <= 19 and _luhn(digits) else match.group()


def _check_iban(match: re.Match[str]) -> str:
    return "[REDACTED IBAN]" if _iban_valid(match.group()) else match.group()


def _check_phone(match: re.Match[str]) -> str:
    digits = sum(c.isdigit() for c in match.group())
    return "[REDACTED PHONE]" if 7 <= digits <= 15 else match.group()


_EMAIL: Final = re.compile(PII_PATTERNS["email"])
_CARD: Final = re.compile(PII_PATTERNS["card"])
_IBAN: Final = re.compile(PII_PATTERNS["iban"])
_PHONE: Final = re.compile(PII_PATTERNS["phone"])
_DIGIT: Final = re.compile(r"\d")


def redact_pii(text: str) -> str:
    """``text`` with e-mail addresses, phone numbers, card numbers and IBANs replaced
    (:data:`PII_PATTERNS`); cheap on text without ``@`` or digits."""
    if "@" in text:
        text = _EMAIL.sub("[REDACTED EMAIL]", text)
    if _DIGIT.search(text) is None:
        return text
    text = _CARD.sub(_check_card, text)
    text = _IBAN.sub(_check_iban, text)
    return _PHONE.sub(_check_phone, text)


_BUILT_IN: Final[tuple[Callable[[str], str], ...]] = (
    functools.partial(_PRIVATE_KEY.sub, "[REDACTED PRIVATE KEY]"),
    functools.partial(_URL_PASSWORD.sub, rf"\1{REDACTED}@"),
    functools.partial(_URL_TOKEN_USER.sub, rf"\1{REDACTED}@"),
    functools.partial(_COOKIE.sub, rf"\1{REDACTED}"),
    _pairs(_KEY_SEP, _ANY_VALUE),
    _pairs(_RECORD_SEP, _QUOTED_VALUE),
    _pairs(_PAIR_SEP, _QUOTED_VALUE),
    _pairs(_FLAG_SEP, _FLAG_VALUE),
    functools.partial(_BEARER.sub, rf"\1{REDACTED}"),
    functools.partial(_TOKENS.sub, REDACTED),
    redact_pii,
)


def _compile(pattern: object) -> re.Pattern[str]:
    if isinstance(pattern, str):
        try:
            compiled = re.compile(pattern)
        except re.error as error:
            raise ValueError(
                f"redaction pattern {pattern!r} is not a valid regex: {error}"
            ) from None
    elif isinstance(pattern, re.Pattern) and isinstance(pattern.pattern, str):
        compiled = pattern
    else:
        raise TypeError(
            f"a redaction pattern is a regex string or a compiled str pattern, got {pattern!r}"
        )
    if compiled.search("") is not None:
        raise ValueError(
            f"redaction pattern {compiled.pattern!r} matches the empty string, so it would "
            "redact everywhere; make it require at least one character"
        )
    return compiled


def _replace_groups(match: re.Match[str]) -> str:
    """``match`` with each capturing group that took part replaced by ``[REDACTED]``."""
    text, start = match.string, match.start()
    pieces: list[str] = []
    for group in range(1, (match.re.groups or 0) + 1):
        begin, end = match.span(group)
        if begin < 0 or begin < start:
            continue
        pieces.append(text[start:begin])
        pieces.append(REDACTED)
        start = end
    pieces.append(text[start : match.end()])
    return "".join(pieces)


def _apply(pattern: re.Pattern[str], text: str) -> str:
    return pattern.sub(_replace_groups if pattern.groups else REDACTED, text)


_global_lock = threading.Lock()
#: The process-wide patterns: replaced, never changed in place (redactors' remembered texts
#: are tied to the tuple they were searched with).
_global: tuple[re.Pattern[str], ...] = ()
#: Texts up to this long have their redaction remembered, per redactor, until the table holds
#: this many characters; then it starts again (recent texts are the ones that repeat: a
#: policy's reasons, and the conversation a model call's captured content sends again with
#: every request, where a search costs ~0.2 µs per character).
_REMEMBERED_LENGTH: Final = 4096
_REMEMBERED_CHARS: Final = 1 << 20


def add_redaction_pattern(pattern: str | re.Pattern[str]) -> Callable[[], None]:
    """Redact matches of ``pattern`` in every captured string, process-wide, from now on.

    The whole match is replaced by ``[REDACTED]``, or only its capturing groups when it has
    any (``r"employee-id: (\\d+)"`` keeps the label).

    Returns:
        A function that removes the pattern again (handy in tests).

    Raises:
        ValueError: ``pattern`` is not a valid regex, or matches the empty string.
        TypeError: ``pattern`` is neither a string nor a compiled ``str`` pattern.
    """
    global _global
    compiled = _compile(pattern)
    with _global_lock:
        _global = (*_global, compiled)

    def remove() -> None:
        global _global
        with _global_lock:
            patterns = list(_global)
            if compiled in patterns:
                patterns.remove(compiled)
            _global = tuple(patterns)

    return remove


@final
class Redactor:
    """Redacts secrets from values and text: the built-in rules, the process-wide patterns
    (read at each call, so patterns added later apply) and this redactor's own.

    Args:
        extra_patterns: More patterns, regex strings or compiled ``str`` patterns (e.g. the
            ``redact_patterns`` of one ``OTelHook``).

    Raises:
        ValueError: A pattern is invalid or matches the empty string.
        TypeError: A pattern is neither a string nor a compiled ``str`` pattern.
    """

    __slots__ = ("_extra", "_remembered", "_remembered_chars")

    def __init__(self, extra_patterns: Iterable[str | re.Pattern[str]] = ()) -> None:
        if isinstance(extra_patterns, (str, re.Pattern)):
            extra_patterns = [extra_patterns]
        self._extra: tuple[re.Pattern[str], ...] = tuple(map(_compile, extra_patterns))
        #: Short texts already searched, with the process-wide patterns they were searched
        #: with: a policy's or hook's reason repeats on every call it decides, and searching
        #: it again costs ~20 µs. A new table replaces it when those patterns change, so a
        #: text is never answered from a search that lacked a pattern now in force.
        self._remembered: tuple[tuple[re.Pattern[str], ...], dict[str, str]] = (_global, {})
        self._remembered_chars = 0

    def redact_text(self, text: str, limit: int | None = None) -> str:
        """``text`` with every secret found in it replaced by ``[REDACTED]``.

        Args:
            text: The string.
            limit: Keep only the first ``limit`` characters (before searching, so a huge value
                costs no more than a long one); ``None`` keeps all.
        """
        if limit is not None and len(text) > limit:
            text = text[:limit]
        patterns = _global
        if len(text) > _REMEMBERED_LENGTH:
            return self._search(text, patterns)
        remembered = self._remembered
        if remembered[0] is not patterns:  # a pattern added or removed: a new table, empty
            remembered = self._remembered = (patterns, {})
            self._remembered_chars = 0
        texts = remembered[1]
        found = texts.get(text)
        if found is None:
            found = self._search(text, patterns)
            self._remembered_chars += len(text)
            if self._remembered_chars > _REMEMBERED_CHARS:  # full: start a table again
                self._remembered_chars = len(text)
                texts = {}
                self._remembered = (patterns, texts)
            texts[text] = found
        return found

    def _search(self, text: str, patterns: tuple[re.Pattern[str], ...]) -> str:
        """``text`` through the built-in rules, then ``patterns`` and this redactor's own."""
        for built_in in _BUILT_IN:
            text = built_in(text)
        for extra in (*patterns, *self._extra):
            text = _apply(extra, text)
        return text

    def redact(self, value: Any, limit: int | None = None) -> Any:
        """A copy of JSON-like ``value`` (mappings, lists, tuples, scalars) with secrets replaced.

        Values under secret-looking keys become ``[REDACTED]``; every string (mapping keys
        included) is searched as :meth:`redact_text` does, with the same ``limit``.
        """
        if isinstance(value, str):
            return self.redact_text(value, limit)
        if isinstance(value, Mapping):
            return self._mapping(value, limit)
        if isinstance(value, (list, tuple)):
            first = value[0] if len(value) == 2 else None
            if isinstance(first, str) and is_secret_key(first):
                return [self.redact_text(first, limit), REDACTED]
            return [self.redact(item, limit) for item in value]
        return value

    def _mapping(self, value: Mapping[Any, Any], limit: int | None) -> dict[Any, Any]:
        # A name/value record ({"name": "Authorization", "value": ...}) hides its value.
        named_secret = any(
            isinstance(key, str)
            and key.lower() in _NAME_FIELDS
            and isinstance(label, str)
            and is_secret_key(label)
            for key, label in value.items()
        )
        result: dict[Any, Any] = {}
        for key, item in value.items():
            if isinstance(key, str):
                secret = is_secret_key(key) or (named_secret and key.lower() in _VALUE_FIELDS)
                key = self.redact_text(key, limit)
            else:
                secret = False
            result[key] = REDACTED if secret else self.redact(item, limit)
        return result

    def __repr__(self) -> str:
        return f"Redactor(extra_patterns={[p.pattern for p in self._extra]!r})"


#: The redactor with no extra patterns (built-in rules and process-wide patterns).
DEFAULT: Final = Redactor()


def redact(value: Any, limit: int | None = None) -> Any:
    """:meth:`Redactor.redact` with the built-in rules and process-wide patterns."""
    return DEFAULT.redact(value, limit)


def redact_text(text: str, limit: int | None = None) -> str:
    """:meth:`Redactor.redact_text` with the built-in rules and process-wide patterns."""
    return DEFAULT.redact_text(text, limit)


_BARE_USERINFO: Final = re.compile(r"^([^\s/@:]+:)([^\s/]*)@")


def mask_url(url: str) -> str:
    """``url`` safe for logs and reprs: passwords, token user names and secret query values
    replaced by ``[REDACTED]`` (``https://u:[REDACTED]@host/?token=[REDACTED]``).

    Also takes ``user:password@host:port`` without a scheme, and never raises.
    """
    if not isinstance(url, str):
        return f"<{type(url).__name__}>"
    if "://" not in url:
        url = _BARE_USERINFO.sub(rf"\1{REDACTED}@", url)
    return DEFAULT.redact_text(url)


# --- JSON-able copies (the audit log, the ready-made hooks) ------------------------------------

#: How deep :func:`redact_json` walks; deeper values show as ``"[…]"``.
JSON_MAX_DEPTH: Final = 20


def redact_json(value: Any, *, values: bool = False, pii: bool = True) -> Any:
    """``value`` as JSON-able data, every value under a secret-looking key replaced.

    Mappings become dicts with ``str`` keys, tuples lists, and any other object shows only its
    type, never its ``repr`` (which could carry a secret). Nesting deeper than
    :data:`JSON_MAX_DEPTH` shows as ``"[…]"``.

    Args:
        value: Tool arguments (any nesting of mappings, sequences and scalars).
        values: Also search every string (keys included) for secrets — token formats,
            ``Bearer`` headers, passwords in URLs, private keys — as the telemetry's content
            capture does. Thorough, and tens of microseconds per call.
        pii: Replace personal data (:data:`PII_PATTERNS`) in every string; on by default.
    """
    return _walk(value, 0, redact_text if values else redact_pii if pii else None)


def _walk(value: Any, depth: int, text: Callable[[str], str] | None) -> Any:
    if isinstance(value, str):
        return value if text is None else text(value)
    if value is None or isinstance(value, (int, float, bool)):
        return value
    if depth >= JSON_MAX_DEPTH:
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
