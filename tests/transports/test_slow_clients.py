"""Slow or stuck clients cannot pin the server: every stage of a connection has a deadline."""

from __future__ import annotations

import json

import anyio
import httpx2
import pytest
from feature_server import build_feature_server
from harness import TOKEN, Running, http_client, serve_in_process, wait_until
from websockets.asyncio.client import connect
from websockets.typing import Subprotocol

from repo_sandbox.config.model import ServerConfig

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


def tcp_address(running: Running) -> tuple[str, int]:
    host, port = running.base_url.removeprefix("http://").split(":")
    return host, int(port)


async def read_until_closed(stream: anyio.abc.ByteStream) -> bytes:
    data = b""
    try:
        while True:
            data += await stream.receive()
    except (anyio.EndOfStream, anyio.BrokenResourceError):
        return data


async def healthz_status(running: Running) -> int:
    async with httpx2.AsyncClient(timeout=5) as http:
        return (await http.get(f"{running.base_url}/healthz")).status_code


async def test_connection_that_never_finishes_its_request_head_is_closed() -> None:
    server, _ = build_feature_server()
    settings = ServerConfig(transport="http", header_timeout_s=0.3)
    with anyio.fail_after(10):
        async with (
            serve_in_process(server, settings) as running,
            await anyio.connect_tcp(*tcp_address(running)) as stream,
        ):
            await stream.send(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            assert await read_until_closed(stream) == b""


async def test_idle_keep_alive_connection_is_closed_after_its_last_response() -> None:
    server, _ = build_feature_server()
    settings = ServerConfig(transport="http", header_timeout_s=0.3)
    with anyio.fail_after(10):
        async with (
            serve_in_process(server, settings) as running,
            await anyio.connect_tcp(*tcp_address(running)) as stream,
        ):
            await stream.send(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            answer = await read_until_closed(stream)  # answered, then closed for idling
    assert answer.startswith(b"HTTP/1.1 200")


async def test_request_body_that_never_arrives_gets_408() -> None:
    server, _ = build_feature_server()
    settings = ServerConfig(transport="http", body_timeout_s=0.3)
    head = (
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n"
    )
    with anyio.fail_after(10):
        async with (
            serve_in_process(server, settings) as running,
            await anyio.connect_tcp(*tcp_address(running)) as stream,
        ):
            await stream.send(head.encode() + b'{"jsonrpc": ')
            answer = await read_until_closed(stream)
    assert answer.startswith(b"HTTP/1.1 408")


async def test_connection_flood_gets_503_and_clears_when_the_idlers_time_out() -> None:
    server, _ = build_feature_server()
    settings = ServerConfig(transport="http", max_connections=4, header_timeout_s=1.5)
    with anyio.fail_after(10):
        async with serve_in_process(server, settings) as running:
            idlers = [await anyio.connect_tcp(*tcp_address(running)) for _ in range(4)]
            try:
                assert await healthz_status(running) == 503
                for idler in idlers:
                    await read_until_closed(idler)  # the server drops them at the header deadline
                assert await healthz_status(running) == 200
            finally:
                for idler in idlers:
                    await idler.aclose()


async def test_websocket_client_that_stops_reading_is_dropped_and_frees_its_session() -> None:
    server, _ = build_feature_server()
    settings = ServerConfig(transport="http", send_timeout_s=0.5, rate_per_s=1000, rate_burst=1000)
    with anyio.fail_after(20):
        async with serve_in_process(server, settings) as running:
            assert running.service is not None
            url = f"{running.ws_url}?token={TOKEN}"
            # max_queue=1: the client library stops reading the socket after one unread frame.
            async with connect(
                url, subprotocols=[Subprotocol("mcp")], max_queue=1, max_size=None, close_timeout=0.1
            ) as ws:
                await ws.send(json.dumps(INITIALIZE))
                for request_id in range(1, 13):  # 24 MiB of answers: more than the socket buffers hold
                    call = {"name": "big", "arguments": {"kib": 2048}}
                    await ws.send(
                        json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": call})
                    )
                service = running.service
                await wait_until(lambda: service.slots.in_use == 0)
                assert running.server is not None
                state = running.server.server_state
                await wait_until(lambda: not state.connections)  # the socket is closed too, not just the session
            assert await healthz_status(running) == 200


async def test_http_client_that_stops_reading_its_response_does_not_keep_the_request_running() -> None:
    server, _ = build_feature_server()
    settings = ServerConfig(transport="http", send_timeout_s=0.5)
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "big", "arguments": {"kib": 30000}}}
    headers = {
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": "big",
    }
    envelope = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "stuck", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    body["params"]["_meta"] = envelope  # type: ignore[index]
    with anyio.fail_after(20):
        async with serve_in_process(server, settings) as running, http_client() as http:
            assert running.server is not None
            baseline = len(running.server.server_state.tasks)
            async with http.stream("POST", running.mcp_url, json=body, headers=headers) as response:
                assert response.status_code == 200
                state = running.server.server_state
                await wait_until(lambda: len(state.tasks) <= baseline)  # never reading the 30 MiB answer
                await wait_until(lambda: not state.connections)  # and its socket is closed
            assert await healthz_status(running) == 200


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
}
