"""Session timelines and a summary table, rendered from hookscope's spans.

The input is the flat span dicts :func:`hookscope.telemetry.files.read_spans` returns, so
``hookscope demo`` (from spans in memory) and ``hookscope view`` (from the embedded default's
files) print the same thing.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from hookscope.telemetry import semconv as sc

if TYPE_CHECKING:  # only the demo's in-memory spans need the SDK; `hookscope view` does not
    from opentelemetry.sdk.trace import ReadableSpan

__all__ = [
    "Summary",
    "Tally",
    "drawable",
    "render",
    "render_sessions",
    "session_id",
    "session_ids",
    "span_dict",
    "summarize",
    "summary_table",
]

Span = Mapping[str, Any]

_MARKS = {
    sc.TOOL_SUCCEEDED: ("✓", "green"),
    sc.TOOL_RECOVERED: ("↺", "yellow"),
    sc.TOOL_FAILED: ("✗", "red"),
    sc.TOOL_DENIED: ("⊘", "magenta"),
}


def span_dict(span: ReadableSpan) -> dict[str, Any]:
    """A finished SDK span in the flat form ``read_spans`` gives (the fields used here)."""
    context, parent = span.context, span.parent
    return {
        "trace_id": f"{context.trace_id:032x}" if context else "",
        "span_id": f"{context.span_id:016x}" if context else "",
        "parent_span_id": f"{parent.span_id:016x}" if parent else None,
        "name": span.name,
        "start_time_unix_nano": span.start_time or 0,
        "end_time_unix_nano": span.end_time or 0,
        "attributes": dict(span.attributes or {}),
        "events": [
            {"name": e.name, "time_unix_nano": e.timestamp, "attributes": dict(e.attributes or {})}
            for e in span.events
        ],
        "status": {"code": span.status.status_code.name, "message": span.status.description or ""},
    }


def _ms(span: Span) -> float:
    return (int(span["end_time_unix_nano"]) - int(span["start_time_unix_nano"])) / 1e6


_SCALARS = (str, int, float, bool)


def drawable(span: Span) -> bool:
    """Whether the attributes the timeline keys, sorts or looks up by have usable types.

    Files can hold valid OTLP whose values are not what hookscope wrote (an array where an
    outcome belongs); such a span is left out of the drawing rather than breaking it.
    """
    a = span["attributes"]
    index = a.get(sc.TURN_INDEX, 0)
    return (
        isinstance(index, int)
        and not isinstance(index, bool)
        and all(
            isinstance(a.get(key, ""), _SCALARS)
            for key in (sc.SESSION_ID, sc.TOOL_OUTCOME, sc.TURN_OUTCOME, sc.SESSION_OUTCOME)
        )
    )


def is_session(span: Span) -> bool:
    """Whether ``span`` is the root span of a session."""
    return _is_session(span)


def session_id(span: Span) -> object:
    """The session a span belongs to: its ``session.id``; a turn-layout session span has
    none (so Phoenix shows no empty first turn) and names it in ``hookscope.session.id``."""
    a = span["attributes"]
    found = a.get(sc.SESSION_ID)
    return a.get(sc.SESSION_KEY) if found is None else found


def _is_session(span: Span) -> bool:
    return sc.SESSION_OUTCOME in span["attributes"] and span.get("parent_span_id") is None


def session_ids(spans: Iterable[Span]) -> list[str]:
    """The ids of the sessions whose root span is among ``spans``, in start order."""
    roots = sorted((s for s in spans if _is_session(s)), key=lambda s: s["start_time_unix_nano"])
    return [str(session_id(s)) for s in roots]


def _children(spans: Sequence[Span]) -> dict[str | None, list[Span]]:
    children: dict[str | None, list[Span]] = {}
    for span in sorted(spans, key=lambda s: s["start_time_unix_nano"]):
        children.setdefault(span.get("parent_span_id"), []).append(span)
    return children


def _tool_line(span: Span) -> Text:
    a = span["attributes"]
    outcome = a.get(sc.TOOL_OUTCOME, "?")
    mark, style = _MARKS.get(outcome, ("·", "white"))
    tool = str(a.get(sc.GEN_AI_TOOL_NAME, span["name"]))
    server = a.get(sc.TOOL_SERVER)
    if server and not tool.startswith(f"{server}/"):  # written before tools were server/tool
        tool = f"{server}/{tool}"
    line = Text.assemble((f"{mark} ", style), (tool, "bold"))
    if outcome != sc.TOOL_DENIED:
        line.append(f"  {_ms(span):.1f} ms", "dim")
    rule = a.get(sc.POLICY_RULE)
    decision = a.get(sc.POLICY_DECISION)
    if outcome == sc.TOOL_DENIED:
        by = (
            f"rule {rule} (bucket {a.get(sc.POLICY_BUCKET)})"
            if rule
            else a.get(sc.POLICY_DECIDED_BY)
        )
        line.append(f"  denied by {by}: {a.get(sc.POLICY_REASON, '')}", style)
    elif rule is not None:
        line.append(f"  {decision} by rule {rule}", "dim")
    if sc.ERROR_TYPE in a:
        if a.get(sc.RECOVERY_RECOVERED):
            line.append(f"  {a[sc.ERROR_TYPE]} → recovered by {a.get(sc.RECOVERY_HOOK)}", style)
        else:
            line.append(f"  {a[sc.ERROR_TYPE]}", style)
    return line


def _hook_line(span: Span) -> Text:
    """One run of a command or prompt hook (its ``execute_hook`` span)."""
    a = span["attributes"]
    verdict = str(a.get(sc.HOOK_VERDICT, "none"))
    line = Text(f"⚙ {a.get(sc.HOOK_TYPE)} hook {a.get(sc.HOOK_NAME)}  {verdict}", "dim")
    line.append(f"  {_ms(span):.1f} ms", "dim")
    if sc.ERROR_TYPE in a:
        line.append(f"  {a[sc.ERROR_TYPE]}", "red")
    return line


def _turn_tree(turn: Span, children: Mapping[str | None, list[Span]]) -> Tree:
    a = turn["attributes"]
    outcome = a.get(sc.TURN_OUTCOME, "?")
    style = {"completed": "green", "blocked": "magenta", "failed": "red"}.get(outcome, "white")
    label = Text.assemble(
        (f"turn {a.get(sc.TURN_INDEX, '?')}", "bold"), "  ", (str(outcome), style)
    )
    if outcome == "blocked":
        label.append(f" by {a.get(sc.TURN_DECIDED_BY)}: {a.get(sc.TURN_MESSAGE, '')}", style)
    else:
        label.append(f"  {_ms(turn):.1f} ms", "dim")
    if sc.GEN_AI_USAGE_INPUT_TOKENS in a:
        tokens_in, tokens_out = a[sc.GEN_AI_USAGE_INPUT_TOKENS], a[sc.GEN_AI_USAGE_OUTPUT_TOKENS]
        label.append(f"  tokens {tokens_in} in / {tokens_out} out", "dim")
    tree = Tree(label)
    for child in children.get(turn["span_id"], []):
        c = child["attributes"]
        operation = c.get(sc.GEN_AI_OPERATION_NAME)
        if operation == sc.OPERATION_EXECUTE_TOOL:
            node = tree.add(_tool_line(child))
            for run in children.get(child["span_id"], []):  # command and prompt hook runs
                if sc.HOOK_TYPE in run["attributes"]:
                    node.add(_hook_line(run))
        elif sc.HOOK_TYPE in c:
            tree.add(_hook_line(child))
        elif operation == sc.OPERATION_CHAT:
            tree.add(
                Text(
                    f"◆ {child['name']}  {_ms(child):.1f} ms  guardrails "
                    f"{c.get(sc.GUARDRAIL_REQUEST, '-')}/{c.get(sc.GUARDRAIL_RESPONSE, '-')}",
                    "cyan",
                )
            )
        elif sc.INTERACTION_OUTCOME in c:
            by = c.get(sc.INTERACTION_ANSWERED_BY)
            tree.add(
                Text(
                    f"? question {c[sc.INTERACTION_OUTCOME]}" + (f" by {by}" if by else ""), "blue"
                )
            )
    for event in turn.get("events", []):
        if event["name"] == sc.EVENT_NAMES["on_compaction"]:
            tree.add(Text("⇣ context compacted", "blue"))
        elif event["name"] == sc.EVENT_HOOK_FAILURE:
            e = event["attributes"]
            tree.add(Text(f"! hook {e.get(sc.HOOK_NAME)} failed in {e.get(sc.HOOK_EVENT)}", "red"))
    return tree


def render_sessions(spans: Sequence[Span]) -> list[RenderableType]:
    """One tree per session: its turns, tool calls, decisions, errors and recoveries."""
    children = _children(spans)
    # Turn-layout traces: turns are roots linked to their session; attach them by session id.
    by_session: dict[str, list[Span]] = {}
    for span in children.get(None, []):
        if span["attributes"].get(sc.GEN_AI_OPERATION_NAME) == sc.OPERATION_INVOKE_AGENT:
            by_session.setdefault(str(span["attributes"].get(sc.SESSION_ID)), []).append(span)
    trees: list[RenderableType] = []
    for session in children.get(None, []):
        if not _is_session(session):
            continue
        a = session["attributes"]
        sid = str(session_id(session))
        outcome = a.get(sc.SESSION_OUTCOME)
        tree = Tree(
            Text.assemble(
                (f"session {sid}", "bold"),
                f"  {a.get(sc.GEN_AI_AGENT_NAME)}  ",
                (str(outcome), "green" if outcome == "completed" else "red"),
                (
                    f"  {_ms(session):.0f} ms  turns {a.get(sc.SESSION_TURNS)}, "
                    f"calls {a.get(sc.SESSION_TOOL_CALLS)}, "
                    f"denied {a.get(sc.SESSION_DENIED_CALLS)}, "
                    f"errors {a.get(sc.SESSION_TOOL_ERRORS)}",
                    "dim",
                ),
            )
        )
        turns = children.get(session["span_id"], []) + by_session.get(sid, [])
        for turn in sorted(turns, key=lambda s: s["attributes"].get(sc.TURN_INDEX, 0)):
            tree.add(_turn_tree(turn, children))
        trees.append(tree)
    return trees


@dataclass(frozen=True, slots=True)
class Summary:
    """Totals over a set of sessions."""

    sessions: int
    turns: int
    blocked_turns: int
    calls: int
    denied: int
    failed: int
    recovered: int
    p50_ms: float
    p95_ms: float
    #: Spend over the sessions (``gen_ai.usage.cost`` of their session spans) in USD, and
    #: whether any of it was priced at all.
    cost_usd: float = 0.0
    priced: bool = False

    @property
    def denied_rate(self) -> float:
        """Denied calls over all calls (0 when there were none)."""
        return self.denied / self.calls if self.calls else 0.0


def _percentiles(values: Sequence[float], *qs: float) -> list[float]:
    if not values:
        return [0.0 for _ in qs]
    ordered = sorted(values)  # once for every q: the one transient copy of the latencies
    return [ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] for q in qs]


class Tally:
    """Counts sessions, turns and tool outcomes one span at a time, for streamed reads.

    Holds 8 bytes per executed tool call (its latency, for the percentiles) and nothing per
    span otherwise.
    """

    __slots__ = ("_blocked", "_cost", "_latencies", "_outcomes", "_priced", "_sessions", "_turns")

    def __init__(self) -> None:
        self._sessions = self._turns = self._blocked = 0
        self._cost = 0.0
        self._priced = False
        self._outcomes: dict[str, int] = {}
        self._latencies = array("d")

    def add(self, span: Span) -> None:
        """Count one span."""
        a = span["attributes"]
        operation = a.get(sc.GEN_AI_OPERATION_NAME)
        if operation == sc.OPERATION_EXECUTE_TOOL:
            outcome = str(a.get(sc.TOOL_OUTCOME))
            self._outcomes[outcome] = self._outcomes.get(outcome, 0) + 1
            if outcome != sc.TOOL_DENIED:
                self._latencies.append(_ms(span))
        elif operation == sc.OPERATION_INVOKE_AGENT:
            self._turns += 1
            self._blocked += a.get(sc.TURN_OUTCOME) == "blocked"
        elif _is_session(span):
            self._sessions += 1
            cost = a.get(sc.GEN_AI_USAGE_COST)
            if isinstance(cost, (int, float)):
                self._cost += cost
                self._priced = True

    def summary(self) -> Summary:
        """The totals so far."""
        outcomes = self._outcomes
        p50, p95 = _percentiles(self._latencies, 0.50, 0.95)
        return Summary(
            sessions=self._sessions,
            turns=self._turns,
            blocked_turns=self._blocked,
            calls=sum(outcomes.values()),
            denied=outcomes.get(sc.TOOL_DENIED, 0),
            failed=outcomes.get(sc.TOOL_FAILED, 0),
            recovered=outcomes.get(sc.TOOL_RECOVERED, 0),
            p50_ms=p50,
            p95_ms=p95,
            cost_usd=self._cost,
            priced=self._priced,
        )


def summarize(spans: Iterable[Span]) -> Summary:
    """Count sessions, turns and tool outcomes; tool latency percentiles over executed calls."""
    tally = Tally()
    for span in spans:
        tally.add(span)
    return tally.summary()


def summary_table(summary: Summary) -> Table:
    """The summary as a two-column table."""
    table = Table(title="summary", show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column(justify="right")
    rows = [
        ("sessions", str(summary.sessions)),
        ("turns (blocked)", f"{summary.turns} ({summary.blocked_turns})"),
        ("tool calls", str(summary.calls)),
        ("denied", f"{summary.denied} ({summary.denied_rate:.1%})"),
        ("errors: recovered / not", f"{summary.recovered} / {summary.failed}"),
        ("tool latency p50 / p95", f"{summary.p50_ms:.1f} / {summary.p95_ms:.1f} ms"),
        ("cost (model calls)", f"${summary.cost_usd:.4f}" if summary.priced else "unpriced"),
    ]
    for name, value in rows:
        table.add_row(name, value)
    return table


def render(spans: Sequence[Span]) -> Group:
    """Every session's timeline followed by the summary table."""
    return Group(*render_sessions(spans), summary_table(summarize(spans)))
