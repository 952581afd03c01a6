"""Just enough PromQL and Grafana dashboard reading to check names and run panel queries.

:func:`parse` lexes an expression into the metric selectors, label matchers, grouping labels
and functions it uses; it does not evaluate anything (Prometheus itself does that in the
end-to-end test, and ``promtool`` checks the rule files). :func:`panel_queries` lists a
dashboard's Prometheus queries and :func:`substitute` fills in Grafana's template variables.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

_TOKEN: Final = re.compile(
    r"""
    (?P<space>\s+)
  | (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
  | (?P<range>\[[^\]]*\])
  | (?P<number>\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)
  | (?P<ident>[A-Za-z_:][A-Za-z0-9_:]*)
  | (?P<op>=~|!~|!=|==|>=|<=|[-+*/%^<>=(){},])
    """,
    re.VERBOSE,
)
_GROUPING: Final = frozenset({"by", "without", "on", "ignoring", "group_left", "group_right"})
_KEYWORDS: Final = frozenset({"and", "or", "unless", "bool", "offset", "inf", "nan"})
#: Functions and aggregations hookscope's queries may use.
FUNCTIONS: Final = frozenset(
    {
        "sum",
        "avg",
        "min",
        "max",
        "count",
        "topk",
        "rate",
        "irate",
        "increase",
        "histogram_quantile",
        "clamp_min",
        "vector",
    }
)


@dataclass(frozen=True, slots=True)
class Matcher:
    label: str
    op: str
    value: str


@dataclass(frozen=True, slots=True)
class Selector:
    """``metric{matchers}`` as written (the metric name is ``""`` for ``{__name__=...}``)."""

    metric: str
    matchers: tuple[Matcher, ...] = ()


@dataclass(slots=True)
class Parsed:
    selectors: list[Selector] = field(default_factory=list)
    grouping: set[str] = field(default_factory=set)
    functions: set[str] = field(default_factory=set)

    @property
    def metrics(self) -> set[str]:
        return {s.metric for s in self.selectors}


def _tokens(expr: str) -> list[tuple[str, str]]:
    tokens, position = [], 0
    while position < len(expr):
        match = _TOKEN.match(expr, position)
        if match is None:
            raise ValueError(f"cannot lex {expr[position : position + 20]!r} in {expr!r}")
        position = match.end()
        kind = match.lastgroup
        assert kind is not None
        if kind != "space":
            tokens.append((kind, match.group()))
    return tokens


def _unquote(literal: str) -> str:
    return re.sub(r"\\(.)", r"\1", literal[1:-1])


def parse(expr: str) -> Parsed:
    """The selectors, grouping labels and functions ``expr`` uses.

    Raises:
        ValueError: ``expr`` has something this reader does not know (so checks cannot
            silently skip it).
    """
    tokens, parsed, i = _tokens(expr), Parsed(), 0

    def matchers(start: int) -> tuple[tuple[Matcher, ...], int]:
        found, j = [], start + 1
        while tokens[j] != ("op", "}"):
            (k1, label), (k2, op), (k3, value) = tokens[j : j + 3]
            if k1 != "ident" or k2 != "op" or k3 != "string":
                raise ValueError(f"unexpected matcher {tokens[j : j + 3]} in {expr!r}")
            found.append(Matcher(label, op, _unquote(value)))
            j += 3
            if tokens[j] == ("op", ","):
                j += 1
        return tuple(found), j + 1

    while i < len(tokens):
        kind, text = tokens[i]
        following = tokens[i + 1] if i + 1 < len(tokens) else ("", "")
        if kind == "ident" and text in _GROUPING:
            i += 1
            if following == ("op", "("):
                i += 1
                while tokens[i] != ("op", ")"):
                    if tokens[i][0] == "ident":
                        parsed.grouping.add(tokens[i][1])
                    i += 1
                i += 1
        elif kind == "ident" and (
            following == ("op", "(") or (text in FUNCTIONS and following[1] in _GROUPING)
        ):
            if text not in FUNCTIONS:
                raise ValueError(f"unknown function {text!r} in {expr!r}")
            parsed.functions.add(text)
            i += 1
        elif kind == "ident" and text.lower() in _KEYWORDS:
            i += 1
        elif kind == "ident":
            if following == ("op", "{"):
                found, i = matchers(i + 1)
                parsed.selectors.append(Selector(text, found))
            else:
                parsed.selectors.append(Selector(text))
                i += 1
        elif (kind, text) == ("op", "{"):
            found, i = matchers(i)
            parsed.selectors.append(Selector("", found))
        else:
            i += 1
    return parsed


@dataclass(frozen=True, slots=True)
class PanelQuery:
    panel: str
    ref_id: str
    expr: str
    legend: str


def panels(dashboard: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    """Every panel, including those inside collapsed rows."""
    for panel in dashboard["panels"]:
        yield panel
        yield from panel.get("panels", ())


def panel_queries(dashboard: Mapping[str, Any]) -> list[PanelQuery]:
    """Every Prometheus query of every panel."""
    queries = []
    for panel in panels(dashboard):
        for target in panel.get("targets", ()):
            datasource = target.get("datasource") or panel.get("datasource") or {}
            if datasource.get("type") == "prometheus":
                queries.append(
                    PanelQuery(
                        panel["title"], target["refId"], target["expr"], target["legendFormat"]
                    )
                )
    return queries


def substitute(expr: str, variables: Mapping[str, str]) -> str:
    """``expr`` with Grafana's ``$name`` and ``${name}`` replaced.

    Raises:
        KeyError: ``expr`` uses a variable ``variables`` does not give.
    """

    def value(match: re.Match[str]) -> str:
        return variables[match.group(1) or match.group(2)]

    return re.sub(r"\$\{(\w+)\}|\$(\w+)", value, expr)


def legend_labels(legend: str) -> set[str]:
    """Labels a legend format shows (``{{label}}``)."""
    return set(re.findall(r"\{\{\s*(\w+)\s*\}\}", legend))


def annotation_labels(text: str) -> set[str]:
    """Labels an alert annotation template reads (``$labels.name``)."""
    return set(re.findall(r"\$labels\.(\w+)", text))
