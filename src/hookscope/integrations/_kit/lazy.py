"""Values an adapter converts from the SDK's only when something reads them.

A model request's history is converted for ``pre_llm_request`` hooks and content capture; most
runners have neither, and converting every message on every model call would cost each call in
proportion to the conversation's length.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, final, overload

__all__ = ["LazyMessages"]

Message = Mapping[str, Any]


@final
class LazyMessages(Sequence[Message]):
    """``convert(source)``'s messages, converted on first read and kept."""

    __slots__ = ("_convert", "_items", "_source")

    def __init__(self, convert: Callable[[Any], Sequence[Message]], source: Any) -> None:
        self._convert = convert
        self._source = source
        self._items: tuple[Message, ...] | None = None

    def _load(self) -> tuple[Message, ...]:
        if self._items is None:
            self._items = tuple(self._convert(self._source))
            self._source = None  # the SDK's objects are not kept past the conversion
        return self._items

    @overload
    def __getitem__(self, index: int) -> Message: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Message]: ...
    def __getitem__(self, index: int | slice) -> Message | Sequence[Message]:
        return self._load()[index]

    def __len__(self) -> int:
        return len(self._load())

    def __iter__(self) -> Iterator[Message]:
        return iter(self._load())

    def __repr__(self) -> str:
        return f"LazyMessages({list(self._load())!r})"
