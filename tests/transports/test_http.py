"""The real `repo-sandbox serve --transport http` on 127.0.0.1: SDK clients in both eras, and refusals."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from harness import SERVE, TOKEN, Running, Subprocess, http_client, mcp_client, running_subprocess
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus
from websockets.typing import Subprotocol

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


async def post_initialize(url: str, headers: dict[str, str]) -> httpx2.Response:
    async with httpx2.AsyncClient(timeout=10) as http:
        return await http.post(url, content=json.dumps(INITIALIZE), headers={**MCP_HEADERS, **headers})


def assert_reveals_nothing(body: str, served: Subprocess) -> None:
    assert TOKEN not in body
    assert "Traceback" not in body
    assert "/tmp" not in body and "repo" not in body.lower().replace("repo-sandbox", "")


async def test_healthz_answers_without_token_and_reveals_nothing(served_repo: Subprocess) -> None:
    async with httpx2.AsyncClient(timeout=10) as http:
        response = await http.get(f"{served_repo.base_url}/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}
    assert "server" not in response.headers
    assert_reveals_nothing(response.text, served_repo)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_sdk_client_over_http_lists_and_calls_every_tool_in_both_eras(served_repo: Subprocess, mode: str) -> None:
    calls: list[tuple[str, dict[str, Any]]] = [
        ("search_files", {"pattern": "*.py"}),
        ("read_file", {"path": "src/main.py"}),
        ("search_text", {"pattern": "TODO"}),
        ("count_lines", {}),
        ("execute_bash", {"command": "grep -c TODO README.md"}),
    ]
    with anyio.fail_after(30):
        async with (
            http_client() as http,
            Client(streamable_http_client(served_repo.mcp_url, http_client=http), mode=mode) as client,
        ):
            assert client.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
            tools = {tool.name for tool in (await client.list_tools()).tools}
            assert tools == {name for name, _ in calls}
            results = {name: await client.call_tool(name, arguments) for name, arguments in calls}
            denied = await client.call_tool("read_file", {"path": ".env"})
    assert all(result.is_error is False for result in results.values())
    assert results["search_files"].structured_content == {
        "files": ["src/main.py"],
        "total": 1,
        "truncated": False,
        "next_offset": None,
    }
    assert results["search_text"].structured_content is not None
    assert results["search_text"].structured_content["total_matches"] == 2
    assert results["execute_bash"].structured_content is not None
    assert results["execute_bash"].structured_content["exit_code"] == 0
    assert denied.is_error is True
    assert denied.structured_content is not None
    assert denied.structured_content["error"]["code"] == "path_denied"


REFUSED_ON_MCP = [
    # authentication
    pytest.param({}, 401, id="no-token"),
    pytest.param({"Authorization": "Bearer wrong-token-0123456789"}, 401, id="wrong-token"),
    pytest.param({"Authorization": f"Bearer {TOKEN}x"}, 401, id="token-with-suffix"),
    pytest.param({"Authorization": f"Bearer {TOKEN[:-1]}"}, 401, id="token-prefix"),
    pytest.param({"Authorization": "Bearer"}, 401, id="bearer-without-token"),
    pytest.param({"Authorization": f"Basic {TOKEN}"}, 401, id="basic-scheme"),
    pytest.param({"Authorization": TOKEN}, 401, id="no-scheme"),
    # DNS rebinding: a page on another name that resolves to 127.0.0.1
    pytest.param({"Authorization": f"Bearer {TOKEN}", "Host": "evil.example.com"}, 421, id="bad-host"),
    pytest.param({"Authorization": f"Bearer {TOKEN}", "Host": "evil.example.com:80"}, 421, id="bad-host-port"),
    pytest.param({"Authorization": f"Bearer {TOKEN}", "Host": "localhost.evil.com"}, 421, id="host-prefix-trick"),
    pytest.param({"Authorization": f"Bearer {TOKEN}", "Host": "127.0.0.1@evil.com"}, 421, id="host-userinfo"),
    pytest.param({"Authorization": f"Bearer {TOKEN}", "Origin": "http://evil.example.com"}, 403, id="bad-origin"),
    pytest.param({"Authorization": f"Bearer {TOKEN}", "Origin": "null"}, 403, id="null-origin"),
    pytest.param({"Authorization": f"Bearer {TOKEN}", "Origin": "http://localhost.evil.com"}, 403, id="origin-trick"),
    pytest.param({"Authorization": f"Bearer {TOKEN}", "Origin": "file://"}, 403, id="file-origin"),
    # rebinding is checked before the token: a bad Host is refused even without one
    pytest.param({"Host": "evil.example.com"}, 421, id="bad-host-no-token"),
]


@pytest.mark.parametrize(("headers", "status"), REFUSED_ON_MCP)
async def test_mcp_endpoint_refuses_bad_credentials_hosts_and_origins(
    served_repo: Subprocess, headers: dict[str, str], status: int
) -> None:
    response = await post_initialize(served_repo.mcp_url, headers)
    assert response.status_code == status
    assert response.json()["error"]["message"]
    assert_reveals_nothing(response.text, served_repo)
    if status == 401:
        assert response.headers["www-authenticate"].startswith("Bearer")


async def test_token_in_query_is_not_accepted_on_mcp(served_repo: Subprocess) -> None:
    response = await post_initialize(f"{served_repo.mcp_url}?token={TOKEN}", {})
    assert response.status_code == 401


ACCEPTED_ON_MCP = [
    pytest.param({}, id="plain"),
    pytest.param({"Host": "127.0.0.1"}, id="host-without-port"),
    pytest.param({"Host": "LOCALHOST:8080"}, id="host-upper-case"),
    pytest.param({"Origin": "http://localhost:6274"}, id="inspector-origin"),
    pytest.param({"Origin": "http://127.0.0.1"}, id="origin-without-port"),
]


@pytest.mark.parametrize("headers", ACCEPTED_ON_MCP)
async def test_mcp_endpoint_accepts_loopback_hosts_and_origins(
    served_repo: Subprocess, headers: dict[str, str]
) -> None:
    response = await post_initialize(served_repo.mcp_url, {"Authorization": f"Bearer {TOKEN}", **headers})
    assert response.status_code == 200
    assert "mcp-session-id" in response.headers


REFUSED_ON_WS = [
    pytest.param("", {}, 401, id="no-token"),
    pytest.param("?token=wrong-token-0123456789", {}, 401, id="wrong-query-token"),
    pytest.param("", {"Authorization": "Bearer wrong-token-0123456789"}, 401, id="wrong-header-token"),
    pytest.param(f"?token={TOKEN}", {"Origin": "http://evil.example.com"}, 403, id="bad-origin"),
    pytest.param(f"?token={TOKEN}", {"Host": "evil.example.com"}, 421, id="bad-host"),
]


async def raw_request(url: str, head: list[str], body: bytes = b"") -> tuple[int, str]:
    """Send a hand-made request (any Host, any framing) and return the status and body of the answer."""
    host, port = url.removeprefix("http://").split(":")
    with anyio.fail_after(10):
        async with await anyio.connect_tcp(host, int(port)) as stream:
            await stream.send(("\r\n".join(head) + "\r\n\r\n").encode() + body)
            answer = b""
            while b"\r\n\r\n" not in answer:
                answer += await stream.receive()
            status_line, _, rest = answer.decode(errors="replace").partition("\r\n")
            headers, _, received = rest.partition("\r\n\r\n")
            length = next(
                (
                    int(line.split(":")[1])
                    for line in headers.splitlines()
                    if line.lower().startswith("content-length:")
                ),
                0,
            )
            while len(received.encode()) < length:
                received += (await stream.receive()).decode(errors="replace")
    return int(status_line.split(" ", 2)[1]), received


async def websocket_handshake(url: str, target: str, headers: dict[str, str]) -> tuple[int, str]:
    """A raw WebSocket upgrade (any Host we like): the status and body of the answer."""
    host_port = url.removeprefix("http://")
    head = [
        f"GET {target} HTTP/1.1",
        *(f"{name}: {value}" for name, value in {"Host": host_port, **headers}.items()),
        "Upgrade: websocket",
        "Connection: Upgrade",
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
        "Sec-WebSocket-Version: 13",
        "Sec-WebSocket-Protocol: mcp",
    ]
    return await raw_request(url, head)


@pytest.mark.parametrize(("query", "headers", "status"), REFUSED_ON_WS)
async def test_websocket_handshake_refuses_bad_credentials_hosts_and_origins(
    served_repo: Subprocess, query: str, headers: dict[str, str], status: int
) -> None:
    answer_status, body = await websocket_handshake(served_repo.base_url, f"/ws{query}", headers)
    assert answer_status == status
    assert_reveals_nothing(body, served_repo)


async def test_websocket_handshake_with_token_in_query_or_header_is_accepted(served_repo: Subprocess) -> None:
    assert (await websocket_handshake(served_repo.base_url, f"/ws?token={TOKEN}", {}))[0] == 101
    assert (await websocket_handshake(served_repo.base_url, "/ws", {"Authorization": f"Bearer {TOKEN}"}))[0] == 101


async def test_websocket_without_mcp_subprotocol_is_refused(served_repo: Subprocess) -> None:
    with anyio.fail_after(10), pytest.raises(InvalidStatus) as info:
        async with connect(f"{served_repo.ws_url}?token={TOKEN}"):
            pass
    assert info.value.response.status_code == 400


def mcp_post_head(url: str, *extra: str) -> list[str]:
    return [
        "POST /mcp HTTP/1.1",
        f"Host: {url.removeprefix('http://')}",
        f"Authorization: Bearer {TOKEN}",
        "Content-Type: application/json",
        "Accept: application/json, text/event-stream",
        *extra,
    ]


async def test_declared_oversized_body_is_refused_before_it_is_sent(served_repo: Subprocess) -> None:
    status, body = await raw_request(
        served_repo.base_url, mcp_post_head(served_repo.base_url, "Content-Length: 2000000")
    )
    assert status == 413
    assert_reveals_nothing(body, served_repo)


async def test_streamed_oversized_body_is_refused_once_it_passes_the_limit(served_repo: Subprocess) -> None:
    chunk = b"x" * 65536
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(17))  # 1.06 MiB > 1 MiB
    head = mcp_post_head(served_repo.base_url, "Transfer-Encoding: chunked")
    status, _ = await raw_request(served_repo.base_url, head, chunks)
    assert status == 413


async def test_unknown_path_is_404_without_details(served_repo: Subprocess) -> None:
    async with http_client() as http:
        response = await http.get(f"{served_repo.base_url}/../../etc/passwd")
    assert response.status_code == 404
    assert_reveals_nothing(response.text, served_repo)


MARKER = "caller-input-marker-7f3a"


@pytest.mark.parametrize(
    ("body", "code", "request_id"),
    [
        pytest.param({"foo": MARKER}, -32602, None, id="no-jsonrpc-fields"),
        pytest.param(
            {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": MARKER}, -32602, None, id="params-string"
        ),
        pytest.param([MARKER, 2], -32602, None, id="array"),
        pytest.param({"jsonrpc": "1.0", "id": 3, "method": MARKER}, -32602, None, id="wrong-version"),
    ],
)
async def test_a_message_the_sdk_cannot_read_gets_a_fixed_error_not_a_validation_report(
    served_repo: Subprocess, body: object, code: int, request_id: object
) -> None:
    async with http_client() as http:
        response = await http.post(served_repo.mcp_url, content=json.dumps(body), headers=MCP_HEADERS)
    assert response.status_code == 400
    payload = response.json()
    assert payload["id"] == request_id
    assert payload["error"]["code"] == code
    assert payload["error"]["message"].startswith("Invalid message: not a JSON-RPC 2.0 request")
    assert MARKER not in response.text and "pydantic" not in response.text
    assert int(response.headers["content-length"]) == len(response.content)
    assert_reveals_nothing(response.text, served_repo)


async def test_a_parse_error_keeps_its_position_hint(served_repo: Subprocess) -> None:
    async with http_client() as http:
        response = await http.post(served_repo.mcp_url, content="not json", headers=MCP_HEADERS)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32700
    assert "column" in response.json()["error"]["message"]


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        pytest.param(["--host", "0.0.0.0"], {}, "without a token", id="wildcard-no-token"),
        pytest.param(["--host", "192.0.2.10"], {}, "without a token", id="lan-address-no-token"),
        pytest.param([], {"REPO_SANDBOX_TOKEN": "short"}, "shorter than", id="short-token"),
        pytest.param(
            ["--host", "0.0.0.0"], {"REPO_SANDBOX_SERVER_TOKEN_ENV": "MY_TOKEN"}, "$MY_TOKEN", id="renamed-variable"
        ),
    ],
)
def test_server_refuses_to_start_without_a_usable_token_off_loopback(
    tmp_path: Path, args: list[str], env: dict[str, str], message: str
) -> None:
    command = [*SERVE, "serve", "--transport", "http", "--port", "0", "--root", str(tmp_path), *args]
    env = {"PATH": "/usr/bin:/bin", **env}
    result = subprocess.run(command, check=False, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert message in result.stderr
    assert "listening" not in result.stderr


async def test_query_token_never_reaches_the_log(tmp_path: Path) -> None:
    with running_subprocess(tmp_path, tmp_path / "server.log", "--log-level", "DEBUG") as server:
        for token in (TOKEN, "wrong-token-0123456789"):
            try:
                async with connect(f"{server.ws_url}?token={token}", subprotocols=[Subprotocol("mcp")]):
                    pass
            except InvalidStatus:
                pass
        assert server.stop() == 0
        log = server.log_text()
    assert "/ws?token=[REDACTED]" in log
    assert TOKEN not in log
    assert "wrong-token-0123456789" not in log


async def test_the_http_server_freezes_what_it_loaded_and_collects(served_repo: Subprocess) -> None:
    """As over stdio (`tests/interaction/test_collector.py`): started by `python -m repo_sandbox`, the server
    freezes the SDK and itself before it listens, and collects automatically from then on."""
    async with mcp_client(Running(served_repo.base_url), "http", "legacy") as client:
        content = (await client.read_resource("repo-sandbox://status")).contents[0]
    state = json.loads(getattr(content, "text", "{}"))["garbage_collector"]
    assert state["automatic"] is True
    assert state["frozen_objects"] >= 20_000, state
