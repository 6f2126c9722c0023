"""A `repo-sandbox` process holds its garbage collector during start-up and, once it serves (and again once the
tree index is built), freezes what is alive, so that full collections skip the SDK, the server and the index
(`repo_sandbox.heap`), and switches threads every 0.5 ms (`repo_sandbox.entry`). A program that embeds the server
keeps its collector and its switch interval as it set them."""

from __future__ import annotations

import gc
import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.types import TextResourceContents

from cache_env import default_client_env
from repo_sandbox.entry import SWITCH_INTERVAL_S
from repo_sandbox.wiring.assembly import build_server
from repo_sandbox.workspace import Workspace

pytestmark = pytest.mark.anyio

REPO_SANDBOX = str(Path(sys.executable).with_name("repo-sandbox"))
FROZEN_AT_LEAST = 20_000
"""The SDK and the server alone are about 100,000 tracked objects."""


async def _status(client: Client) -> dict[str, Any]:
    content = (await client.read_resource("repo-sandbox://status")).contents[0]
    assert isinstance(content, TextResourceContents)
    return json.loads(content.text)


async def _collector(client: Client) -> dict[str, Any]:
    return (await _status(client))["garbage_collector"]


async def _settled(client: Client) -> dict[str, Any]:
    """The collector's state once the server has settled (the freeze runs just after the handshake)."""
    with anyio.fail_after(20):
        while not (state := await _collector(client))["automatic"]:  # noqa: ASYNC110  # state of another process
            await anyio.sleep(0.05)
    return state


@pytest.mark.e2e
@pytest.mark.parametrize("command", [[REPO_SANDBOX], [sys.executable, "-m", "repo_sandbox"]], ids=["script", "module"])
async def test_a_stdio_server_freezes_what_it_loaded_and_then_collects(tmp_path: Path, command: list[str]) -> None:
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "a.py").write_text("print('TODO')\n")
    params = StdioServerParameters(
        command=command[0], args=[*command[1:], "--root", str(tmp_path / "repo")], env=default_client_env()
    )
    async with Client(params, mode="legacy") as client:
        state = await _settled(client)
        assert state["frozen_objects"] >= FROZEN_AT_LEAST, state
        found = await client.call_tool("search_text", {"pattern": "TODO"})
        assert found.is_error is False
        status = await _status(client)
        assert status["garbage_collector"]["automatic"] is True
        assert status["thread_switch_interval_ms"] == SWITCH_INTERVAL_S * 1000 < sys.getswitchinterval() * 1000


async def test_an_embedded_server_leaves_the_programs_collector_alone(workspace: Workspace) -> None:
    frozen, automatic, switching = gc.get_freeze_count(), gc.isenabled(), sys.getswitchinterval()
    async with Client(build_server(workspace), mode="legacy") as client:
        found = await client.call_tool("search_text", {"pattern": "TODO"})
        assert found.is_error is False
        for _ in range(100):  # the background preparation (the tree index) has had time to finish
            if workspace.trees.describe()["indexes"]:
                break
            await anyio.sleep(0.02)
        status = await _status(client)
    state = status["garbage_collector"]
    assert (gc.get_freeze_count(), gc.isenabled(), sys.getswitchinterval()) == (frozen, automatic, switching)
    assert (state["frozen_objects"], state["automatic"]) == (frozen, automatic)
    assert status["thread_switch_interval_ms"] == switching * 1000
