"""Per-session state: one object per client session, created on first use, bounded in number."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Final, Generic, TypeVar

T = TypeVar("T")

MAX_SESSIONS: Final = 4096
"""Sessions whose state is kept; the least recently used one is forgotten beyond this (memory stays bounded)."""


class SessionTable(Generic[T]):
    """Maps a session id to its own state object, so two clients never share a breaker or a budget."""

    __slots__ = ("_factory", "_items", "_max")

    def __init__(self, factory: Callable[[], T], *, max_sessions: int = MAX_SESSIONS) -> None:
        self._factory = factory
        self._items: OrderedDict[str, T] = OrderedDict()
        self._max = max_sessions

    def get(self, session_id: str) -> T:
        """The session's state, created on first use."""
        try:
            self._items.move_to_end(session_id)
            return self._items[session_id]
        except KeyError:
            state = self._factory()
            self._items[session_id] = state
            while len(self._items) > self._max:
                self._items.popitem(last=False)
            return state

    def peek(self, session_id: str) -> T | None:
        """The session's state if it has any, without creating it."""
        return self._items.get(session_id)

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)
