"""Real Prometheus and Alertmanager for tests, and a scrape endpoint for hookscope's metrics.

* :func:`ensure_installed` installs the Debian packages (``scripts/install-debian-deps.sh``)
  when a binary is missing, and says why when it cannot.
* :class:`Server` starts one binary on a free 127.0.0.1 port with its own data directory,
  waits for ``/-/ready`` with a deadline, and stops it by PID.
* :class:`ScrapeEndpoint` serves a ``MeterProvider``'s metrics the way
  ``opentelemetry-exporter-prometheus`` renders them; each scrape is a collection.
* :class:`PrometheusApi` / :class:`AlertmanagerApi` read back what the servers report.

Nothing here sleeps for a fixed time: every wait polls a condition until a deadline.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Final, TypeVar

from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.resources import Resource
from prometheus_client import CollectorRegistry, start_http_server

REPO_ROOT: Final = Path(__file__).resolve().parents[2]
INSTALL_SCRIPT: Final = REPO_ROOT / "scripts" / "install-debian-deps.sh"
#: Binaries of the Debian packages ``prometheus`` and ``prometheus-alertmanager``.
BINARIES: Final = ("prometheus", "promtool", "prometheus-alertmanager", "amtool")
#: install-debian-deps.sh exits with this when it cannot install (no apt-get, not root).
CANNOT_INSTALL: Final = 2
READY_DEADLINE_S: Final = 30.0
POLL_INTERVAL_S: Final = 0.1

T = TypeVar("T")


class Unavailable(Exception):
    """The binaries are missing and this machine cannot install them (the message says why)."""


def in_ci() -> bool:
    """True in CI (``CI=true``), where these tests must run, never skip."""
    return os.environ.get("CI", "").strip().lower() == "true"


def missing_binaries() -> list[str]:
    """Which of :data:`BINARIES` are not on ``PATH``."""
    return [name for name in BINARIES if shutil.which(name) is None]


def ensure_installed(timeout_s: float = 900.0) -> None:
    """Install Prometheus and Alertmanager with apt-get unless they are on ``PATH`` already.

    Raises:
        Unavailable: apt-get is missing or may not be run here (the script's own words).
        RuntimeError: the install ran and failed, or left a binary missing.
    """
    if not missing_binaries():
        return
    result = subprocess.run(
        ["bash", str(INSTALL_SCRIPT)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
    output = (result.stdout + result.stderr).strip()
    if result.returncode == CANNOT_INSTALL:
        raise Unavailable(output)
    still_missing = missing_binaries()
    if result.returncode != 0 or still_missing:
        raise RuntimeError(
            f"{INSTALL_SCRIPT.name} exited {result.returncode}, missing {still_missing}:\n{output}"
        )


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def poll(
    probe: Callable[[], T | None],
    deadline_s: float,
    what: str,
    interval_s: float = POLL_INTERVAL_S,
) -> T:
    """Call ``probe`` until it returns something other than ``None``; return that.

    Raises:
        TimeoutError: ``deadline_s`` passed first; the message names ``what`` was awaited.
    """
    deadline = time.monotonic() + deadline_s
    while True:
        value = probe()
        if value is not None:
            return value
        if time.monotonic() >= deadline:
            raise TimeoutError(f"gave up after {deadline_s:.0f} s waiting for {what}")
        time.sleep(interval_s)


def http_get(url: str, timeout_s: float = 5.0) -> tuple[int, bytes]:
    """GET ``url``: (status, body); (0, b"") when nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return 0, b""


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError as error:
        return f"(no log: {error})"


class Server:
    """One server process on 127.0.0.1, started on a free port and stopped by its PID.

    Args:
        name: For messages and the log file name.
        argv: The command line for a given port.
        workdir: Holds the log (``<name>.log``); data directories are up to ``argv``.
    """

    def __init__(self, name: str, argv: Callable[[int], Sequence[str]], workdir: Path) -> None:
        self.name = name
        self._argv = argv
        self.log = workdir / f"{name}.log"
        self.port = 0
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        assert self._process is not None, f"{self.name} is not running"
        return self._process.pid

    def start(self, attempts: int = 3) -> Server:
        """Start and wait for ``/-/ready``; retry on a new port if the port was taken meanwhile.

        Raises:
            RuntimeError: the server exited or never became ready (with its log's tail).
        """
        for attempt in range(1, attempts + 1):
            self.port = free_port()
            with self.log.open("ab") as log:
                self._process = subprocess.Popen(
                    list(self._argv(self.port)),
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            try:
                poll(self._ready, READY_DEADLINE_S, f"{self.name} on port {self.port}")
                return self
            except (RuntimeError, TimeoutError) as error:
                taken = "address already in use" in _tail(self.log).lower()
                self.stop()
                if not taken or attempt == attempts:
                    raise RuntimeError(
                        f"{self.name} did not start: {error}\n{_tail(self.log)}"
                    ) from error
        raise AssertionError("unreachable")

    def _ready(self) -> bool | None:
        assert self._process is not None
        code = self._process.poll()
        if code is not None:
            raise RuntimeError(f"{self.name} exited with {code}")
        status, _ = http_get(f"{self.url}/-/ready", timeout_s=1.0)
        return True if status == 200 else None

    def stop(self, timeout_s: float = 15.0) -> None:
        """SIGTERM the process (by PID), then SIGKILL it if it outlives ``timeout_s``."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        os.kill(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.kill(process.pid, signal.SIGKILL)
            process.wait(timeout=timeout_s)

    def __enter__(self) -> Server:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()


def alertmanager(config: Path, workdir: Path) -> Server:
    """Alertmanager (Debian's ``prometheus-alertmanager``) with ``config``, gossip off."""
    data = workdir / "alertmanager-data"
    data.mkdir(parents=True, exist_ok=True)
    return Server(
        "alertmanager",
        lambda port: [
            "prometheus-alertmanager",
            f"--config.file={config}",
            f"--storage.path={data}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--cluster.listen-address=",
        ],
        workdir,
    )


def prometheus(config: Path, workdir: Path, *flags: str) -> Server:
    """Prometheus with ``config``, its own TSDB directory and any extra ``flags``."""
    data = workdir / "prometheus-data"
    data.mkdir(parents=True, exist_ok=True)
    return Server(
        "prometheus",
        lambda port: [
            "prometheus",
            f"--config.file={config}",
            f"--storage.tsdb.path={data}",
            f"--web.listen-address=127.0.0.1:{port}",
            *flags,
        ],
        workdir,
    )


class ScrapeEndpoint:
    """A ``MeterProvider`` whose metrics are served for Prometheus to scrape.

    Uses ``opentelemetry-exporter-prometheus`` (the reader DESIGN.md §6 prescribes) with a
    private registry, on a port the OS picks. Each scrape collects: hookscope's
    pre-aggregated counters and queued histogram values are reported then.
    """

    def __init__(self, service_name: str = "hookscope-e2e") -> None:
        self._registry = CollectorRegistry()
        self.meter_provider = MeterProvider(
            metric_readers=[PrometheusMetricReader(registry=self._registry)],
            resource=Resource.create({"service.name": service_name}),
        )
        self._server, self._thread = start_http_server(0, "127.0.0.1", registry=self._registry)
        self.port: int = self._server.server_port

    @property
    def target(self) -> str:
        """``host:port`` for a Prometheus ``static_configs`` target."""
        return f"127.0.0.1:{self.port}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)
        self.meter_provider.shutdown()

    def __enter__(self) -> ScrapeEndpoint:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


@dataclass(frozen=True, slots=True)
class Sample:
    """One series of an instant-query result."""

    labels: Mapping[str, str]
    value: float


class PrometheusApi:
    """The parts of Prometheus's HTTP API the tests read."""

    def __init__(self, url: str) -> None:
        self.url = url

    def _get(self, path: str, **params: str) -> Any:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        status, body = http_get(f"{self.url}{path}{query}")
        payload = json.loads(body) if body else {}
        if status != 200 or payload.get("status") != "success":
            raise RuntimeError(f"GET {path} {params}: HTTP {status}: {body[:500]!r}")
        return payload["data"]

    def query(self, expr: str) -> list[Sample]:
        """Evaluate ``expr`` now; an instant vector (scalars become one unlabelled sample)."""
        data = self._get("/api/v1/query", query=expr)
        if data["resultType"] == "scalar":
            return [Sample({}, float(data["result"][1]))]
        if data["resultType"] != "vector":
            raise RuntimeError(f"{expr!r} gave a {data['resultType']}, not an instant vector")
        return [Sample(item["metric"], float(item["value"][1])) for item in data["result"]]

    def alerts(self) -> list[dict[str, Any]]:
        """Alerts pending or firing now (``/api/v1/alerts``)."""
        alerts: list[dict[str, Any]] = self._get("/api/v1/alerts")["alerts"]
        return alerts

    def metric_names(self) -> list[str]:
        names: list[str] = self._get("/api/v1/label/__name__/values")
        return names

    def exemplars(self, expr: str, start: float, end: float) -> list[dict[str, Any]]:
        """Exemplars of the series ``expr`` selects between ``start`` and ``end`` (Unix s)."""
        found: list[dict[str, Any]] = self._get(
            "/api/v1/query_exemplars", query=expr, start=f"{start:.3f}", end=f"{end:.3f}"
        )
        return found

    def last_evaluation(self) -> float:
        """When every rule group had last been evaluated (Unix seconds): the oldest of them."""
        groups = self._get("/api/v1/rules")["groups"]
        # RFC 3339 with nanoseconds and "Z": trimmed to what fromisoformat reads everywhere.
        stamps = [
            re.sub(r"(\.\d{6})\d*", r"\1", g["lastEvaluation"]).replace("Z", "+00:00")
            for g in groups
        ]
        return min(datetime.fromisoformat(stamp).timestamp() for stamp in stamps)

    def targets_up(self) -> bool | None:
        """True once every active scrape target is up."""
        targets = self._get("/api/v1/targets")["activeTargets"]
        return True if targets and all(t["health"] == "up" for t in targets) else None


class AlertmanagerApi:
    """Alertmanager's v2 API."""

    def __init__(self, url: str) -> None:
        self.url = url

    def alerts(self) -> list[dict[str, Any]]:
        """Every alert Alertmanager holds (active, silenced or inhibited)."""
        status, body = http_get(f"{self.url}/api/v2/alerts")
        if status != 200:
            raise RuntimeError(f"GET /api/v2/alerts: HTTP {status}: {body[:500]!r}")
        alerts: list[dict[str, Any]] = json.loads(body)
        return alerts
