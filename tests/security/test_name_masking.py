"""One masking rule for file names: what `ls` output masks, search_files (and every listing of paths) masks too.

A file named after a secret (`AKIA....txt`, `ghp_....md`) showed masked in execute_bash output (stdout is
masked) but whole in search_files. Through the real MCP SDK client, under every sandbox backend here: for each
name of the table, the name `ls` prints is the name search_files, count_lines and search_text list.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from exec_support import os_backends
from repo_sandbox.wiring.assembly import build_server
from repo_sandbox.workspace import Workspace
from tree_files import write

pytestmark = pytest.mark.anyio

GHP = "ghp_" + "Nm4" * 12
NAMES = [
    "AKIA" + "Q" * 16 + ".txt",
    GHP + ".md",
    "sk-" + "a1" * 24,
    "xoxb-" + "1234567890-" * 2 + "abcdefABCDEF123456",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJl",
    "sk_live_0123456789abcdefABCDEF.json",
    "plain-name.txt",
    "token_count.py",
]
SECRET_PARTS = ["Q" * 16, "Nm4" * 12, "a1" * 24, "abcdefABCDEF123456", "c2lnbmF0dXJl", "0123456789abcdefABCDEF"]


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("names") / "repo"
    for name in NAMES:
        write(root / "d" / name, "line\n")
    return root


@pytest.fixture(params=os_backends())
async def client(request: pytest.FixtureRequest, repo: Path, make_settings: Any) -> AsyncIterator[Client]:
    workspace = Workspace(make_settings(repo, exec={"sandbox": request.param}))
    try:
        async with Client(build_server(workspace), mode="legacy") as connected:
            yield connected
    finally:
        workspace.close()


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    with anyio.fail_after(30):
        result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.structured_content
    assert isinstance(result.structured_content, dict)
    return result.structured_content


async def test_every_listing_of_names_masks_what_ls_masks(client: Client) -> None:
    listed = (await call(client, "execute_bash", {"command": "ls -1 d"}))["stdout"].splitlines()
    assert len(listed) == len(NAMES)
    shown = sorted(listed)
    files = await call(client, "search_files", {"pattern": "*", "path": "d"})
    assert sorted(path.removeprefix("d/") for path in files["files"]) == shown
    counted = await call(client, "count_lines", {"path": "d"})
    assert sorted(row["path"].removeprefix("d/") for row in counted["largest"]) == shown
    found = await call(client, "search_text", {"pattern": "line", "path": "d", "output_mode": "files_with_matches"})
    assert sorted(path.removeprefix("d/") for path in found["files"]) == shown
    matches = await call(client, "search_text", {"pattern": "line", "path": "d"})
    assert sorted(match["path"].removeprefix("d/") for match in matches["matches"]) == shown
    counts = await call(client, "search_text", {"pattern": "line", "path": "d", "output_mode": "count"})
    assert sorted(row["path"].removeprefix("d/") for row in counts["counts"]) == shown
    for result in (files, counted, found, matches, counts):
        assert not [part for part in SECRET_PARTS if part in str(result)], result
    assert "plain-name.txt" in shown and "token_count.py" in shown  # ordinary names are left alone
