"""Time as the runtime sees it: one injectable monotonic clock, so tests move time instead of sleeping."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    """A source of monotonic seconds (only differences are meaningful)."""

    def now(self) -> float: ...


class SystemClock:
    """The real monotonic clock."""

    __slots__ = ()

    def now(self) -> float:
        return time.monotonic()


class FakeClock:
    """A clock that moves only when told to: for tests and simulations of long agent sessions."""

    __slots__ = ("_now",)

    def __init__(self, start: float = 1000.0) -> None:
        self._now = start

    def now(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("a clock does not go backwards")
        self._now += seconds
