"""The one reader of untrusted JSON and TOML: configuration files, ``--input``, ``--call``,
telemetry files, judges' answers.

Every such input goes through :func:`read_json` or :func:`read_toml`, which bound its size
(:data:`MAX_BYTES`) and its nesting (:data:`MAX_DEPTH`) and turn every way it can be wrong
into one :class:`InputError` naming the source and the line — never a raw ``RecursionError``
from a thousand nested brackets, which the standard parsers raise (and which code walking the
result recursively would raise later).
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any, Final

from hookscope.types import HookscopeError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]

__all__ = ["MAX_BYTES", "MAX_DEPTH", "InputError", "read_json", "read_toml"]

#: Bytes past which an input is refused (16 MiB).
MAX_BYTES: Final = 16 * 1024 * 1024
#: Levels of nested arrays and objects (tables) past which an input is refused.
MAX_DEPTH: Final = 64

# JSON tokens that change the depth, with strings matched whole so brackets in them are skipped.
_JSON_TOKENS: Final = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)
_TOML_LINE: Final = re.compile(r"(?m)^[ \t]*\[\[?[^\]\n]*\]\]?[ \t]*(?:#.*)?$")
_TOML_AT: Final = re.compile(r"\(at line (\d+), column \d+\)")


class InputError(HookscopeError, ValueError):
    """Input that cannot be read: too large, too deeply nested, or not valid JSON/TOML.

    Attributes:
        source: Where the input came from (a file path, ``--input`` …).
        line: The line of the problem (1-based), when known.
        problem: What is wrong, and what to do.
        detail: The parser's own words for a syntax error (with line and column), else
            ``problem``.
    """

    def __init__(
        self, source: str, line: int | None, problem: str, detail: str | None = None
    ) -> None:
        self.source = source
        self.line = line
        self.problem = problem
        self.detail = detail or problem
        where = source if line is None else f"{source}, line {line}"
        super().__init__(f"{where}: {problem}")


def _text(data: str | bytes, source: str, max_bytes: int) -> str:
    if len(data) > max_bytes:
        raise InputError(
            source, None, f"is larger than {max_bytes} bytes; hookscope reads no more than that"
        )
    if isinstance(data, bytes):
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as error:
            line = data.count(b"\n", 0, error.start) + 1
            raise InputError(source, line, "is not valid UTF-8; save it as UTF-8") from None
    if len(data.encode("utf-8", "surrogatepass")) > max_bytes:
        raise InputError(
            source, None, f"is larger than {max_bytes} bytes; hookscope reads no more than that"
        )
    return data


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _too_deep(source: str, line: int, max_depth: int) -> InputError:
    return InputError(
        source, line, f"nests arrays or objects deeper than {max_depth} levels; flatten it"
    )


def read_json(
    data: str | bytes,
    source: str,
    *,
    max_bytes: int = MAX_BYTES,
    max_depth: int = MAX_DEPTH,
) -> Any:
    """Decode one JSON document.

    Raises:
        InputError: too large, nested deeper than ``max_depth``, not UTF-8 or not JSON; the
            message names ``source`` and the line.
    """
    text = _text(data, source, max_bytes)
    # The depth is checked on the text, before parsing: the parser itself would recurse.
    if text.count("[") + text.count("{") > max_depth:
        depth = 0
        for token in _JSON_TOKENS.finditer(text):
            bracket = token[0]
            if bracket in "[{":
                depth += 1
                if depth > max_depth:
                    raise _too_deep(source, _line(text, token.start()), max_depth)
            elif bracket in "]}":
                depth -= 1
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise InputError(source, error.lineno, f"invalid JSON ({error.msg})", str(error)) from None
    except RecursionError:  # pragma: no cover - the scan above refuses it first
        raise _too_deep(source, 1, max_depth) from None


def read_toml(
    data: str | bytes,
    source: str,
    *,
    max_bytes: int = MAX_BYTES,
    max_depth: int = MAX_DEPTH,
) -> dict[str, Any]:
    """Decode one TOML document.

    Raises:
        InputError: too large, nested deeper than ``max_depth``, not UTF-8 or not TOML; the
            message names ``source`` and the line.
    """
    text = _text(data, source, max_bytes)
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        message = str(error)
        found = _TOML_AT.search(message)
        line = int(found.group(1)) if found else None
        reason = _TOML_AT.sub("", message).strip()
        raise InputError(source, line, f"invalid TOML ({reason})") from None
    except RecursionError:
        raise _too_deep(source, _toml_deep_line(text, max_depth), max_depth) from None
    if _depth(document, max_depth) > max_depth:
        raise _too_deep(source, _toml_deep_line(text, max_depth), max_depth)
    return dict(document)


def _depth(value: Any, limit: int) -> int:
    """How deep ``value`` nests (iteratively; stops counting past ``limit``)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        depth += 1
        deepest = max(deepest, depth)
        if deepest > limit:
            return deepest
        stack.extend((child, depth) for child in children)
    return deepest


def _toml_deep_line(text: str, max_depth: int) -> int:
    """The first line where brackets (outside table headers) nest past ``max_depth``; 1 when
    the nesting comes from elsewhere (dotted keys)."""
    depth = 0
    for number, line in enumerate(text.splitlines(), 1):
        if _TOML_LINE.fullmatch(line):
            continue
        for char in line:
            if char in "[{":
                depth += 1
                if depth > max_depth:
                    return number
            elif char in "]}":
                depth -= 1
    return 1
