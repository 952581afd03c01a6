"""The mechanics behind :mod:`hookscope.policy`: reading what a rule names, and indexing rules.

Private; :class:`PolicyError` is re-exported from :mod:`hookscope.policy`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final, Generic, Literal, Protocol, TypeVar, final

from hookscope.types import HookscopeError, ToolCall

__all__ = [
    "WILDCARD",
    "IndexedRule",
    "Named",
    "PolicyError",
    "RuleIndex",
    "parse_target",
    "predicate_input",
    "server_name",
]

WILDCARD: Final = "*"


class PolicyError(HookscopeError, ValueError):
    """A rule or a rule set cannot be enforced as written; the message says what to change."""

    __module__ = "hookscope.policy"


class Named(Protocol):
    """Anything with a ``name``, such as an MCP server config."""

    @property
    def name(self) -> str: ...


def parse_target(tool: object) -> tuple[int, str | None, str]:
    """Split a rule's target into (tier, server, tool): tier 0 exact, 1 ``server/*``, 2 ``*``.

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
    if slash and (not server or not name):
        raise PolicyError(f"{tool!r} is not a valid MCP target; write 'server/tool' or 'server/*'")
    if slash and name == WILDCARD:
        return 1, server, WILDCARD
    if WILDCARD in tool:
        raise PolicyError(
            f"{tool!r}: '*' is a wildcard only on its own or as 'server/*'; patterns such as "
            "'run_*' are not supported (they would match nothing), so list the tools instead"
        )
    return (0, server, name) if slash else (0, None, tool)


def server_name(server: object) -> str:
    """The name of an MCP server given as a string or as an object with a ``.name``.

    Raises:
        TypeError: ``server`` is neither.
        PolicyError: The name is empty, padded, ``*`` or contains ``/``.
    """
    name = server if isinstance(server, str) else getattr(server, "name", None)
    if not isinstance(name, str):
        raise TypeError(f"an MCP server is a name or an object with a .name, got {server!r}")
    if not name or "/" in name or name != name.strip() or name == WILDCARD:
        raise PolicyError(f"MCP server name {name!r} must be non-empty, without '/' or spaces")
    return name


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


class IndexedRule(Protocol):
    """What :class:`RuleIndex` needs to know about a compiled rule."""

    tier: int  # 0 exact, 1 server/*, 2 *
    server: str | None
    tool: str
    bucket: int
    static: bool  # always decides when reached: nothing after it in a chain matters


R = TypeVar("R", bound=IndexedRule)


def _chain(rules: Iterable[R]) -> tuple[R, ...]:
    """``rules`` (in bucket order) up to and including the first that always decides."""
    chain: list[R] = []
    for rule in rules:
        chain.append(rule)
        if rule.static:
            break
    return tuple(chain)


@final
class RuleIndex(Generic[R]):
    """Rules keyed by target, each key holding its whole candidate chain in bucket order.

    A local call's chain is its exact-name rules then ``*`` rules; an MCP call's is its
    ``server/tool`` rules, then ``server/*``, then ``*``. Chains are built once, so finding
    one is a dict lookup or two however many rules target other tools.
    """

    __slots__ = ("_local", "_mcp", "_wild")

    def __init__(self, rules: Sequence[R]) -> None:
        # A stable sort keeps registration order inside each bucket.
        ordered = sorted(rules, key=lambda rule: rule.bucket)
        wild = [r for r in ordered if r.tier == 2]
        local: dict[str, list[R]] = {}
        server_wild: dict[str, list[R]] = {}
        server_exact: dict[str, dict[str, list[R]]] = {}
        for rule in ordered:
            if rule.tier == 1 and rule.server is not None:
                server_wild.setdefault(rule.server, []).append(rule)
            elif rule.tier == 0 and rule.server is None:
                local.setdefault(rule.tool, []).append(rule)
            elif rule.tier == 0 and rule.server is not None:
                server_exact.setdefault(rule.server, {}).setdefault(rule.tool, []).append(rule)
        self._wild = _chain(wild)
        self._local = {tool: _chain(rs + wild) for tool, rs in local.items()}
        self._mcp: dict[str, tuple[tuple[R, ...], dict[str, tuple[R, ...]]]] = {}
        for server in server_wild.keys() | server_exact.keys():
            tail = server_wild.get(server, []) + wild
            exact = server_exact.get(server, {})
            self._mcp[server] = (_chain(tail), {t: _chain(rs + tail) for t, rs in exact.items()})

    def candidates(self, name: str, server: str | None) -> tuple[R, ...]:
        """The rules that may decide a call to ``name`` (on ``server``), in evaluation order."""
        if server:
            entry = self._mcp.get(server)
            return self._wild if entry is None else entry[1].get(name, entry[0])
        # An empty server is no server: treating it as one would dodge exact-name denies.
        return self._local.get(name, self._wild)
