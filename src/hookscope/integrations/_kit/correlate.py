"""Find the call an SDK callback is about.

Split seams report one call several times (before, after, on error, as a message block), each
with what the SDK has at hand there. :class:`OpIndex` answers in one documented order: the call
id; then a named secondary key (``tool_use_id``, a step, a run id); then the oldest open call
of the same lane and tool whose arguments match. Closed calls stay findable for
:data:`LINGER_S` seconds (at most :data:`MAX_CLOSED` of them), so a late callback attaches to
its call instead of opening a phantom one.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Mapping
from time import monotonic
from typing import Any, Final, Generic, TypeVar, final

__all__ = ["LINGER_S", "MAX_CLOSED", "OpIndex"]

#: How long a closed call stays findable.
LINGER_S: Final = 30.0
#: How many closed calls stay findable at most.
MAX_CLOSED: Final = 256

T = TypeVar("T")


@final
class OpIndex(Generic[T]):
    """Open (and recently closed) calls of one session, by id, by secondary key, by shape."""

    __slots__ = ("_by_id", "_by_key", "_closed", "_keys", "_unbound")

    def __init__(self) -> None:
        self._by_id: dict[str, T] = {}
        self._by_key: dict[tuple[str, Hashable], T] = {}
        # (lane, tool) → open calls not yet bound to an id, oldest first, with their args.
        self._unbound: dict[tuple[Hashable, str], list[tuple[Mapping[str, Any], T]]] = {}
        self._closed: OrderedDict[int, tuple[float, T, list[Any]]] = OrderedDict()
        # id(op) → the ids and keys it is findable by, so closing it costs no scan.
        self._keys: dict[int, list[Any]] = {}

    def add(
        self,
        op: T,
        call_id: str = "",
        lane: Hashable = None,
        tool: str = "",
        args: Mapping[str, Any] | None = None,
    ) -> None:
        """Index ``op`` by ``call_id``, or, without one, by lane, tool and arguments."""
        if call_id:
            self._by_id[call_id] = op
            self._keys.setdefault(id(op), []).append(call_id)
        else:
            self._unbound.setdefault((lane, tool), []).append((dict(args or {}), op))

    def bind(self, name: str, key: Hashable, op: T) -> None:
        """Make ``op`` findable by the secondary key ``(name, key)``."""
        self._by_key[(name, key)] = op
        self._keys.setdefault(id(op), []).append((name, key))

    def bind_id(self, call_id: str, op: T) -> None:
        """Give an unbound ``op`` its call id."""
        self._by_id[call_id] = op
        self._keys.setdefault(id(op), []).append(call_id)
        for entries in self._unbound.values():
            entries[:] = [(a, o) for a, o in entries if o is not op]

    def find(
        self,
        call_id: str = "",
        key: tuple[str, Hashable] | None = None,
        lane: Hashable = None,
        tool: str = "",
        args: Mapping[str, Any] | None = None,
    ) -> T | None:
        """The call these facts name, in the order above; ``None`` when none matches."""
        self._expire()
        if call_id:
            op = self._by_id.get(call_id)
            if op is not None:
                return op
        if key is not None:
            op = self._by_key.get(key)
            if op is not None:
                return op
        if tool:
            for known, op in self._unbound.get((lane, tool), ()):
                if args is None or dict(args) == known:
                    return op
        return None

    def close(self, op: T) -> None:
        """``op`` ended: it stays findable for a while, then is forgotten."""
        keys = self._keys.pop(id(op), [])
        if self._unbound:
            for entries in self._unbound.values():
                entries[:] = [(a, o) for a, o in entries if o is not op]
        self._closed[id(op)] = (monotonic() + LINGER_S, op, keys)
        while len(self._closed) > MAX_CLOSED:
            self._forget(self._closed.popitem(last=False)[1])

    def _expire(self) -> None:
        now = monotonic()
        while self._closed:
            deadline = next(iter(self._closed.values()))[0]
            if deadline > now:
                return
            self._forget(self._closed.popitem(last=False)[1])

    def _forget(self, entry: tuple[float, T, list[Any]]) -> None:
        _, op, keys = entry
        for key in keys:
            if isinstance(key, tuple):
                if self._by_key.get(key) is op:
                    del self._by_key[key]
            elif self._by_id.get(key) is op:
                del self._by_id[key]
