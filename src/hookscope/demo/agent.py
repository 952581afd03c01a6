"""The demo agent: a deterministic, scripted coding agent governed by hookscope.

Each session plays a short coding task in a real temporary workspace. The "model" is a seeded
script, so a seed always yields the same sessions. Between them, the sessions exercise every
lifecycle point: file tools inside the workspace, shell commands that policies deny
(``rm -rf``, ``sudo``) or ask about and approve, a write outside the workspace that
``workspace_only`` denies, MCP tools governed by ``server/*`` rules, a flaky network tool whose
timeouts a hook recovers, parallel calls, a question a hook answers, context compaction, a
rate-limit hook that blocks a turn, and token usage on every response.

Nothing here runs a real command or touches the network: tools are simulated.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from hookscope import policy
from hookscope.context import OperationContext, TurnContext
from hookscope.hooks import Hook
from hookscope.runner import HookRunner, TurnScope
from hookscope.types import (
    Answer,
    ChatResponse,
    HookResult,
    LlmRequest,
    LlmResponse,
    Question,
    Recovery,
    ToolCall,
    Usage,
)

__all__ = ["DemoAgent", "DemoResult", "demo_policies"]

MODEL = "scripted-coder-1"
#: ``gen_ai.provider.name`` of the scripted model (a custom value, as the conventions allow).
PROVIDER = "hookscope.demo"
AGENT = "demo-coder"
MCP_SERVER = "github"
MAX_TURNS = 3
COMPACT_AFTER_TOKENS = 6000
SAFE_COMMANDS = ("pytest", "ls", "git status", "git diff")


def _approve_command(call: ToolCall) -> bool:
    """The ask-user handler: a stand-in for a human who approves only familiar commands."""
    return str(call.args.get("CommandLine", "")).startswith(SAFE_COMMANDS)


def demo_policies(workspace: Path) -> list[Any]:
    """The rules the demo agent runs under."""
    return [
        policy.deny(
            "run_command",
            when=lambda a: "rm -rf" in a["CommandLine"],
            name="no-rm-rf",
            reason="recursive deletes are never run by the agent",
        ),
        policy.deny(
            "run_command",
            when=lambda a: a["CommandLine"].startswith("sudo"),
            name="no-sudo",
            reason="the agent has no root",
        ),
        policy.ask_user(
            "run_command",
            _approve_command,
            name="confirm-command",
            reason="shell commands need approval",
        ),
        policy.workspace_only([workspace]),
        policy.allow_mcp(MCP_SERVER, ["get_issue", "list_pull_requests"], name="github-read"),
        policy.deny_mcp(MCP_SERVER, name="github-write", reason="the agent may only read GitHub"),
    ]


class RecoverTimeouts(Hook):
    """Turns a network timeout into the last good (cached) response; other errors stay."""

    def on_tool_error(self, context: OperationContext, error: Exception) -> Recovery | None:
        if isinstance(error, TimeoutError):
            return Recovery({"status": 200, "body": "(cached) API docs"}, "served from cache")
        return None


class AutoAnswer(Hook):
    """Answers the agent's questions the way the team's defaults say."""

    def on_interaction(self, context: OperationContext, questions: Any) -> list[Answer]:
        return [Answer("yes", q.id) for q in questions]


class TurnBudget(Hook):
    """A rate limit: at most ``MAX_TURNS`` turns per session."""

    def pre_turn(self, context: TurnContext, prompt: Any) -> HookResult | None:
        if context.turn_index >= MAX_TURNS:
            return HookResult.deny(f"turn budget exhausted ({MAX_TURNS} turns per session)")
        return None


@dataclass
class DemoResult:
    """What the agent saw: every tool outcome's value, by session, and the errors it hit."""

    values: dict[str, list[Any]] = field(default_factory=dict)
    errors: dict[str, list[str]] = field(default_factory=dict)
    blocked_turns: int = 0


class _Tools:
    """Simulated tools over a real workspace directory."""

    def __init__(self, workspace: Path, rng: random.Random) -> None:
        self.workspace = workspace.resolve()
        self.rng = rng

    # File tools are synchronous (small local reads and writes); the runner calls them inline.
    # Tool parameters use the wire names models send (AbsolutePath, TargetFile …).

    def _inside(self, path: str) -> Path:
        # A second fence behind the workspace_only policy: even if a rule regressed, the demo
        # must never read or write outside its temporary workspace (it may run as root).
        resolved = Path(path).resolve()
        if not resolved.is_relative_to(self.workspace):
            raise PermissionError(f"{path} is outside the demo workspace")
        return resolved

    def view_file(self, AbsolutePath: str) -> str:
        return self._inside(AbsolutePath).read_text()[:200]

    def grep_search(self, Query: str, SearchPath: str) -> list[str]:
        root = self._inside(SearchPath)
        return [p.name for p in sorted(root.rglob("*.py")) if Query in p.read_text()]

    def edit_file(self, TargetFile: str, Patch: str) -> str:
        target = self._inside(TargetFile)
        target.write_text(target.read_text() + Patch)
        return "1 hunk applied"

    def write_to_file(self, TargetFile: str, Content: str) -> str:
        self._inside(TargetFile).write_text(Content)
        return "written"

    async def run_command(self, CommandLine: str) -> str:
        await asyncio.sleep(self.rng.uniform(0.02, 0.12))  # simulated, never executed
        return f"$ {CommandLine}\n(simulated) exit 0"

    async def fetch_url(self, Url: str) -> dict[str, Any]:
        await asyncio.sleep(self.rng.uniform(0.005, 0.03))
        roll = self.rng.random()
        if roll < 0.3:
            raise TimeoutError(f"GET {Url} timed out")
        if roll < 0.4:
            raise ConnectionError(f"GET {Url}: connection reset")
        return {"status": 200, "body": "API docs"}

    async def get_issue(self, number: int) -> dict[str, Any]:
        await asyncio.sleep(self.rng.uniform(0.01, 0.05))
        return {"number": number, "title": "Login fails with expired tokens"}

    async def delete_branch(self, branch: str) -> str:
        return "deleted"  # never reached: denied by the github/* rule


def _seed_workspace(workspace: Path) -> None:
    (workspace / "src").mkdir(parents=True, exist_ok=True)
    (workspace / "tests").mkdir(exist_ok=True)
    (workspace / "src" / "auth.py").write_text(
        "def check(token):\n    return token.expires_at > now()  # bug: naive datetime\n"
    )
    (workspace / "src" / "session.py").write_text("from auth import check\n")
    (workspace / "tests" / "test_auth.py").write_text("def test_expired_token():\n    ...\n")


class DemoAgent:
    """Runs scripted coding sessions through a :class:`~hookscope.runner.HookRunner`.

    Args:
        workspace: The directory the agent may work in; seeded with a small project.
        hooks: Extra hooks and observers (``OTelHook``) registered before the demo's own.
        seed: Makes every session's script (and its simulated latencies) reproducible.
    """

    def __init__(self, workspace: Path, hooks: Iterable[object] = (), seed: int = 0) -> None:
        self.workspace = workspace.resolve()
        self.seed = seed
        self.runner = HookRunner(
            [
                *hooks,
                policy.enforce(demo_policies(self.workspace), mcp_servers=[MCP_SERVER]),
                RecoverTimeouts(),
                AutoAnswer(),
                TurnBudget(),
            ]
        )

    async def run(self, sessions: int, on_session_done: Any = None) -> DemoResult:
        """Run ``sessions`` sessions one after another; return what the agent saw."""
        result = DemoResult()
        for index in range(sessions):
            await self.run_session(index, result)
            if on_session_done is not None:
                on_session_done(index)
        return result

    async def run_session(self, index: int, result: DemoResult) -> None:
        """One session: three turns of a coding task, and sometimes a fourth the budget blocks."""
        rng = random.Random(self.seed * 100_003 + index)
        _seed_workspace(self.workspace)  # every session starts from the same project
        tools = _Tools(self.workspace, rng)
        session_id = f"demo-{self.seed}-{index:04d}"
        values = result.values.setdefault(session_id, [])
        errors = result.errors.setdefault(session_id, [])
        prompts = ["Find why the login test fails", "Fix it", "Run the whole suite"]
        if rng.random() < 0.5:
            prompts.append("Also refactor the session module")
        context_tokens = 0
        async with self.runner.session(
            agent_name=AGENT, session_id=session_id, provider=PROVIDER
        ) as session:
            for turn_index, prompt in enumerate(prompts):
                async with session.turn(prompt) as turn:
                    if not turn.allowed:
                        result.blocked_turns += 1
                        continue
                    usage = await self._think(turn, rng)
                    context_tokens += usage.input_tokens + usage.output_tokens
                    for call, fn in self._plan(turn_index, rng, tools):
                        values.append(await self._call(turn, call, fn, errors))
                    if turn_index == 0:
                        values.extend(await self._parallel_greps(turn, tools))
                    if turn_index == 1:
                        answers = await turn.ask(
                            [Question("Open a pull request?", ("yes", "no"), "q1")]
                        )
                        values.append([a.text for a in answers or ()])
                    if context_tokens > COMPACT_AFTER_TOKENS:
                        await turn.compact(
                            f"summary of {turn_index + 1} turns, {context_tokens} tokens"
                        )
                        context_tokens //= 4
                    turn.respond(ChatResponse(f"Done: {prompt.lower()}.", MODEL, usage))

    async def _think(self, turn: TurnScope, rng: random.Random) -> Usage:
        """One model call, reported so it gets a ``chat`` span, guardrails and token usage."""
        await turn.llm_request(LlmRequest(MODEL, messages=({"role": "user"},)))
        await asyncio.sleep(rng.uniform(0.002, 0.01))
        usage = Usage(rng.randint(800, 3200), rng.randint(60, 400))
        await turn.llm_response(LlmResponse(MODEL, text="(plan)", usage=usage))
        return usage

    def _plan(
        self, turn_index: int, rng: random.Random, tools: _Tools
    ) -> Sequence[tuple[ToolCall, Any]]:
        """The scripted model's tool calls for one turn."""
        ws = self.workspace
        auth = str(ws / "src" / "auth.py")
        if turn_index == 0:
            plan = [
                (ToolCall("view_file", {"AbsolutePath": auth}), tools.view_file),
                (ToolCall("fetch_url", {"Url": "https://docs.example/tokens"}), tools.fetch_url),
                (ToolCall("get_issue", {"number": 42}, server=MCP_SERVER), tools.get_issue),
                (
                    ToolCall("run_command", {"CommandLine": "pytest tests/test_auth.py"}),
                    tools.run_command,
                ),
            ]
        elif turn_index == 1:
            plan = [
                (
                    ToolCall("edit_file", {"TargetFile": auth, "Patch": "# fixed\n"}),
                    tools.edit_file,
                ),
                (ToolCall("fetch_url", {"Url": "https://pypi.example/pytz"}), tools.fetch_url),
            ]
            if rng.random() < 0.5:
                plan.append(
                    (
                        ToolCall("write_to_file", {"TargetFile": "/etc/hosts", "Content": "x"}),
                        tools.write_to_file,
                    )
                )
            if rng.random() < 0.4:
                plan.append(
                    (ToolCall("run_command", {"CommandLine": "rm -rf build/"}), tools.run_command)
                )
            if rng.random() < 0.3:
                plan.append(
                    (
                        ToolCall("run_command", {"CommandLine": "sudo apt-get install tzdata"}),
                        tools.run_command,
                    )
                )
            if rng.random() < 0.3:
                plan.append(
                    (
                        ToolCall("delete_branch", {"branch": "old"}, server=MCP_SERVER),
                        tools.delete_branch,
                    )
                )
        else:
            plan = [
                (ToolCall("run_command", {"CommandLine": "pytest"}), tools.run_command),
                (ToolCall("run_command", {"CommandLine": "make deploy"}), tools.run_command),
            ]
        return [
            (replace(call, id=f"call_{turn_index}_{i}"), fn) for i, (call, fn) in enumerate(plan)
        ]

    async def _call(self, turn: TurnScope, call: ToolCall, fn: Any, errors: list[str]) -> Any:
        try:
            outcome = await turn.call_tool(call, fn)
        except ConnectionError as error:  # unrecovered: the agent notes it and goes on
            errors.append(f"{call.name}: {error}")
            return None
        return outcome.value if outcome.allowed else f"denied: {outcome.message}"

    async def _parallel_greps(self, turn: TurnScope, tools: _Tools) -> list[Any]:
        queries = ["token", "expires_at", "now("]

        async def grep(Query: str, SearchPath: str) -> list[str]:
            await asyncio.sleep(0)  # let the three calls interleave, as parallel calls do
            return tools.grep_search(Query, SearchPath)

        outcomes = await asyncio.gather(
            *(
                turn.call_tool(
                    ToolCall(
                        "grep_search", {"Query": q, "SearchPath": str(self.workspace)}, f"grep_{i}"
                    ),
                    grep,
                )
                for i, q in enumerate(queries)
            )
        )
        return [o.value for o in outcomes]
