"""MCP roots may only narrow the operator's policy, never widen it (DESIGN.md §2, §5): a client that offers
roots wider than the repository (the whole disk, a sibling directory, the repository's parent) still reaches
nothing outside the root and no denied path."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.context import ClientRequestContext
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp.types import ListRootsResult, Root, TextResourceContents

from repo_sandbox.config.loader import load_settings
from repo_sandbox.wiring.assembly import build_server
from repo_sandbox.workspace import Workspace

pytestmark = pytest.mark.anyio


@pytest.fixture
def layout(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "src" / "main.py").write_text("print('hi')\n")
    (root / ".env").write_text("API_KEY=sk-test-123\n")
    (tmp_path / "sibling").mkdir()
    (tmp_path / "sibling" / "secret.txt").write_text("outside the root\n")
    return root


def offered_roots(root: Path) -> list[str]:
    return ["file:///", f"file://{root.parent}", f"file://{root.parent / 'sibling'}"]


CALLS = [
    # absolute paths inside the offered roots but outside the repository
    ("read_file", {"path": "{parent}/sibling/secret.txt"}, {"path_outside_root"}),
    ("read_file", {"path": "/etc/hostname"}, {"path_outside_root", "not_found"}),
    ("search_files", {"pattern": "*", "path": "{parent}/sibling"}, {"path_outside_root"}),
    ("search_text", {"pattern": "outside", "path": "{parent}"}, {"path_outside_root"}),
    ("count_lines", {"path": "../sibling"}, {"path_outside_root"}),
    ("execute_bash", {"command": "cat {parent}/sibling/secret.txt"}, {"path_outside_root"}),
    # a denied path inside the repository stays denied
    ("read_file", {"path": ".env"}, {"path_denied"}),
]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_roots_offered_by_the_client_never_widen_the_policy(layout: Path, mode: str) -> None:
    async def list_roots(context: ClientRequestContext) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri=uri) for uri in offered_roots(layout)])  # pyright: ignore[reportArgumentType]

    workspace = Workspace(load_settings(None, env={}, overrides={("workspace", "root"): str(layout)}))
    codes: list[str] = []
    try:
        with anyio.fail_after(30), warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)  # roots are deprecated in 2026-07-28 (SEP-2577)
            async with Client(build_server(workspace), mode=mode, list_roots_callback=list_roots) as client:
                if mode == "legacy":
                    await client.send_roots_list_changed()  # pyright: ignore[reportDeprecated]
                for tool, arguments, _ in CALLS:
                    filled = {key: value.replace("{parent}", str(layout.parent)) for key, value in arguments.items()}
                    result = await client.call_tool(tool, filled)
                    assert result.is_error, (tool, filled, result.structured_content)
                    assert isinstance(result.structured_content, dict)
                    codes.append(result.structured_content["error"]["code"])
                inside = await client.call_tool("read_file", {"path": "src/main.py"})
    finally:
        workspace.close()
    assert [code in expected for code, (_, _, expected) in zip(codes, CALLS, strict=True)] == [True] * len(CALLS), codes
    assert not inside.is_error


# A client root inside the repository narrows it; what the deny-list hides stays hidden across the new boundary.
NARROWING = [
    # (extra deny patterns, client root, path read in the narrowed root, outcome: an error code, or "ignored")
    pytest.param([], ".git", "config", "ignored", id="the-git-directory"),
    pytest.param([], "keys/.ssh", "id_rsa", "ignored", id="a-denied-directory"),
    pytest.param([], "app/.docker", "config.json", "path_denied", id="default-docker-config-across-the-boundary"),
    pytest.param(["/build/secrets.txt"], "build", "secrets.txt", "path_denied", id="anchored-file-pattern"),
    pytest.param(["/b*/deep/"], "build", "deep/x.txt", "path_denied", id="anchored-glob-directory"),
    pytest.param(["**/build/secrets.txt"], "build", "secrets.txt", "path_denied", id="floating-pattern"),
    pytest.param(["/build/"], "build", "secrets.txt", "ignored", id="root-under-an-anchored-denied-directory"),
    pytest.param(["**/b/**/secrets.txt"], "build", "secrets.txt", "ignored", id="double-star-inside-fails-closed"),
    pytest.param(["!keep.txt"], "build", "secrets.txt", "ignored", id="negation-fails-closed"),
    pytest.param([], "build", "deep/x.txt", None, id="an-ordinary-directory-is-served"),
]


@pytest.mark.parametrize(("extra_deny", "client_root", "probe", "outcome"), NARROWING)
async def test_a_narrowing_client_root_keeps_everything_the_deny_list_hides(
    tmp_path: Path, extra_deny: list[str], client_root: str, probe: str, outcome: str | None
) -> None:
    root = tmp_path / "repo"
    for name in (".git/config", "keys/.ssh/id_rsa", "app/.docker/config.json", "build/secrets.txt", "build/deep/x.txt"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("secret-or-not\n")
    offered = (root / client_root).as_uri()

    async def list_roots(context: ClientRequestContext) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri=offered)])  # pyright: ignore[reportArgumentType]

    overrides = {("workspace", "root"): str(root), ("workspace", "extra_deny"): extra_deny}
    workspace = Workspace(load_settings(None, env={}, overrides=overrides))
    try:
        with anyio.fail_after(30), warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            async with Client(build_server(workspace), mode="legacy", list_roots_callback=list_roots) as client:
                read = await client.call_tool("read_file", {"path": probe})
                listed = await client.call_tool("search_files", {"pattern": "**", "include_hidden": True})
                status = await client.read_resource("repo-sandbox://status")
    finally:
        workspace.close()
    assert isinstance(read.structured_content, dict) and isinstance(listed.structured_content, dict)
    contents = status.contents[0]
    assert isinstance(contents, TextResourceContents)
    roots = json.loads(contents.text)["roots"]
    if outcome == "ignored":
        assert roots["served"] is None and [entry["uri"] for entry in roots["ignored"]] == [offered]
        return
    assert roots["served"] == offered
    files = listed.structured_content["files"]
    if outcome is None:
        assert not read.is_error and probe in files
    else:
        assert read.is_error and read.structured_content["error"]["code"] == outcome
        assert probe not in files
