"""Sessionless Streamable HTTP behind a load balancer: several real server processes, any request to any of them.

A round-robin HTTP transport stands in for the load balancer: each request goes to the next replica, with no
affinity. 2026-07-28 clients need nothing more; an elicitation round trip needs the replicas to share the
request-state key (`REPO_SANDBOX_STATE_KEY`), as deploy/README.md says.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager

import anyio
import httpx2
import pytest
from harness import TOKEN, Subprocess, running_subprocess
from mcp import Client, MCPError
from mcp.client.context import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client
from mcp.types import ElicitRequestParams, ElicitResult

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

SHARED_KEY = "shared-state-key-0123456789abcdef"


class RoundRobin(httpx2.AsyncBaseTransport):
    """Sends each request to the next replica's port and remembers which one served which JSON-RPC method."""

    def __init__(self, replicas: list[Subprocess]) -> None:
        self._inner = httpx2.AsyncHTTPTransport()
        self._ports = itertools.cycle([httpx2.URL(replica.base_url).port for replica in replicas])
        self.served: list[tuple[int, str]] = []

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        port = next(self._ports)
        request.url = request.url.copy_with(port=port)
        if request.method == "POST":
            self.served.append((port or 0, json.loads(request.content).get("method", "")))
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()


@pytest.fixture(scope="module")
def replicas(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Subprocess]]:
    """Three replicas of one repository: the first two share the request-state key, the third has its own."""
    base = tmp_path_factory.mktemp("scale")
    root = base / "repo"
    (root / "src").mkdir(parents=True)
    for name in ("a", "b", "c", "d"):
        (root / "src" / f"{name}.py").write_text(f"def {name}():\n    return '{name}'  # TODO\n")
    (root / ".env").write_text("API_KEY=sk-test-123\n")
    shared = {"REPO_SANDBOX_STATE_KEY": SHARED_KEY}
    with (
        running_subprocess(root, base / "a.log", env=shared) as first,
        running_subprocess(root, base / "b.log", env=shared) as second,
        running_subprocess(root, base / "c.log") as own_key,
    ):
        yield [first, second, own_key]


def round_robin_client(replicas: list[Subprocess]) -> tuple[httpx2.AsyncClient, RoundRobin]:
    transport = RoundRobin(replicas)
    http = httpx2.AsyncClient(transport=transport, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)
    return http, transport


@asynccontextmanager
async def eliciting_client(replicas: list[Subprocess]) -> AsyncIterator[tuple[Client, RoundRobin]]:
    """A 2026-07-28 client that answers elicitations with 'cli', its requests spread over `replicas` (the
    balancer's record starts after the handshake)."""
    http, balancer = round_robin_client(replicas)
    async with (
        http,
        Client(
            streamable_http_client(replicas[0].mcp_url, http_client=http), mode="auto", elicitation_callback=answer_cli
        ) as client,
    ):
        balancer.served.clear()
        yield client, balancer


async def answer_cli(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
    return ElicitResult(action="accept", content={"answer_1": "cli"})


ASK = {"questions": [{"question": "Which package first?", "choices": ["core", "cli"]}]}


async def test_every_request_may_land_on_another_replica(replicas: list[Subprocess]) -> None:
    http, balancer = round_robin_client(replicas[:2])
    files: list[str] = []
    with anyio.fail_after(30):
        async with http, Client(streamable_http_client(replicas[0].mcp_url, http_client=http), mode="auto") as client:
            assert client.protocol_version == "2026-07-28"
            tools = {tool.name for tool in (await client.list_tools()).tools}
            offset: int | None = 0
            while offset is not None:  # each page from the other replica than the one before
                page = await client.call_tool("search_files", {"pattern": "*.py", "limit": 1, "offset": offset})
                assert isinstance(page.structured_content, dict)
                files += page.structured_content["files"]
                offset = page.structured_content["next_offset"]
            denied = await client.call_tool("read_file", {"path": ".env"})
            counted = await client.call_tool("count_lines", {"path": "src"})
    assert {"search_files", "read_file", "search_text", "count_lines", "execute_bash"} <= tools
    assert files == ["src/a.py", "src/b.py", "src/c.py", "src/d.py"]
    assert denied.is_error and isinstance(denied.structured_content, dict)
    assert denied.structured_content["error"]["code"] == "path_denied"
    assert isinstance(counted.structured_content, dict) and counted.structured_content["total_lines"] == 8
    ports = {port for port, method in balancer.served if method == "tools/call"}
    assert len(ports) == 2, balancer.served


async def test_an_elicitation_answer_is_accepted_by_another_replica_with_the_shared_key(
    replicas: list[Subprocess],
) -> None:
    with anyio.fail_after(30):
        async with eliciting_client(replicas[:2]) as (client, balancer):
            result = await client.call_tool("ask_user", ASK)
    calls = [port for port, method in balancer.served if method == "tools/call"]
    assert len(calls) == 2 and calls[0] != calls[1], balancer.served  # asked on one replica, answered on the other
    assert not result.is_error and isinstance(result.structured_content, dict)
    assert result.structured_content["status"] == "answered"
    assert result.structured_content["answers"] == [{"question": "Which package first?", "answer": "cli"}]


async def test_a_replica_without_the_shared_key_refuses_an_answer_sealed_elsewhere(
    replicas: list[Subprocess],
) -> None:
    with anyio.fail_after(30):
        async with eliciting_client([replicas[0], replicas[2]]) as (client, balancer):
            with pytest.raises(MCPError, match="requestState") as refused:
                await client.call_tool("ask_user", ASK)
    calls = [port for port, method in balancer.served if method == "tools/call"]
    assert len(calls) == 2 and calls[0] != calls[1], balancer.served
    assert SHARED_KEY not in str(refused.value)
