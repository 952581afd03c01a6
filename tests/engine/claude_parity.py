"""The Claude Code parity harness: the same settings and hook scripts, run twice.

Once through the **real Claude Code CLI** (bundled in the ``claude-agent-sdk`` wheel) against
the scripted model server, and once through hookscope (``HookRunner(load(settings))`` driving
a small agent loop that makes the same scripted model moves). Each run happens in its own copy
of one project directory; a test then compares what matters to a user: which tool calls ran
(the files they made), the reasons the model or the agent got, whether the prompt was blocked,
how often the turn went on, the context injected, and the files the hooks wrote.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import claude_agent_sdk

from hookscope import ChatResponse, HookRunner, ToolCall
from hookscope.engine import load
from tests.support.mcp_server import _call as mcp_call
from tests.support.model_server import ScriptedModelServer

CLI = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
HOOKS = Path(__file__).parent / "claude_hooks"
REPO = Path(__file__).resolve().parents[2]
PROMPT_KEY = "PARITY"


def hook_environment(tmp: Path) -> dict[str, str]:
    """What both runs' hook programs need: this venv first on PATH (python3 with cchooks, uv,
    jq), uv offline on this interpreter."""
    return {
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "UV_OFFLINE": "1",
        "UV_PYTHON": sys.executable,
        "UV_CACHE_DIR": str(tmp / "uv-cache"),
        "UV_NO_CONFIG": "1",
    }


def make_project(root: Path, settings: Mapping[str, Any]) -> Path:
    """A project with ``.claude/settings.json`` and the hook scripts in ``.claude/hooks/``."""
    project = root / "project"
    (project / ".claude").mkdir(parents=True)
    shutil.copytree(HOOKS, project / ".claude" / "hooks", symlinks=True)
    (project / ".claude" / "settings.json").write_text(json.dumps(settings, indent=2))
    return project


def hook(script: str, **extra: Any) -> dict[str, Any]:
    """A command handler running one of the scripts in ``.claude/hooks/``."""
    return {"type": "command", "command": f'"$CLAUDE_PROJECT_DIR"/.claude/hooks/{script}', **extra}


@dataclass
class Outcome:
    """What one run did, in terms both runs share."""

    blocked: bool = False  # the prompt never reached the model / the turn was blocked
    turns: int = 0  # model answers that ended a turn (1 + continuations)
    tool_texts: list[str] = field(default_factory=list)  # what each tool call gave the model
    context: list[str] = field(default_factory=list)  # text hooks added for the model
    files: dict[str, str] = field(default_factory=dict)  # project files, hook logs included


def project_files(project: Path) -> dict[str, str]:
    """Every file the run left in the project, outside ``.claude/`` and ``.hookscope/``."""
    found: dict[str, str] = {}
    for path in sorted(project.rglob("*")):
        relative = path.relative_to(project)
        if path.is_file() and relative.parts[0] not in (".claude", ".hookscope"):
            found[str(relative)] = path.read_text(errors="replace")
    return found


# --- the real Claude Code CLI ------------------------------------------------------------


def run_claude(
    project: Path,
    replies: Sequence[Mapping[str, Any]],
    prompt: str,
    tmp: Path,
    plugin_dir: Path | None = None,
    markers: Sequence[str] = (),
    mcp: bool = False,
) -> Outcome:
    """Run the CLI once (``claude -p``) in ``project`` against the scripted replies.

    With ``mcp``, the CLI also has the ``words`` MCP server (``tests/support/mcp_server.py``,
    stdio) and may call ``mcp__words__lookup`` without asking.

    ``markers`` are context texts to look for in the model requests (what hooks injected).
    """
    home = tmp / "claude-home"
    home.mkdir(exist_ok=True)
    with ScriptedModelServer({PROMPT_KEY: list(replies)}) as server:
        env = {
            **os.environ,
            **hook_environment(tmp),
            "ANTHROPIC_BASE_URL": server.base_url,
            "ANTHROPIC_API_KEY": "sk-ant-parity",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "DISABLE_AUTOUPDATER": "1",
            "ENABLE_TOOL_SEARCH": "false",
            "HOME": str(home),
            "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        }
        argv = [str(CLI), "-p", f"{PROMPT_KEY}: {prompt}", "--output-format", "json"]
        argv += ["--setting-sources", "project", "--allowedTools", "Bash"]
        argv += ["--model", "claude-sonnet-4-5"]
        if plugin_dir is not None:
            argv += ["--plugin-dir", str(plugin_dir)]
        if mcp:
            server_config = {
                "command": sys.executable,
                "args": ["-m", "tests.support.mcp_server"],
                "env": {"PYTHONPATH": str(REPO)},
            }
            argv += ["--mcp-config", json.dumps({"mcpServers": {"words": server_config}})]
            argv += ["--allowedTools", "mcp__words__lookup"]
        run = subprocess.run(
            argv, cwd=project, env=env, capture_output=True, text=True, timeout=180, check=False
        )
        records = server.model_requests()
    requests = [r.body for r in records]
    assert run.returncode == 0 or requests == [], (run.returncode, run.stdout, run.stderr)
    outcome = Outcome(blocked=not requests, files=project_files(project))
    # Each text answer the model gave ended the turn once (a Stop hook may have continued it).
    outcome.turns = len({r.step for r in records if r.reply and "tool_calls" not in r.reply})
    if requests:
        last = requests[-1]["messages"]
        outcome.tool_texts = [text for m in last for text in _tool_results(m)]
        everything = json.dumps(last)
        outcome.context = [marker for marker in markers if marker in everything]
    return outcome


def _tool_results(message: Mapping[str, Any]) -> list[str]:
    content = message.get("content")
    if not isinstance(content, list):
        return []
    texts: list[str] = []
    for block in content:
        if isinstance(block, dict) and block.get("type") == "tool_result":
            value = block.get("content")
            if isinstance(value, list):
                value = "\n".join(str(b.get("text", "")) for b in value if isinstance(b, dict))
            texts.append(str(value))
    return texts


# --- hookscope ---------------------------------------------------------------------------


async def run_hookscope(
    project: Path,
    replies: Sequence[Mapping[str, Any]],
    prompt: str,
    tmp: Path,
    settings: Path | None = None,
    tool_aliases: Mapping[str, Any] | None = None,
    tool_name: str = "Bash",
    argument: str = "command",
    markers: Sequence[str] = (),
) -> Outcome:
    """Run the same scripted moves as an agent loop on hookscope's scopes.

    Each reply is one model move: a tool call (run through ``turn.call_tool``, the command
    executed by ``/bin/sh`` in the project) or a text answer (ends the turn; a Stop hook's
    continuation opens the next turn, which takes the next move). ``tool_name``/``argument``
    are the agent's own names for Claude Code's Bash and its command.
    """
    table = load(settings or project / ".claude" / "settings.json", tool_aliases=tool_aliases)
    runner = HookRunner(table)
    outcome = Outcome()
    moves = iter(replies)
    previous = {key: os.environ.get(key) for key in hook_environment(tmp)}
    os.environ.update(hook_environment(tmp))
    try:
        async with runner.session(agent_name="parity") as session:
            next_prompt: Any = f"{PROMPT_KEY}: {prompt}"
            while next_prompt is not None:
                async with session.turn(next_prompt) as turn:
                    if not turn.allowed:
                        outcome.blocked = True
                        break
                    for move in moves:
                        if "tool_calls" not in move:
                            outcome.turns += 1
                            turn.respond(ChatResponse(str(move["text"])))
                            break
                        for index, call in enumerate(move["tool_calls"]):
                            made, run = _tool(call, f"t{index}", project, tool_name, argument)
                            try:
                                result = await turn.call_tool(made, run)
                            except ShellError as error:  # the model reads the failure
                                outcome.tool_texts.append(str(error))
                                continue
                            text = str(result.value) if result.allowed else result.message
                            if result.feedback:
                                text = f"{text}\n{result.feedback}"
                            outcome.tool_texts.append(text)
                next_prompt = turn.continuation
                added = [*session.context.context_additions, *turn.context_additions]
                outcome.context += [m for m in markers if any(m in text for text in added)]
    finally:
        for key, value in previous.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    outcome.context = sorted(set(outcome.context), key=list(markers).index)
    outcome.files = project_files(project)
    return outcome


def _tool(
    call: Mapping[str, Any], call_id: str, project: Path, tool_name: str, argument: str
) -> tuple[ToolCall, Any]:
    """The agent's call for a scripted one, and the function that runs it: Bash through
    ``/bin/sh``, an ``mcp__<server>__<tool>`` call as an MCP call to the test MCP server."""
    name = str(call["name"])
    if name.startswith("mcp__"):
        server, tool = name.removeprefix("mcp__").split("__", 1)

        def mcp_tool(**arguments: Any) -> str:
            answer = mcp_call({"name": tool, "arguments": arguments})
            return "\n".join(block["text"] for block in answer["content"])

        return ToolCall(tool, call["arguments"], id=call_id, server=server), mcp_tool
    made = ToolCall(tool_name, {argument: call["arguments"]["command"]}, id=call_id)
    return made, _shell(project, argument)


class ShellError(Exception):
    """A command that exited non-zero: Claude Code's Bash tool reports it as an error (and
    PostToolUseFailure fires), worded as the CLI words it."""


def _shell(project: Path, argument: str) -> Any:
    def run(**args: Any) -> str:
        done = subprocess.run(
            ["/bin/sh", "-c", str(args[argument])],
            cwd=project,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        output = done.stdout + done.stderr
        if done.returncode:
            raise ShellError(f"Exit code {done.returncode}\n{output.strip()}")
        return output

    return run
