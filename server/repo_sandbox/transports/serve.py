"""Run the HTTP/WebSocket app under uvicorn: header timeouts, connection limits, graceful SIGTERM.

On SIGTERM (or Ctrl-C) the server stops accepting connections, refuses new MCP requests, gives
in-flight calls `shutdown_grace_s` to finish, cancels the rest (their child processes are killed and
their callers get a JSON-RPC error), lets the last answers reach the wire (WebSocket frames, the SSE
responses of 2025-11-25 HTTP calls), then closes WebSockets (1012) and HTTP sessions and exits.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import sys
import threading
from collections.abc import Iterator, Mapping
from typing import Any, Final

import anyio
import uvicorn
from mcp.server import MCPServer
from sse_starlette.sse import AppStatus
from uvicorn.protocols.http.h11_impl import H11Protocol

from repo_sandbox.config.model import ServerConfig
from repo_sandbox.transports.auth import StartupRefused, install_log_redaction, load_token
from repo_sandbox.transports.http import HttpService, build_http_app

logger = logging.getLogger("repo_sandbox.transports")

FLUSH_TIMEOUT_S: Final = 1.0
"""On shutdown, how long WebSocket clients get to receive the answers to their last requests."""


def abort_unflushed_close(transport: asyncio.Transport, loop: asyncio.AbstractEventLoop, deadline_s: float) -> None:
    """Make `transport.close()` final: asyncio's close waits until the send buffer is flushed, so a peer that
    stopped reading (a slow reader dropped at the send timeout) would hold the socket and its descriptor for
    ever. Once a closed connection's peer has taken nothing for `deadline_s`, the rest is discarded (the
    connection is reset); a peer still reading gets the whole answer."""
    close = transport.close
    if getattr(close, "aborts_unflushed", False):  # the WebSocket protocol takes over a wrapped transport
        return

    def check(unsent_before: int) -> None:
        unsent = transport.get_write_buffer_size()
        if unsent and unsent >= unsent_before:
            transport.abort()
        elif unsent:
            loop.call_later(deadline_s, check, unsent)

    def close_then_abort() -> None:
        close()
        loop.call_later(deadline_s, check, transport.get_write_buffer_size())

    close_then_abort.aborts_unflushed = True  # type: ignore[attr-defined]
    transport.close = close_then_abort  # type: ignore[method-assign]


class GuardedH11Protocol(H11Protocol):
    """uvicorn's HTTP/1.1 protocol, plus a deadline for receiving each request head and one for closing.

    uvicorn has no such timeout: a client that sends its headers one byte a minute holds a connection
    (and a `limit_concurrency` slot) for ever. The deadline is armed when the connection opens and after
    each response; a request head that has not arrived by then closes the connection. A connection (HTTP or
    the WebSocket it is upgraded to) closed while its peer reads nothing is reset after `close_timeout_s`.
    """

    header_timeout_s: float = 10.0
    close_timeout_s: float = 10.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        abort_unflushed_close(transport, self.loop, self.close_timeout_s)
        super().connection_made(transport)
        self._arm_header_deadline()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._arm_header_deadline()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_header_deadline()
        super().connection_lost(exc)

    def _cancel_header_deadline(self) -> None:
        deadline: asyncio.TimerHandle | None = getattr(self, "_header_deadline", None)
        if deadline is not None:
            deadline.cancel()

    def _arm_header_deadline(self) -> None:
        self._cancel_header_deadline()
        cycle_at_arm = self.cycle

        def expire() -> None:
            upgraded = self.transport.get_protocol() is not self
            if self.cycle is cycle_at_arm and not upgraded and not self.transport.is_closing():
                self.transport.close()

        self._header_deadline = self.loop.call_later(self.header_timeout_s, expire)


class _DeniedHandshakeFilter(logging.Filter):
    """Drops uvicorn's false alarm after a WebSocket handshake we refused with an HTTP status.

    uvicorn's websockets-sansio protocol never marks a denial response as a completed handshake, so it
    logs an ERROR for every refused /ws connection (401, 403, 421, 503); the refusal itself is logged by the Gate.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != "ASGI callable returned without completing handshake."


def guarded_protocol(header_timeout_s: float, close_timeout_s: float) -> type[H11Protocol]:
    attributes = {"header_timeout_s": header_timeout_s, "close_timeout_s": close_timeout_s}
    return type("GuardedH11", (GuardedH11Protocol,), attributes)


class DrainingServer(uvicorn.Server):
    """uvicorn's server with a drain phase before its own shutdown (see the module docstring)."""

    def __init__(self, config: uvicorn.Config, service: HttpService) -> None:
        super().__init__(config)
        self.service = service
        # sse-starlette ends every SSE stream ~0.5 s after uvicorn's exit flag is set, cutting 2025-11-25
        # calls that would finish within the grace; the drain closes the sessions itself instead.
        AppStatus.disable_automatic_graceful_drain()

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        """Like uvicorn's, minus re-raising the signal afterwards: a drained server exits with status 0."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        originals = {sig: signal.signal(sig, self.handle_exit) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for sig, handler in originals.items():
                signal.signal(sig, handler)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        for server in self.servers:
            server.close()
        cancelled = await self.service.drain.drain(self.service.settings.shutdown_grace_s)
        with anyio.move_on_after(FLUSH_TIMEOUT_S):  # the last answers go out before the connections close
            async with anyio.create_task_group() as tg:
                tg.start_soon(self.service.websockets.flush, FLUSH_TIMEOUT_S)
                tg.start_soon(self.service.responses.flush, FLUSH_TIMEOUT_S)
        await self.service.sessions.close_sessions()
        logger.info("shutdown: in-flight calls drained (%d cancelled)", cancelled)
        await super().shutdown(sockets)

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started:
            # Always shown (whatever the log level): operators and tests read the bound port from it.
            print(f"repo-sandbox: listening on {self.listen_url()}", file=sys.stderr, flush=True)

    def listen_url(self) -> str:
        host, port = self.service.settings.host, self.service.settings.port
        for server in self.servers:
            for sock in server.sockets:
                host, port = sock.getsockname()[:2]
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{port}"


def uvicorn_config(service: HttpService, *, fd: int | None = None) -> uvicorn.Config:
    settings = service.settings
    return uvicorn.Config(
        service.app,
        host=settings.host,
        port=settings.port,
        fd=fd,
        http=guarded_protocol(settings.header_timeout_s, settings.send_timeout_s),
        ws="websockets-sansio",
        ws_max_size=settings.max_body_bytes,
        ws_per_message_deflate=False,  # no decompression bombs; MCP frames are small
        ws_ping_interval=20.0,
        ws_ping_timeout=20.0,
        lifespan="on",
        limit_concurrency=settings.max_connections,
        timeout_keep_alive=5,
        timeout_graceful_shutdown=2,
        log_config=None,
        access_log=False,
        server_header=False,
        proxy_headers=False,
    )


def serve_http(server: MCPServer[Any], settings: ServerConfig, env: Mapping[str, str] | None = None) -> None:
    """Serve until SIGTERM/SIGINT.

    Raises:
        StartupRefused: no token on a non-loopback address, or a token/key that is too short.
    """
    env = os.environ if env is None else env
    token = load_token(settings, env)
    install_log_redaction(tuple(secret for secret in (token,) if secret))
    logging.getLogger("uvicorn.error").addFilter(_DeniedHandshakeFilter())
    if token is None:
        logger.warning("no token in $%s: serving %s without authentication", settings.token_env, settings.host)
    try:
        service = build_http_app(server, settings, token)
    except ValueError as exc:  # a malformed allowlist entry
        raise StartupRefused(str(exc)) from None
    uvicorn_server = DrainingServer(uvicorn_config(service), service)
    uvicorn_server.run()
