"""Every reach into the MCP SDK's or uvicorn's internals, in one module.

Where the SDK (mcp 2.x) or uvicorn has no public API for what we need, this module is the only place that
reads a private attribute, overrides a private hook or replaces a method on a library object:
- the low-level `Server` inside `MCPServer` (`_lowlevel_server`): our own transports run it (the SDK's
  `Client` reaches it the same way);
- `tools.listChanged` for handshake-era clients: every transport builds the initialization options with
  `create_initialization_options()` and no arguments, which advertises `listChanged: false`;
- which connection a request came in on (`ServerSession` has no public accessor): the key of per-session
  budgets and circuit breakers when the transport stamps no session id of its own;
- counting stateful HTTP sessions against the slots WebSockets use (`StreamableHTTPSessionManager` hooks);
- a request-head deadline (uvicorn's `H11Protocol` has none);
- a WebSocket shutdown that copes with a peer whose close frame came first (uvicorn's sends a second close).

Each assumption is checked where it is used: a broken one raises `SdkAssumptionError` naming the installed
versions, never a silent fallback (a lost session key would reset budgets and breakers on every call).
`tests/test_architecture_sdk.py` checks them against the installed packages and that no other module of the
server touches a private SDK or uvicorn name.
"""

from __future__ import annotations

import asyncio
import functools
from importlib.metadata import version
from typing import Any, Protocol

from mcp.server import MCPServer, NotificationOptions
from mcp.server.connection import Connection, NotifyOnlyOutbound
from mcp.server.lowlevel import Server
from mcp.server.models import InitializationOptions
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.direct_dispatcher import DIRECT_TRANSPORT_KIND
from mcp_types.version import MODERN_PROTOCOL_VERSIONS


class SdkAssumptionError(RuntimeError):
    """Raised when the installed MCP SDK or uvicorn no longer has an internal this module relies on."""

    def __init__(self, what: str) -> None:
        super().__init__(f"{what} (installed: {installed_versions()}); see repo_sandbox.wiring.sdk_adapter")


def installed_versions() -> str:
    return f"mcp {version('mcp')}, uvicorn {version('uvicorn')}"


def _required(owner: object, name: str, kind: type[Any]) -> Any:
    value = getattr(owner, name, None)
    if value is None or not isinstance(value, kind):
        raise SdkAssumptionError(f"{type(owner).__name__}.{name} is no longer a {kind.__name__}")
    return value


def lowlevel_server(server: MCPServer[Any]) -> Server[Any]:
    """The low-level server an `MCPServer` runs: what our transports serve."""
    return _required(server, "_lowlevel_server", Server)


def advertise_tools_changed(server: MCPServer[Any]) -> None:
    """Make every transport advertise `tools.listChanged` (our listing changes: circuits mark tools)."""
    lowlevel = lowlevel_server(server)
    create_options = lowlevel.create_initialization_options

    def with_tools_changed(
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        options = notification_options or NotificationOptions(tools_changed=True)
        return create_options(options, experimental_capabilities, extensions)

    lowlevel.create_initialization_options = with_tools_changed


def connection_of(session: object) -> object:
    """An object that stays the same for every request of one client connection (compare by identity).

    The SDK builds a `ServerSession` per request; legacy-era requests of one connection share its
    `_connection`. 2026-07-28 requests each get their own `Connection`:
    - on a duplex stream (stdio) they share the stream's notify channel (`NotifyOnlyOutbound`);
    - an in-process `Client(server, mode="auto")` dispatches directly; its requests share the direct
      dispatcher's transport context, inside the SDK's wrapper of the request channel (`_inner`);
    - a single-exchange HTTP request has neither: it is a session of its own.

    Raises:
        SdkAssumptionError: `session` no longer carries its connection or request channel.
    """
    connection: Connection = _required(session, "_connection", Connection)
    if isinstance(connection.outbound, NotifyOnlyOutbound):
        return connection.outbound
    request_channel = _required(session, "_request_outbound", object)
    if connection.protocol_version in MODERN_PROTOCOL_VERSIONS and _is_direct(request_channel.transport):
        transport = getattr(getattr(request_channel, "_inner", None), "transport", None)
        if not _is_direct(transport):
            raise SdkAssumptionError(f"{type(request_channel).__name__}._inner no longer wraps the direct dispatch")
        return transport
    return connection


def _is_direct(transport: object) -> bool:
    return getattr(transport, "kind", None) == DIRECT_TRANSPORT_KIND


class Slots(Protocol):
    def try_acquire(self) -> bool: ...
    def release(self) -> None: ...


class SlottedSessionManager(StreamableHTTPSessionManager):
    """The SDK's session manager, drawing each stateful session from `slots` (shared with WebSockets)."""

    def __init__(self, slots: Slots, **options: Any) -> None:
        super().__init__(**options)
        self.slots = slots
        _required(self, "_server_instances", dict)

    def _admit_session(self, requestor: Any) -> StreamableHTTPServerTransport | None:
        if not self.slots.try_acquire():
            return None
        return super()._admit_session(requestor)

    async def _discard_session(self, session_id: str, transport: StreamableHTTPServerTransport) -> None:
        if self._server_instances.pop(session_id, None) is not None:
            self.slots.release()
        await super()._discard_session(session_id, transport)

    async def close_sessions(self) -> None:
        """End every stateful session (their SSE streams close): the last step of a drain."""
        for session_id, transport in list(self._server_instances.items()):
            await self._discard_session(session_id, transport)

    @property
    def open_sessions(self) -> int:
        return len(self._server_instances)


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


def guarded_protocol(header_timeout_s: float, close_timeout_s: float) -> type[asyncio.Protocol]:
    """uvicorn's `http=` protocol class with these deadlines."""
    attributes = {"header_timeout_s": header_timeout_s, "close_timeout_s": close_timeout_s}
    return type("GuardedH11", (guarded_h11_protocol(),), attributes)


@functools.cache
def guarded_h11_protocol() -> type[asyncio.Protocol]:
    """The class below, built on first use: uvicorn's protocol modules load only when serving HTTP."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

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

    return GuardedH11Protocol


@functools.cache
def closing_websocket_protocol() -> type[asyncio.Protocol]:
    """uvicorn's `ws="websockets-sansio"` protocol class, with the shutdown below."""
    from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
    from websockets.protocol import State

    class ClosingWebSocketsProtocol(WebSocketsSansIOProtocol):
        def shutdown(self) -> None:
            """On shutdown uvicorn sends close 1012 on every connection it still holds. A connection whose peer's
            close frame was just answered (`handle_close`) is held until its transport reports it lost; a second
            close there raises `InvalidState`, which ended the server's shutdown with exit status 1. It is only
            closed."""
            if self.handshake_complete and not self.close_sent and self.conn.state is not State.OPEN:
                self.stop_keepalive()
                self.transport.close()
                return
            super().shutdown()

    return ClosingWebSocketsProtocol


def check_assumptions() -> list[str]:
    """What this module expects of the installed SDK and uvicorn classes, each broken one described."""
    from uvicorn.protocols.http.h11_impl import H11Protocol
    from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

    expected: list[tuple[type[Any], str]] = [
        (StreamableHTTPSessionManager, "_admit_session"),
        (StreamableHTTPSessionManager, "_discard_session"),
    ]
    expected += [(H11Protocol, name) for name in ("on_response_complete", "connection_made", "connection_lost")]
    expected += [(WebSocketsSansIOProtocol, name) for name in ("shutdown", "stop_keepalive", "handle_close")]
    return [
        f"{owner.__name__}.{name} is missing ({installed_versions()})"
        for owner, name in expected
        if not callable(getattr(owner, name, None))
    ]
