"""What command and prompt hooks report about their runs, and the names they report under.

The runner hands observers a :class:`~hookscope.runner.HookRun` around every run of a
non-Python hook; the hook fills its ``attributes`` through :func:`record`. The engine imports
no telemetry module, so the attribute names it fills live here, once.
"""

from __future__ import annotations

from typing import Final

from hookscope.runner import current_hook_run

__all__ = ["record"]

PROCESS_EXIT_CODE: Final = "process.exit.code"
PROCESS_EXECUTABLE_NAME: Final = "process.executable.name"
GEN_AI_REQUEST_MODEL: Final = "gen_ai.request.model"
GEN_AI_RESPONSE_MODEL: Final = "gen_ai.response.model"
GEN_AI_RESPONSE_FINISH_REASONS: Final = "gen_ai.response.finish_reasons"
GEN_AI_USAGE_INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
GEN_AI_USAGE_OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
SERVER_ADDRESS: Final = "server.address"
SERVER_PORT: Final = "server.port"


def record(key: str, value: str | int | float | bool) -> None:
    """Set ``key`` on the run of the hook being called; nothing when none is (a direct call)."""
    run = current_hook_run()
    if run is not None:
        run.attributes[key] = value
