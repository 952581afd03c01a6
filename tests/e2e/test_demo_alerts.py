"""The card's headline path, as a user runs it: the demo's agents, a real Prometheus evaluating
the shipped rules, the shipped Alertmanager configuration.

``hookscope demo --agents careful,reckless,stuck --prometheus-port P --serve`` runs its
sessions spread over some seconds (``--duration``), so the rules' windows see traffic grow,
and serves its metrics (OpenMetrics with exemplars, as Prometheus asks for them with
``--enable-feature=exemplar-storage``). Prometheus scrapes it every second and evaluates
``dashboards/alerts/hookscope.rules.yml`` with only ``for:`` shortened (the same test copy as
tests/e2e/test_prometheus.py); Alertmanager runs ``collector/alertmanager.yml`` as shipped.

What the story calls for, and nothing else:

* ``reckless`` denies half its calls, over several tools: HookscopeDeniedCallRateHigh reaches
  Alertmanager, active and inhibited by nothing; no deny storm.
* ``stuck`` retries one refused command: HookscopeDenyStorm (critical) fires, and its
  HookscopeDeniedCallRateHigh still reaches the receiver.
* ``careful`` denies about one call in fifty: no denial alert and nothing critical.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pytest
import yaml

from hookscope.telemetry.files import iter_spans

from ..support.prometheus import (
    AlertmanagerApi,
    PrometheusApi,
    Unavailable,
    alertmanager,
    ensure_installed,
    free_port,
    in_ci,
    poll,
    prometheus,
)
from .test_prometheus import ALERTMANAGER_CONFIG, rules_with_short_for

pytestmark = pytest.mark.e2e

HOOKSCOPE: Final = Path(sys.executable).parent / "hookscope"
AGENTS: Final = "careful,reckless,stuck"
SESSIONS: Final = 16
DURATION_S: Final = 16
DEADLINE_S: Final = 120.0
DENIED: Final = "HookscopeDeniedCallRateHigh"
STORM: Final = "HookscopeDenyStorm"
SERVING: Final = "serving metrics until interrupted"
#: Warnings the demo's flaky docs server (fetch_url) earns every agent: the story calls for them.
FLAKY_TOOL_ALERTS: Final = {"HookscopeToolErrorRateHigh", "HookscopeUnrecoveredToolErrors"}


@dataclass(frozen=True, slots=True)
class Stack:
    prometheus: PrometheusApi
    alertmanager: AlertmanagerApi
    demo: subprocess.Popen[bytes]
    demo_log: Path
    telemetry: Path
    started: float


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGINT)  # the demo's own Ctrl-C: flushes and exits
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    try:
        ensure_installed()
    except Unavailable as why:
        if in_ci():
            pytest.fail(f"CI must run these tests, but Prometheus cannot be installed: {why}")
        pytest.skip(f"outside CI, and Prometheus is missing and cannot be installed: {why}")
    workdir = tmp_path_factory.mktemp("demo-alerts")
    port = free_port()
    with alertmanager(ALERTMANAGER_CONFIG, workdir) as am:
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
                {"job_name": "demo", "static_configs": [{"targets": [f"127.0.0.1:{port}"]}]}
            ],
        }
        (workdir / "prometheus.yml").write_text(yaml.safe_dump(config))
        flags = ("--enable-feature=exemplar-storage",)  # as collector/compose.yaml runs it
        with prometheus(workdir / "prometheus.yml", workdir, *flags) as server:
            log = workdir / "demo.log"
            telemetry = workdir / "telemetry"
            argv = [str(HOOKSCOPE), "demo", "--agents", AGENTS, "--sessions", str(SESSIONS)]
            argv += ["--duration", str(DURATION_S), "--prometheus-port", str(port), "--serve"]
            argv += ["--directory", str(telemetry)]
            started = time.time()
            with open(log, "wb") as output:
                demo = subprocess.Popen(
                    argv,
                    cwd=workdir,
                    stdin=subprocess.DEVNULL,
                    stdout=output,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            try:
                api = PrometheusApi(server.url)
                poll(api.targets_up, DEADLINE_S, "the demo's scrape endpoint to be up")
                yield Stack(api, AlertmanagerApi(am.url), demo, log, telemetry, started)
            finally:
                _stop(demo)


def in_alertmanager(stack: Stack, name: str, agent: str) -> dict[str, Any] | None:
    for alert in stack.alertmanager.alerts():
        labels = alert["labels"]
        if labels["alertname"] == name and labels["gen_ai_agent_name"] == agent:
            return alert
    return None


def active(stack: Stack, name: str, agent: str) -> dict[str, Any]:
    def probe() -> dict[str, Any] | None:
        alert = in_alertmanager(stack, name, agent)
        return alert if alert is not None and alert["status"]["state"] == "active" else None

    return poll(probe, DEADLINE_S, f"{name} for {agent} to be active in Alertmanager")


def test_the_headline_alert_reaches_alertmanager_uninhibited_for_the_reckless_agent(
    stack: Stack,
) -> None:
    alert = active(stack, DENIED, "reckless")
    assert alert["labels"] == {
        "alertname": DENIED,
        "gen_ai_agent_name": "reckless",
        "severity": "warning",
    }
    assert alert["status"]["inhibitedBy"] == []
    assert alert["status"]["silencedBy"] == []
    assert alert["receivers"] == [{"name": "hookscope"}]
    annotations = alert["annotations"]
    assert annotations["summary"] == "Agent reckless: more than 25% of tool calls denied"
    assert annotations["runbook_url"].endswith("README.md#hookscopedeniedcallratehigh")
    assert annotations["dashboard"] == (
        "http://localhost:3000/d/hookscope-overview/hookscope-overview"
        "?var-agent=reckless&viewPanel=16"
    )
    # About half its calls, as the demo's temper says (scraped mid-session: not exactly).
    (ratio,) = stack.prometheus.query(
        'sum(increase(hookscope_tool_calls_total{gen_ai_agent_name="reckless",'
        'hookscope_tool_outcome="denied"}[10m])) / '
        'sum(increase(hookscope_tool_calls_total{gen_ai_agent_name="reckless"}[10m]))'
    )
    assert 0.4 <= ratio.value <= 0.6


def test_a_deny_storm_fires_for_the_stuck_agent_and_hides_nothing(stack: Stack) -> None:
    storm = active(stack, STORM, "stuck")
    assert storm["labels"] == {
        "alertname": STORM,
        "gen_ai_agent_name": "stuck",
        "gen_ai_tool_name": "run_command",
        "severity": "critical",
    }
    # The critical storm does not inhibit the headline alert for the same agent.
    denied = active(stack, DENIED, "stuck")
    assert denied["status"]["inhibitedBy"] == []
    assert denied["receivers"] == [{"name": "hookscope"}]


def _final_calls(stack: Stack) -> float:
    """The careful agent's tool calls once the demo has run all its sessions."""
    poll(lambda: SERVING in stack.demo_log.read_text() or None, DEADLINE_S, "the demo to finish")
    query = 'sum(hookscope_tool_calls_total{gen_ai_agent_name="careful"})'

    def settled() -> float | None:  # two scrapes apart, the same count: all traffic seen
        first = stack.prometheus.query(query)
        time.sleep(1.5)
        second = stack.prometheus.query(query)
        return second[0].value if first and second and first == second else None

    return poll(settled, DEADLINE_S, "Prometheus to scrape the careful agent's last calls")


def test_the_careful_agent_gets_no_denial_alert_and_nothing_critical(stack: Stack) -> None:
    active(stack, DENIED, "reckless")  # the rules have been evaluated on everyone's data
    calls = _final_calls(stack)
    assert calls >= 20 * 3  # well past the rules' minimum-traffic guards
    seen = time.time()
    poll(
        lambda: stack.prometheus.last_evaluation() > seen + 2 or None,
        DEADLINE_S,
        "the rules to be evaluated on all of the demo's traffic",
    )
    in_prometheus = [
        a for a in stack.prometheus.alerts() if a["labels"]["gen_ai_agent_name"] == "careful"
    ]
    in_am = [
        a for a in stack.alertmanager.alerts() if a["labels"]["gen_ai_agent_name"] == "careful"
    ]
    for alert in (*in_prometheus, *in_am):
        assert alert["labels"]["severity"] != "critical", alert["labels"]
        assert alert["labels"]["alertname"] in FLAKY_TOOL_ALERTS, alert["labels"]
    # reckless spreads its denials over several tools: high rate, no storm.
    assert in_alertmanager(stack, STORM, "reckless") is None
    (ratio,) = stack.prometheus.query(
        'sum(increase(hookscope_tool_calls_total{gen_ai_agent_name="careful",'
        'hookscope_tool_outcome="denied"}[10m])) / '
        'sum(increase(hookscope_tool_calls_total{gen_ai_agent_name="careful"}[10m]))'
    )
    assert ratio.value < 0.05


def test_prometheus_keeps_latency_exemplars_that_name_the_demos_spans(stack: Stack) -> None:
    _final_calls(stack)
    _stop(stack.demo)  # flushes the spans to the demo's files
    assert stack.demo.returncode == 0, stack.demo_log.read_text()[-2000:]
    exemplars = stack.prometheus.exemplars(
        "gen_ai_execute_tool_duration_seconds_bucket", stack.started - 60, time.time() + 60
    )
    ids = {
        (e["labels"]["trace_id"], e["labels"]["span_id"])
        for series in exemplars
        for e in series["exemplars"]
    }
    assert len(ids) >= 10
    spans = {(s["trace_id"], s["span_id"]): s for s in iter_spans(str(stack.telemetry))}
    assert ids <= set(spans)  # every exemplar leads to a span the demo exported ...
    for key in ids:  # ... and to the tool call it measured
        assert spans[key]["name"].startswith("execute_tool ")
