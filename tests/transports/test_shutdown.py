"""Graceful shutdown: in-flight calls finish within the grace period or are cancelled and their processes killed."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import anyio
import pytest
from feature_server import build_feature_server
from harness import TOKEN, Running, mcp_client, running_subprocess, serve_in_process, wait_until
from mcp import MCPError
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.asyncio.client import connect
from websockets.frames import Frame
from websockets.typing import Subprotocol

from repo_sandbox.config.model import ServerConfig

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


def is_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def descendant_names(pid: int) -> list[str]:
    """The command names of every process below `pid`."""
    names: list[str] = []
    pending = [pid]
    while pending:
        try:
            children = Path(f"/proc/{pending.pop()}/task").glob("*/children")
            found = [int(child) for path in children for child in path.read_text().split()]
        except OSError:
            continue
        for child in found:
            with contextlib.suppress(OSError):
                names.append(Path(f"/proc/{child}/comm").read_text().strip())
            pending.append(child)
    return names


ERAS = [("http", "legacy"), ("http", "auto"), ("ws", "legacy"), ("ws", "auto")]


@pytest.mark.parametrize(("transport", "mode"), ERAS)
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
    assert server.process.returncode == 0, server.log_text()
    assert elapsed < 5, f"shutdown took {elapsed:.1f} s"
    assert "Traceback" not in server.log_text()


async def test_shutdown_closes_a_websocket_whose_client_closed_first_quietly() -> None:
    """uvicorn shuts down every connection it still holds. One whose client's close frame was just answered is
    held until its transport reports it lost; a second close frame there raised `InvalidState`, which ended the
    server with status 1 (a client closing as SIGTERM came). The shutdown runs here in exactly that window."""
    server, _ = build_feature_server()
    raised: list[BaseException] = []
    answered: list[bool] = []
    with anyio.fail_after(20):
        async with serve_in_process(server, ServerConfig(transport="http")) as running:
            assert running.server is not None
            async with connect(f"{running.ws_url}?token={TOKEN}", subprotocols=[Subprotocol("mcp")]) as ws:
                held = running.server.server_state.connections
                (protocol,) = [c for c in held if isinstance(c, WebSocketsSansIOProtocol)]
                answer_close = protocol.handle_close

                def answer_then_shut_down(event: Frame) -> None:
                    answer_close(event)
                    answered.append(True)
                    try:
                        protocol.shutdown()  # what uvicorn's Server.shutdown does to each connection it holds
                    except Exception as exc:  # noqa: BLE001  # the assertion below names it
                        raised.append(exc)

                protocol.handle_close = answer_then_shut_down  # pyright: ignore[reportAttributeAccessIssue]
                await ws.close()
            assert ws.close_code == 1000
            await wait_until(lambda: protocol not in held)
    assert answered == [True]
    assert raised == []


@pytest.mark.parametrize(("transport", "mode"), ERAS)
async def test_calls_in_flight_at_shutdown_finish_within_the_grace(transport: str, mode: str) -> None:
    server, probe = build_feature_server()
    settings = ServerConfig(transport="http", shutdown_grace_s=10)
    results: list[str] = []
    with anyio.fail_after(30):
        async with serve_in_process(server, settings) as running, mcp_client(running, transport, mode) as client:
            assert running.server is not None
            await client.list_tools()

            async def call_in_flight() -> None:
                result = await client.call_tool("wait_for_release", {})
                results.append(result.content[0].text)  # pyright: ignore[reportAttributeAccessIssue]

            async with anyio.create_task_group() as tg:
                tg.start_soon(call_in_flight)
                await probe.started.wait()
                running.server.should_exit = True  # what uvicorn's SIGTERM handler does
                await anyio.sleep(1.5)  # well past the 0.3 s after which the stream used to close
                probe.release.set()
    assert results == ["released"]


SLEEP_CONFIG = """
[server]
shutdown_grace_s = {grace}

[exec]
allow = ["sleep"]
"""


@pytest.mark.parametrize(("transport", "mode"), ERAS)
@pytest.mark.parametrize(
    ("grace", "seconds", "outcome"),
    [(10, 2, "finished"), (1, 60, "The server shut down before this request finished; it was cancelled.")],
    ids=["within-grace", "past-grace"],
)
async def test_sigterm_lets_real_calls_finish_within_the_grace_then_cancels_them(
    tmp_path: Path, transport: str, mode: str, grace: float, seconds: int, outcome: str
) -> None:
    (tmp_path / "repo").mkdir()
    config = tmp_path / "config.toml"
    config.write_text(SLEEP_CONFIG.format(grace=grace))
    results: list[str] = []
    with running_subprocess(tmp_path / "repo", tmp_path / "server.log", "--config", str(config)) as server:
        running = Running(server.base_url)
        with anyio.fail_after(60):
            async with mcp_client(running, transport, mode) as client:
                await client.list_tools()  # else the client lists them after the call, from a closed listener

                async def call_in_flight() -> None:
                    try:
                        result = await client.call_tool("execute_bash", {"command": f"sleep {seconds}"})
                    except MCPError as exc:
                        results.append(exc.error.message)
                    else:
                        assert result.is_error is False, result.structured_content
                        results.append("finished")

                started = time.monotonic()
                async with anyio.create_task_group() as tg:
                    tg.start_soon(call_in_flight)
                    await wait_until(lambda: "sleep" in descendant_names(server.process.pid))  # the call runs
                    started = time.monotonic()
                    server.process.send_signal(signal.SIGTERM)
            await wait_until(lambda: server.process.poll() is not None)
            elapsed = time.monotonic() - started
    assert results == [outcome]
    assert server.process.returncode == 0, server.log_text()
    assert elapsed < grace + 6
    assert "Traceback" not in server.log_text() and "ASGI callable returned" not in server.log_text()


@pytest.mark.parametrize(
    ("grace", "seconds", "outcome"),
    [(10, 2, "finished"), (1, 60, "The server shut down before this request finished; it was cancelled.")],
    ids=["within-grace", "past-grace"],
)
def test_sigterm_drains_stdio_as_it_drains_http(tmp_path: Path, grace: float, seconds: int, outcome: str) -> None:
    (tmp_path / "repo").mkdir()
    config = tmp_path / "config.toml"
    config.write_text(SLEEP_CONFIG.format(grace=grace))
    initialize = {
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }  # fmt: skip
    call = {"name": "execute_bash", "arguments": {"command": f"sleep {seconds}"}}
    lines = [
        initialize,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call},
    ]
    command = [sys.executable, "-m", "repo_sandbox", "--root", str(tmp_path / "repo"), "--config", str(config)]
    with subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as process:
        assert process.stdin is not None and process.stdout is not None and process.stderr is not None
        watchdog = threading.Timer(60, process.kill)
        watchdog.start()
        try:
            process.stdin.write("".join(json.dumps(line) + "\n" for line in lines).encode())
            process.stdin.flush()
            assert json.loads(process.stdout.readline())["id"] == 0
            deadline = time.monotonic() + 30
            while "sleep" not in descendant_names(process.pid):  # the call runs
                assert time.monotonic() < deadline, "the call did not start within 30 s"
                time.sleep(0.05)
            started = time.monotonic()
            process.send_signal(signal.SIGTERM)
            answer = json.loads(process.stdout.readline())
            returncode = process.wait(timeout=30)
            elapsed = time.monotonic() - started
            stderr = process.stderr.read().decode(errors="replace")
        finally:
            watchdog.cancel()
    assert answer["id"] == 1
    if outcome == "finished":
        assert answer["result"]["isError"] is False, answer
    else:
        assert answer["error"] == {"code": -32000, "message": outcome}
    assert returncode == 0, stderr
    assert elapsed < grace + 6
    assert "Traceback" not in stderr


async def test_sigterm_leaves_no_temporary_directory_behind(tmp_path: Path) -> None:
    """execute_bash keeps the sources of its masks (an empty file and directory) in a temporary directory for
    the server's life; a server stopped by SIGTERM removes it."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "a.txt").write_text("hello\n")
    with running_subprocess(repo, tmp_path / "server.log", env={"TMPDIR": str(scratch)}) as server:
        async with mcp_client(Running(server.base_url), "http", "legacy") as client:
            result = await client.call_tool("execute_bash", {"command": "cat a.txt"})
        assert not result.is_error, result
        assert any(scratch.iterdir()), "the call made no temporary directory: the test checks nothing"
        assert server.stop() == 0, server.log_text()
    assert list(scratch.iterdir()) == []
