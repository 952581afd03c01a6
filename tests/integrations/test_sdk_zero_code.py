"""The zero-code way for each adapter: an unchanged app under ``opentelemetry-instrument``.

``HOOKSCOPE_CONFIG`` names a ``hookscope.toml`` whose command hook denies ``delete_file``; the
app (``tests/support/sdk_apps.py``) imports nothing of hookscope's governance. OpenInference's
instrumentors (installed for the comparison) are turned off by their entry point names.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.model_server import ScriptedModelServer
from tests.support.zero_code import console_spans, run_instrumented

SCRIPT = {
    "Zero": [
        {
            "tool_calls": [
                {"name": "add", "arguments": {"a": 2, "b": 3}},
                {"name": "delete_file", "arguments": {"path": "/etc/passwd"}},
            ]
        },
        {"text": "done: {tool_result}"},
    ]
}
CONFIG = """\
[[hooks.pre_tool_call]]
matcher = "delete_file"
type = "command"
command = "echo '{\\"allow\\": false, \\"message\\": \\"no deletes from the config\\"}'"
"""


@pytest.fixture
def server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer(SCRIPT) as srv:
        yield srv


@pytest.mark.parametrize("sdk", ["pydantic-ai", "langgraph", "google-adk"])
async def test_hookscope_config_governs_an_unchanged_app(
    sdk: str, server: ScriptedModelServer, tmp_path: Path
) -> None:
    config = tmp_path / "hookscope.toml"
    config.write_text(CONFIG, encoding="utf-8")
    app = await run_instrumented(
        "tests.support.sdk_apps",
        sdk,
        env={
            "HOOKSCOPE_CONFIG": str(config),
            "SCRIPTED_MODEL_URL": server.base_url,
            "OTEL_SERVICE_NAME": "zero-code",
            "OTEL_PYTHON_DISABLED_INSTRUMENTATIONS": "claude_agent_sdk,google_adk,langchain",
        },
    )
    stdout = app.stdout
    assert app.returncode == 0, app.stderr[-3000:]
    assert "ran: add\n" in stdout  # delete_file never ran
    assert "no deletes from the config" in stdout
    # Ours: google-adk also prints its own spans (invoke_agent, execute_tool …) to the same
    # global provider the distro configured; they carry no hookscope attribute.
    spans = [
        s
        for s in console_spans(stdout)
        if any(key.startswith("hookscope.") for key in s["attributes"])
    ]
    tools = sorted(
        (s["attributes"]["gen_ai.tool.name"], s["attributes"]["hookscope.tool.outcome"])
        for s in spans
        if s["name"].startswith("execute_tool")
    )
    assert tools == [("add", "succeeded"), ("delete_file", "denied")]
    names = sorted(s["name"] for s in spans if s["name"].startswith(("session", "invoke_agent")))
    assert names == ["invoke_agent coder", "session coder"]
