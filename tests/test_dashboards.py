"""What users import: the Collector configs, compose stack, dashboards and alert rules.

Nothing here starts a server (tests/e2e/test_prometheus.py runs the rules and dashboard
queries against a real Prometheus and Alertmanager). These tests check that the files parse,
that what one file references exists in another, and that every metric name, label and label
value the dashboards and rules use is one hookscope emits: the Prometheus forms of the names
in ``hookscope/telemetry/semconv.py``, as ``opentelemetry-exporter-prometheus`` renders a
scripted agent's metrics.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any, Final

import pytest
import yaml
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics import MeterProvider
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from hookscope.hooks import EVENTS
from hookscope.policy import Decision
from hookscope.telemetry import semconv as sc

from .support.promql import (
    annotation_labels,
    legend_labels,
    panel_queries,
    panels,
    parse,
)
from .support.workload import Profile, play

REPO: Final = Path(__file__).resolve().parents[1]
COLLECTOR: Final = REPO / "collector"
DASHBOARDS: Final = REPO / "dashboards"
OVERVIEW: Final = DASHBOARDS / "hookscope-overview.json"
SESSION: Final = DASHBOARDS / "hookscope-session.json"
RULES: Final = DASHBOARDS / "alerts" / "hookscope.rules.yml"
RULE_TESTS: Final = DASHBOARDS / "alerts" / "hookscope.rules.test.yml"
DECIDE_EVENTS: Final = ("pre_turn", "pre_tool_call", "pre_llm_request", "on_llm_response")
#: Jaeger's OTLP/gRPC receiver port (Jaeger v2 default).
JAEGER_OTLP_GRPC_PORT: Final = 4317


def load_yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


@cache
def load_json(path: Path) -> Any:
    return json.loads(path.read_text())


def prometheus_label(attribute: str) -> str:
    """An OTel attribute name as a Prometheus label (what the exporter does to it)."""
    return re.sub(r"[^A-Za-z0-9_]", "_", attribute)


@cache
def exported() -> dict[str, dict[str, frozenset[str]]]:
    """Sample name → label → values, as the Prometheus exporter renders a scripted fleet."""
    registry = CollectorRegistry()
    provider = MeterProvider(metric_readers=[PrometheusMetricReader(registry=registry)])
    asyncio.run(play(provider, [Profile("coder", allowed=5, denied=2)], rounds=12))
    text = generate_latest(registry).decode()
    provider.shutdown()
    series: dict[str, dict[str, set[str]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = series.setdefault(sample.name, {})
            for label, value in sample.labels.items():
                labels.setdefault(label, set()).add(value)
    return {name: {k: frozenset(v) for k, v in labels.items()} for name, labels in series.items()}


@cache
def histograms() -> frozenset[str]:
    registry = CollectorRegistry()
    provider = MeterProvider(metric_readers=[PrometheusMetricReader(registry=registry)])
    asyncio.run(play(provider, [Profile("coder", allowed=5, denied=2)], rounds=1))
    text = generate_latest(registry).decode()
    provider.shutdown()
    return frozenset(f.name for f in text_string_to_metric_families(text) if f.type == "histogram")


#: Every semconv string constant in its Prometheus label form (attribute names among them).
SEMCONV_LABELS: Final = frozenset(
    prometheus_label(value)
    for name, value in vars(sc).items()
    if name.isupper() and isinstance(value, str)
)
#: Values hookscope gives enumerated labels (booleans render as "true"/"false").
LABEL_VALUES: Final[dict[str, frozenset[str]]] = {
    prometheus_label(sc.TOOL_OUTCOME): frozenset(
        {sc.TOOL_SUCCEEDED, sc.TOOL_FAILED, sc.TOOL_RECOVERED, sc.TOOL_DENIED}
    ),
    prometheus_label(sc.POLICY_OUTCOME): frozenset({sc.POLICY_ALLOWED, sc.POLICY_DENIED}),
    prometheus_label(sc.POLICY_DECISION): frozenset(d.value for d in Decision),
    prometheus_label(sc.RECOVERY_RECOVERED): frozenset({"true", "false"}),
    prometheus_label(sc.HOOK_EVENT): frozenset(EVENTS),
    prometheus_label(sc.INTERACTION_OUTCOME): frozenset(
        {sc.INTERACTION_ANSWERED, sc.INTERACTION_UNANSWERED}
    ),
    prometheus_label(sc.GUARDRAIL_STAGE): frozenset({sc.STAGE_REQUEST, sc.STAGE_RESPONSE}),
    prometheus_label(sc.GEN_AI_TOKEN_TYPE): frozenset({sc.TOKEN_INPUT, sc.TOKEN_OUTPUT}),
}
AGENT: Final = prometheus_label(sc.GEN_AI_AGENT_NAME)
TOOL: Final = prometheus_label(sc.GEN_AI_TOOL_NAME)


def rules() -> list[dict[str, Any]]:
    return [rule for group in load_yaml(RULES)["groups"] for rule in group["rules"]]


def expressions() -> Iterator[tuple[str, str]]:
    """(where, PromQL) for every dashboard query and alert rule."""
    for path in (OVERVIEW, SESSION):
        for query in panel_queries(load_json(path)):
            yield f"{path.name} / {query.panel} / {query.ref_id}", query.expr
    for rule in rules():
        yield f"{RULES.name} / {rule['alert']}", rule["expr"]


EXPRESSIONS: Final = list(expressions())


def test_every_config_file_parses() -> None:
    yaml_files = sorted([*COLLECTOR.rglob("*.yaml"), *COLLECTOR.rglob("*.yml"), RULES, RULE_TESTS])
    assert [p.relative_to(REPO).as_posix() for p in yaml_files] == [
        "collector/alertmanager.yml",
        "collector/compose.yaml",
        "collector/gateway.yaml",
        "collector/grafana/provisioning/dashboards/hookscope.yaml",
        "collector/grafana/provisioning/datasources/hookscope.yaml",
        "collector/otelcol.yaml",
        "collector/prometheus.yml",
        "dashboards/alerts/hookscope.rules.test.yml",
        "dashboards/alerts/hookscope.rules.yml",
    ]
    for path in yaml_files:
        assert isinstance(load_yaml(path), dict), path
    for path in (OVERVIEW, SESSION):
        assert isinstance(load_json(path), dict), path


# --- names: the Prometheus forms of semconv.py ------------------------------------------


def test_prometheus_names_are_what_the_exporter_renders() -> None:
    rendered = {name.removesuffix("_bucket") for name in exported() if name.endswith("_bucket")}
    counters_and_gauges = {
        name for name in exported() if not re.search(r"_(bucket|sum|count)$", name)
    }
    assert sorted(sc.PROMETHEUS_NAMES.values()) == sorted(
        (rendered | counters_and_gauges) - {"target_info"}
    )


@pytest.mark.parametrize(("where", "expr"), EXPRESSIONS, ids=[w for w, _ in EXPRESSIONS])
def test_every_metric_used_is_a_semconv_prometheus_name(where: str, expr: str) -> None:
    names = set(sc.PROMETHEUS_NAMES.values())
    for metric in parse(expr).metrics:
        suffix = next((s for s in ("_bucket", "_sum", "_count") if metric.endswith(s)), "")
        base = metric.removesuffix(suffix) if suffix else metric
        if suffix:
            assert base in histograms(), f"{where}: {metric} is no histogram series"
        else:
            assert metric not in histograms(), f"{where}: use {metric}_bucket/_sum/_count"
        assert base in names, f"{where}: {metric} is not in semconv.PROMETHEUS_NAMES"
        assert metric in exported(), f"{where}: hookscope exports no {metric}"


@pytest.mark.parametrize(("where", "expr"), EXPRESSIONS, ids=[w for w, _ in EXPRESSIONS])
def test_every_label_used_is_a_semconv_attribute_the_metric_carries(where: str, expr: str) -> None:
    parsed = parse(expr)
    for selector in parsed.selectors:
        carried = exported()[selector.metric]
        for matcher in selector.matchers:
            assert matcher.label in carried, f"{where}: {selector.metric} has no {matcher.label}"
            assert matcher.label in SEMCONV_LABELS, f"{where}: {matcher.label} is not in semconv"
    for label in parsed.grouping - {"le"}:
        assert label in SEMCONV_LABELS, f"{where}: {label} is not in semconv"
        for metric in parsed.metrics:
            assert label in exported()[metric], f"{where}: {metric} has no {label} to group by"
    if "le" in parsed.grouping:
        assert any(metric.endswith("_bucket") for metric in parsed.metrics), where


@pytest.mark.parametrize(("where", "expr"), EXPRESSIONS, ids=[w for w, _ in EXPRESSIONS])
def test_label_values_matched_are_values_hookscope_emits(where: str, expr: str) -> None:
    for selector in parse(expr).selectors:
        for matcher in selector.matchers:
            if matcher.value.startswith("$") or matcher.label not in LABEL_VALUES:
                continue
            values = set(matcher.value.split("|")) if "~" in matcher.op else {matcher.value}
            assert values <= LABEL_VALUES[matcher.label], (where, matcher)


def test_every_metric_carries_the_agent_label() -> None:
    missing = {
        name for name, labels in exported().items() if AGENT not in labels and name != "target_info"
    }
    assert missing == set()


# --- dashboards ----------------------------------------------------------------------------


def test_overview_has_the_panels_users_look_for() -> None:
    assert [p["title"] for p in panels(load_json(OVERVIEW))] == [
        "Overview",
        "Active sessions",
        "Sessions started",
        "Tool calls",
        "Denied-call share",
        "Unrecovered tool errors",
        "Hook failures",
        "Sessions and turns",
        "Active sessions",
        "Sessions started",
        "Turns by outcome",
        "Turn latency",
        "Tool calls and policy",
        "Tool calls by tool and outcome",
        "Denied-call ratio",
        "Denied calls by tool, hook and rule",
        "Policy decisions",
        "Errors vs recoveries",
        "Tool errors by type",
        "Tool latency",
        "Hooks: hookscope's overhead on the agent",
        "Hook latency p95",
        "Share of time spent in hooks",
        "Hook failures",
        "Model, guardrails and user",
        "Tokens per second",
        "Tokens per response p95",
        "Model call latency",
        "Guardrail verdicts",
        "Questions and compactions",
        "Spend",
        "Spend per agent and model",
        "Unpriced model calls",
    ]


def test_overview_queries_filter_by_the_agent_and_tool_variables() -> None:
    variables = {v["name"]: v for v in load_json(OVERVIEW)["templating"]["list"]}
    assert sorted(variables) == ["agent", "datasource", "tool"]
    assert variables["agent"]["query"]["query"] == (
        "label_values(hookscope_sessions_total, gen_ai_agent_name)"
    )
    assert variables["tool"]["query"]["query"] == (
        'label_values(hookscope_tool_calls_total{gen_ai_agent_name=~"$agent"}, gen_ai_tool_name)'
    )
    for query in panel_queries(load_json(OVERVIEW)):
        for selector in parse(query.expr).selectors:
            matchers = {(m.label, m.op, m.value) for m in selector.matchers}
            assert (AGENT, "=~", "$agent") in matchers, (query.panel, selector)
            if TOOL in exported()[selector.metric]:
                assert (TOOL, "=~", "$tool") in matchers, (query.panel, selector)


@pytest.mark.parametrize("path", [OVERVIEW, SESSION], ids=lambda p: p.name)
def test_legends_show_only_labels_the_query_keeps(path: Path) -> None:
    for query in panel_queries(load_json(path)):
        assert legend_labels(query.legend) <= parse(query.expr).grouping, query


@pytest.mark.parametrize("path", [OVERVIEW, SESSION], ids=lambda p: p.name)
def test_dashboard_panels_have_unique_ids_and_tile_the_grid(path: Path) -> None:
    dashboard = load_json(path)
    ids = [p["id"] for p in panels(dashboard)]
    assert len(ids) == len(set(ids))
    cells: dict[tuple[int, int], str] = {}
    for panel in panels(dashboard):
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24, panel["title"]
        for x in range(grid["x"], grid["x"] + grid["w"]):
            for y in range(grid["y"], grid["y"] + grid["h"]):
                assert (x, y) not in cells, f"{panel['title']} overlaps {cells[(x, y)]}"
                cells[(x, y)] = panel["title"]


#: Grafana units that read "per second".
PER_SECOND_UNITS: Final = frozenset({"ops", "reqps", "rps", "cps", "wps"})


def query_kind(expr: str) -> str:
    """What a panel query computes, by its outermost operation."""
    compact = " ".join(expr.split())
    if "hookscope_cost_total" in compact:
        return "usd"  # spend (hookscope.cost counts US dollars)
    if compact.startswith("histogram_quantile("):
        return "seconds" if "_seconds_bucket" in compact else "count"
    if re.search(r"\) / (sum|rate)", compact):
        return "ratio"
    if "rate(" in compact and "_seconds_sum" in compact:
        return "ratio"  # seconds per second: a share of wall-clock time
    if "rate(" in compact:
        return "per second"
    return "count"  # increase() over the range, or a gauge


def unit_matches(kind: str, unit: str) -> bool:
    if kind == "per second":
        return unit in PER_SECOND_UNITS or unit.endswith("/s")
    if kind == "ratio":
        return unit == "percentunit"
    if kind == "seconds":
        return unit == "s"
    if kind == "usd":
        return unit == "currencyUSD"
    return unit in ("short", "none")


@pytest.mark.parametrize("path", [OVERVIEW, SESSION], ids=lambda p: p.name)
def test_every_panel_unit_matches_what_its_queries_compute(path: Path) -> None:
    checked = 0
    for panel in panels(load_json(path)):
        exprs = [t["expr"] for t in panel.get("targets", ()) if "expr" in t]
        if not exprs:
            continue
        unit = panel["fieldConfig"]["defaults"]["unit"]
        kinds = {query_kind(expr) for expr in exprs}
        assert len(kinds) == 1, (panel["title"], kinds)  # one unit fits all its queries
        assert unit_matches(kinds.pop(), unit), (panel["title"], unit, exprs)
        checked += 1
    assert checked >= 4


def test_the_checks_of_units_tell_rates_ratios_and_latencies_apart() -> None:
    rate = 'sum(rate(hookscope_tool_calls_total{a="b"}[5m]))'
    assert query_kind(rate) == "per second"
    assert query_kind(f"{rate} / {rate}") == "ratio"
    assert query_kind("sum(rate(hookscope_hook_duration_seconds_sum[5m]))") == "ratio"
    assert query_kind("histogram_quantile(0.9, sum by (le) (rate(x_seconds_bucket[1m])))") == (
        "seconds"
    )
    assert query_kind("sum(increase(hookscope_tool_calls_total[1h]))") == "count"
    assert not unit_matches("per second", "short")
    assert not unit_matches("ratio", "short")


@pytest.mark.parametrize("path", [OVERVIEW, SESSION], ids=lambda p: p.name)
def test_latency_panels_of_spans_show_exemplars(path: Path) -> None:
    # Every histogram measured in a span's context (not hook durations: a hook has no span).
    with_spans = ("gen_ai_execute_tool_duration", "gen_ai_invoke_agent_duration")
    with_spans += ("gen_ai_client_operation_duration", "gen_ai_client_token_usage")
    for panel in panels(load_json(path)):
        for target in panel.get("targets", ()):
            expr = target.get("expr", "")
            if expr.startswith("histogram_quantile(") and any(m in expr for m in with_spans):
                assert target.get("exemplar") is True, (panel["title"], expr)


def test_exemplars_are_stored_and_link_to_the_trace_datasource() -> None:
    datasources = load_yaml(COLLECTOR / "grafana/provisioning/datasources/hookscope.yaml")
    by_type = {d["type"]: d for d in datasources["datasources"]}
    assert by_type["prometheus"]["jsonData"]["exemplarTraceIdDestinations"] == [
        {"name": "trace_id", "datasourceUid": by_type["jaeger"]["uid"]}
    ]
    compose = load_yaml(COLLECTOR / "compose.yaml")
    assert "--enable-feature=exemplar-storage" in compose["services"]["prometheus"]["command"]
    for name in ("otelcol.yaml",):
        exporter = load_yaml(COLLECTOR / name)["exporters"]["prometheus"]
        assert exporter["enable_open_metrics"] is True


def test_dashboards_pick_datasources_by_variable_of_the_right_type() -> None:
    kinds = {"${datasource}": "prometheus", "${traces}": "jaeger", "${tempo}": "tempo"}
    for path in (OVERVIEW, SESSION):
        dashboard = load_json(path)
        declared = {
            f"${{{v['name']}}}": v["query"]
            for v in dashboard["templating"]["list"]
            if v["type"] == "datasource"
        }
        for panel in panels(dashboard):
            refs = [
                panel.get("datasource"),
                *(t.get("datasource") for t in panel.get("targets", ())),
            ]
            for ref in filter(None, refs):
                assert declared[ref["uid"]] == kinds[ref["uid"]] == ref["type"], (path, ref)


def test_session_dashboard_finds_traces_by_the_session_id_attribute() -> None:
    dashboard = load_json(SESSION)
    variables = {v["name"]: v["type"] for v in dashboard["templating"]["list"]}
    assert variables == {
        "datasource": "datasource",
        "traces": "datasource",
        "tempo": "datasource",
        "service": "textbox",
        "session_id": "textbox",
        "trace_id": "textbox",
        "agent": "query",
    }
    targets = {
        (panel["title"], target.get("queryType", "")): target
        for panel in panels(dashboard)
        for target in panel.get("targets", ())
        if target["datasource"]["type"] in ("jaeger", "tempo")
    }
    assert targets[("Traces of session $session_id", "search")]["tags"] == (
        f'{sc.SESSION_ID}="$session_id"'
    )
    assert targets[("Traces of session $session_id (Tempo)", "traceql")]["query"] == (
        f'{{ span.{sc.SESSION_ID} = "$session_id" }}'
    )
    assert targets[("Timeline", "")]["query"] == "$trace_id"
    assert targets[("Timeline (Tempo)", "traceql")]["query"] == "$trace_id"


# --- alert rules -------------------------------------------------------------------------


def test_the_rules_alert_on_what_the_issue_asks_for() -> None:
    assert [(r["alert"], r["labels"]["severity"], r["for"]) for r in rules()] == [
        ("HookscopeDeniedCallRateHigh", "warning", "5m"),
        ("HookscopeDenyStorm", "critical", "1m"),
        ("HookscopeToolErrorRateHigh", "warning", "10m"),
        ("HookscopeUnrecoveredToolErrors", "warning", "1m"),
        ("HookscopeDecideHookFailing", "critical", "1m"),
        ("HookscopeHookFailing", "warning", "5m"),
        ("HookscopeSlowHook", "warning", "10m"),
        ("HookscopeSpendRateHigh", "warning", "10m"),
    ]


README: Final = REPO / "README.md"
RUNBOOK: Final = "https://github.com/hookscope/hookscope/blob/main/README.md#"
GRAFANA: Final = "http://localhost:3000/d/"


def github_anchors(markdown: str) -> set[str]:
    """The anchors GitHub gives a Markdown file's headings."""
    return {
        re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        for heading in re.findall(r"^#+ (.+)$", markdown, re.MULTILINE)
    }


@pytest.mark.parametrize("rule", rules(), ids=lambda r: r["alert"])
def test_every_alert_groups_by_agent_and_explains_itself(rule: dict[str, Any]) -> None:
    grouping = parse(rule["expr"]).grouping
    assert AGENT in grouping
    annotations = rule["annotations"]
    assert sorted(annotations) == ["dashboard", "description", "runbook_url", "summary"]
    for text in annotations.values():
        assert annotation_labels(text) <= grouping, (rule["alert"], text)
    assert "Fires" in annotations["description"]  # the threshold, in words
    # Trace-UI neutral: attributes to filter on, never one product's name.
    for product in ("Jaeger", "Tempo", "Phoenix", "Grafana"):
        assert product not in annotations["description"]


@pytest.mark.parametrize("rule", rules(), ids=lambda r: r["alert"])
def test_every_alert_links_its_runbook_section_and_its_dashboard_panel(
    rule: dict[str, Any],
) -> None:
    runbook = rule["annotations"]["runbook_url"]
    assert runbook == RUNBOOK + rule["alert"].lower()
    assert rule["alert"].lower() in github_anchors(README.read_text())
    url = rule["annotations"]["dashboard"]
    path, _, query = url.partition("?")
    assert path == GRAFANA + "hookscope-overview/hookscope-overview"
    parameters = dict(pair.split("=", 1) for pair in query.split("&"))
    assert parameters["var-agent"] == "{{ $labels.gen_ai_agent_name | urlquery }}"
    if "var-tool" in parameters:
        assert parameters["var-tool"] == "{{ $labels.gen_ai_tool_name | urlquery }}"
    titles = {panel["id"]: panel["title"] for panel in panels(load_json(OVERVIEW))}
    shown = titles[int(parameters["viewPanel"])]
    expected = {
        "HookscopeDeniedCallRateHigh": "Denied calls by tool, hook and rule",
        "HookscopeDenyStorm": "Denied calls by tool, hook and rule",
        "HookscopeToolErrorRateHigh": "Tool errors by type",
        "HookscopeUnrecoveredToolErrors": "Tool errors by type",
        "HookscopeDecideHookFailing": "Hook failures",
        "HookscopeHookFailing": "Hook failures",
        "HookscopeSlowHook": "Hook latency p95",
        "HookscopeSpendRateHigh": "Spend per agent and model",
    }
    assert shown == expected[rule["alert"]]


def test_deny_storm_is_relative_to_the_agents_traffic() -> None:
    (rule,) = [r for r in rules() if r["alert"] == "HookscopeDenyStorm"]
    expr = " ".join(rule["expr"].split())
    denied = 'increase(hookscope_tool_calls_total{hookscope_tool_outcome="denied"}[5m])'
    per_tool = f"sum by (gen_ai_agent_name, gen_ai_tool_name) ({denied})"
    assert expr == (
        f"( {per_tool} / on (gen_ai_agent_name) group_left"
        " sum by (gen_ai_agent_name) (increase(hookscope_tool_calls_total[5m])) )"
        f" > 0.5 and {per_tool} >= 30"
    )


def test_slow_hook_holds_each_hook_type_to_its_own_threshold() -> None:
    (rule,) = [r for r in rules() if r["alert"] == "HookscopeSlowHook"]
    type_label = prometheus_label(sc.HOOK_TYPE)
    assert type_label in parse(rule["expr"]).grouping
    thresholds = re.findall(
        r'hookscope_hook_type(=|!=)"python"\}\[10m\]\)\)\) > ([\d.]+)', rule["expr"]
    )
    assert thresholds == [("=", "0.025"), ("!=", "5")]
    # Both thresholds are bucket boundaries: interpolation cannot move the alert across them.
    assert {0.025, 5.0} <= set(sc.HOOK_DURATION_BUCKETS_S)


def test_denied_call_alert_is_a_ratio_with_a_minimum_traffic_guard() -> None:
    (rule,) = [r for r in rules() if r["alert"] == "HookscopeDeniedCallRateHigh"]
    expr = " ".join(rule["expr"].split())
    denied = 'increase(hookscope_tool_calls_total{hookscope_tool_outcome="denied"}[10m])'
    total = "increase(hookscope_tool_calls_total[10m])"
    assert expr == (
        f"( sum by (gen_ai_agent_name) ({denied}) / sum by (gen_ai_agent_name) ({total}) )"
        f" > 0.25 and sum by (gen_ai_agent_name) ({total}) >= 20"
    )


def test_decide_and_other_hook_failure_alerts_split_events_exactly() -> None:
    matchers = {
        r["alert"]: m
        for r in rules()
        for s in parse(r["expr"]).selectors
        for m in s.matchers
        if m.label == prometheus_label(sc.HOOK_EVENT)
    }
    assert set(matchers["HookscopeDecideHookFailing"].value.split("|")) == set(DECIDE_EVENTS)
    assert matchers["HookscopeDecideHookFailing"].op == "=~"
    assert matchers["HookscopeHookFailing"].value == matchers["HookscopeDecideHookFailing"].value
    assert matchers["HookscopeHookFailing"].op == "!~"


def test_every_alert_has_promtool_tests_that_fire_it_and_keep_it_silent() -> None:
    suite = load_yaml(RULE_TESTS)
    assert suite["rule_files"] == [RULES.name]
    cases = [case for test in suite["tests"] for case in test["alert_rule_test"]]
    firing = {c["alertname"] for c in cases if c["exp_alerts"]}
    silent = {c["alertname"] for c in cases if not c["exp_alerts"]}
    alerts = {r["alert"] for r in rules()}
    assert firing == alerts
    assert silent == alerts


# --- collector ---------------------------------------------------------------------------


def _env_defaults(config_text: str) -> dict[str, str]:
    return dict(re.findall(r"\$\{env:(\w+):-([^}]*)\}", config_text))


def _port(endpoint: str) -> int:
    return int(endpoint.rsplit(":", 1)[1])


@pytest.mark.parametrize("name", ["otelcol.yaml", "gateway.yaml"])
def test_collector_pipelines_use_only_defined_components_memory_limiter_first(name: str) -> None:
    config = load_yaml(COLLECTOR / name)
    for pipeline in config["service"]["pipelines"].values():
        for kind in ("receivers", "processors", "exporters"):
            assert set(pipeline[kind]) <= set(config[kind]), (name, kind)
        assert pipeline["processors"][0] == "memory_limiter"
    assert set(config["service"]["extensions"]) <= set(config["extensions"])
    every_exporter = " ".join(config["exporters"])
    assert "prometheusremotewrite" not in every_exporter  # it mangles histograms (DESIGN §6)


def test_collector_samples_tail_on_denials_unrecovered_errors_and_blocked_turns() -> None:
    config = load_yaml(COLLECTOR / "otelcol.yaml")
    pipelines = config["service"]["pipelines"]
    assert pipelines["traces"]["processors"] == ["memory_limiter", "tail_sampling", "batch"]
    assert pipelines["traces"]["exporters"] == ["otlp/jaeger"]
    assert pipelines["metrics"] == {
        "receivers": ["otlp"],
        "processors": ["memory_limiter", "batch"],
        "exporters": ["prometheus"],
    }
    policies = {
        p["name"]: (p["type"], p[p["type"]])
        for p in config["processors"]["tail_sampling"]["policies"]
    }
    assert policies == {
        "denied-tool-call": (
            "string_attribute",
            {"key": sc.TOOL_OUTCOME, "values": [sc.TOOL_DENIED]},
        ),
        "unrecovered-tool-error": (
            "string_attribute",
            {"key": sc.TOOL_OUTCOME, "values": [sc.TOOL_FAILED]},
        ),
        "blocked-turn": ("string_attribute", {"key": sc.TURN_OUTCOME, "values": ["blocked"]}),
        "error-status": ("status_code", {"status_codes": ["ERROR"]}),
        "baseline": (
            "probabilistic",
            {"sampling_percentage": "${env:HOOKSCOPE_SAMPLE_PERCENTAGE:-10}"},
        ),
    }
    turn_outcomes = exported()["hookscope_turns_total"][prometheus_label(sc.TURN_OUTCOME)]
    assert "blocked" in turn_outcomes


def test_gateway_routes_traces_by_trace_id_and_metrics_by_resource() -> None:
    config = load_yaml(COLLECTOR / "gateway.yaml")
    pipelines = config["service"]["pipelines"]
    traces = config["exporters"][pipelines["traces"]["exporters"][0]]
    metrics = config["exporters"][pipelines["metrics"]["exporters"][0]]
    assert pipelines["traces"]["exporters"] == ["loadbalancing/traces"]
    assert pipelines["metrics"]["exporters"] == ["loadbalancing/metrics"]
    assert (traces["routing_key"], metrics["routing_key"]) == ("traceID", "resource")
    assert traces["resolver"] == metrics["resolver"]
    assert "tail_sampling" not in config["processors"]  # the samplers do it, with whole traces


# --- compose -----------------------------------------------------------------------------


def compose() -> dict[str, Any]:
    services: dict[str, Any] = load_yaml(COLLECTOR / "compose.yaml")["services"]
    return services


def mounts(service: str) -> dict[str, Path]:
    """Container path → host path of a service's bind mounts."""
    found = {}
    for volume in compose()[service].get("volumes", []):
        source, target = volume.split(":")[:2]
        found[target] = (COLLECTOR / source).resolve()
    return found


def config_of(service: str) -> Path:
    """The host file a collector service runs with (its --config)."""
    (flag,) = compose()[service]["command"]
    return mounts(service)[flag.removeprefix("--config=")]


def flag(service: str, name: str) -> str:
    command: list[str] = compose()[service]["command"]
    (value,) = [f.split("=", 1)[1] for f in command if f.startswith(name + "=")]
    return value


def published(service: str) -> dict[int, str]:
    """Container port → host address:port."""
    found = {}
    for mapping in compose()[service].get("ports", []):
        host, host_port, container_port = mapping.rsplit(":", 2)
        found[int(container_port)] = f"{host}:{host_port}"
    return found


def test_compose_pins_every_image() -> None:
    images = {name: service["image"] for name, service in compose().items()}
    assert images == {
        "otelcol": "otel/opentelemetry-collector-contrib:0.130.0",
        "jaeger": "jaegertracing/jaeger:2.5.0",
        "prometheus": "prom/prometheus:v2.55.1",
        "alertmanager": "prom/alertmanager:v0.27.0",
        "grafana": "grafana/grafana:11.6.0",
        "otelcol-gateway": "otel/opentelemetry-collector-contrib:0.130.0",
        "otelcol-sampler": "otel/opentelemetry-collector-contrib:0.130.0",
    }


def test_compose_mounts_files_that_exist_and_are_the_tested_ones() -> None:
    for service in compose():
        for target, source in mounts(service).items():
            assert source.exists(), (service, target, source)
    assert config_of("otelcol") == config_of("otelcol-sampler") == COLLECTOR / "otelcol.yaml"
    assert config_of("otelcol-gateway") == COLLECTOR / "gateway.yaml"
    prometheus = load_yaml(mounts("prometheus")[flag("prometheus", "--config.file")])
    (rule_file,) = prometheus["rule_files"]
    assert mounts("prometheus")[rule_file] == RULES
    assert mounts("alertmanager")[flag("alertmanager", "--config.file")] == (
        COLLECTOR / "alertmanager.yml"
    )
    provider = load_yaml(COLLECTOR / "grafana/provisioning/dashboards/hookscope.yaml")
    (dashboards,) = provider["providers"]
    grafana = mounts("grafana")
    assert grafana["/etc/grafana/provisioning"] == COLLECTOR / "grafana/provisioning"
    assert {
        source
        for target, source in grafana.items()
        if target.startswith(dashboards["options"]["path"] + "/")
    } == {OVERVIEW, SESSION}


def test_compose_ports_agree_across_files() -> None:
    services = compose()
    otelcol_env = services["otelcol"]["environment"]
    defaults = _env_defaults((COLLECTOR / "otelcol.yaml").read_text())
    assert set(otelcol_env) <= set(defaults)
    assert otelcol_env == services["otelcol-sampler"]["environment"]
    # agents reach the OTLP receivers on the published ports
    assert published("otelcol") == {
        _port(otelcol_env["OTLP_GRPC_ENDPOINT"]): "127.0.0.1:4317",
        _port(otelcol_env["OTLP_HTTP_ENDPOINT"]): "127.0.0.1:4318",
    }
    # the collector exports traces to Jaeger's OTLP port
    jaeger_host, jaeger_port = otelcol_env["JAEGER_OTLP_ENDPOINT"].split(":")
    assert (jaeger_host, int(jaeger_port)) == ("jaeger", JAEGER_OTLP_GRPC_PORT)
    assert services["jaeger"]["environment"]["JAEGER_LISTEN_HOST"] == "0.0.0.0"
    # Prometheus scrapes the collector's prometheus exporter, single and scaled
    scrape = {
        job["job_name"]: job for job in load_yaml(COLLECTOR / "prometheus.yml")["scrape_configs"]
    }
    exporter_port = _port(otelcol_env["PROMETHEUS_EXPORTER_ENDPOINT"])
    assert scrape["otelcol"]["static_configs"] == [{"targets": [f"otelcol:{exporter_port}"]}]
    (sampler_sd,) = scrape["otelcol-sampler"]["dns_sd_configs"]
    assert (sampler_sd["names"], sampler_sd["port"]) == (["otelcol-sampler"], exporter_port)
    # the gateway resolves the sampler replicas and sends to their OTLP/gRPC port
    gateway = load_yaml(COLLECTOR / "gateway.yaml")["exporters"]["loadbalancing/traces"]
    assert services["otelcol-gateway"]["environment"]["SAMPLER_HOSTNAME"] == "otelcol-sampler"
    assert gateway["resolver"]["dns"]["port"] == str(_port(otelcol_env["OTLP_GRPC_ENDPOINT"]))
    assert services["otelcol-sampler"]["deploy"]["replicas"] == 2
    # Prometheus → Alertmanager, and Grafana → each backend
    prometheus_port = _port(flag("prometheus", "--web.listen-address"))
    alertmanager_port = _port(flag("alertmanager", "--web.listen-address"))
    alerting = load_yaml(COLLECTOR / "prometheus.yml")["alerting"]["alertmanagers"]
    assert alerting == [{"static_configs": [{"targets": [f"alertmanager:{alertmanager_port}"]}]}]
    datasources = {
        d["uid"]: d
        for d in load_yaml(COLLECTOR / "grafana/provisioning/datasources/hookscope.yaml")[
            "datasources"
        ]
    }
    assert {uid: (d["type"], d["url"]) for uid, d in datasources.items()} == {
        "prometheus": ("prometheus", f"http://prometheus:{prometheus_port}"),
        "jaeger": ("jaeger", "http://jaeger:16686"),
        "alertmanager": ("alertmanager", f"http://alertmanager:{alertmanager_port}"),
    }
    assert published("prometheus") == {prometheus_port: f"127.0.0.1:{prometheus_port}"}
    assert published("alertmanager") == {alertmanager_port: f"127.0.0.1:{alertmanager_port}"}
    assert published("jaeger") == {16686: "127.0.0.1:16686"}
    assert published("grafana") == {3000: "127.0.0.1:3000"}


def test_grafana_rate_interval_matches_the_scrape_interval() -> None:
    datasources = load_yaml(COLLECTOR / "grafana/provisioning/datasources/hookscope.yaml")
    (prometheus,) = [d for d in datasources["datasources"] if d["type"] == "prometheus"]
    scrape_interval = load_yaml(COLLECTOR / "prometheus.yml")["global"]["scrape_interval"]
    assert prometheus["jsonData"]["timeInterval"] == scrape_interval == "15s"


def test_alertmanager_groups_by_agent_and_never_inhibits_the_headline_alert() -> None:
    config = load_yaml(COLLECTOR / "alertmanager.yml")
    assert config["route"]["group_by"] == ["alertname", AGENT]
    # The card's alert reaches the receiver whatever else fires (the e2e test proves it).
    assert config.get("inhibit_rules") is None
    receivers = {r["name"] for r in config["receivers"]}
    routes = [config["route"], *config["route"]["routes"]]
    assert {route["receiver"] for route in routes} <= receivers
