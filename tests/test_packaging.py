"""What a user installing hookscope meets first: the command, its version, extras, metadata."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from importlib.metadata import distribution
from pathlib import Path

import pytest

import hookscope
from hookscope._version import __version__

# Runs the CLI with an optional dependency made unimportable, as on a machine without the extra.
WITHOUT = textwrap.dedent(
    """
    import sys

    class Block:
        def find_spec(self, name, path=None, target=None):
            if name == {blocked!r} or name.startswith({blocked!r} + "."):
                raise ImportError(name)
            return None

    sys.meta_path.insert(0, Block())
    from hookscope.cli import main
    raise SystemExit(main({argv!r}))
    """
)


def run(*argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *argv], capture_output=True, text=True, timeout=120, check=False, cwd=cwd
    )


def test_python_dash_m_hookscope_is_the_command() -> None:
    result = run("-m", "hookscope", "--version")
    assert (result.returncode, result.stdout, result.stderr) == (
        0,
        f"hookscope {__version__}\n",
        "",
    )


def test_the_console_script_prints_its_version() -> None:
    script = Path(sys.executable).parent / "hookscope"
    result = subprocess.run([str(script), "--version"], capture_output=True, text=True, check=False)
    assert (result.returncode, result.stdout) == (0, f"hookscope {__version__}\n")


@pytest.mark.parametrize(
    ("blocked", "argv", "message"),
    [
        (
            "rich",
            ["demo"],
            "hookscope: error: hookscope demo needs the 'cli' extra (rich is not installed): "
            "pip install 'hookscope[cli]'\n",
        ),
        (
            "rich",
            ["view", "anywhere"],
            "hookscope: error: hookscope view needs the 'cli' extra (rich is not installed): "
            "pip install 'hookscope[cli]'\n",
        ),
        (
            "opentelemetry.exporter.prometheus",
            ["demo", "--prometheus-port", "9464"],
            "hookscope: error: --prometheus-port needs the 'prometheus' extra "
            "(opentelemetry.exporter.prometheus is not installed): "
            "pip install 'hookscope[prometheus]'\n",
        ),
    ],
)
def test_a_missing_extra_is_named_with_the_install_command(
    blocked: str, argv: list[str], message: str, tmp_path: Path
) -> None:
    result = run("-c", WITHOUT.format(blocked=blocked, argv=argv), cwd=tmp_path)
    assert (result.returncode, result.stderr) == (2, message)
    assert not (tmp_path / ".hookscope").exists()


def test_policy_explain_works_without_the_cli_extra(tmp_path: Path) -> None:
    (tmp_path / "rules.py").write_text(
        "from hookscope import policy\nPOLICIES = [policy.deny('run_command')]\n"
    )
    argv = ["policy", "explain", "--policies", "rules:POLICIES", "--call", '{"name": "x"}']
    result = run("-c", WITHOUT.format(blocked="rich", argv=argv), cwd=tmp_path)
    assert result.returncode == 0, result.stderr


def test_importing_hookscope_loads_no_terminal_ui_or_prometheus() -> None:
    script = "import sys, hookscope, hookscope.telemetry; print(sorted(m for m in sys.modules if m.split('.')[0] in ('rich', 'prometheus_client')))"
    assert run("-c", script).stdout == "[]\n"


def test_the_distribution_carries_the_license_urls_and_extras() -> None:
    dist = distribution("hookscope")
    assert dist.metadata["License-Expression"] == "Apache-2.0"
    assert dist.metadata.get_all("License-File") == ["LICENSE"]
    license_text = dist.read_text("licenses/LICENSE")
    assert license_text is not None
    assert "Apache License" in license_text.splitlines()[1]
    urls = dict(url.split(", ", 1) for url in dist.metadata.get_all("Project-URL") or [])
    assert sorted(urls) == ["Documentation", "Homepage", "Issues", "Source"]
    assert {"cli", "prometheus"} <= set(dist.metadata.get_all("Provides-Extra") or [])
    requires = dist.requires or []
    hard = [r for r in requires if "extra ==" not in r]
    assert not any(r.startswith(("rich", "opentelemetry-exporter-prometheus")) for r in hard)
    assert hookscope.__name__ == "hookscope"
