"""``govern(options, runner)``: a ``ClaudeAgentOptions`` whose agent a hookscope runner governs."""

from __future__ import annotations

import dataclasses
from typing import Any

from claude_agent_sdk import ClaudeAgentOptions, HookMatcher

from hookscope.integrations._kit import Governor
from hookscope.integrations.claude_agent_sdk import stream
from hookscope.integrations.claude_agent_sdk.hooks import AskMode, ClaudeHooks
from hookscope.integrations.claude_agent_sdk.values import PROVIDER, server_names
from hookscope.runner import HookRunner

__all__ = ["SDK", "govern", "governed_by", "wire"]

#: The SDK's distribution name.
SDK = "claude-agent-sdk"


def govern(
    options: ClaudeAgentOptions,
    runner: HookRunner,
    *,
    agent_name: str | None = None,
    ask: AskMode = "confirm",
    session_id: str | None = None,
) -> ClaudeAgentOptions:
    """Options whose agent ``runner`` governs and traces; use them as the originals.

    Adds a hook matcher for every event hookscope maps (after the user's own hooks, which still
    run; the CLI applies the strictest answer) and, when the options have a ``can_use_tool``,
    wraps it. Every ``ClaudeSDKClient`` or ``query()`` started with the result is one hookscope
    session per CLI session: a turn per prompt, a tool span per tool use, a ``chat`` span per
    model response, subagents under the call that started them.

    Args:
        options: The agent's options; not changed (a copy is returned).
        runner: Policies, hooks and observers (an ``OTelHook`` traces).
        agent_name: ``gen_ai.agent.name`` of the sessions.
        ask: ``"confirm"`` settles a policy's or hook's ask with the runner's
            ``on_interaction`` hooks (none answering is a denial); ``"native"`` hands it to the
            options' ``can_use_tool`` (Claude's own approval), which must be set.
        session_id: ``session.id`` of every session, when the application names them itself
            (a ``session.id`` it propagates through OpenTelemetry context or baggage is kept
            too); the CLI's id is always recorded as ``gen_ai.conversation.id``.

    Raises:
        TypeError: ``options`` is not a ``ClaudeAgentOptions`` or ``runner`` not a HookRunner.
        ValueError: ``ask`` is unknown, or ``"native"`` without ``can_use_tool``.
    """
    if not isinstance(options, ClaudeAgentOptions):
        raise TypeError(f"govern needs a ClaudeAgentOptions, got {type(options).__name__}")
    if ask not in ("confirm", "native"):
        raise ValueError(f"ask={ask!r}: use 'confirm' or 'native'")
    if ask == "native" and options.can_use_tool is None:
        raise ValueError(
            "ask='native' hands asks to Claude's can_use_tool: set "
            "ClaudeAgentOptions(can_use_tool=...) or use ask='confirm'"
        )
    existing = governed_by(options)
    if existing is not None:
        if existing.governor.runner is runner:
            return options  # governing twice would double every span
        raise ValueError(
            "these options are already governed by another runner; govern the originals"
        )
    governor = Governor(runner, SDK, agent_name=agent_name, provider=PROVIDER)
    return wire(options, governor, ask=ask, session_id=session_id)


def wire(
    options: ClaudeAgentOptions,
    governor: Governor,
    *,
    ask: AskMode = "confirm",
    session_id: str | None = None,
) -> ClaudeAgentOptions:
    """A copy of ``options`` with ``governor``'s callbacks added (see :func:`govern`)."""
    hooks = ClaudeHooks(
        governor,
        ask=ask,
        session_id=session_id,
        model=options.model,
        user_can_use_tool=options.can_use_tool,
        servers=server_names(options.mcp_servers),
    )
    merged: dict[Any, list[HookMatcher]] = {k: list(v) for k, v in (options.hooks or {}).items()}
    for event, matchers in hooks.matchers().items():
        merged.setdefault(event, []).extend(matchers)
    stream.install()
    governed = dataclasses.replace(
        options, hooks=merged, can_use_tool=hooks.can_use_tool() or options.can_use_tool
    )
    return governed


def governed_by(options: ClaudeAgentOptions) -> ClaudeHooks | None:
    """The hookscope callbacks already in ``options``, if any."""
    for matchers in (options.hooks or {}).values():
        for matcher in matchers:
            for hook in matcher.hooks:
                owner = getattr(hook, "__self__", None)
                if isinstance(owner, ClaudeHooks):
                    return owner
    return None
