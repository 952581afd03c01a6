"""Span trees and metric totals the agent-SDK adapter tests compare whole."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan

from hookscope.testing import Recording, span_tree

#: The attributes a tree line shows, and their short names.
SHOWN = {
    "hookscope.session.outcome": "session",
    "hookscope.turn.outcome": "turn",
    "hookscope.tool.outcome": "tool",
    "hookscope.policy.decision": "policy",
    "hookscope.policy.decided_by": "by",
    "hookscope.recovery.recovered": "recovered",
    "error.type": "error",
}


def lines(nodes: Iterable[dict[str, Any]], depth: int = 0) -> list[str]:
    """A span tree as one line per span: name, then the shown attributes, indented."""
    out: list[str] = []
    for node in nodes:
        attributes = node["attributes"]
        shown = [f"{short}={attributes[key]}" for key, short in SHOWN.items() if key in attributes]
        out.append("  " * depth + " ".join([node["name"], *shown]))
        out.extend(lines(node.get("children", ()), depth + 1))
    return out


def sessions(spans: Sequence[ReadableSpan]) -> list[list[str]]:
    """Each root span's tree as lines, roots in start order."""
    trees = [lines([root]) for root in span_tree(spans)]
    if os.environ.get("HOOKSCOPE_PRINT_TREES"):  # to write an expected tree
        print("\n".join("\n".join(t) + "\n--" for t in trees))
    return trees


def same_sessions(spans: Sequence[ReadableSpan]) -> Counter[tuple[str, ...]]:
    """Each root's lines, counted: concurrent sessions compared without their order."""
    return Counter(tuple(tree) for tree in sessions(spans))


def totals(rec: Recording, name: str, key: str) -> dict[Any, int]:
    """A counter's (or histogram's count's) total per value of one attribute."""
    out: dict[Any, int] = {}
    for attributes, value in rec.metric_points([name]).get(name, {}).items():
        label = dict(attributes).get(key)
        out[label] = out.get(label, 0) + int(value)
    return out


def outcome_totals(rec: Recording) -> dict[str, dict[Any, int]]:
    """The totals a scenario's outcome is read from: tool calls and turns by outcome, tokens
    by type."""
    return {
        "tool calls": totals(rec, "hookscope.tool.calls", "hookscope.tool.outcome"),
        "turns": totals(rec, "hookscope.turns", "hookscope.turn.outcome"),
        "tokens": totals(rec, "gen_ai.client.token.usage", "gen_ai.token.type"),
    }
