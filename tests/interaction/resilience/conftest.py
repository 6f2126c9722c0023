"""Fixtures for the agent-loop tests: both protocol eras, a fake clock, servers built on the sample repo."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp.server import MCPServer

from repo_sandbox.runtime.clock import FakeClock
from repo_sandbox.testing import ERAS, Mode, ServerFactory
from repo_sandbox.wiring.assembly import build_server
from repo_sandbox.workspace import Workspace


@pytest.fixture(params=ERAS)
def era(request: pytest.FixtureRequest) -> Mode:
    return request.param


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def make_server(repo: Path, make_settings: Callable[..., Any], clock: FakeClock) -> Iterator[ServerFactory]:
    workspaces: list[Workspace] = []

    def factory(**sections: dict[str, Any]) -> MCPServer[Any]:
        workspace = Workspace(make_settings(repo, **sections))
        workspaces.append(workspace)
        return build_server(workspace, clock=clock)

    yield factory
    for workspace in workspaces:
        workspace.close()
