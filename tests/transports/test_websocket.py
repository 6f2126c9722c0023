"""/ws: the mcp 1.x reference client, the mcp 2.x client in both eras, and the per-connection limits."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from feature_server import build_feature_server
from harness import TOKEN, Subprocess, http_client, serve_in_process, wait_until
from mcp import Client
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.typing import Subprotocol
from ws_client import websocket_client

from repo_sandbox.config.model import ServerConfig

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

MCP1_PYTHON = Path(__file__).resolve().parents[2] / ".tools" / "mcp1-venv" / "bin" / "python"
MCP1_CLIENT = Path(__file__).with_name("mcp1_ws_client.py")

EVERY_TOOL: list[dict[str, Any]] = [
    {"name": "search_files", "arguments": {"pattern": "*.py"}},
    {"name": "read_file", "arguments": {"path": "src/main.py", "limit": 1}},
    {"name": "search_text", "arguments": {"pattern": "TODO", "output_mode": "files_with_matches"}},
    {"name": "count_lines", "arguments": {"path": "src"}},
    {"name": "execute_bash", "arguments": {"command": "wc -l src/main.py"}},
    {"name": "read_file", "arguments": {"path": "../outside.txt"}},
]

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
}


def test_mcp1_websocket_client_calls_every_tool(served_repo: Subprocess) -> None:
    assert MCP1_PYTHON.exists(), "run scripts/bootstrap: scripts/setup.d/31-mcp1-venv.sh installs the mcp 1.x client"
    url = f"{served_repo.ws_url}?token={TOKEN}"
    result = subprocess.run(
        [str(MCP1_PYTHON), str(MCP1_CLIENT), url, json.dumps(EVERY_TOOL)],
        check=False,
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(result.stdout)
    assert report["protocol_version"] == "2025-11-25"
    assert set(report["tools"]) == {"search_files", "read_file", "search_text", "count_lines", "execute_bash"}
    assert report["ping"] is True
    outcomes = {(r["name"], r["is_error"]) for r in report["results"]}
    assert outcomes == {
        ("search_files", False),
        ("read_file", False),
        ("search_text", False),
        ("count_lines", False),
        ("execute_bash", False),
        ("read_file", True),
    }
    by_name = {r["name"]: r["structured"] for r in report["results"] if not r["is_error"]}
    assert by_name["search_files"]["files"] == ["src/main.py"]
    assert by_name["read_file"]["content"] == "     1\tdef main():\n"
    assert by_name["search_text"]["files"] == ["README.md", "src/main.py"]
    assert by_name["count_lines"]["total_lines"] == 2
    assert by_name["execute_bash"]["stdout"] == "2 src/main.py\n"
    assert report["results"][-1]["structured"]["error"]["code"] == "path_outside_root"


def test_mcp1_websocket_client_with_wrong_token_is_refused(served_repo: Subprocess) -> None:
    url = f"{served_repo.ws_url}?token=wrong-token-0123456789"
    result = subprocess.run(
        [str(MCP1_PYTHON), str(MCP1_CLIENT), url, "[]"], check=False, capture_output=True, text=True, timeout=90
    )
    assert result.returncode != 0
    assert "HTTP 401" in result.stderr


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_sdk_client_over_websocket_works_in_both_eras(served_repo: Subprocess, mode: str) -> None:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with anyio.fail_after(30):
        async with Client(websocket_client(served_repo.ws_url, headers), mode=mode) as client:
            assert client.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
            results = [await client.call_tool(call["name"], call["arguments"]) for call in EVERY_TOOL]
    assert [result.is_error for result in results] == [False, False, False, False, False, True]


async def open_raw(url: str) -> ClientConnection:
    return await connect(f"{url}?token={TOKEN}", subprotocols=[Subprotocol("mcp")])


async def test_messages_over_the_rate_get_a_json_rpc_error_with_retry_after() -> None:
    server, _ = build_feature_server()
    settings = ServerConfig(transport="http", rate_per_s=1.0, rate_burst=3)
    with anyio.fail_after(20):
        async with serve_in_process(server, settings) as running:
            ws = await open_raw(running.ws_url)
            async with ws:
                for request_id in range(6):
                    await ws.send(json.dumps({**INITIALIZE, "id": request_id}))
                answers = [json.loads(await ws.recv()) for _ in range(6)]
    limited = [a for a in answers if "error" in a and a["error"]["code"] == -32029]
    assert len(limited) >= 2
    assert all(a["error"]["data"]["retry_after_s"] > 0 for a in limited)
    assert sorted(a["id"] for a in answers) == list(range(6))


async def test_binary_frames_close_the_connection_with_1003() -> None:
    server, _ = build_feature_server()
    with anyio.fail_after(20):
        async with serve_in_process(server) as running:
            ws = await open_raw(running.ws_url)
            async with ws:
                await ws.send(b"\x00\x01")
                with pytest.raises(ConnectionClosed):
                    await ws.recv()
    assert ws.close_code == 1003


async def test_oversized_message_closes_the_connection_with_1009() -> None:
    server, _ = build_feature_server()
    settings = ServerConfig(transport="http", max_body_bytes=4096)
    with anyio.fail_after(20):
        async with serve_in_process(server, settings) as running:
            ws = await open_raw(running.ws_url)
            async with ws:
                await ws.send(json.dumps({**INITIALIZE, "pad": "x" * 5000}))
                with pytest.raises(ConnectionClosed):
                    await ws.recv()
    assert ws.close_code == 1009


async def test_idle_connection_is_closed_but_one_with_a_call_in_flight_is_not() -> None:
    server, probe = build_feature_server()
    settings = ServerConfig(transport="http", session_idle_timeout_s=0.3)
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "wait_for_release", "arguments": {}}}
    with anyio.fail_after(20):
        async with serve_in_process(server, settings) as running:
            idle = await open_raw(running.ws_url)
            async with idle:
                with pytest.raises(ConnectionClosed):
                    await idle.recv()
            assert idle.close_code == 1001
            busy = await open_raw(running.ws_url)
            async with busy:
                for frame in (INITIALIZE, {"jsonrpc": "2.0", "method": "notifications/initialized"}, call):
                    await busy.send(json.dumps(frame))  # back to back: no idle gap before the call
                assert json.loads(await busy.recv())["id"] == 0
                await probe.started.wait()
                await anyio.sleep(0.9)  # three idle periods pass while the call is in flight
                probe.release.set()
                answer = json.loads(await busy.recv())
    assert answer["id"] == 1
    assert answer["result"]["content"][0]["text"] == "released"


async def test_sessions_over_the_limit_are_refused_across_http_and_websocket() -> None:
    server, _ = build_feature_server()
    settings = ServerConfig(transport="http", max_sessions=1)
    with anyio.fail_after(20):
        async with serve_in_process(server, settings) as running:
            first = await open_raw(running.ws_url)
            async with first:
                with pytest.raises(InvalidStatus) as refused_ws:
                    await open_raw(running.ws_url)
                async with http_client() as http:
                    response = await http.post(
                        running.mcp_url,
                        json=INITIALIZE,
                        headers={"Accept": "application/json, text/event-stream"},
                    )
            assert refused_ws.value.response.status_code == 503
            assert response.status_code == 503
            await first.wait_closed()
            assert running.service is not None
            service = running.service
            await wait_until(lambda: service.slots.in_use == 0)  # the server side notices the close
            second = await open_raw(running.ws_url)  # the slot is free again
            await second.close()
