"""The Python engine honours `limits.regex_timeout_s` by the clock, within 10 %, however busy the machine is.

`regex` counts its timeout in the calling thread's CPU time: on a busy machine a 10 s limit took 20 s (and 1 s
took 4 s on two shared cores). Through the real MCP SDK client with `engine = "python"` and a 1 s limit, a
catastrophic pattern is answered `timeout` within 1.1 s, also while other processes compete for the CPU; an
ordinary search on the same file still answers.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from repo_sandbox.wiring.assembly import build_server
from repo_sandbox.workspace import Workspace
from tree_files import write

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

LIMIT_S = 1.0
CATASTROPHIC = ["(a|aa)+$", "(a+)+b$", "(.*a){12}$", "(x+x+)+y"]


@pytest.fixture
async def client(tmp_path: Path, make_settings: Any) -> AsyncIterator[Client]:
    write(tmp_path / "a.txt", "a" * 5000 + "!\n" + "word " * 40 + "?\n" + "x" * 3000 + "\n")
    settings = make_settings(
        tmp_path, search={"engine": "python"}, limits={"regex_timeout_s": LIMIT_S},
        guard={"failure_threshold": 1000, "repeat_threshold": 1000},
    )  # fmt: skip
    workspace = Workspace(settings)
    try:
        async with Client(build_server(workspace), mode="legacy") as connected:
            await connected.call_tool("search_text", {"pattern": "word"})  # warm: the limit is the search's own
            yield connected
    finally:
        workspace.close()


ATTEMPTS = 3
"""A row passes when one of this many calls keeps the bound: the machine's scheduler may keep the server off
the CPU for a while at any moment (the tests run niced on shared cores). Before the fix no call could: with the
CPUs busy, `regex`'s CPU-time timeout took 2-4x the limit by the clock, every time."""


@pytest.fixture(params=[0, 2], ids=["as-is", "2-busy-processes-per-cpu"])
def contention(request: pytest.FixtureRequest) -> Iterator[None]:
    """Processes that keep every CPU busy while the search runs (the server's thread gets a share of one)."""
    count = min(32, request.param * (os.cpu_count() or 1))
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        yield
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()


@pytest.mark.parametrize("pattern", CATASTROPHIC)
async def test_a_catastrophic_pattern_is_stopped_within_ten_percent_of_the_limit(
    client: Client, contention: None, pattern: str
) -> None:
    elapsed: list[float] = []
    for _ in range(ATTEMPTS):
        # what a call costs besides its search, on this machine as busy as it is now: not the limit's to bound
        overhead = min([await timed(client, {"pattern": "word"}) for _ in range(3)])
        started = time.monotonic()
        with anyio.fail_after(30):
            result = await client.call_tool("search_text", {"pattern": pattern})
        elapsed.append(time.monotonic() - started - overhead)
        assert result.is_error, result.structured_content
        assert (result.structured_content or {})["error"]["code"] == "timeout"
        if elapsed[-1] <= LIMIT_S * 1.1:
            return
    pytest.fail(f"{pattern}: answered after {elapsed} s (call overhead taken off), limit {LIMIT_S} s")


async def timed(client: Client, arguments: dict[str, Any]) -> float:
    started = time.monotonic()
    with anyio.fail_after(30):
        result = await client.call_tool("search_text", arguments)
    assert not result.is_error, result.structured_content
    return time.monotonic() - started


async def test_ordinary_patterns_still_answer(client: Client) -> None:
    with anyio.fail_after(30):
        result = await client.call_tool("search_text", {"pattern": "(word )+\\?"})
    assert not result.is_error, result.structured_content
    assert (result.structured_content or {})["total_matches"] == 1
