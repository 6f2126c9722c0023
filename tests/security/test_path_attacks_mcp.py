"""A representative subset of the attack table through the real MCP SDK client (in-memory, both eras)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import anyio
import pytest
from attack_tree import AttackTree, leaked_secrets, workspace_for
from mcp import Client
from test_path_attacks import CATEGORY, DIR, FILE, ROWS, Row, expand

from repo_sandbox.wiring.assembly import build_server

pytestmark = pytest.mark.anyio

SUBSET = (
    "../outside/secret.txt",
    "../repo-evil/secret.txt",
    "{root}-evil/secret.txt",
    "{root}/README.md",
    "/etc/passwd",
    "~/.ssh/id_rsa",
    "link_out_file_abs",
    "link_out_dir_rel/secret.txt",
    "chain_out_1",
    "loop_a",
    "link_env",
    "link_cfg/prod.yaml",
    "proc_root/etc/passwd",
    "fifo",
    "dev_zero",
    "hardlink_out.txt",
    "README.md\x00.txt",
    "src\\main.py",
    "%2e%2e/outside/secret.txt",
    "\uff0e\uff0e/outside/secret.txt",
    ".Git/config",
    "link_in_dir",
    "server.pem.",
    "x.\uff2b\uff25\uff39",
    "sub/.docker/config.json",
    "link_parent/repo/README.md",
)
SUBSET_ROWS = [row for row in ROWS if row.values[0].path in SUBSET]  # pyright: ignore[reportAttributeAccessIssue]


@pytest.fixture(scope="module", params=["legacy", "auto"])
def client_mode(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
async def client(client_mode: str, attack_tree: AttackTree) -> AsyncIterator[Client]:
    with workspace_for(attack_tree, "walk" if client_mode == "legacy" else "openat2") as ws:
        async with Client(build_server(ws), mode=client_mode) as c:  # pyright: ignore[reportArgumentType]
            yield c


def test_subset_covers_every_named_row() -> None:
    assert len(SUBSET_ROWS) == len(SUBSET)


@pytest.mark.parametrize("row", SUBSET_ROWS)
async def test_attack_row_through_the_sdk_client_gets_the_graded_answer(
    row: Row, client: Client, attack_tree: AttackTree
) -> None:
    path = expand(row.path, attack_tree)
    with anyio.fail_after(10):
        read = await client.call_tool("read_file", {"path": path})
        count = await client.call_tool("count_lines", {"path": path, "include_hidden": True})
    for result, tool in ((read, "read_file"), (count, "count_lines")):
        wire = json.dumps([c.model_dump(mode="json") for c in result.content]) + json.dumps(result.structured_content)
        assert leaked_secrets(wire) == []
        assert result.structured_content is not None
        if row.expect == FILE or (row.expect == DIR and tool == "count_lines"):
            assert result.is_error is False, result.structured_content
            continue
        expected = "not_a_file" if row.expect == DIR else row.expect
        error = result.structured_content["error"]
        assert result.is_error is True
        assert (error["code"], error["category"]) == (expected, CATEGORY[expected])
        assert json.loads(result.content[0].text)["error"]["code"] == expected  # pyright: ignore[reportAttributeAccessIssue]
