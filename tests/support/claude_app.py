"""A Claude Agent SDK application that knows nothing of hookscope (the zero-code e2e test).

``opentelemetry-instrument python -m tests.support.claude_app`` with ``HOOKSCOPE_CONFIG`` set:
hookscope's instrumentor governs it. Environment: ``SCRIPTED_MODEL_URL``, ``APP_HOME``,
``APP_WORKDIR``; prints ``answer: <result>`` per turn.
"""

from __future__ import annotations

import asyncio
import os

from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient, ResultMessage

PROMPTS = ("[zero] one: go", "[zero] two: go")


async def main() -> None:
    home = os.environ["APP_HOME"]
    options = ClaudeAgentOptions(
        model="claude-sonnet-4-5",
        cwd=os.environ["APP_WORKDIR"],
        setting_sources=[],
        permission_mode="default",
        env={
            "ANTHROPIC_BASE_URL": os.environ["SCRIPTED_MODEL_URL"],
            "ANTHROPIC_API_KEY": "sk-ant-test",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "DISABLE_AUTOUPDATER": "1",
            "HOME": home,
            "CLAUDE_CONFIG_DIR": os.path.join(home, ".claude"),
        },
    )
    async with ClaudeSDKClient(options=options) as client:
        for prompt in PROMPTS:
            await client.query(prompt)
            async for message in client.receive_response():
                if isinstance(message, ResultMessage):
                    print(f"answer: {message.result}", flush=True)


if __name__ == "__main__":
    asyncio.run(main())
