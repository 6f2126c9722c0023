"""HTTP rate limits: per session and per client address; a made-up session id buys nothing."""

from __future__ import annotations

import uuid

import anyio
import pytest
from feature_server import build_feature_server
from harness import http_client, serve_in_process

from repo_sandbox.config.model import ServerConfig

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
}
ACCEPT = {"Accept": "application/json, text/event-stream"}


async def test_requests_of_a_session_over_its_rate_get_429_with_retry_after() -> None:
    server, _ = build_feature_server()
    settings = ServerConfig(transport="http", rate_per_s=1.0, rate_burst=2)
    with anyio.fail_after(20):
        async with serve_in_process(server, settings) as running, http_client() as http:
            opened = await http.post(running.mcp_url, json=INITIALIZE, headers=ACCEPT)
            session = {
                **ACCEPT,
                "mcp-session-id": opened.headers["mcp-session-id"],
                "MCP-Protocol-Version": "2025-11-25",
            }
            ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
            statuses = [(await http.post(running.mcp_url, json=ping, headers=session)).status_code for _ in range(4)]
            refused = await http.post(running.mcp_url, json=ping, headers=session)
            other = await http.post(running.mcp_url, json=INITIALIZE, headers=ACCEPT)  # another session is unaffected
    assert statuses[:2] == [200, 200]
    assert 429 in statuses[2:]
    assert refused.status_code == 429
    assert int(refused.headers["retry-after"]) >= 1
    assert refused.json()["error"]["code"] == -32029
    assert other.status_code == 200


async def test_made_up_session_ids_still_spend_the_address_budget() -> None:
    server, _ = build_feature_server()
    settings = ServerConfig(transport="http", address_rate_per_s=1.0, address_rate_burst=3)
    with anyio.fail_after(20):
        async with serve_in_process(server, settings) as running, http_client() as http:
            statuses = [
                (
                    await http.post(
                        running.mcp_url, json=INITIALIZE, headers={**ACCEPT, "mcp-session-id": uuid.uuid4().hex}
                    )
                ).status_code
                for _ in range(6)
            ]
    assert statuses[:3] == [404, 404, 404]  # unknown sessions, but admitted by the rate limit
    assert statuses[3:] == [429, 429, 429]


async def test_plain_get_on_the_websocket_endpoint_asks_for_an_upgrade() -> None:
    server, _ = build_feature_server()
    with anyio.fail_after(20):
        async with serve_in_process(server) as running, http_client() as http:
            response = await http.get(running.ws_url.replace("ws://", "http://"))
    assert response.status_code == 426
