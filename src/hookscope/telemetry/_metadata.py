"""OpenInference ``metadata`` for tool calls, turns and sessions, cheap on the per-call path.

Phoenix shows a span's ``metadata`` attribute (a JSON object) in its own panel and filters on
it. A tool call's and a turn's take few distinct values (outcomes, rule and hook names, error
types), so each string is serialized once and remembered; a session's carries counts and is
formatted directly. Both give exactly what :func:`metadata` gives (property-tested).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Final

from hookscope.telemetry import semconv as sc

if TYPE_CHECKING:
    from hookscope.telemetry._scopes import SessionRecord

__all__ = ["call_metadata", "metadata", "session_metadata", "turn_metadata"]


def metadata(values: dict[str, Any]) -> str:
    """OpenInference ``metadata``: the given values that are set, as a JSON object."""
    return json.dumps({k: v for k, v in values.items() if v is not None}, sort_keys=True)


#: Tool calls' and turns' metadata by its values: a few outcomes, rules, hooks and error
#: types, so a few strings, each serialized once instead of on every call or turn (bounded:
#: rule and hook names are configured).
_METADATA: dict[tuple[str | None, ...], str] = {}
_MAX_METADATA: Final = 1024


def _remember(key: tuple[str | None, ...], values: dict[str, Any]) -> str:
    """:func:`metadata` of ``values``, remembered under ``key`` (their values in order) while
    the table has room. Callers look ``key`` up first: that is the per-call path."""
    found = metadata(values)
    if len(_METADATA) < _MAX_METADATA:
        _METADATA[key] = found
    return found


def call_metadata(
    outcome: str,
    rule: str | None,
    decided_by: str | None,
    error: str | None,
    recovered_by: str | None,
) -> str:
    """:func:`metadata` of a tool call, remembered per distinct value."""
    key = ("call", outcome, rule, decided_by, error, recovered_by)
    found = _METADATA.get(key)
    if found is not None:
        return found
    return _remember(
        key,
        {
            sc.META_OUTCOME: outcome,
            sc.META_RULE: rule,
            sc.META_DECIDED_BY: decided_by,
            sc.META_ERROR_TYPE: error,
            sc.META_RECOVERED_BY: recovered_by,
        },
    )


def turn_metadata(outcome: str, decided_by: str | None, error: str | None) -> str:
    """:func:`metadata` of a turn, remembered per distinct value."""
    key = ("turn", outcome, decided_by, error)
    found = _METADATA.get(key)
    if found is not None:
        return found
    return _remember(
        key, {sc.META_OUTCOME: outcome, sc.META_DECIDED_BY: decided_by, sc.META_ERROR_TYPE: error}
    )


#: A session's metadata with its counts in place: the same JSON as :func:`metadata` (keys
#: sorted, the default separators), formatted directly, since counts are seldom repeated.
_SESSION_METADATA: Final = (
    "{{"  # a literal brace, for str.format
    + ", ".join(
        f'"{key}": {{{key}}}'
        for key in sorted(
            (
                sc.META_OUTCOME,
                sc.META_TURNS,
                sc.META_TOOL_CALLS,
                sc.META_DENIED_CALLS,
                sc.META_TOOL_ERRORS,
            )
        )
    )
    + "}}"
)


#: Session outcomes as JSON strings: a handful of values, each serialized once (bounded).
_OUTCOMES: dict[str, str] = {}


def session_metadata(outcome: str, record: SessionRecord) -> str:
    """:func:`metadata` of a session: its outcome and counts."""
    quoted = _OUTCOMES.get(outcome)
    if quoted is None:
        quoted = json.dumps(outcome)
        if len(_OUTCOMES) < _MAX_METADATA:
            _OUTCOMES[outcome] = quoted
    return _SESSION_METADATA.format_map(
        {
            sc.META_OUTCOME: quoted,
            sc.META_TURNS: int(record.turns),
            sc.META_TOOL_CALLS: int(record.tool_calls),
            sc.META_DENIED_CALLS: int(record.denied_calls),
            sc.META_TOOL_ERRORS: int(record.tool_errors),
        }
    )
