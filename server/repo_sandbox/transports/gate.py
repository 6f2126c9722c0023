"""The checks every /mcp request and /ws handshake passes before any MCP code sees it.

Order: Host and Origin (DNS rebinding) -> bearer token -> shutting down -> rate (HTTP; WebSocket limits
per message) -> body size and time (HTTP). Refusals are small fixed JSON-RPC error bodies: no secret,
path or stack trace ever appears in one.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from dataclasses import dataclass
from typing import Final

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from repo_sandbox.transports.auth import BearerAuth
from repo_sandbox.transports.drain import Drain
from repo_sandbox.transports.limits import RateLimiter, send_with_timeout
from repo_sandbox.transports.origin import HostOriginPolicy
from repo_sandbox.wiring.scope import SESSION_ID_KEY

logger = logging.getLogger("repo_sandbox.transports")

MCP_SESSION_HEADER: Final = "mcp-session-id"

RATE_LIMITED_CODE: Final = -32029
"""JSON-RPC error code for a message refused by the per-session rate limit (`data.retry_after_s` says when)."""


@dataclass(frozen=True, slots=True)
class Refusal:
    status: int
    code: int
    message: str
    headers: tuple[tuple[str, str], ...] = ()


UNAUTHORIZED: Final = Refusal(
    401, -32001, "Unauthorized: send 'Authorization: Bearer <token>'.", (("www-authenticate", 'Bearer realm="mcp"'),)
)
BAD_HOST: Final = Refusal(421, -32600, "Invalid Host header.")
BAD_ORIGIN: Final = Refusal(403, -32600, "Invalid Origin header.")
SHUTTING_DOWN: Final = Refusal(503, -32000, "The server is shutting down.", (("retry-after", "1"),))


def rate_limited(retry_after_s: float) -> Refusal:
    return Refusal(
        429, RATE_LIMITED_CODE, "Rate limit exceeded; slow down.", (("retry-after", str(math.ceil(retry_after_s))),)
    )


def error_body(code: int, message: str, request_id: object = None, data: object = None) -> bytes:
    error: dict[str, object] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}).encode()


async def refuse(scope: Scope, receive: Receive, send: Send, refusal: Refusal) -> None:
    """Answer with `refusal`: an HTTP response, or for a WebSocket handshake the ASGI denial response."""
    body = error_body(refusal.code, refusal.message)
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        *((name.encode(), value.encode()) for name, value in refusal.headers),
    ]
    prefix = "http"
    if scope["type"] == "websocket":
        await receive()  # websocket.connect
        prefix = "websocket.http"
    await send({"type": f"{prefix}.response.start", "status": refusal.status, "headers": headers})
    await send({"type": f"{prefix}.response.body", "body": body})


VALIDATION_REPORT: Final = "validation error"
"""How the SDK's 400 bodies quote pydantic's report (the caller's input, the pydantic version) to a client."""
INVALID_MESSAGE: Final = (
    "Invalid message: not a JSON-RPC 2.0 request, notification or response "
    "(check 'jsonrpc', 'id' and 'method', and that 'params' is an object)."
)
MAX_ERROR_BODY: Final = 256 * 1024


def without_validation_reports(send: Send) -> Send:
    """`send`, with the message of a 400 JSON-RPC error that quotes a validation report replaced by a fixed
    one (its code and id are kept); every other response passes through as it is."""
    held: list[Message] = []
    chunks: list[bytes] = []

    async def sanitizing_send(message: Message) -> None:
        if message["type"] == "http.response.start" and message.get("status") == 400:
            held.append(message)
            return
        if not held or message["type"] != "http.response.body":
            await send(message)
            return
        chunks.append(message.get("body", b""))
        more = message.get("more_body", False)
        if more and sum(map(len, chunks)) <= MAX_ERROR_BODY:
            return
        start, body = held.pop(), b"".join(chunks)
        chunks.clear()
        if not more:  # whole: rewritten if need be (an oversized body is no report, and passes on as it is)
            body = _sanitized(body)
            headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
            start = {**start, "headers": [*headers, (b"content-length", str(len(body)).encode())]}
        await send(start)
        await send({"type": "http.response.body", "body": body, "more_body": more})

    return sanitizing_send


def _sanitized(body: bytes) -> bytes:
    try:
        payload = json.loads(body)
    except ValueError:
        return body
    if not isinstance(payload, dict) or not isinstance(error := payload.get("error"), dict):
        return body
    message = error.get("message")
    if not isinstance(message, str) or VALIDATION_REPORT not in message.lower():
        return body
    return error_body(error.get("code", -32600), INVALID_MESSAGE, payload.get("id"))


def address_key(scope: Scope) -> str:
    client = scope.get("client")
    return f"addr-{client[0]}" if client else "addr-unknown"


def http_session_key(scope: Scope) -> str | None:
    """The MCP session an HTTP request names ("http-…", a hash: session ids are credentials), if any."""
    session = Headers(scope=scope).get(MCP_SESSION_HEADER)
    return "http-" + hashlib.sha256(session.encode()).hexdigest()[:16] if session else None


class Gate:
    """ASGI middleware in front of the MCP endpoints (see the module docstring for the order)."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        policy: HostOriginPolicy,
        auth: BearerAuth,
        drain: Drain,
        session_rate: RateLimiter | None = None,
        address_rate: RateLimiter | None = None,
        send_timeout_s: float | None = None,
    ) -> None:
        self.app = app
        self.policy = policy
        self.auth = auth
        self.drain = drain
        self.session_rate = session_rate
        self.address_rate = address_rate
        self.send_timeout_s = send_timeout_s

    def _check(self, scope: Scope) -> Refusal | None:
        headers = Headers(scope=scope)
        if not self.policy.host_allowed(headers.get("host")):
            logger.warning("refused %s: Host not allowed", scope["path"])
            return BAD_HOST
        if not self.policy.origin_allowed(headers.get("origin")):
            logger.warning("refused %s: Origin not allowed", scope["path"])
            return BAD_ORIGIN
        websocket = scope["type"] == "websocket"
        query = scope.get("query_string", b"").decode("latin-1")
        if not self.auth.is_authorized(headers, query, allow_query=websocket):
            logger.warning("refused %s: missing or wrong token", scope["path"])
            return UNAUTHORIZED
        if self.drain.draining:
            return SHUTTING_DOWN
        # Every request (and WebSocket handshake) spends from its address's budget, so that a made-up
        # session id buys nothing; requests of a session also spend from that session's own budget.
        retry_after = self.address_rate.acquire(address_key(scope)) if self.address_rate is not None else None
        session = None if websocket else http_session_key(scope)
        if retry_after is None and session is not None and self.session_rate is not None:
            retry_after = self.session_rate.acquire(session)
        if retry_after is not None:
            return rate_limited(retry_after)
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        refusal = self._check(scope)
        if refusal is not None:
            await refuse(scope, receive, send, refusal)
            return
        session = http_session_key(scope) if scope["type"] == "http" else None
        if session is not None:
            # Per-session state follows the MCP session; a sessionless request is a session of its own.
            scope = {**scope, SESSION_ID_KEY: session}
        if scope["type"] == "http" and self.send_timeout_s is not None:
            send = send_with_timeout(send, self.send_timeout_s)
        if scope["type"] == "http":
            send = without_validation_reports(send)
        await self.app(scope, receive, send)
