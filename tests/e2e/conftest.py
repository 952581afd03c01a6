"""Helpers for tests that run real servers: free ports, readiness with a deadline, stop by PID.

Servers are started on 127.0.0.1 in their own process group (``start_new_session=True``), so
stopping one stops everything it spawned. Arize Phoenix is installed once into its own venv
(``.venv-phoenix/`` at the repository root, about 850 MB) by :func:`ensure_phoenix`.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import pytest

REPO_ROOT: Final = Path(__file__).resolve().parents[2]
PHOENIX_REQUIREMENT: Final = "arize-phoenix==20.26.1"
PHOENIX_VENV: Final = REPO_ROOT / ".venv-phoenix"
PHOENIX_READY_DEADLINE_S: Final = 180.0
PHOENIX_INSTALL_TIMEOUT_S: Final = 1800.0
_STAMP: Final = ".hookscope-installed"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "e2e: runs against real servers it starts itself (select with -m e2e)"
    )


def in_ci() -> bool:
    """True in CI (``CI=true``), where end-to-end tests must run, never skip."""
    return os.environ.get("CI", "").strip().lower() == "true"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def log_tail(path: Path, lines: int = 40) -> str:
    """The last ``lines`` lines of a server's log, for failure messages."""
    try:
        text = path.read_text(errors="replace")
    except OSError as error:
        return f"(no log: {error})"
    return "\n".join(text.splitlines()[-lines:])


def wait_until_ready(
    url: str, process: subprocess.Popen[bytes], deadline_s: float, log: Path
) -> float:
    """Poll ``url`` until it answers 200; the seconds it took.

    Raises:
        RuntimeError: the server exited first.
        TimeoutError: it was not ready within ``deadline_s``.
    """
    started = time.monotonic()
    while True:
        code = process.poll()
        if code is not None:
            raise RuntimeError(f"server exited with {code} before it was ready:\n{log_tail(log)}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return time.monotonic() - started
        except (urllib.error.URLError, OSError):
            pass  # not listening yet
        if time.monotonic() - started > deadline_s:
            raise TimeoutError(f"{url} not ready after {deadline_s:.0f}s:\n{log_tail(log)}")
        time.sleep(0.2)


def stop_process_group(process: subprocess.Popen[bytes], timeout_s: float = 15.0) -> None:
    """SIGTERM the process's group, SIGKILL it if it outlives ``timeout_s``."""
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


class PhoenixInstallError(RuntimeError):
    """Phoenix could not be installed into its venv."""


def _run(command: list[str], timeout_s: float) -> None:
    try:
        done = subprocess.run(
            command,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout_s,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise PhoenixInstallError(f"{' '.join(command)}: {error}") from error
    if done.returncode != 0:
        output = (done.stdout + done.stderr).decode(errors="replace").splitlines()[-30:]
        raise PhoenixInstallError(
            f"{' '.join(command)} exited with {done.returncode}:\n" + "\n".join(output)
        )


def ensure_phoenix(venv: Path = PHOENIX_VENV) -> Path:
    """Install :data:`PHOENIX_REQUIREMENT` into ``venv`` unless it is there; its ``phoenix``.

    A stamp file written after a successful install marks the venv complete, so an
    interrupted install is resumed, and a changed requirement reinstalls.

    Raises:
        PhoenixInstallError: creating the venv or installing failed.
    """
    executable = venv / "bin" / "phoenix"
    stamp = venv / _STAMP
    lock_path = Path(tempfile.gettempdir()) / "hookscope-phoenix-install.lock"
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two test runs never install at once
        if executable.exists() and stamp.exists() and stamp.read_text() == PHOENIX_REQUIREMENT:
            return executable
        python = venv / "bin" / "python"
        if not python.exists():
            shutil.rmtree(venv, ignore_errors=True)
            _run([shutil.which("python3") or sys.executable, "-m", "venv", str(venv)], 300)
        _run(
            [
                str(python),
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                PHOENIX_REQUIREMENT,
            ],
            PHOENIX_INSTALL_TIMEOUT_S,
        )
        if not executable.exists():
            raise PhoenixInstallError(
                f"installed {PHOENIX_REQUIREMENT} but {executable} is missing"
            )
        stamp.write_text(PHOENIX_REQUIREMENT)
        return executable


@dataclass(frozen=True)
class Phoenix:
    """A running Phoenix server."""

    url: str
    grpc_port: int
    log: Path
    install_s: float
    startup_s: float


def _server_env(working_dir: Path, port: int, grpc_port: int) -> Mapping[str, str]:
    # The server must not pick up an OTLP configuration meant for the tests.
    env = {key: value for key, value in os.environ.items() if not key.startswith("OTEL_")}
    env.update(
        PHOENIX_WORKING_DIR=str(working_dir),
        PHOENIX_HOST="127.0.0.1",
        PHOENIX_PORT=str(port),
        PHOENIX_GRPC_PORT=str(grpc_port),
        PHOENIX_TELEMETRY_ENABLED="false",
        PHOENIX_LOG_MIGRATIONS="false",
    )
    return env


@pytest.fixture(scope="session")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Phoenix]:
    """Phoenix, installed if missing and started on free loopback ports for this test session.

    In CI an install failure fails the test; elsewhere it skips it, saying why.
    """
    started = time.monotonic()
    try:
        executable = ensure_phoenix()
    except PhoenixInstallError as error:
        if in_ci():
            pytest.fail(f"Arize Phoenix could not be installed (required in CI): {error}")
        pytest.skip(f"outside CI, and Arize Phoenix could not be installed here: {error}")
    install_s = time.monotonic() - started
    working_dir = tmp_path_factory.mktemp("phoenix")
    port, grpc_port = free_port(), free_port()
    log = working_dir / "phoenix.log"
    with open(log, "wb") as output:
        process = subprocess.Popen(
            [str(executable), "serve"],
            env=_server_env(working_dir, port, grpc_port),
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        url = f"http://127.0.0.1:{port}"
        startup_s = wait_until_ready(f"{url}/healthz", process, PHOENIX_READY_DEADLINE_S, log)
        yield Phoenix(url, grpc_port, log, install_s, startup_s)
    finally:
        stop_process_group(process)
