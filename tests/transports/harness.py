"""Helpers for the transport tests: servers on 127.0.0.1: in this process (uvicorn on a socket we bind), or the
real `repo-sandbox serve --transport http` command in a subprocess."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server import MCPServer
from ws_client import websocket_client

from repo_sandbox.config.model import ServerConfig
from repo_sandbox.transports.http import HttpService, build_http_app
from repo_sandbox.transports.serve import DrainingServer, uvicorn_config

TOKEN = "test-token-0123456789abcdef"
"""The bearer token every test server is started with."""

REPO_ROOT = Path(__file__).resolve().parents[2]
SERVE = [sys.executable, "-m", "repo_sandbox"]


@dataclass
class Running:
    """A server listening on 127.0.0.1."""

    base_url: str
    server: DrainingServer | None = None
    service: HttpService | None = None

    @property
    def mcp_url(self) -> str:
        return f"{self.base_url}/mcp"

    @property
    def ws_url(self) -> str:
        return self.base_url.replace("http://", "ws://") + "/ws"


class _ReadyServer(DrainingServer):
    def __init__(self, config: uvicorn.Config, service: HttpService, ready: anyio.Event) -> None:
        super().__init__(config, service)
        self.ready = ready

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        self.ready.set()


@asynccontextmanager
async def serve_in_process(
    server: MCPServer, settings: ServerConfig | None = None, token: str | None = TOKEN
) -> AsyncIterator[Running]:
    """Serve `server` with uvicorn in this event loop; stops (gracefully) on exit."""
    settings = settings or ServerConfig(transport="http")
    service = build_http_app(server, settings, token)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    ready = anyio.Event()
    uv = _ReadyServer(uvicorn_config(service), service, ready)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(uv.serve, [sock])
            with anyio.fail_after(10):
                await ready.wait()
            try:
                yield Running(f"http://127.0.0.1:{port}", uv, service)
            finally:
                uv.should_exit = True
    finally:
        sock.close()


def http_client(token: str | None = TOKEN, **headers: str) -> httpx2.AsyncClient:
    all_headers = dict(headers)
    if token is not None:
        all_headers["Authorization"] = f"Bearer {token}"
    return httpx2.AsyncClient(headers=all_headers, timeout=30)


@asynccontextmanager
async def mcp_client(running: Running, transport: str, mode: str, **kwargs: Any) -> AsyncIterator[Client]:
    """An SDK client over "http" (Streamable HTTP) or "ws" (WebSocket), in `mode` ("legacy" or "auto")."""
    if transport == "http":
        async with (
            http_client() as http,
            Client(streamable_http_client(running.mcp_url, http_client=http), mode=mode, **kwargs) as client,
        ):
            yield client
    else:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with Client(websocket_client(running.ws_url, headers), mode=mode, **kwargs) as client:
            yield client


@dataclass
class Subprocess:
    """The real `repo-sandbox serve --transport http` command."""

    process: subprocess.Popen[bytes]
    base_url: str
    log: Path
    root: Path

    @property
    def mcp_url(self) -> str:
        return f"{self.base_url}/mcp"

    @property
    def ws_url(self) -> str:
        return self.base_url.replace("http://", "ws://") + "/ws"

    def log_text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def stop(self, timeout: float = 30) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout)


def start_server(
    root: Path, log: Path, *args: str, env: Mapping[str, str] | None = None, token: str | None = TOKEN
) -> Subprocess:
    """Start the CLI on port 0 and wait (bounded) for the line announcing the bound port."""
    child_env = {key: value for key, value in os.environ.items() if not key.startswith("REPO_SANDBOX_")}
    if token is not None:
        child_env["REPO_SANDBOX_TOKEN"] = token
    child_env.update(env or {})
    command = [*SERVE, "serve", "--transport", "http", "--port", "0", "--root", str(root), *args]
    with log.open("wb") as sink:
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=sink, stderr=sink, env=child_env)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        match = re.search(r"listening on (http://\S+)", log.read_text(errors="replace"))
        if match:
            return Subprocess(process, match.group(1), log, root)
        if process.poll() is not None:
            raise AssertionError(f"server exited with {process.returncode}: {log.read_text(errors='replace')}")
        time.sleep(0.05)
    process.kill()
    process.wait()
    raise AssertionError("server did not announce its port within 30 s")


@contextmanager
def running_subprocess(root: Path, log: Path, *args: str, **kwargs: Any) -> Iterator[Subprocess]:
    server = start_server(root, log, *args, **kwargs)
    try:
        yield server
    finally:
        try:
            server.stop(timeout=10)  # as a supervisor stops it: the server then removes its temporary files
        except subprocess.TimeoutExpired:
            server.process.kill()
            server.process.wait()


async def wait_until(condition: Callable[[], bool]) -> None:
    """Wait (at most 10 s) for state outside this event loop's control: another process, a server's socket."""
    with anyio.fail_after(10):
        while not condition():  # noqa: ASYNC110  # no event to wait on: the state belongs to the kernel or the server
            await anyio.sleep(0.02)
