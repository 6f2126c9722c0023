"""Limits that keep one client from pinning the server: rate, session slots, body size and body time.

Everything here is transport-agnostic and takes an injectable clock, so tests need no sleeps.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

Clock = Callable[[], float]

MAX_TRACKED_RATE_KEYS: Final = 10_000
"""Most rate-limit buckets kept; the least recently used are forgotten (a full bucket is the same as none)."""


@dataclass(slots=True)
class _Bucket:
    tokens: float
    updated: float


class RateLimiter:
    """A token bucket per key (session or client address): `rate` per second sustained, `burst` at once."""

    def __init__(self, rate: float, burst: int, *, clock: Clock = time.monotonic) -> None:
        self.rate = rate
        self.burst = burst
        self._clock = clock
        self._buckets: OrderedDict[str, _Bucket] = OrderedDict()

    def acquire(self, key: str) -> float | None:
        """Take one token for `key`: None if allowed, else the seconds until one is available."""
        now = self._clock()
        bucket = self._buckets.pop(key, None) or _Bucket(float(self.burst), now)
        bucket.tokens = min(float(self.burst), bucket.tokens + (now - bucket.updated) * self.rate)
        bucket.updated = now
        self._buckets[key] = bucket
        if len(self._buckets) > MAX_TRACKED_RATE_KEYS:
            self._buckets.popitem(last=False)
        if bucket.tokens >= 1.0:
            bucket.tokens -= 1.0
            return None
        return (1.0 - bucket.tokens) / self.rate

    def forget(self, key: str) -> None:
        self._buckets.pop(key, None)


class SessionSlots:
    """A fixed number of concurrent sessions shared by stateful HTTP sessions and WebSocket connections."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.in_use = 0

    def try_acquire(self) -> bool:
        if self.in_use >= self.capacity:
            return False
        self.in_use += 1
        return True

    def release(self) -> None:
        self.in_use = max(0, self.in_use - 1)


async def _plain_response(send: Send, status: int, text: str, headers: list[tuple[bytes, bytes]] = []) -> None:  # noqa: B006  # never mutated
    body = text.encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class BodyLimit:
    """Reads the whole request body up front, within `max_bytes` (else 413) and `timeout_s` (else 408).

    A client that declares a huge body, sends an endless one, or trickles it byte by byte is answered
    and disconnected instead of holding a request task (and memory) for as long as it likes.
    """

    def __init__(self, app: ASGIApp, *, max_bytes: int, timeout_s: float) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.timeout_s = timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_bytes):
            await _plain_response(send, 413, "Request body too large.\n")
            return
        body = bytearray()
        trailing: list[Message] = []
        with anyio.move_on_after(self.timeout_s) as deadline:
            while True:
                message = await receive()
                if message["type"] != "http.request":
                    trailing.append(message)
                    break
                body.extend(message.get("body", b""))
                if len(body) > self.max_bytes:
                    await _plain_response(send, 413, "Request body too large.\n")
                    return
                if not message.get("more_body", False):
                    break
        if deadline.cancelled_caught:
            await _plain_response(send, 408, "Request body not received in time.\n")
            return
        replay: list[Message] = [{"type": "http.request", "body": bytes(body), "more_body": False}, *trailing]

        async def replayed_receive() -> Message:
            return replay.pop(0) if replay else await receive()

        await self.app(scope, replayed_receive, send)


def send_with_timeout(send: Send, timeout_s: float) -> Send:
    """`send` that gives up after `timeout_s`: a client that stops reading cannot block a task forever.

    Raises:
        TimeoutError: the client did not take the message in time (the connection is then dropped).
    """

    async def bounded_send(message: Message) -> None:
        with anyio.fail_after(timeout_s):
            await send(message)

    return bounded_send
