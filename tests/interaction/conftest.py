"""End-to-end fixtures: the e2e repository (built once per module; it is only read), a workspace over it,
and an in-memory SDK `Client` in both protocol eras ("legacy" = 2025-11-25 handshake, "auto" = 2026-07-28)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from e2e_tree import ERAS, build_tree
from mcp import Client

from repo_sandbox.wiring.assembly import build_server
from repo_sandbox.workspace import Workspace


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tree(tmp_path_factory.mktemp("e2e") / "repo")


@pytest.fixture
def tree_workspace(tree: Path, make_workspace: Callable[..., Workspace]) -> Workspace:
    return make_workspace(tree)


@pytest.fixture(params=ERAS)
async def client(request: pytest.FixtureRequest, tree_workspace: Workspace) -> AsyncIterator[Client]:
    async with Client(build_server(tree_workspace), mode=request.param) as c:
        yield c
