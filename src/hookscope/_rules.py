"""The rule value of :mod:`hookscope.policy`, and reading what a rule names.

Private; :class:`Policy` and :class:`PolicyError` are re-exported from :mod:`hookscope.policy`
(as are :class:`~hookscope.types.Decision` and :class:`~hookscope.types.PolicyDecision`, which
live in :mod:`hookscope.types`).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, Final, Literal, Protocol, final

from hookscope._names import fold_server
from hookscope.types import Decision, HookscopeError, PolicyDecision, ToolCall

__all__ = [
    "CONFIRM",
    "DECISION_RANK",
    "WILDCARD",
    "AskHandler",
    "Decision",
    "Named",
    "Policy",
    "PolicyDecision",
    "PolicyError",
    "Predicate",
    "claude_mcp_target",
    "parse_target",
    "predicate_input",
    "server_name",
]

WILDCARD: Final = "*"
#: How Claude Code names MCP tools: ``mcp__<server>__<tool>``, and ``mcp__<server>`` for every
#: tool of a server (its permission rules).
CLAUDE_MCP_PREFIX: Final = "mcp__"
#: What Claude Code replaces with ``_`` in a server's name when it writes a tool name.
_CLAUDE_UNSAFE: Final = re.compile(r"[^A-Za-z0-9_-]")

#: A rule's condition: gets the call's args (or the :class:`ToolCall` when its parameter is
#: annotated ``ToolCall``), sync or async, and returns whether the rule applies.
Predicate = Callable[..., bool | Awaitable[bool]]
#: Asks the user about a call; returns ``True`` to run it. Sync or async.
AskHandler = Callable[[ToolCall], bool | Awaitable[bool]]


class PolicyError(HookscopeError, ValueError):
    """A rule or a rule set cannot be enforced as written; the message says what to change."""

    __module__ = "hookscope.policy"


@final
class _Confirm:
    """The ``handler`` that asks through the runner instead of a function: see :data:`CONFIRM`."""

    __slots__ = ()

    def __call__(self, call: ToolCall) -> bool:
        # Called directly (outside a PolicyEnforcer) it cannot ask anyone: refuse.
        return False

    def __repr__(self) -> str:
        return "policy.CONFIRM"


#: ``ask_user(tool, handler=CONFIRM)``: the rule's match becomes ``HookResult.ask``, so the
#: runner puts a confirm question to the ``on_interaction`` hooks (``builtins.Approvals``, an
#: adapter's native prompt); the answer ``"allow"`` runs the call, anything else denies it.
#: Rules loaded from configuration files ask this way.
CONFIRM: Final = _Confirm()


#: Inside a target tier, deny beats ask_user beats allow.
DECISION_RANK: Final = {Decision.DENY: 0, Decision.ASK_USER: 1, Decision.ALLOW: 2}


class Named(Protocol):
    """Anything with a ``name``, such as an MCP server config."""

    @property
    def name(self) -> str: ...


def parse_target(tool: object) -> tuple[int, str | None, str]:
    """Split a rule's target into (tier, server, tool): tier 0 exact, 1 ``server/*``, 2 ``*``.

    The server part is returned as written; the policy folds it (:func:`~hookscope._names.
    fold_server`) when it compiles the rule.

    Raises:
        PolicyError: ``tool`` is empty, padded with spaces, a malformed ``server/tool``, or
            uses ``*`` as a pattern (``run_*`` would silently match nothing).
    """
    if not isinstance(tool, str):
        raise PolicyError(f"a rule's tool must be a string, got {tool!r}")
    if tool == WILDCARD:
        return 2, None, WILDCARD
    if not tool.strip():
        raise PolicyError(
            f"a rule needs a tool name, got {tool!r}; use '*' for every tool or 'server/*' for "
            "every tool of an MCP server"
        )
    if tool != tool.strip():
        raise PolicyError(f"tool name {tool!r} has surrounding whitespace; remove it")
    server, slash, name = tool.partition("/")
    if slash and (not server.strip() or not name):
        raise PolicyError(f"{tool!r} is not a valid MCP target; write 'server/tool' or 'server/*'")
    if slash and name == WILDCARD:
        return 1, server, WILDCARD
    if WILDCARD in tool:
        raise PolicyError(
            f"{tool!r}: '*' is a wildcard only on its own or as 'server/*'; patterns such as "
            "'run_*' are not supported (they would match nothing), so list the tools instead"
        )
    return (0, server, name) if slash else (0, None, tool)


def claude_mcp_target(tool: str, servers: Iterable[str]) -> str | None:
    """A rule target in Claude Code's MCP spelling, read as hookscope's; ``None`` for others.

    ``mcp__<server>__<tool>`` is ``server/tool`` and ``mcp__<server>`` is ``server/*``, for a
    server in ``servers`` (the registered names) as Claude Code writes it: every character but
    letters, digits, ``_`` and ``-`` becomes ``_`` (``corp.files`` is ``corp_files``),
    compared case-folded. The longest such server wins (a server may have ``__`` in its name).
    A rule in this spelling must name a registered server: otherwise it would silently match
    nothing (a deny that lets the call through).

    Raises:
        PolicyError: ``tool`` is in Claude's spelling but names no registered server.
    """
    if not tool.startswith(CLAUDE_MCP_PREFIX) or "/" in tool:
        return None  # Claude's spelling has no '/': 'mcp__x/tool' is server 'mcp__x', hookscope's
    rest = tool[len(CLAUDE_MCP_PREFIX) :]
    written = {fold_server(_CLAUDE_UNSAFE.sub("_", s)): s for s in servers}
    known = [
        (spelled, server)
        for spelled, server in written.items()
        if rest[: len(spelled)].casefold() == spelled
        and (len(rest) == len(spelled) or (rest[len(spelled) : len(spelled) + 2] == "__"))
        and len(rest) != len(spelled) + 2  # "mcp__calc__" names no tool
    ]
    if known:
        spelled, server = max(known, key=lambda k: len(k[0]))
        return f"{server}/{rest[len(spelled) + 2 :] or WILDCARD}"
    named = rest.partition("__")[0] or rest
    registered = ", ".join(sorted(written.values())) or "none"
    raise PolicyError(
        f"{tool!r} is Claude Code's name for a tool of MCP server {named!r}, which is not "
        f"registered (mcp_servers: {registered}); pass the server in mcp_servers=[...] (Claude "
        "writes 'corp.files' as 'corp_files'), or write the rule as 'server/tool'"
    )


def server_name(server: object) -> str:
    """The name of an MCP server given as a string or as an object with a ``.name``.

    The name is returned stripped of surrounding whitespace (the policy compares server names
    stripped and case-folded anyway).

    Raises:
        TypeError: ``server`` is neither.
        PolicyError: The name is empty, ``*`` or contains ``/``.
    """
    name = server if isinstance(server, str) else getattr(server, "name", None)
    if not isinstance(name, str):
        raise TypeError(f"an MCP server is a name or an object with a .name, got {server!r}")
    stripped = name.strip()
    if not stripped or "/" in stripped or stripped == WILDCARD:
        raise PolicyError(f"MCP server name {name!r} must be non-empty, not '*' and without '/'")
    return stripped


def _is_tool_call_annotation(annotation: object) -> bool:
    if isinstance(annotation, type):
        return issubclass(annotation, ToolCall)
    # An annotation that could not be evaluated (a forward reference): match the bare name.
    return isinstance(annotation, str) and annotation.rsplit(".", 1)[-1] == "ToolCall"


def predicate_input(func: Callable[..., Any], what: str) -> Literal["args", "call", "nothing"]:
    """What ``func`` wants: the call's args, the whole call (annotated ``ToolCall``), or nothing.

    Raises:
        PolicyError: ``func`` cannot be called with one argument nor with none.
    """
    try:
        signature = inspect.signature(func, eval_str=True)
    except Exception:  # annotations that do not evaluate: read them as strings
        try:
            signature = inspect.signature(func)
        except (TypeError, ValueError):  # a builtin without a signature: give it the args
            return "args"
    try:
        signature.bind(None)
    except TypeError:
        try:
            signature.bind()
        except TypeError:
            raise PolicyError(
                f"{what} {func!r} must take one argument: the call's args dict, or the "
                "ToolCall when that parameter is annotated ToolCall"
            ) from None
        return "nothing"
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    first = next((p for p in signature.parameters.values() if p.kind in positional), None)
    if first is not None and _is_tool_call_annotation(first.annotation):
        return "call"
    return "args"


@dataclass(frozen=True, slots=True)
class Policy:
    """One rule: what it targets, what it decides, and when it applies.

    Build rules with :func:`~hookscope.policy.allow`, :func:`~hookscope.policy.deny`,
    :func:`~hookscope.policy.ask_user` and the other builders; the constructor validates them
    the same way.

    Args:
        tool: A tool name, ``server/tool`` for an MCP tool, ``server/*`` for every tool of an
            MCP server, or ``*`` for every tool.
        decision: What the rule decides when it matches.
        when: Optional condition; the rule matches only when it returns ``True``.
        handler: For ``ASK_USER`` rules (and only those): asks the user about the call.
        name: Label in denial messages and telemetry; ``"<decision>:<tool>"`` when empty.
        reason: Why the rule denies, for the model and the logs; a default is derived.

    Raises:
        PolicyError: The rule cannot be enforced as written (the message says why).
    """

    tool: str
    decision: Decision
    when: Predicate | None = None
    handler: AskHandler | None = None
    name: str = ""
    reason: str = ""

    def __post_init__(self) -> None:
        parse_target(self.tool)
        if not isinstance(self.decision, Decision):
            raise PolicyError(f"decision must be a policy.Decision, got {self.decision!r}")
        if self.when is not None:
            if not callable(self.when):
                raise PolicyError(
                    f"when= must be a function of the call's args, got {self.when!r}; wrap a "
                    "constant in a lambda or drop when= for a rule that always applies"
                )
            predicate_input(self.when, "when=")
        if self.decision is Decision.ASK_USER:
            if self.handler is None:
                raise PolicyError(
                    f"ask_user rule for {self.tool!r} has no handler; pass handler=fn, where "
                    "fn(call) returns True to run the call (use deny() to refuse it outright)"
                )
            if self.handler is CONFIRM:
                pass
            elif (
                not callable(self.handler) or predicate_input(self.handler, "handler") == "nothing"
            ):
                raise PolicyError(
                    f"handler {self.handler!r} must be a function taking the ToolCall and "
                    "returning True to run it"
                )
        elif self.handler is not None:
            raise PolicyError(
                f"only ask_user rules take a handler; the {self.decision.value} rule for "
                f"{self.tool!r} would never call it"
            )
        if not isinstance(self.name, str) or not isinstance(self.reason, str):
            raise PolicyError(f"name and reason must be strings in the rule for {self.tool!r}")
        if not self.name:
            object.__setattr__(self, "name", f"{self.decision.value}:{self.tool}")


Policy.__module__ = "hookscope.policy"
