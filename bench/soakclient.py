"""The soak's MCP clients: the SDK `Client` over Streamable HTTP or WebSocket, in either protocol era."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Final

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

# The WebSocket client transport lives with the transport tests (mcp 2.x ships none).
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "transports"))
from ws_client import websocket_client  # pyright: ignore[reportMissingImports]

KINDS: Final = ("http-2025-11-25", "http-2026-07-28", "ws-2025-11-25", "ws-2026-07-28")
MODES: Final = {"2025-11-25": "legacy", "2026-07-28": "auto"}


@asynccontextmanager
async def connect(base_url: str, token: str, kind: str, *, query_token: bool = False) -> AsyncIterator[Client]:
    """A client session of `kind`; WebSocket sessions send the token in `?token=` when `query_token`."""
    transport, era = kind.split("-", 1)
    mode = MODES[era]
    if transport == "http":
        headers = {"Authorization": f"Bearer {token}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=120) as http,
            Client(streamable_http_client(f"{base_url}/mcp", http_client=http), mode=mode) as client,
        ):
            yield client
        return
    ws_url = base_url.replace("http://", "ws://") + "/ws"
    if query_token:
        async with Client(websocket_client(f"{ws_url}?token={token}"), mode=mode) as client:
            yield client
    else:
        async with Client(websocket_client(ws_url, {"Authorization": f"Bearer {token}"}), mode=mode) as client:
            yield client


async def server_status(base_url: str, token: str) -> dict[str, Any]:
    """The server's status resource (its caches, what its sessions did), read over one more session."""
    async with connect(base_url, token, "ws-2025-11-25") as client:
        result = await client.read_resource("repo-sandbox://status")
    return json.loads(result.contents[0].text)  # pyright: ignore[reportAttributeAccessIssue]
