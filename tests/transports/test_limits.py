"""Rate buckets and session slots, on an injected clock."""

from __future__ import annotations

from repo_sandbox.transports.limits import MAX_TRACKED_RATE_KEYS, RateLimiter, SessionSlots


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_rate_limiter_allows_a_burst_then_the_sustained_rate() -> None:
    clock = FakeClock()
    limiter = RateLimiter(rate=2.0, burst=3, clock=clock)
    assert [limiter.acquire("s") for _ in range(3)] == [None, None, None]
    assert limiter.acquire("s") == 0.5
    clock.now += 0.5
    assert limiter.acquire("s") is None
    assert limiter.acquire("s") == 0.5


def test_rate_limiter_keeps_sessions_apart() -> None:
    limiter = RateLimiter(rate=1.0, burst=1, clock=FakeClock())
    assert limiter.acquire("a") is None
    assert limiter.acquire("a") is not None
    assert limiter.acquire("b") is None


def test_rate_limiter_refills_only_up_to_the_burst() -> None:
    clock = FakeClock()
    limiter = RateLimiter(rate=10.0, burst=2, clock=clock)
    limiter.acquire("s")
    clock.now += 3600
    assert [limiter.acquire("s") is None for _ in range(3)] == [True, True, False]


def test_rate_limiter_memory_is_bounded() -> None:
    limiter = RateLimiter(rate=1.0, burst=1, clock=FakeClock())
    for key in range(MAX_TRACKED_RATE_KEYS + 100):
        limiter.acquire(str(key))
    assert len(limiter._buckets) == MAX_TRACKED_RATE_KEYS  # pyright: ignore[reportPrivateUsage]


def test_session_slots_are_a_fixed_pool() -> None:
    slots = SessionSlots(2)
    assert [slots.try_acquire() for _ in range(3)] == [True, True, False]
    slots.release()
    assert slots.try_acquire() is True
    assert slots.in_use == 2
