"""Span trees as text, for the side-by-side comparisons (hookscope's spans and a peer's).

Each comparison labels a span its own way (which attributes, how written); the tree is the
same: a span indented two spaces under its parent, siblings in start order, and a span whose
parent is not among the spans (the application's, or another trace's) shown as a root.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from opentelemetry.sdk.trace import ReadableSpan


def tree_lines(spans: Sequence[ReadableSpan], label: Callable[[ReadableSpan], str]) -> list[str]:
    """One line per span, ``label(span)`` indented by its depth, walked depth first."""
    ids = {s.context.span_id for s in spans if s.context is not None}
    children: dict[int | None, list[ReadableSpan]] = {}
    for span in spans:
        parent = span.parent.span_id if span.parent is not None else None
        children.setdefault(parent if parent in ids else None, []).append(span)
    out: list[str] = []

    def walk(parent: int | None, depth: int) -> None:
        for span in sorted(children.get(parent, []), key=lambda s: s.start_time or 0):
            out.append("  " * depth + label(span))
            walk(span.context.span_id if span.context is not None else None, depth + 1)

    walk(None, 0)
    return out
