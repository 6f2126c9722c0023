"""Graceful shutdown: in-flight calls finish within the grace period or are cancelled and their processes killed."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import anyio
import pytest
from feature_server import build_feature_server
from harness import TOKEN, mcp_client, running_subprocess, serve_in_process, wait_until
from mcp import MCPError
from websockets.asyncio.client import connect
from websockets.typing import Subprotocol

from repo_sandbox.config.model import ServerConfig

pytestmark = pytest.mark.anyio


def is_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.parametrize(("transport", "mode"), [("http", "legacy"), ("ws", "legacy"), ("ws", "auto")])
async def test_shutdown_cancels_calls_that_outlive_the_grace_and_kills_their_processes(
    transport: str, mode: str
) -> None:
    server, probe = build_feature_server()
    settings = ServerConfig(transport="http", shutdown_grace_s=0.2)
    errors: list[str] = []
    with anyio.fail_after(20):
        async with serve_in_process(server, settings) as running, mcp_client(running, transport, mode) as client:
            assert running.server is not None
            await client.list_tools()

            async def call_in_flight() -> None:
                try:
                    await client.call_tool("run_child", {})
                except MCPError as exc:
                    errors.append(exc.error.message)

            async with anyio.create_task_group() as tg:
                tg.start_soon(call_in_flight)
                await probe.started.wait()
                running.server.should_exit = True  # what uvicorn's SIGTERM handler does
            assert not is_alive(probe.child_pids[0])
    assert errors == ["The server shut down before this request finished; it was cancelled."]


async def test_sigterm_stops_the_real_server_promptly_closing_websockets_with_1012(tmp_path: Path) -> None:
    with running_subprocess(tmp_path, tmp_path / "server.log") as server, anyio.fail_after(30):
        async with connect(f"{server.ws_url}?token={TOKEN}", subprotocols=[Subprotocol("mcp")]) as ws:
            started = time.monotonic()
            server.process.send_signal(signal.SIGTERM)
            await ws.wait_closed()
            assert ws.close_code == 1012  # "service restart": reconnect elsewhere
        await wait_until(lambda: server.process.poll() is not None)
        elapsed = time.monotonic() - started
    assert server.process.returncode == 0
    assert elapsed < 5, f"shutdown took {elapsed:.1f} s"
    assert "Traceback" not in server.log_text()
