"""The policy's rule index: which rules may decide a call, in evaluation order.

Private; used by :mod:`hookscope.policy`. The index answers in a dict lookup or two, however
many rules target other tools. A call meets:

* a local call (no ``server``): its exact-name rules, then ``*`` rules;
* an MCP call: its ``server/tool`` rules, then ``server/*``, then ``*``;
* either, when its name reads ``server/tool`` for a registered server: that server's *deny and
  ask_user* rules for the tool (and its ``server/*`` ones) as well — never its allow rules, so
  a local tool cannot borrow an MCP server's permissions;
* with ``normalize=True``: also the deny and ask_user rules whose names have the same
  :func:`~hookscope._names.skeleton` as the call's.

Server names are always compared folded (:func:`~hookscope._names.fold_server`). The extra
rules of the last two cases are merged into the plain chain by (bucket, registration order);
a call that meets none of them pays one ``"/" in name`` test.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final, Generic, Protocol, TypeVar, final

from hookscope._names import fold_server, skeleton

__all__ = ["IndexedRule", "RuleIndex"]


class IndexedRule(Protocol):
    """What :class:`RuleIndex` needs to know about a compiled rule."""

    tier: int  # 0 exact, 1 server/*, 2 *
    server: str | None  # folded
    tool: str
    bucket: int
    order: int  # registration order
    strict: bool  # deny or ask_user: applies to look-alike and borrowed readings
    static: bool  # always decides when reached: nothing after it in a chain matters


R = TypeVar("R", bound=IndexedRule)

_EMPTY: Final[tuple[()]] = ()


def _chain(rules: Iterable[R]) -> tuple[R, ...]:
    """``rules`` in (bucket, order) order, up to and including the first that always decides."""
    chain: list[R] = []
    for rule in sorted(rules, key=lambda rule: (rule.bucket, rule.order)):
        chain.append(rule)
        if rule.static:
            break
    return tuple(chain)


def _strict(rules: Iterable[R]) -> tuple[R, ...]:
    return tuple(rule for rule in rules if rule.strict)


@final
class _ServerRules(Generic[R]):
    """One key's rules: ``server/*`` ones and ``server/tool`` ones by tool."""

    __slots__ = ("exact", "wild")

    def __init__(self) -> None:
        self.wild: list[R] = []
        self.exact: dict[str, list[R]] = {}


@final
class RuleIndex(Generic[R]):
    """Rules keyed by target, each key holding its whole candidate chain in bucket order.

    Args:
        rules: Compiled rules; ``server`` fields already folded.
        normalize: Also index deny and ask_user rules by skeleton.
    """

    __slots__ = ("_borrow", "_local", "_mcp", "_norm_local", "_norm_mcp", "_plain", "_wild")

    def __init__(self, rules: Sequence[R], *, normalize: bool = False) -> None:
        wild = [r for r in rules if r.tier == 2]
        local: dict[str, list[R]] = {}
        servers: dict[str, _ServerRules[R]] = {}
        for rule in rules:
            if rule.tier == 0 and rule.server is None:
                local.setdefault(rule.tool, []).append(rule)
            elif rule.server is not None:
                entry = servers.setdefault(rule.server, _ServerRules())
                if rule.tier == 1:
                    entry.wild.append(rule)
                else:
                    entry.exact.setdefault(rule.tool, []).append(rule)
        self._wild = _chain(wild)
        self._local = {tool: _chain(rs + wild) for tool, rs in local.items()}
        self._mcp: dict[str, tuple[tuple[R, ...], dict[str, tuple[R, ...]]]] = {}
        # What a local call named "server/tool" meets besides ``*``: deny and ask rules only.
        self._borrow: dict[str, tuple[tuple[R, ...], dict[str, tuple[R, ...]]]] = {}
        for server, entry in servers.items():
            tail = entry.wild + wild
            exact = {t: _chain(rs + tail) for t, rs in entry.exact.items()}
            self._mcp[server] = (_chain(tail), exact)
            self._borrow[server] = (
                _strict(entry.wild),
                {t: _strict(rs) for t, rs in entry.exact.items()},
            )
        self._norm_local: dict[str, tuple[R, ...]] | None = None
        self._norm_mcp: dict[str, tuple[tuple[R, ...], dict[str, tuple[R, ...]]]] | None = None
        if normalize:
            norm_local: dict[str, list[R]] = {}
            for tool, rs in local.items():
                norm_local.setdefault(skeleton(tool), []).extend(_strict(rs))
            self._norm_local = {k: tuple(v) for k, v in norm_local.items() if v}
            norm_mcp: dict[str, tuple[list[R], dict[str, list[R]]]] = {}
            for server, entry in servers.items():
                swild, sexact = norm_mcp.setdefault(skeleton(server), ([], {}))
                swild.extend(_strict(entry.wild))
                for tool, rs in entry.exact.items():
                    sexact.setdefault(skeleton(tool), []).extend(_strict(rs))
            self._norm_mcp = {
                s: (tuple(w), {t: tuple(rs) for t, rs in e.items()})
                for s, (w, e) in norm_mcp.items()
            }
        #: Whether every call takes the plain path (no MCP rules, no skeletons).
        self._plain = not servers and not normalize

    def candidates(self, name: str, server: str | None) -> tuple[R, ...]:
        """The rules that may decide a call to ``name`` (on ``server``), in evaluation order."""
        key = fold_server(server) if server else ""
        if key:
            entry = self._mcp.get(key)
            base = self._wild if entry is None else entry[1].get(name, entry[0])
        else:
            # An empty or blank server is no server: treating it as one would dodge
            # exact-name denies.
            base = self._local.get(name, self._wild)
        if self._plain:
            return base
        extra = self._extra(name, key)
        if not extra:
            return base
        # A rule met by two readings is evaluated once (its condition may have effects).
        return _chain({rule.order: rule for rule in (*base, *extra)}.values())

    def _extra(self, name: str, key: str) -> list[R]:
        """Deny and ask_user rules a stricter reading of the call's names adds."""
        extra: list[R] = []
        if "/" in name:
            prefix, _, rest = name.partition("/")
            borrowed = self._borrow.get(fold_server(prefix))
            if borrowed is not None:
                extra += borrowed[1].get(rest, _EMPTY)
                extra += borrowed[0]
        if self._norm_local is None or self._norm_mcp is None:
            return extra
        norm_name = skeleton(name)
        if key:
            entry = self._norm_mcp.get(skeleton(key))
            if entry is not None:
                extra += entry[1].get(norm_name, _EMPTY)
                extra += entry[0]
        else:
            extra += self._norm_local.get(norm_name, _EMPTY)
        if "/" in norm_name:
            prefix, _, rest = norm_name.partition("/")
            entry = self._norm_mcp.get(prefix.strip())
            if entry is not None:
                extra += entry[1].get(rest.strip(), _EMPTY)
                extra += entry[0]
        return extra
