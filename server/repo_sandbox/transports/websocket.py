"""MCP over WebSocket at /ws: subprotocol `mcp`, one JSON-RPC message per text frame.

mcp 2.x dropped its WebSocket transport; this is the server side, wire-compatible with the mcp 1.x
`websocket_client`. Each connection is one session (its own id, rate bucket and session slot) served by
`Server.run`, so both protocol eras work: the 2025-11-25 handshake, with push elicitation, progress and
cancellation over the duplex channel, and 2026-07-28 per-request envelopes.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server import MCPServer
from mcp.shared.message import ServerMessageMetadata, SessionMessage
from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocket, WebSocketDisconnect

from repo_sandbox.transports.framing import BadFrame, read_message
from repo_sandbox.transports.gate import RATE_LIMITED_CODE, Refusal, error_body, refuse
from repo_sandbox.transports.limits import RateLimiter, SessionSlots
from repo_sandbox.wiring import sdk_adapter
from repo_sandbox.wiring.scope import SESSION_ID_KEY

logger = logging.getLogger("repo_sandbox.transports")

SUBPROTOCOL: Final = "mcp"
CLOSE_UNSUPPORTED_DATA: Final = 1003
CLOSE_GOING_AWAY: Final = 1001
NO_SUBPROTOCOL: Final = Refusal(400, -32600, "Connect with the 'mcp' WebSocket subprotocol.")
TOO_MANY_SESSIONS: Final = Refusal(503, -32000, "Too many open sessions; retry later.", (("retry-after", "5"),))


@dataclass(frozen=True, slots=True)
class WebSocketLimits:
    rate: RateLimiter
    slots: SessionSlots
    idle_timeout_s: float
    send_timeout_s: float


class OpenConnections:
    """The live WebSocket connections, so that a shutdown can let their last answers out first."""

    def __init__(self) -> None:
        self._connections: set[_Connection] = set()

    def add(self, connection: _Connection) -> None:
        self._connections.add(connection)

    def discard(self, connection: _Connection) -> None:
        self._connections.discard(connection)

    async def flush(self, timeout_s: float) -> None:
        """Wait (bounded) until every request a client sent has been answered on the wire."""
        with anyio.move_on_after(timeout_s):
            for connection in list(self._connections):
                await connection.all_answered.wait()


class _Connection:
    """One WebSocket connection: pumps frames between the socket and the MCP server's streams."""

    def __init__(self, websocket: WebSocket, limits: WebSocketLimits, session_id: str) -> None:
        self.websocket = websocket
        self.limits = limits
        self.session_id = session_id
        self.pending: set[types.RequestId] = set()
        self.all_answered = anyio.Event()
        self.all_answered.set()
        self.closed_by_server = False

    def _track(self, request_id: types.RequestId) -> None:
        self.pending.add(request_id)
        if self.all_answered.is_set():
            self.all_answered = anyio.Event()

    def _untrack(self, request_id: types.RequestId | None) -> None:
        self.pending.discard(request_id)
        if not self.pending:
            self.all_answered.set()

    async def read_frames(self, inbound: MemoryObjectSendStream[SessionMessage | Exception]) -> None:
        metadata = ServerMessageMetadata(request_context=self.websocket)
        async with inbound:
            while True:
                frame: dict[str, Any] | None = None
                with anyio.move_on_after(self.limits.idle_timeout_s):
                    frame = dict(await self.websocket.receive())
                if frame is None:
                    if self.pending:
                        continue
                    logger.info("websocket session %s idle; closing", self.session_id)
                    await self._close(CLOSE_GOING_AWAY, "idle timeout")
                    return
                if frame["type"] == "websocket.disconnect":
                    return
                text = frame.get("text")
                if text is None:
                    await self._close(CLOSE_UNSUPPORTED_DATA, "binary frames are not supported")
                    return
                message = read_message(text)
                if isinstance(message, BadFrame):
                    await self._answer_bad_frame(message)
                    continue
                if not await self._admit(message):
                    continue
                await inbound.send(SessionMessage(message, metadata=metadata))

    async def _answer_bad_frame(self, frame: BadFrame) -> None:
        """Answer a frame that holds no message (within the session's rate: garbage floods buy nothing)."""
        if frame.reply is not None and self.limits.rate.acquire(self.session_id) is None:
            await self._send_text(frame.reply.model_dump_json(by_alias=True, exclude_unset=True))

    async def _admit(self, message: types.JSONRPCMessage) -> bool:
        """Apply the rate limit to the client's requests and notifications (cancellations always pass); track
        requests in flight (an idle connection with work pending stays open)."""
        if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
            return True  # answers to our own requests (elicitation): bounded by us, never dropped
        is_cancel = isinstance(message, types.JSONRPCNotification) and message.method == "notifications/cancelled"
        if is_cancel:
            request_id = (message.params or {}).get("requestId")  # pyright: ignore[reportAttributeAccessIssue]
            if isinstance(request_id, int | str) and not isinstance(request_id, bool):
                self._untrack(request_id)
            return True  # a malformed one too: the SDK drops it (JSON-RPC answers no notification)
        retry_after = self.limits.rate.acquire(self.session_id)
        if retry_after is not None:
            if isinstance(message, types.JSONRPCRequest):
                data = {"retry_after_s": round(retry_after, 3)}
                body = error_body(RATE_LIMITED_CODE, "Rate limit exceeded; slow down.", message.id, data)
                await self._send_text(body.decode())
            return False
        if isinstance(message, types.JSONRPCRequest):
            self._track(message.id)
        return True

    async def write_frames(self, outbound: MemoryObjectReceiveStream[SessionMessage]) -> None:
        async with outbound:
            async for session_message in outbound:
                message = session_message.message
                await self._send_text(message.model_dump_json(by_alias=True, exclude_unset=True))
                if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
                    self._untrack(message.id)

    async def _send_text(self, text: str) -> None:
        with anyio.fail_after(self.limits.send_timeout_s):
            await self.websocket.send_text(text)

    async def _close(self, code: int, reason: str) -> None:
        self.closed_by_server = True
        with anyio.move_on_after(self.limits.send_timeout_s):
            await self.websocket.close(code, reason)


async def serve_websocket(
    websocket: WebSocket, server: MCPServer[Any], limits: WebSocketLimits, connections: OpenConnections
) -> None:
    """Serve one WebSocket connection (its session slot already taken) until either side closes it."""
    session_id = "ws-" + uuid.uuid4().hex[:16]
    websocket.scope[SESSION_ID_KEY] = session_id
    connection = _Connection(websocket, limits, session_id)
    connections.add(connection)
    lowlevel = sdk_adapter.lowlevel_server(server)
    inbound_send, inbound_receive = anyio.create_memory_object_stream[SessionMessage | Exception](16)
    outbound_send, outbound_receive = anyio.create_memory_object_stream[SessionMessage](16)
    try:
        await websocket.accept(subprotocol=SUBPROTOCOL)
        logger.info("websocket session %s opened", session_id)
        async with anyio.create_task_group() as tg:

            async def run_then_stop(run: Callable[[], Any]) -> None:
                try:
                    await run()
                except (WebSocketDisconnect, TimeoutError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                    logger.info("websocket session %s: client gone or not reading", session_id)
                finally:
                    tg.cancel_scope.cancel()

            tg.start_soon(run_then_stop, lambda: connection.read_frames(inbound_send))
            tg.start_soon(run_then_stop, lambda: connection.write_frames(outbound_receive))
            await lowlevel.run(inbound_receive, outbound_send, lowlevel.create_initialization_options())
    finally:
        connections.discard(connection)
        limits.slots.release()
        limits.rate.forget(session_id)
        logger.info("websocket session %s closed", session_id)


class WebSocketEndpoint:
    """The ASGI app at /ws."""

    def __init__(self, server: MCPServer[Any], limits: WebSocketLimits) -> None:
        self.server = server
        self.limits = limits
        self.connections = OpenConnections()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "websocket":
            body = json.dumps({"error": "WebSocket endpoint: connect with the 'mcp' subprotocol."}).encode()
            await send({"type": "http.response.start", "status": 426, "headers": [(b"upgrade", b"websocket")]})
            await send({"type": "http.response.body", "body": body})
            return
        if SUBPROTOCOL not in scope.get("subprotocols", []):
            await refuse(scope, receive, send, NO_SUBPROTOCOL)
            return
        if not self.limits.slots.try_acquire():
            await refuse(scope, receive, send, TOO_MANY_SESSIONS)
            return
        await serve_websocket(WebSocket(scope, receive, send), self.server, self.limits, self.connections)
