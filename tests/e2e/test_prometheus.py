"""The shipped alert rules and overview dashboard, against a real Prometheus and Alertmanager.

Scripted agents (tests/support/workload.py) run sessions through ``HookRunner([OTelHook(...),
enforce([...]), ...])`` with known denied-call ratios; ``opentelemetry-exporter-prometheus``
serves their metrics on a loopback scrape endpoint. Prometheus (1 s scrape and evaluation
intervals) scrapes it and evaluates ``dashboards/alerts/hookscope.rules.yml``, sending alerts to
an Alertmanager running the shipped ``collector/alertmanager.yml``.

The rules run as shipped except for their ``for:`` durations, shortened to
:data:`FOR_IN_TEST` in a generated copy (a test cannot wait 5 minutes); expressions, windows
and thresholds are unchanged. The 10-minute windows hold only this run's few seconds of data,
which ``increase()`` reports as they are (it extrapolates at most half a scrape interval past
the data), so the ratios and the minimum-traffic guard see exactly the scripted traffic.

The agents:

* ``reckless`` denies half its calls (2 allowed + 2 denied per round, 10 rounds a second);
* ``careful`` denies 1 call in 20, at the same pace: well above the traffic guard, below 25%;
* ``lonely`` makes only denied calls (ratio 100%) but 8 in all: under the guard of 20.

Binaries come from the Debian packages ``prometheus`` and ``prometheus-alertmanager``
(installed by scripts/install-debian-deps.sh when missing). In CI these tests never skip;
elsewhere they skip only when the packages are missing and cannot be installed.
"""

from __future__ import annotations

import json
import math
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pytest
import yaml

from hookscope.telemetry import semconv as sc

from ..support.prometheus import (
    AlertmanagerApi,
    PrometheusApi,
    Sample,
    ScrapeEndpoint,
    Unavailable,
    alertmanager,
    ensure_installed,
    in_ci,
    poll,
    prometheus,
)
from ..support.promql import panel_queries, substitute
from ..support.workload import Profile, Workload

pytestmark = pytest.mark.e2e

REPO: Final = Path(__file__).resolve().parents[2]
RULES: Final = REPO / "dashboards" / "alerts" / "hookscope.rules.yml"
RULE_TESTS: Final = REPO / "dashboards" / "alerts" / "hookscope.rules.test.yml"
OVERVIEW: Final = REPO / "dashboards" / "hookscope-overview.json"
SESSION: Final = REPO / "dashboards" / "hookscope-session.json"
ALERTMANAGER_CONFIG: Final = REPO / "collector" / "alertmanager.yml"
COMPOSE_PROMETHEUS_CONFIG: Final = REPO / "collector" / "prometheus.yml"

RECKLESS: Final = Profile("reckless", allowed=2, denied=2)
CAREFUL: Final = Profile("careful", allowed=19, denied=1)
LONELY: Final = Profile("lonely", allowed=0, denied=1, every=10, rounds=8)
FOR_IN_TEST: Final = "2s"
DENIED_ALERT: Final = "HookscopeDeniedCallRateHigh"
STORM: Final = "HookscopeDenyStorm"
#: Grafana's built-in variables, as a 1 s scrape interval makes them.
GRAFANA_INTERVALS: Final = {"__rate_interval": "30s", "__interval": "5s", "__range": "5m"}
DEADLINE_S: Final = 60.0

# The denied-call rule's parts, to show what Prometheus computes for each agent.
DENIED_RATIO: Final = (
    'sum by (gen_ai_agent_name) (increase(hookscope_tool_calls_total{hookscope_tool_outcome="denied"}[10m]))'
    " / sum by (gen_ai_agent_name) (increase(hookscope_tool_calls_total[10m]))"
)
CALLS_IN_WINDOW: Final = "sum by (gen_ai_agent_name) (increase(hookscope_tool_calls_total[10m]))"


@pytest.fixture(scope="module")
def binaries() -> None:
    """Prometheus, promtool, Alertmanager and amtool on PATH (installed if need be)."""
    try:
        ensure_installed()
    except Unavailable as why:
        if in_ci():
            pytest.fail(f"CI must run these tests, but Prometheus cannot be installed: {why}")
        pytest.skip(f"outside CI, and Prometheus is missing and cannot be installed: {why}")


def run(*argv: str | Path) -> str:
    result = subprocess.run(
        [str(a) for a in argv], capture_output=True, text=True, timeout=120, check=False
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    return output


def test_promtool_accepts_the_shipped_rules(binaries: None) -> None:
    output = run("promtool", "check", "rules", RULES)
    assert "SUCCESS: 8 rules found" in output


def test_promtool_unit_tests_of_every_alert_pass(binaries: None) -> None:
    output = run("promtool", "test", "rules", RULE_TESTS)
    assert output.split() == ["Unit", "Testing:", str(RULE_TESTS), "SUCCESS"]


def test_compose_prometheus_and_alertmanager_configs_are_valid(
    binaries: None, tmp_path: Path
) -> None:
    # The compose file mounts the rules at a container path: point the copy at the real file.
    config = yaml.safe_load(COMPOSE_PROMETHEUS_CONFIG.read_text())
    config["rule_files"] = [str(RULES)]
    copy = tmp_path / "prometheus.yml"
    copy.write_text(yaml.safe_dump(config))
    assert "SUCCESS: 1 rule files found" in run("promtool", "check", "config", copy)
    assert "SUCCESS" in run("amtool", "check-config", ALERTMANAGER_CONFIG)


def rules_with_short_for(target: Path) -> Path:
    """The shipped rules with every ``for:`` set to :data:`FOR_IN_TEST`; nothing else changes."""
    rules = yaml.safe_load(RULES.read_text())
    for group in rules["groups"]:
        for rule in group["rules"]:
            if "for" in rule:
                rule["for"] = FOR_IN_TEST
    target.write_text(yaml.safe_dump(rules, sort_keys=False))
    return target


@dataclass(frozen=True, slots=True)
class Stack:
    prometheus: PrometheusApi
    alertmanager: AlertmanagerApi


@pytest.fixture(scope="module")
def stack(binaries: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """Scripted agents → scrape endpoint → Prometheus (shipped rules) → Alertmanager."""
    workdir = tmp_path_factory.mktemp("prometheus-e2e")
    with (
        ScrapeEndpoint() as endpoint,
        Workload(endpoint.meter_provider, [RECKLESS, CAREFUL, LONELY]),
        alertmanager(ALERTMANAGER_CONFIG, workdir) as am,
    ):
        config = {
            "global": {
                "scrape_interval": "1s",
                "scrape_timeout": "1s",
                "evaluation_interval": "1s",
            },
            "rule_files": [str(rules_with_short_for(workdir / "rules.yml"))],
            "alerting": {
                "alertmanagers": [{"static_configs": [{"targets": [f"127.0.0.1:{am.port}"]}]}]
            },
            "scrape_configs": [
                {"job_name": "hookscope", "static_configs": [{"targets": [endpoint.target]}]}
            ],
        }
        (workdir / "prometheus.yml").write_text(yaml.safe_dump(config))
        with prometheus(workdir / "prometheus.yml", workdir) as server:
            api = PrometheusApi(server.url)
            poll(api.targets_up, DEADLINE_S, "the scrape endpoint to be up")
            yield Stack(api, AlertmanagerApi(am.url))


def by_agent(samples: list[Sample]) -> dict[str, float]:
    return {s.labels["gen_ai_agent_name"]: s.value for s in samples}


def alerts_named(alerts: list[dict[str, Any]], name: str) -> dict[str, dict[str, Any]]:
    """Agent → alert, for the alerts called ``name``."""
    return {a["labels"]["gen_ai_agent_name"]: a for a in alerts if a["labels"]["alertname"] == name}


def firing_in_prometheus(stack: Stack, agent: str) -> dict[str, Any] | None:
    alert = alerts_named(stack.prometheus.alerts(), DENIED_ALERT).get(agent)
    return alert if alert is not None and alert["state"] == "firing" else None


def test_prometheus_sees_every_metric_under_its_design_name(stack: Stack) -> None:
    histograms = {"_bucket", "_sum", "_count"}
    expected = {
        f"{name}{suffix}"
        for name in sc.PROMETHEUS_NAMES.values()
        for suffix in (histograms if not name.endswith(("_total", "_active")) else {""})
    }

    def names() -> set[str] | None:
        seen = {
            n for n in stack.prometheus.metric_names() if n.startswith(("hookscope_", "gen_ai_"))
        }
        return seen if seen >= expected else None

    assert poll(names, DEADLINE_S, "every hookscope metric") == expected


@pytest.mark.parametrize("agent", ["reckless", ".*"], ids=["agent=reckless", "agent=All"])
@pytest.mark.parametrize("path", [OVERVIEW, SESSION], ids=lambda p: p.name)
def test_every_dashboard_query_returns_data(stack: Stack, path: Path, agent: str) -> None:
    variables = {**GRAFANA_INTERVALS, "agent": agent, "tool": ".*"}
    for query in panel_queries(json.loads(path.read_text())):
        expr = substitute(query.expr, variables)

        def data(expr: str = expr) -> list[Sample] | None:
            samples = stack.prometheus.query(expr)
            return samples if samples and all(math.isfinite(s.value) for s in samples) else None

        poll(data, DEADLINE_S, f"data for panel {query.panel!r} ({query.ref_id}): {expr}")


def test_denied_call_ratio_panel_shows_each_agents_scripted_share(stack: Stack) -> None:
    (query,) = [
        q
        for q in panel_queries(json.loads(OVERVIEW.read_text()))
        if q.panel == "Denied-call ratio" and q.ref_id == "A"
    ]
    ratios = {}
    for profile in (RECKLESS, CAREFUL):
        expr = substitute(query.expr, {**GRAFANA_INTERVALS, "agent": profile.agent, "tool": ".*"})

        def result(expr: str = expr) -> list[Sample] | None:
            return stack.prometheus.query(expr) or None

        (sample,) = poll(result, DEADLINE_S, expr)
        ratios[profile.agent] = round(sample.value, 2)
    assert ratios == {"reckless": 0.5, "careful": 0.05}


def test_denied_call_alert_fires_for_the_high_denial_agent(stack: Stack) -> None:
    alert = poll(lambda: firing_in_prometheus(stack, "reckless"), DEADLINE_S, "reckless firing")
    assert alert["labels"] == {
        "alertname": DENIED_ALERT,
        "gen_ai_agent_name": "reckless",
        "severity": "warning",
    }
    assert alert["annotations"]["summary"] == "Agent reckless: more than 25% of tool calls denied"
    assert 0.45 <= float(alert["value"]) <= 0.55


def in_alertmanager(stack: Stack, name: str, agent: str) -> dict[str, Any] | None:
    return alerts_named(stack.alertmanager.alerts(), name).get(agent)


def test_denied_call_alert_arrives_in_alertmanager(stack: Stack) -> None:
    alert = poll(
        lambda: in_alertmanager(stack, DENIED_ALERT, "reckless"),
        DEADLINE_S,
        "the reckless alert in Alertmanager",
    )
    assert alert["labels"] == {
        "alertname": DENIED_ALERT,
        "gen_ai_agent_name": "reckless",
        "severity": "warning",
    }
    assert alert["annotations"]["summary"] == "Agent reckless: more than 25% of tool calls denied"
    assert alert["receivers"] == [{"name": "hookscope"}]


def test_the_denied_call_alert_is_active_in_alertmanager_and_inhibited_by_nothing(
    stack: Stack,
) -> None:
    # reckless denies run_command and delete_file, a quarter of its calls each: no deny
    # storm (one tool's denials above half the agent's calls), and nothing inhibits the alert.
    def active() -> dict[str, Any] | None:
        alert = in_alertmanager(stack, DENIED_ALERT, "reckless")
        return alert if alert is not None and alert["status"]["state"] == "active" else None

    alert = poll(active, DEADLINE_S, "the reckless alert to be active")
    assert alert["status"]["inhibitedBy"] == []
    assert not [a for a in stack.alertmanager.alerts() if a["labels"]["alertname"] == STORM]


def test_denied_call_alert_stays_silent_below_the_ratio_and_under_the_traffic_guard(
    stack: Stack,
) -> None:
    # Once reckless's alert reached Alertmanager, the rule has been evaluated (and its alerts
    # sent) on every agent's data.
    poll(lambda: in_alertmanager(stack, DENIED_ALERT, "reckless"), DEADLINE_S, "reckless alert")

    def ratios() -> dict[str, float] | None:
        found = by_agent(stack.prometheus.query(DENIED_RATIO))
        return found if "lonely" in found else None

    denied = poll(ratios, DEADLINE_S, "lonely's denied ratio")
    calls = by_agent(stack.prometheus.query(CALLS_IN_WINDOW))
    # careful: enough traffic, too few denials; lonely: all denied, too little traffic.
    assert round(denied["careful"], 2) == 0.05
    assert calls["careful"] >= 20
    assert denied["lonely"] == 1.0
    assert calls["lonely"] < 20
    assert sorted(alerts_named(stack.prometheus.alerts(), DENIED_ALERT)) == ["reckless"]
    assert sorted(alerts_named(stack.alertmanager.alerts(), DENIED_ALERT)) == ["reckless"]
