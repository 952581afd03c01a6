"""The engine is core: it imports without the OpenTelemetry SDK and without hookscope.telemetry."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def test_the_engine_imports_without_the_sdk_or_the_telemetry_package() -> None:
    script = textwrap.dedent(
        """
        import sys

        class Block:
            def find_spec(self, name, path=None, target=None):
                if name.startswith(("opentelemetry.sdk", "hookscope.telemetry")):
                    raise ImportError(f"blocked: {name}")
                return None

        sys.meta_path.insert(0, Block())
        import hookscope.engine, hookscope.engine.cli
        print(sorted(m for m in sys.modules if m.startswith(("opentelemetry.sdk", "hookscope.telemetry"))))
        """
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "[]"
