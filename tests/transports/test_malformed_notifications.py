"""A malformed notification is ignored (JSON-RPC never answers a notification), on every transport: the
connection stays open and the next request is answered. `notifications/cancelled` whose requestId is an
object or an array once killed the WebSocket connection (it was used as a set member)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from harness import TOKEN, Subprocess, http_client
from websockets.asyncio.client import connect
from websockets.typing import Subprotocol

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
PING = {"jsonrpc": "2.0", "id": 99, "method": "ping"}
MALFORMED_PARAMS: list[Any] = [
    {"requestId": {}},
    {"requestId": {"a": [1]}},
    {"requestId": []},
    {"requestId": [1, 2]},
    {"requestId": None},
    {"requestId": True},
    {"requestId": 1.5},
    {},
    {"requestId": 12345, "reason": {"not": "a string"}},
]
MALFORMED = [{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params} for params in MALFORMED_PARAMS]
IDS = [json.dumps(params) for params in MALFORMED_PARAMS]


@pytest.mark.parametrize("notification", MALFORMED, ids=IDS)
async def test_websocket_ignores_a_malformed_cancellation(served_repo: Subprocess, notification: Any) -> None:
    with anyio.fail_after(20):
        async with connect(f"{served_repo.ws_url}?token={TOKEN}", subprotocols=[Subprotocol("mcp")]) as ws:
            await ws.send(json.dumps(INITIALIZE))
            assert json.loads(await ws.recv())["id"] == 0
            await ws.send(json.dumps(INITIALIZED))
            await ws.send(json.dumps(notification))
            await ws.send(json.dumps(PING))
            assert json.loads(await ws.recv()) == {"jsonrpc": "2.0", "id": 99, "result": {}}


def sse_messages(body: str) -> list[Any]:
    return [json.loads(line[5:]) for line in body.splitlines() if line.startswith("data:") and line[5:].strip()]


@pytest.mark.parametrize("notification", MALFORMED, ids=IDS)
async def test_http_session_ignores_a_malformed_cancellation(served_repo: Subprocess, notification: Any) -> None:
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    async with http_client() as http:
        response = await http.post(served_repo.mcp_url, content=json.dumps(INITIALIZE), headers=headers)
        assert response.status_code == 200
        headers |= {"mcp-session-id": response.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
        assert (await http.post(served_repo.mcp_url, content=json.dumps(INITIALIZED), headers=headers)).is_success
        ignored = await http.post(served_repo.mcp_url, content=json.dumps(notification), headers=headers)
        assert ignored.status_code == 202 and ignored.content == b""
        answer = await http.post(served_repo.mcp_url, content=json.dumps(PING), headers=headers)
    assert sse_messages(answer.text) == [{"jsonrpc": "2.0", "id": 99, "result": {}}]


def test_stdio_ignores_malformed_cancellations(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("hello\n")
    lines = [INITIALIZE, INITIALIZED, *MALFORMED, PING]
    with subprocess.Popen(
        [sys.executable, "-m", "repo_sandbox", "--root", str(tmp_path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    ) as process:  # fmt: skip
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write("".join(json.dumps(line) + "\n" for line in lines).encode())
        process.stdin.flush()
        answers = [json.loads(process.stdout.readline()) for _ in range(2)]
        process.stdin.close()
        assert process.wait(timeout=30) == 0
    assert [answer.get("id") for answer in answers] == [0, 99]
    assert answers[1] == {"jsonrpc": "2.0", "id": 99, "result": {}}
