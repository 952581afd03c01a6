"""The demo agent: a deterministic, scripted coding agent governed by hookscope.

Each session plays a short coding task in a real temporary workspace. The "model" is a seeded
script, so a seed always yields the same sessions. Between them, the sessions exercise every
lifecycle point: file tools inside the workspace, shell commands that policies deny
(``rm -rf``, ``sudo``) or ask about and approve, a write outside the workspace that
``workspace_only`` denies, MCP tools governed by ``server/*`` rules, a flaky network tool whose
timeouts a hook recovers, parallel calls, a question a hook answers, context compaction with a
hook-supplied summary, a turn limit that blocks a turn, and token usage on every response.
Wherever a ready-made hook fits (:mod:`hookscope.builtins`: ``TurnLimit``, ``RecoverErrors``,
``AutoAnswer``, ``AuditLog``) the demo uses it rather than a private copy.

Nothing here runs a real command or touches the network: tools are simulated.
"""

from __future__ import annotations

import asyncio
import random
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final

from hookscope import policy
from hookscope.builtins import AuditLog, AutoAnswer, RecoverErrors, TurnLimit
from hookscope.context import TurnContext
from hookscope.hooks import Hook
from hookscope.runner import HookRunner, TurnScope
from hookscope.types import (
    ChatResponse,
    LlmRequest,
    LlmResponse,
    Question,
    ToolCall,
    Usage,
)

__all__ = ["TEMPERS", "DemoAgent", "DemoResult", "Temper", "demo_hooks", "demo_policies"]

MODEL = "scripted-coder-1"
#: ``gen_ai.provider.name`` of the scripted model (a custom value, as the conventions allow).
PROVIDER = "hookscope.demo"
AGENT = "demo-coder"
MCP_SERVER = "github"
MAX_TURNS = 3
COMPACT_AFTER_TOKENS = 6000
SAFE_COMMANDS = ("pytest", "ls", "git status", "git diff")


@dataclass(frozen=True)
class Temper:
    """How an agent of the demo behaves: how often it tries what its policy forbids.

    Each ``p_*`` is the chance per session that the scripted model tries one risky call in
    turn 1; ``deploys`` makes it run ``make deploy`` (a command hook refuses it), ``pushes``
    adds a force push and a cache wipe in turn 2 (refused), ``looks_first`` the three
    parallel searches of turn 0 (safe calls), and ``retries`` repeats the refused ``sudo``
    of turn 1 that many more times (an agent stuck in a loop).
    """

    p_write_outside: float
    p_rm_rf: float
    p_sudo: float
    p_delete_branch: float
    deploys: bool = True
    pushes: bool = False
    looks_first: bool = True
    retries: int = 0


#: The demo's agents. ``demo-coder`` (the default) denies about a fifth of its calls;
#: ``careful`` about one in fifty, under every policy alert; ``reckless`` half, spread over
#: several tools, so HookscopeDeniedCallRateHigh (above 25%) fires for it but no deny storm;
#: ``stuck`` retries one refused command until it is most of what it does: a deny storm.
TEMPERS: Final = {
    AGENT: Temper(0.5, 0.4, 0.3, 0.3),
    "careful": Temper(0.0, 0.1, 0.0, 0.1, deploys=False),
    "reckless": Temper(1.0, 1.0, 1.0, 1.0, pushes=True, looks_first=False),
    "stuck": Temper(0.0, 0.0, 1.0, 0.0, deploys=False, retries=20),
}


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


#: The team's standing answers to the agent's questions.
ANSWERS = {"Open a pull request?": "yes"}
#: What the agent gets when a docs fetch times out: the last good (cached) response.
CACHED_DOCS = {"status": 200, "body": "(cached) API docs"}


class SummarizeFromNotes(Hook):
    """Supplies the compaction summary: the turn's prompt and how many messages it folds."""

    def pre_compaction(self, context: TurnContext, messages: Sequence[Any]) -> str | None:
        return f"{len(messages)} messages so far; working on: {context.prompt}"


def demo_hooks(audit_log: Path | None = None) -> list[object]:
    """The hooks the demo agent runs with, after the policy; most are ready-made ones."""
    hooks: list[object] = [
        RecoverErrors(errors=(TimeoutError,), value=CACHED_DOCS, message="served from cache"),
        AutoAnswer(ANSWERS),
        TurnLimit(max_turns=MAX_TURNS),
        SummarizeFromNotes(),
    ]
    if audit_log is not None:
        hooks.insert(0, AuditLog(audit_log))
    return hooks


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
        audit_log: Where :class:`~hookscope.builtins.AuditLog` writes one JSON line per tool
            call; no audit log when ``None``.
        agent: The agent's name, one of :data:`TEMPERS`: how it behaves.
        run_id: Makes session ids unique per run (``{agent}-{run_id}-{index}``), so two runs
            never merge in a trace UI's session view; random when ``None``.
    """

    def __init__(
        self,
        workspace: Path,
        hooks: Iterable[object] = (),
        seed: int = 0,
        audit_log: Path | None = None,
        agent: str = AGENT,
        run_id: str | None = None,
    ) -> None:
        if agent not in TEMPERS:
            raise ValueError(f"no demo agent {agent!r}; choose from {', '.join(TEMPERS)}")
        self.workspace = workspace.resolve()
        self.seed = seed
        self.agent = agent
        self.temper = TEMPERS[agent]
        self.run_id = run_id or secrets.token_hex(3)
        self.runner = HookRunner(
            [
                *hooks,
                policy.enforce(demo_policies(self.workspace), mcp_servers=[MCP_SERVER]),
                *demo_hooks(audit_log),
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
        session_id = f"{self.agent}-{self.run_id}-{index:04d}"
        values = result.values.setdefault(session_id, [])
        errors = result.errors.setdefault(session_id, [])
        prompts = ["Find why the login test fails", "Fix it", "Run the whole suite"]
        if rng.random() < 0.5:
            prompts.append("Also refactor the session module")
        context_tokens = 0
        async with self.runner.session(
            agent_name=self.agent, session_id=session_id, provider=PROVIDER
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
                    if turn_index == 0 and self.temper.looks_first:
                        values.extend(await self._parallel_greps(turn, tools))
                    if turn_index == 1:
                        answers = await turn.ask(
                            [Question("Open a pull request?", ("yes", "no"), "q1")]
                        )
                        values.append([a.text for a in answers or ()])
                    if context_tokens > COMPACT_AFTER_TOKENS:
                        history = [
                            {"role": "user", "content": p} for p in prompts[: turn_index + 1]
                        ]
                        summary = await turn.summarize(history)
                        await turn.compact(summary or f"summary of {turn_index + 1} turns")
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
        temper = self.temper
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
            # One draw per risk, whatever the temper: a seed's script stays the same.
            if rng.random() < temper.p_write_outside:
                plan.append(
                    (
                        ToolCall("write_to_file", {"TargetFile": "/etc/hosts", "Content": "x"}),
                        tools.write_to_file,
                    )
                )
            if rng.random() < temper.p_rm_rf:
                plan.append(
                    (ToolCall("run_command", {"CommandLine": "rm -rf build/"}), tools.run_command)
                )
            if rng.random() < temper.p_sudo:
                sudo = ToolCall("run_command", {"CommandLine": "sudo apt-get install tzdata"})
                plan += [(sudo, tools.run_command)] * (1 + temper.retries)
            if rng.random() < temper.p_delete_branch:
                plan.append(
                    (
                        ToolCall("delete_branch", {"branch": "old"}, server=MCP_SERVER),
                        tools.delete_branch,
                    )
                )
        else:
            last = "make deploy" if temper.deploys else "git status"
            plan = [
                (ToolCall("run_command", {"CommandLine": "pytest"}), tools.run_command),
                (ToolCall("run_command", {"CommandLine": last}), tools.run_command),
            ]
            if temper.pushes:  # not approved (confirm-command), and never run (no-rm-rf)
                plan += [
                    (
                        ToolCall("run_command", {"CommandLine": "git push --force"}),
                        tools.run_command,
                    ),
                    (
                        ToolCall("run_command", {"CommandLine": "rm -rf ~/.cache"}),
                        tools.run_command,
                    ),
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
