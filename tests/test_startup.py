"""What a spawned server loads before it answers `initialize`: not the tools, the stages, the search engines or
the command policy (they load on first use), so a client that spawns it waits as little as possible."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

LOADED_BEFORE_THE_FIRST_CALL = textwrap.dedent(
    """
    import json, sys
    from repo_sandbox import cli
    from repo_sandbox.workspace import Workspace
    from repo_sandbox.transports.stdio import serve_stdio
    from repo_sandbox.wiring import sdk_adapter
    from repo_sandbox.wiring.assembly import build_server

    settings = cli._settings(cli.build_parser().parse_args(["serve", "--root", sys.argv[1]]), None)
    workspace = Workspace(settings)
    server = build_server(workspace)
    sdk_adapter.lowlevel_server(server).create_initialization_options()
    print(json.dumps(sorted(sys.modules)))
    workspace.close()
    """
)

ON_FIRST_USE = [
    "repo_sandbox.wiring.handlers",
    "repo_sandbox.tools.registry",
    "repo_sandbox.tools.search_text",
    "repo_sandbox.runtime.pipeline",
    "repo_sandbox.engine.ripgrep",
    "repo_sandbox.exec.service",
    "repo_sandbox.shell.parse",
    "repo_sandbox.policy.commands",
    "repo_sandbox.wiring.resources",
    "tree_sitter",
    "tomllib",
    "uvicorn.protocols.http.h11_impl",  # the HTTP transport only (wiring.sdk_adapter.guarded_protocol)
]


def test_serving_loads_the_tool_machinery_on_first_use_not_before_initialize(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", LOADED_BEFORE_THE_FIRST_CALL, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    loaded = set(json.loads(done.stdout))
    assert "repo_sandbox.wiring.assembly" in loaded and "mcp.server" in loaded
    assert sorted(loaded & set(ON_FIRST_USE)) == []
