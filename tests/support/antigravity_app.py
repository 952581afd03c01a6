"""An uninstrumented google-antigravity app, for running under ``opentelemetry-instrument``.

It knows nothing of hookscope or OpenTelemetry: the zero-code path must trace it as it is.
Three turns against the scripted model at ``$SCRIPTED_MODEL_URL``, in ``$APP_WORKDIR``: an
allowed call, a call a ``when`` rule denies, a call a static rule denies.

Run: ``opentelemetry-instrument python -m tests.support.antigravity_app``.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from google.antigravity import Agent, LocalOpenAIAgentConfig
from google.antigravity.hooks import policy

#: The prompt whose script the test registers with the scripted model.
PROMPT = "zero-code weather"


def get_weather(city: str) -> str:
    """Today's weather in a city."""
    return f"sunny in {city}"


def delete_file(path: str) -> str:
    """Delete a file."""
    raise AssertionError("denied statically; never runs")


async def main() -> None:
    workdir = Path(os.environ["APP_WORKDIR"])
    (workdir / "home").mkdir(exist_ok=True)
    config = LocalOpenAIAgentConfig(
        base_url=os.environ["SCRIPTED_MODEL_URL"],
        model="scripted",
        tools=[get_weather, delete_file],
        policies=[
            policy.deny(
                "get_weather", when=lambda args: args.get("city") == "Paris", name="no-paris"
            ),
            policy.deny("delete_file", name="no-deletes"),
            policy.allow_all(),
        ],
        workspaces=[str(workdir)],
        save_dir=str(workdir / "save"),
        app_data_dir=str(workdir / "app"),
        env={"HOME": str(workdir / "home")},
    )
    agent = Agent(config)
    try:
        async with agent:
            for prompt in (PROMPT, "again", "once more"):
                response = await agent.chat(prompt)
                print("answer:", await response.text(), flush=True)
    finally:
        # 0.1.22 leaves the harness's output pipes open after disconnect.
        process = (
            getattr(agent.conversation.connection, "_process", None) if agent.is_started else None
        )
        for pipe in (getattr(process, "stdout", None), getattr(process, "stderr", None)):
            if pipe is not None:
                pipe.close()


if __name__ == "__main__":
    asyncio.run(main())
