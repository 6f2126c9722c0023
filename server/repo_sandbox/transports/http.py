"""One ASGI app for the network transports: Streamable HTTP at /mcp, WebSocket at /ws, /healthz.

Both endpoints sit behind the same `Gate` (Host/Origin, token, rate, body limits) and share one pool
of session slots. Both protocol eras are served on both: on /mcp the SDK routes by the
`MCP-Protocol-Version` header (2026-07-28 requests are sessionless; 2025-11-25 sessions are stateful
with SSE responses, so progress, push elicitation and cancellation work); on /ws the first request decides.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import anyio
from mcp.server import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from repo_sandbox.config.model import ServerConfig
from repo_sandbox.transports.auth import BearerAuth
from repo_sandbox.transports.drain import Drain
from repo_sandbox.transports.framing import MAX_DEPTH, deep_message_error
from repo_sandbox.transports.gate import Gate
from repo_sandbox.transports.limits import BodyLimit, RateLimiter, SessionSlots
from repo_sandbox.transports.origin import HostOriginPolicy
from repo_sandbox.transports.websocket import OpenConnections, WebSocketEndpoint, WebSocketLimits
from repo_sandbox.wiring import sdk_adapter
from repo_sandbox.wiring.sdk_adapter import SlottedSessionManager

logger = logging.getLogger("repo_sandbox.transports")

BOM_BYTES = "\ufeff".encode()


def counted_session_manager(
    server: MCPServer[Any], slots: SessionSlots, settings: ServerConfig
) -> SlottedSessionManager:
    """The SDK's session manager, drawing its stateful sessions from the slots WebSockets use too."""
    return SlottedSessionManager(
        slots,
        app=sdk_adapter.lowlevel_server(server),
        json_response=False,
        stateless=False,
        # Host/Origin are checked by the Gate (which also accepts a Host without a port); the SDK's
        # transport keeps its Content-Type check.
        security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        session_idle_timeout=settings.session_idle_timeout_s,
        max_request_body_size=settings.max_body_bytes,
        max_sessions=settings.max_sessions,  # also checked (first) against the shared slots
    )


class JsonFraming:
    """/mcp POST bodies read as stdio lines and WebSocket frames are (`framing`): a leading byte-order mark is
    ignored, and a body nested deeper than the SDK's parser reads is answered -32600, not "Parse error".
    Runs inside `BodyLimit`, which hands on the whole body in one message."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        message = await receive()
        body: bytes = message.get("body", b"")
        if body.startswith(BOM_BYTES):
            body = body[len(BOM_BYTES) :]
            message = {**message, "body": body}
        if body.count(b"[") + body.count(b"{") > MAX_DEPTH:
            error = deep_message_error(body.decode("utf-8", "replace"))
            if error is not None:
                answer = error.model_dump_json(by_alias=True, exclude_unset=True).encode()
                headers = [(b"content-type", b"application/json"), (b"content-length", str(len(answer)).encode())]
                await send({"type": "http.response.start", "status": 400, "headers": headers})
                await send({"type": "http.response.body", "body": answer})
                return
        first = [message]

        async def replayed() -> Message:
            return first.pop() if first else await receive()

        await self.app(scope, replayed, send)


class ResponsesInFlight:
    """The /mcp POST requests whose response is not yet written (a 2025-11-25 call answers on an SSE stream
    that outlives its handler), so that a shutdown closes sessions only once their answers are out."""

    def __init__(self) -> None:
        self.count = 0
        self._none = anyio.Event()
        self._none.set()

    @contextlib.asynccontextmanager
    async def track(self, scope: Scope) -> AsyncIterator[None]:
        if scope.get("method") != "POST":  # a GET stream stays open until its session ends
            yield
            return
        self.count += 1
        if self._none.is_set():
            self._none = anyio.Event()
        try:
            yield
        finally:
            self.count -= 1
            if not self.count:
                self._none.set()

    async def flush(self, timeout_s: float) -> None:
        with anyio.move_on_after(timeout_s):
            await self._none.wait()


@dataclass
class HttpService:
    """The assembled app and the parts the server loop and tests need to reach."""

    app: Starlette
    drain: Drain
    slots: SessionSlots
    sessions: SlottedSessionManager
    websockets: OpenConnections
    settings: ServerConfig
    responses: ResponsesInFlight


async def healthz(request: Request) -> Response:
    """Liveness for load balancers and probes; says nothing about the server or the repository."""
    return JSONResponse({"status": "ok"}, headers={"cache-control": "no-store"})


def build_http_app(server: MCPServer[Any], settings: ServerConfig, token: str | None) -> HttpService:
    """The ASGI app serving `server` (from `wiring.assembly.build_server`) under the limits and checks of `settings`."""
    drain = Drain()
    server.middleware.insert(0, drain)
    slots = SessionSlots(settings.max_sessions)
    sessions = counted_session_manager(server, slots, settings)
    rate = RateLimiter(settings.rate_per_s, settings.rate_burst)
    address_rate = RateLimiter(settings.address_rate_per_s, settings.address_rate_burst)
    policy = HostOriginPolicy.from_settings(settings)
    auth = BearerAuth(token)
    limits = WebSocketLimits(rate, slots, settings.session_idle_timeout_s, settings.send_timeout_s)

    responses = ResponsesInFlight()

    async def mcp_endpoint(scope: Scope, receive: Receive, send: Send) -> None:
        async with responses.track(scope):
            await sessions.handle_request(scope, receive, send)

    mcp_app = Gate(
        BodyLimit(JsonFraming(mcp_endpoint), max_bytes=settings.max_body_bytes, timeout_s=settings.body_timeout_s),
        policy=policy,
        auth=auth,
        drain=drain,
        session_rate=rate,
        address_rate=address_rate,
        send_timeout_s=settings.send_timeout_s,
    )
    ws_endpoint = WebSocketEndpoint(server, limits)
    ws_app = Gate(ws_endpoint, policy=policy, auth=auth, drain=drain, address_rate=address_rate)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with sessions.run():
            yield

    app = Starlette(
        routes=[
            Route("/healthz", healthz, methods=["GET"]),
            Route("/mcp", mcp_app, methods=["GET", "POST", "DELETE"]),
            WebSocketRoute("/ws", ws_app),
            Route("/ws", ws_app, methods=["GET"]),
        ],
        lifespan=lifespan,
    )
    return HttpService(app, drain, slots, sessions, ws_endpoint.connections, settings, responses)
