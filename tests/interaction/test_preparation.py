"""The search engine gets ready in the background once a client has initialized (rg found, its launcher
started, the tree index built), before the client even lists the tools; never before `initialize`."""

from __future__ import annotations

import threading
import time

import anyio
import pytest
from mcp import Client

from repo_sandbox.engine import rgstate, select
from repo_sandbox.engine.census import Census
from repo_sandbox.fs.walk import Walk
from repo_sandbox.tree import node
from repo_sandbox.wiring.assembly import build_server
from repo_sandbox.wiring.preparation import Preparation
from repo_sandbox.workspace import Workspace

pytestmark = pytest.mark.anyio


def _indexed(workspace: Workspace) -> int:
    return sum(index["directories"] for index in workspace.trees.describe()["indexes"])


async def test_initialize_starts_the_preparation_without_a_listing(workspace: Workspace) -> None:
    server = build_server(workspace)
    await anyio.sleep(0.2)
    assert _indexed(workspace) == 0  # building the server prepares nothing
    async with Client(server, mode="legacy"):
        for _ in range(500):  # 10 s at most
            if _indexed(workspace):
                break
            await anyio.sleep(0.02)
    assert _indexed(workspace) > 0, "initialize did not start the preparation"
    assert rgstate.counts(workspace)["census"]["taken"] == 0  # only the caches: no search was made


async def test_a_listing_after_initialize_prepares_once(workspace: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    prepared: list[Workspace] = []
    real_prepare = select.prepare

    def counting(ws: Workspace, stop: threading.Event) -> None:
        prepared.append(ws)
        real_prepare(ws, stop)

    monkeypatch.setattr(select, "prepare", counting)
    async with Client(build_server(workspace), mode="legacy") as client:
        await client.list_tools()
        await client.list_tools()
        found = await client.call_tool("search_text", {"pattern": "TODO"})
        assert found.is_error is False
    assert prepared == [workspace]


async def test_the_first_search_finds_the_census_the_preparation_took_ahead(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(node, "RACY_NS", -1)  # the tree was written just now: trust its listings at once
    async with Client(build_server(workspace), mode="legacy") as client:
        for _ in range(500):  # 10 s at most
            if rgstate.counts(workspace)["census"]["taken_ahead"]:
                break
            await anyio.sleep(0.02)
        assert rgstate.counts(workspace)["census"]["taken_ahead"] == 1, "the preparation took no census ahead"
        found = await client.call_tool("search_text", {"pattern": "TODO"})
        assert found.is_error is False
        assert found.structured_content is not None and found.structured_content["total_matches"] >= 1
    assert rgstate.counts(workspace)["census"] == {"taken": 1, "from_memo": 1, "taken_ahead": 1}


def test_closing_the_workspace_stops_the_census_taken_ahead(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A census taken ahead on a large tree (or a cold disk) must not hold up the server's exit."""
    counting = threading.Event()

    def endless_count(self: Census, walk: Walk) -> None:
        counting.set()
        self.stop.wait(30)  # a census that would otherwise go on for as long as that

    monkeypatch.setattr(Census, "_count", endless_count)
    Preparation(workspace).start()
    assert counting.wait(10), "the preparation took no census ahead"
    started = time.monotonic()
    workspace.close()
    assert time.monotonic() - started < 5
