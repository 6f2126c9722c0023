"""The census taken ahead: listing the tools takes the first search's census in the background, so the first
search of the whole tree finds it in a memo; a search that comes meanwhile waits for it, and one after a
change takes its own. Results are always those of a fresh Python-engine workspace."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from repo_sandbox.engine import censusmemo, rgstate, select
from repo_sandbox.tools.search_text import SearchTextArgs, search_text
from repo_sandbox.wiring.assembly import build_server
from repo_sandbox.workspace import Workspace

WorkspaceFactory = Callable[..., Workspace]


def _tree(root: Path, files: int = 300) -> Path:
    for i in range(files):
        directory = root / f"d{i % 7}" / f"e{i % 3}"
        directory.mkdir(parents=True, exist_ok=True)
        (directory / f"f{i:04d}.txt").write_text(f"line {i}\n" + ("MARKER here\n" if i % 11 == 0 else ""))
    (root / "blob.bin").write_bytes(b"MARKER\0binary")
    return root


def _join_prepare() -> None:
    for thread in threading.enumerate():
        if thread.name == "repo-sandbox-prepare":
            thread.join(30)
            assert not thread.is_alive(), "the tools' preparation did not end within 30 s"


async def _search(client: Client, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool("search_text", arguments)
    assert not result.is_error, result.structured_content
    return result.structured_content or {}


async def _reference(root: Path, make_workspace: WorkspaceFactory, arguments: dict[str, Any]) -> dict[str, Any]:
    async with Client(build_server(make_workspace(root, search={"engine": "python"})), mode="legacy") as client:
        return await _search(client, arguments)


@pytest.mark.anyio
async def test_the_first_search_after_listing_the_tools_takes_the_census_from_its_memo(
    tmp_path: Path, make_workspace: WorkspaceFactory
) -> None:
    root = _tree(tmp_path / "repo")
    ws = make_workspace(root)
    if select.ripgrep_for(ws) is None:
        pytest.fail("no usable rg: the ripgrep wheel is a dependency")
    arguments = {"pattern": "MARKER", "limit": 1000}
    async with Client(build_server(ws), mode="legacy") as client:
        await client.list_tools()
        await anyio.to_thread.run_sync(_join_prepare)
        found = await _search(client, arguments)
    assert rgstate.counts(ws)["census"] == {"taken": 1, "from_memo": 1}
    assert found == await _reference(root, make_workspace, arguments)


@pytest.mark.anyio
@pytest.mark.parametrize(
    "arguments",
    [{"pattern": "MARKER", "limit": 1000}, {"pattern": "MARKER", "output_mode": "count"}, {"pattern": "line 1\\d"}],
)
async def test_a_search_right_after_listing_the_tools_answers_as_a_fresh_census_would(
    tmp_path: Path, make_workspace: WorkspaceFactory, arguments: dict[str, Any]
) -> None:
    root = _tree(tmp_path / "repo", files=1500)
    expected = await _reference(root, make_workspace, arguments)
    for _ in range(3):
        ws = make_workspace(root)
        async with Client(build_server(ws), mode="legacy") as client:
            await client.list_tools()
            assert await _search(client, arguments) == expected  # while the census is taken ahead, or after
            assert await _search(client, arguments) == expected
        assert rgstate.counts(ws)["census"]["taken"] == 2


@pytest.mark.anyio
async def test_a_change_after_the_census_taken_ahead_is_seen(tmp_path: Path, make_workspace: WorkspaceFactory) -> None:
    root = _tree(tmp_path / "repo")
    ws = make_workspace(root)
    arguments = {"pattern": "MARKER", "limit": 1000}
    async with Client(build_server(ws), mode="legacy") as client:
        await client.list_tools()
        await anyio.to_thread.run_sync(_join_prepare)
        (root / "d0" / "e0" / "f0000.txt").write_text("no longer\n")
        (root / "d1" / "e1" / "f0001.txt").write_text("MARKER now\n")
        (root / "new.txt").write_text("MARKER new\n")
        found = await _search(client, arguments)
    assert rgstate.counts(ws)["census"]["from_memo"] == 0
    assert found == await _reference(root, make_workspace, arguments)


def test_closing_the_workspace_stops_the_census_taken_ahead(tmp_path: Path, make_workspace: WorkspaceFactory) -> None:
    root = _tree(tmp_path / "repo", files=3000)
    ws = make_workspace(root)
    ws.trees.snapshot(ws.walk_options(include_hidden=None, include_ignored=False))
    ws.closing.set()  # as close() does first: the census stops at once and keeps no memo
    select.prepare(ws)
    assert rgstate.counts(ws)["census"] == {"taken": 0, "from_memo": 0}
    search_text(ws, SearchTextArgs(pattern="MARKER"))
    assert rgstate.counts(ws)["census"]["from_memo"] == 0


def test_waiting_for_the_census_taken_ahead_ends_when_the_search_stops(
    tmp_path: Path, make_workspace: WorkspaceFactory
) -> None:
    ws = make_workspace(tmp_path)
    key = censusmemo.WHOLE_TREE
    stop = threading.Event()
    with censusmemo.taking_ahead(ws, key):
        threading.Timer(0.1, stop.set).start()
        started = time.monotonic()
        censusmemo.wait_ahead(ws, key, stop)
        assert 0.05 < time.monotonic() - started < 5
        censusmemo.wait_ahead(ws, (".", "*.py", None, False), threading.Event())  # another key: no wait
