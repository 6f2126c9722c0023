"""Which directory is served (DESIGN.md §2): the operator's root, which client MCP roots may only narrow; without
one a client's first directory root; else the current directory only when it is a repository that is neither `/`
nor the home directory; else exit 2 naming --root. In-process through the SDK's Client (its list_roots
callback), and as a real stdio process for the current-directory cases."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.context import ClientRequestContext
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp.types import ListRootsResult, Root, TextResourceContents

from repo_sandbox.config.loader import load_settings
from repo_sandbox.roots import RootPolicy
from repo_sandbox.wiring.assembly import build_server
from repo_sandbox.wiring.identity import STATUS_URI
from repo_sandbox.workspace import Workspace

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

REPO_SANDBOX = str(Path(sys.executable).with_name("repo-sandbox"))


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """tmp/repo (a repository with src/ and docs/), tmp/elsewhere (a directory outside it)."""
    repo = tmp_path / "repo"
    for name in ("src/main.py", "docs/guide.py", "top.py", "elsewhere/far.py"):
        path = (repo if not name.startswith("elsewhere") else tmp_path) / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x = 1\n")
    (repo / ".git").mkdir()
    return tmp_path


@asynccontextmanager
async def client_for(root: Path, offered: list[str], policy: RootPolicy | None = None) -> AsyncIterator[Client]:
    """A legacy-era client offering `offered` (a list the test may change) as its roots."""

    async def list_roots(context: ClientRequestContext) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri=uri) for uri in offered])  # pyright: ignore[reportArgumentType]

    workspace = Workspace(load_settings(None, env={}, overrides={("workspace", "root"): str(root)}))
    try:
        with anyio.fail_after(60), warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            server = build_server(workspace, roots=policy)
            async with Client(server, mode="legacy", list_roots_callback=list_roots) as client:
                yield client
    finally:
        workspace.close()


async def files(client: Client) -> list[str]:
    result = await client.call_tool("search_files", {"pattern": "*.py"})
    assert isinstance(result.structured_content, dict), result
    if result.is_error:
        return [result.structured_content["error"]["code"]]
    return sorted(result.structured_content["files"])


async def roots_status(client: Client) -> dict[str, Any]:
    contents = (await client.read_resource(STATUS_URI)).contents[0]
    assert isinstance(contents, TextResourceContents)
    return json.loads(contents.text)["roots"]


def uri(path: Path) -> str:
    return path.as_uri()


async def test_the_operator_root_is_served_when_the_client_offers_none(tree: Path) -> None:
    async with client_for(tree / "repo", []) as client:
        assert await files(client) == ["docs/guide.py", "src/main.py", "top.py"]
        assert (await roots_status(client))["source"] == "--root/config"


async def test_a_client_root_inside_the_operator_root_narrows_it(tree: Path) -> None:
    offered = [uri(tree / "repo" / "src"), uri(tree / "repo" / "docs")]
    async with client_for(tree / "repo", offered) as client:
        assert await files(client) == ["main.py"]
        read = await client.call_tool("read_file", {"path": "../top.py"})
        status = await roots_status(client)
    assert read.is_error and isinstance(read.structured_content, dict)
    assert read.structured_content["error"]["code"] == "path_outside_root"
    assert (status["served"], status["others"], status["ignored"]) == (offered[0], [offered[1]], [])


@pytest.mark.parametrize(
    "offered",
    [
        pytest.param(["{tmp}/elsewhere"], id="a-sibling"),
        pytest.param(["{tmp}"], id="the-parent"),
        pytest.param(["/"], id="the-file-system"),
        pytest.param(["{tmp}/elsewhere", "{tmp}/repo/src"], id="outside-first-then-inside"),
    ],
)
async def test_a_client_root_outside_the_operator_root_is_ignored_and_reported(tree: Path, offered: list[str]) -> None:
    uris = [uri(Path(text.format(tmp=tree))) for text in offered]
    async with client_for(tree / "repo", uris) as client:
        served = await files(client)
        status = await roots_status(client)
    inside = [u for u in uris if u.endswith("/repo/src")]
    assert served == (["main.py"] if inside else ["docs/guide.py", "src/main.py", "top.py"])
    assert [entry["uri"] for entry in status["ignored"]] == [u for u in uris if u not in inside]
    assert all(entry["reason"] for entry in status["ignored"])


async def test_roots_that_change_are_asked_for_again(tree: Path) -> None:
    offered = [uri(tree / "repo" / "src")]
    async with client_for(tree / "repo", offered) as client:
        before = await files(client)
        offered[:] = [uri(tree / "repo" / "docs")]
        unchanged = await files(client)  # no notification yet: the session keeps its root
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            await client.send_roots_list_changed()  # pyright: ignore[reportDeprecated]
        after = await files(client)
    assert (before, unchanged, after) == (["main.py"], ["main.py"], ["guide.py"])


async def test_without_an_operator_root_the_clients_first_directory_root_is_served(tree: Path) -> None:
    empty = tree / "placeholder"
    empty.mkdir()
    policy = RootPolicy("none", base_serves=False, client_chooses=True)
    offered = ["file://otherhost/share", uri(tree / "elsewhere"), uri(tree / "repo"), "file:///"]
    async with client_for(empty, offered, policy) as client:
        served = await files(client)
        status = await roots_status(client)
    assert served == ["far.py"]
    assert (status["served"], status["others"]) == (offered[1], [offered[2]])
    assert [entry["uri"] for entry in status["ignored"]] == [offered[0], offered[3]]


@pytest.mark.parametrize(
    "offered", [[], ["file:///"], ["{home}"], ["{tmp}/repo/top.py"], ["{home}/.ssh"], ["{tmp}/repo/.git"]]
)
async def test_without_any_root_to_serve_every_call_is_refused(
    tree: Path, offered: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tree / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "known_hosts").write_text("host key\n")
    monkeypatch.setenv("HOME", str(home))
    empty = tree / "placeholder"
    empty.mkdir()
    (empty / "decoy.py").write_text("x = 1\n")  # never served
    policy = RootPolicy("none", base_serves=False, client_chooses=True)
    uris = [uri(Path(text.format(tmp=tree, home=home))) if "{" in text else text for text in offered]
    async with client_for(empty, uris, policy) as client:
        assert await files(client) == ["sandbox_failed"]


# --- the current directory, through a real stdio process -------------------------------------------------------

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


def child_env(home: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("REPO_SANDBOX_")}
    return {**env, "HOME": str(home)}


@pytest.mark.parametrize(
    ("where", "named"),
    [
        pytest.param("/", "is the file system root /", id="root-of-the-file-system"),
        pytest.param("{home}", "is the home directory", id="home-even-as-a-repository"),
        pytest.param("{tmp}/elsewhere", "is not a repository", id="not-a-repository"),
    ],
)
def test_a_current_directory_that_is_not_a_repository_stops_the_server_naming_root(
    tree: Path, where: str, named: str
) -> None:
    home = tree / "home"
    (home / ".git").mkdir(parents=True)
    done = subprocess.run(
        [REPO_SANDBOX],
        input=json.dumps(INITIALIZE) + "\n",
        cwd=where.format(tmp=tree, home=home),
        env=child_env(home),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert named in done.stderr
    assert "--root" in done.stderr


def test_over_http_a_current_directory_that_is_not_a_repository_stops_at_once(tree: Path) -> None:
    done = subprocess.run(
        [REPO_SANDBOX, "serve", "--transport", "http", "--port", "0"],
        cwd=tree / "elsewhere",
        env=child_env(tree),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, "--root" in done.stderr) == (2, True), done.stderr


async def test_a_repository_as_the_current_directory_is_served(tree: Path) -> None:
    params = StdioServerParameters(command=REPO_SANDBOX, args=[], cwd=tree / "repo", env=child_env(tree))
    with anyio.fail_after(60):
        async with Client(params, mode="legacy") as client:
            served = await files(client)
    assert served == ["docs/guide.py", "src/main.py", "top.py"]


def test_the_start_line_names_version_root_transport_sandbox_and_search(tree: Path) -> None:
    with subprocess.Popen(
        [REPO_SANDBOX],
        cwd=tree / "repo",
        env=child_env(tree),
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    ) as child:
        assert child.stdin is not None and child.stderr is not None
        child.stdin.write(json.dumps(INITIALIZE) + "\n")
        child.stdin.flush()
        line = child.stderr.readline()
        child.stdin.close()
        assert child.wait(timeout=60) == 0
    for part in (
        "repo-sandbox ",
        f"root {tree / 'repo'} (the current directory)",
        "transport stdio",
        "sandbox ",
        "rg ",
    ):
        assert part in line, line


async def test_a_client_with_roots_is_served_its_root_even_from_the_file_system_root(tree: Path) -> None:
    async def list_roots(context: ClientRequestContext) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri=uri(tree / "repo" / "src"))])  # pyright: ignore[reportArgumentType]

    params = StdioServerParameters(command=REPO_SANDBOX, args=[], cwd="/", env=child_env(tree))
    with anyio.fail_after(60), warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        async with Client(params, mode="legacy", list_roots_callback=list_roots) as client:
            served = await files(client)
            outside = await client.call_tool("read_file", {"path": "/etc/passwd"})
    assert served == ["main.py"]
    assert outside.is_error


async def test_client_roots_served_at_once_are_bounded(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each client root has its own indexes and watches: a client cycling through directories cannot pile them up."""
    monkeypatch.setattr("repo_sandbox.roots.MAX_WORKSPACES", 1)
    offered = [uri(tree / "repo" / "src")]
    async with client_for(tree / "repo", offered) as client:
        first = await files(client)
        offered[:] = [uri(tree / "repo" / "docs")]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            await client.send_roots_list_changed()  # pyright: ignore[reportDeprecated]
        second = await files(client)
        status = await roots_status(client)
    assert (first, second) == (["main.py"], ["docs/guide.py", "src/main.py", "top.py"])
    assert "already serves 1" in status["ignored"][0]["reason"]
