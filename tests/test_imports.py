"""The import graph: the core works without the OpenTelemetry SDK."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import hookscope


def test_core_modules_import_without_the_opentelemetry_sdk() -> None:
    script = textwrap.dedent(
        """
        import sys

        class Block:
            def find_spec(self, name, path=None, target=None):
                if name == "opentelemetry.sdk" or name.startswith("opentelemetry.sdk."):
                    raise ImportError(f"blocked: {name}")
                return None

        sys.meta_path.insert(0, Block())
        import hookscope, hookscope.runner, hookscope.policy
        print(sorted(m for m in sys.modules if m.startswith("opentelemetry")))
        """
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "[]"


def test_top_level_names_resolve() -> None:
    for name in hookscope.__all__:
        assert getattr(hookscope, name) is not None
    assert hookscope.OTelHook.__name__ == "OTelHook"


def test_the_engine_and_the_builtins_load_no_http_client_or_terminal_ui() -> None:
    code = (
        "import sys, hookscope.engine, hookscope.builtins; "
        "print(sorted({m.split('.')[0] for m in sys.modules "
        "if m.split('.')[0] in ('httpx', 'rich', 'detect_secrets', 'prometheus_client')}))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_importing_hookscope_and_its_integrations_loads_no_agent_sdk() -> None:
    code = (
        "import sys, hookscope, hookscope.integrations, hookscope.integrations._kit; "
        "print(sorted({m.split('.')[0] for m in sys.modules "
        "if m.split('.')[0] in ('claude_agent_sdk', 'agents', 'google')}))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
