"""Over a real stdio subprocess in the 2026-07-28 era (sessionless requests), the breaker still sees one session."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from cache_env import default_client_env

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


async def test_stdio_modern_requests_share_one_session_state(repo: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "repo_sandbox", "--root", str(repo)], env=default_client_env()
    )
    codes: list[str] = []
    with anyio.fail_after(30):
        async with Client(params, mode="auto") as client:
            assert client.protocol_version == "2026-07-28"
            for _ in range(4):
                result = await client.call_tool("read_file", {"path": "src/missing.py"})
                assert isinstance(result.structured_content, dict)
                codes.append(result.structured_content["error"]["code"])
    assert codes == ["not_found", "not_found", "not_found", "circuit_open"]
