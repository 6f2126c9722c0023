"""Run the HTTP/WebSocket app under uvicorn: header timeouts, connection limits, graceful SIGTERM.

On SIGTERM (or Ctrl-C) the server stops accepting connections, refuses new MCP requests, gives
in-flight calls `shutdown_grace_s` to finish, cancels the rest (their child processes are killed and
their callers get a JSON-RPC error), lets the last answers reach the wire (WebSocket frames, the SSE
responses of 2025-11-25 HTTP calls), then closes WebSockets (1012) and HTTP sessions and exits.
"""

from __future__ import annotations

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

from repo_sandbox.config.model import ServerConfig
from repo_sandbox.transports.auth import StartupRefused, install_log_redaction, load_token
from repo_sandbox.transports.http import HttpService, build_http_app
from repo_sandbox.wiring.sdk_adapter import closing_websocket_protocol, guarded_protocol

logger = logging.getLogger("repo_sandbox.transports")

FLUSH_TIMEOUT_S: Final = 1.0
"""On shutdown, how long WebSocket clients get to receive the answers to their last requests."""


class _DeniedHandshakeFilter(logging.Filter):
    """Drops uvicorn's false alarm after a WebSocket handshake we refused with an HTTP status.

    uvicorn's websockets-sansio protocol never marks a denial response as a completed handshake, so it
    logs an ERROR for every refused /ws connection (401, 403, 421, 503); the refusal itself is logged by the Gate.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != "ASGI callable returned without completing handshake."


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
        ws=closing_websocket_protocol(),
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
