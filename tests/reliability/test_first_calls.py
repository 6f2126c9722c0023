"""Fresh servers, 8 first calls of each tool at once: whatever a first call builds (the sandbox's mask
sources, the tree index, the census) must be built once, never half-seen by another call."""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from support import TOOLS, build_small_repo, error_code, ordinary_call

from exec_support import os_backends
from repo_sandbox.exec.sandbox import mask_sources
from repo_sandbox.wiring.assembly import build_server

pytestmark = pytest.mark.slow

CONCURRENT = 8
ROWS = [(tool, os_backends()[0] if os_backends() else "none") for tool in TOOLS]
ROWS += [("execute_bash", backend) for backend in [*os_backends()[1:], "none"]]


@pytest.mark.anyio
@pytest.mark.parametrize(("tool", "sandbox"), ROWS)
async def test_eight_first_calls_at_once_all_succeed(
    tool: str, sandbox: str, tmp_path: Path, make_workspace: Any
) -> None:
    root = build_small_repo(tmp_path)
    for attempt in range(3):  # three fresh servers: a race needs more than one chance to show
        # room for all eight at once: the per-session command cap (4 by default) is not what this tests
        workspace = make_workspace(root, exec={"sandbox": sandbox}, budget={"max_concurrent_exec": CONCURRENT})
        codes: list[str | None] = []
        with anyio.fail_after(60):
            async with Client(build_server(workspace), mode="legacy") as client:

                async def call(n: int, codes: list[str | None] = codes) -> None:
                    codes.append(error_code(await client.call_tool(tool, ordinary_call(tool, n))))

                async with anyio.create_task_group() as tg:
                    for n in range(CONCURRENT):
                        tg.start_soon(call, n)
        assert codes == [None] * CONCURRENT, f"fresh server {attempt}"
        workspace.close()


def test_mask_sources_are_made_once_for_threads_that_ask_at_once(tmp_path: Path) -> None:
    for round_ in range(30):
        scratch = tmp_path / str(round_)
        scratch.mkdir()
        barrier = threading.Barrier(CONCURRENT)

        def first_call(scratch: Path = scratch, barrier: threading.Barrier = barrier) -> tuple[str, str]:
            barrier.wait()
            return mask_sources(str(scratch))

        with ThreadPoolExecutor(CONCURRENT) as pool:
            results = list(pool.map(lambda _: first_call(), range(CONCURRENT)))
        assert len(set(results)) == 1
        empty_file, empty_dir = results[0]
        assert os.path.getsize(empty_file) == 0 and not os.access(empty_file, os.W_OK) or os.geteuid() == 0
        assert os.path.isdir(empty_dir) and os.listdir(empty_dir) == []
