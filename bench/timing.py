"""Timing helpers shared by the session benchmark and its bare-server floor."""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

from mcp import Client


class CheckClock:
    """Time the MCP SDK client spends checking call results against the tools' output schemas: client work
    (a Python client compiles a validator per tool and walks every item), not the server's."""

    def __init__(self, client: Client) -> None:
        self.session = client.session
        self.check = self.session.validate_tool_result
        self.spent = 0.0
        self.session.validate_tool_result = self._timed  # type: ignore[method-assign]

    async def _timed(self, name: str, result: Any) -> None:
        start = time.perf_counter()
        try:
            await self.check(name, result)
        finally:
            self.spent += time.perf_counter() - start

    def take_ms(self) -> float:
        spent, self.spent = self.spent, 0.0
        return spent * 1000


async def ms(action: Any) -> float:
    start = time.perf_counter()
    await action()
    return (time.perf_counter() - start) * 1000


async def checked_ms(call: Any, clock: CheckClock) -> tuple[float, float]:
    """(the call without the client's checking, the client's checking) ms."""
    clock.take_ms()
    took = await ms(call)
    checking = clock.take_ms()
    return took - checking, checking


async def paired(call: Any, reference: Callable[[], Awaitable[float]], clock: CheckClock) -> tuple[float, float, float]:
    """(the call without the client's checking, its reference run, the client's checking) ms; the reference
    runs before or after the call at random, so that a drifting machine load falls on both alike."""
    ref = await reference() if random.random() < 0.5 else None
    took, checking = await checked_ms(call, clock)
    if ref is None:
        ref = await reference()
    return took, ref, checking


async def paired_median(
    call: Any, reference: Callable[[], Awaitable[float]], clock: CheckClock, times: int
) -> tuple[float, float, float]:
    """`paired` `times` over: (median call ms, median reference ms, the client's checking ms all together)."""
    runs = [await paired(call, reference, clock) for _ in range(times)]
    return (
        statistics.median(run[0] for run in runs),
        statistics.median(run[1] for run in runs),
        sum(run[2] for run in runs),
    )
