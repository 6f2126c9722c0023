"""Through a real stdio server: the next page of a search goes on with the rg that served the page before, and
no rg outlives the server."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from cache_env import default_client_env

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

REPO_SANDBOX = str(Path(sys.executable).with_name("repo-sandbox"))


def _children(pid: int) -> set[int]:
    found: set[int] = set()
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            found.update(int(child) for child in Path(f"/proc/{pid}/task/{task}/children").read_text().split())
        except OSError:
            continue
    return found


def _alive(pids: set[int]) -> bool:
    return any(os.path.exists(f"/proc/{pid}") for pid in pids)


def _rg_children(pid: int) -> set[int]:
    running: set[int] = set()
    for child in _children(pid):
        try:
            if Path(f"/proc/{child}/comm").read_text().strip() == "rg":
                running.add(child)
        except OSError:
            continue
    return running


async def test_the_next_page_reuses_the_kept_rg_and_none_outlives_the_server(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    for index in range(30):
        (root / f"f{index:02}.txt").write_text("needle\n" * 900)  # 27,000 hits: the pages stream from rg
    params = StdioServerParameters(command=REPO_SANDBOX, args=["--root", str(root)], env=default_client_env())
    before = _children(os.getpid())
    async with Client(params, mode="legacy") as client:
        (server,) = _children(os.getpid()) - before
        lines: list[int] = []
        kept: set[int] = set()
        for offset in (0, 1000, 2000):
            result = await client.call_tool("search_text", {"pattern": "needle", "limit": 1000, "offset": offset})
            content = result.structured_content or {}
            assert result.is_error is False and content["next_offset"] == offset + 1000
            lines += [match["line"] for match in content["matches"]]
            running = _rg_children(server)
            assert len(running) == 1, running  # the run kept for the next page
            assert not kept or running == kept  # the same rg, page after page
            kept = running
        assert lines == [n for _ in range(4) for n in range(1, 901)][:3000]
    deadline = time.monotonic() + 10
    while _alive(kept) and time.monotonic() < deadline:  # noqa: ASYNC110  # state of other processes
        await anyio.sleep(0.05)
    assert not _alive(kept)  # the server ended its kept run when it stopped
