"""hookscope installs beside the agent SDKs it governs, at their newest releases.

google-adk 2.13 pins ``opentelemetry-api/-sdk <= 1.44``; had hookscope required 1.45, ``pip
install hookscope google-adk`` would quietly fall back to google-adk 1.14. So hookscope's
OpenTelemetry floors admit what the supported SDKs pin, ``make test`` runs on the floor (it
installs every SDK extra), and each SDK resolves to its newest release beside hookscope.
"""

from __future__ import annotations

import re
import subprocess
import sys
from importlib.metadata import entry_points, version
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

PYPROJECT = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())
#: The SDK each extra installs.
SDK_EXTRAS = {
    "google-adk": "google-adk",
    "langgraph": "langgraph",
    "pydantic-ai": "pydantic-ai-slim",
}
FLOORED = (
    "opentelemetry-api",
    "opentelemetry-sdk",
    "opentelemetry-exporter-otlp",
    "opentelemetry-exporter-otlp-json-common",
)


def floor(package: str) -> Version:
    for line in PYPROJECT["project"]["dependencies"]:
        requirement = Requirement(line)
        if requirement.name == package:
            (spec,) = (s for s in requirement.specifier if s.operator == ">=")
            return Version(spec.version)
    raise AssertionError(f"{package} is not a dependency")


@pytest.mark.parametrize("package", FLOORED)
def test_the_tests_run_on_the_opentelemetry_floor(package: str) -> None:
    # The test venv holds google-adk, which caps OpenTelemetry at the floor: every test of the
    # suite ran on the lowest release hookscope admits.
    assert Version(version(package)) == floor(package)


def newest(package: str) -> Version:
    listed = subprocess.run(
        [sys.executable, "-m", "pip", "index", "versions", package],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    match = re.search(rf"^{re.escape(package)} \(([^)]+)\)", listed, re.MULTILINE)
    assert match is not None, listed
    return Version(match.group(1))


@pytest.mark.parametrize(("extra", "sdk"), sorted(SDK_EXTRAS.items()))
def test_each_sdk_extra_installs_the_sdks_newest_release(extra: str, sdk: str) -> None:
    requirement = Requirement(PYPROJECT["project"]["optional-dependencies"][extra][0])
    assert requirement.name == sdk
    installed = Version(version(sdk))
    assert installed in requirement.specifier
    # pip chose this release for hookscope[google-adk,langgraph,pydantic-ai] together.
    assert installed == newest(sdk), f"{sdk}: pip resolved {installed} beside hookscope"


#: Each adapter's entry point name → its extra.
ADAPTERS = {
    "hookscope_pydantic_ai": "pydantic-ai",
    "hookscope_langgraph": "langgraph",
    "hookscope_google_adk": "google-adk",
}


@pytest.mark.parametrize(("entry_point", "extra"), sorted(ADAPTERS.items()))
def test_each_instrumentor_is_an_entry_point_requiring_its_extras_range(
    entry_point: str, extra: str
) -> None:
    (found,) = (
        e for e in entry_points(group="opentelemetry_instrumentor") if e.name == entry_point
    )
    requirement = PYPROJECT["project"]["optional-dependencies"][extra][0]
    assert list(found.load()().instrumentation_dependencies()) == [requirement]
