"""Graceful shutdown: refuse new requests, let in-flight ones finish for a grace period, cancel the rest.

`Drain` is an MCP server middleware, so it sees every request of every transport (HTTP, WebSocket) in
the one place where its handler runs. Cancelling a request cancels its handler's cancel scope; tool
bodies that run child processes through anyio kill them when cancelled.
"""

from __future__ import annotations

import logging
from typing import Any, Final

import anyio
from mcp import MCPError
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext

logger = logging.getLogger("repo_sandbox.transports")

SHUTTING_DOWN_CODE: Final = -32000
"""JSON-RPC error code (server-defined range) for requests refused or cancelled by a shutdown."""

UNWIND_TIMEOUT_S: Final = 5.0
"""How long cancelled requests get to unwind (kill their processes, answer the client)."""


class Drain:
    """Tracks in-flight requests; `drain()` finishes or cancels them."""

    def __init__(self) -> None:
        self.draining = False
        self._in_flight: set[anyio.CancelScope] = set()
        self._all_done: anyio.Event | None = None

    @property
    def in_flight(self) -> int:
        return len(self._in_flight)

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.request_id is None:  # notifications (cancellation among them) always pass
            return await call_next(ctx)
        if self.draining:
            raise MCPError(SHUTTING_DOWN_CODE, "The server is shutting down; retry on another instance.")
        with anyio.CancelScope() as scope:
            self._in_flight.add(scope)
            try:
                return await call_next(ctx)
            finally:
                self._in_flight.discard(scope)
                if not self._in_flight and self._all_done is not None:
                    self._all_done.set()
        raise MCPError(SHUTTING_DOWN_CODE, "The server shut down before this request finished; it was cancelled.")

    async def drain(self, grace_s: float) -> int:
        """Stop admitting requests, wait up to `grace_s` for in-flight ones, then cancel the rest.

        Returns the number of requests that had to be cancelled.
        """
        self.draining = True
        self._all_done = all_done = anyio.Event()
        if not self._in_flight:
            return 0
        with anyio.move_on_after(grace_s):
            await all_done.wait()
        cancelled = len(self._in_flight)
        if cancelled:
            logger.warning("shutdown: cancelling %d in-flight request(s) after %.1f s", cancelled, grace_s)
            for scope in list(self._in_flight):
                scope.cancel()
            with anyio.move_on_after(UNWIND_TIMEOUT_S):
                await all_done.wait()
        return cancelled
