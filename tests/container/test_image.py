"""End to end through the image: `podman run -i` with the hardened flags, stdio in both eras, HTTP with a
token, the non-root user, refusals, and a graceful stop."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.types import TextResourceContents

pytestmark = [pytest.mark.anyio, pytest.mark.container]

IMAGE = os.environ.get("REPO_SANDBOX_TEST_IMAGE", "localhost/repo-sandbox-mcp:latest")
TOKEN = "container-token-0123456789"
os.environ.setdefault("REPO_SANDBOX_TOKEN", TOKEN)  # passed into the HTTP container by name (-e REPO_SANDBOX_TOKEN)
PODMAN = ["podman", "--runtime", os.environ.get("PODMAN_RUNTIME", "runc")]
HARDENED = [
    "--read-only",
    "--cap-drop",
    "ALL",
    "--security-opt",
    "no-new-privileges",
    "--pids-limit",
    "64",
    "--memory",
    "256m",
    # Lowered rather than inherited: some hosts (this CI sandbox) refuse to let runc set the defaults.
    "--ulimit",
    "nofile=1024:1024",
    "--ulimit",
    "nproc=512:512",
]


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("workspace")
    (root / "src").mkdir()
    (root / "src" / "main.py").write_text("def main():\n    print('hello')  # TODO\n")
    (root / "README.md").write_text("# Demo\n\nTODO: docs\n")
    (root / ".env").write_text("API_KEY=sk-test-123\n")
    root.chmod(0o755)
    for path in root.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return root


def podman(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*PODMAN, *args], check=False, capture_output=True, text=True, timeout=timeout)


def stdio_params(repo: Path, *env: str) -> StdioServerParameters:
    """`podman run -i` with the hardened flags; `env`: NAME=VALUE pairs for the server."""
    variables = [arg for pair in env for arg in ("-e", pair)]
    args = ["run", "-i", "--rm", "--network", "none", *HARDENED, *variables, "-v", f"{repo}:/workspace:ro", IMAGE]
    return StdioServerParameters(command=PODMAN[0], args=[*PODMAN[1:], *args])


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_tools_over_stdio_in_a_hardened_container(repo: Path, mode: str) -> None:
    with anyio.fail_after(90):
        async with Client(stdio_params(repo), mode=mode) as client:
            tools = {tool.name for tool in (await client.list_tools()).tools}
            found = await client.call_tool("search_text", {"pattern": "TODO"})
            read = await client.call_tool("read_file", {"path": "src/main.py"})
            counted = await client.call_tool("count_lines", {})
            listed = await client.call_tool("search_files", {"pattern": "*"})
            denied = await client.call_tool("read_file", {"path": ".env"})
            escaped = await client.call_tool("read_file", {"path": "/etc/passwd"})
    assert tools == {"search_files", "read_file", "search_text", "count_lines", "execute_bash"}
    assert found.structured_content is not None and found.structured_content["total_matches"] == 2
    assert read.structured_content is not None and read.structured_content["total_lines"] == 2
    assert counted.structured_content is not None and counted.structured_content["files"] == 2
    assert listed.structured_content is not None and listed.structured_content["files"] == ["README.md", "src/main.py"]
    assert denied.structured_content is not None and denied.structured_content["error"]["code"] == "path_denied"
    assert escaped.structured_content is not None
    assert escaped.structured_content["error"]["code"] == "path_outside_root"


SANDBOXES = ("bwrap", "bwrap-noproc", "landlock")
"""The OS sandbox backends in the order `exec.sandbox = "auto"` tries them."""


async def exec_and_status(params: StdioServerParameters, *commands: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    results: list[dict[str, Any]] = []
    with anyio.fail_after(90):
        async with Client(params, mode="auto") as client:
            for command in commands:
                result = await client.call_tool("execute_bash", {"command": command})
                assert result.structured_content is not None
                results.append(result.structured_content)
            status = await client.read_resource("repo-sandbox://status")
    content = status.contents[0]
    assert isinstance(content, TextResourceContents)
    return results, json.loads(content.text)["exec"]


async def test_execute_bash_in_a_hardened_container_reports_the_sandbox_it_picked(repo: Path) -> None:
    (result, listing, found), status = await exec_and_status(
        stdio_params(repo), "wc -l README.md", "ls -la", "find . -name '.env*'"
    )
    picked = status["sandbox_backend"]
    print(f"execute_bash in the hardened container picked {picked!r}; rejected: {status['rejected']}")
    assert result["exit_code"] == 0 and result["stdout"] == "3 README.md\n"
    assert result["sandbox"] == status["sandbox"] == ("bwrap" if picked.startswith("bwrap") else picked)
    assert status["sandbox_requested"] == "auto"
    if picked == "none":  # only honest when every OS sandbox was refused, and then said loudly
        assert set(status["rejected"]) == set(SANDBOXES)
        assert "WITHOUT an OS sandbox" in status["warning"]
    else:
        assert picked in SANDBOXES
        assert set(status["rejected"]) == set(SANDBOXES[: SANDBOXES.index(picked)])
        assert status["unsandboxed"] is False and "warning" not in status
        for output in (listing, found):  # the denied .env never shows, not even as a name
            assert ".env" not in output["stdout"] + output["stderr"], output
    if picked.startswith("bwrap"):
        assert listing["exit_code"] == 0 and "README.md" in listing["stdout"]


async def test_execute_bash_under_landlock_in_a_hardened_container(repo: Path) -> None:
    params = stdio_params(repo, "REPO_SANDBOX_EXEC_SANDBOX=landlock")
    (result, listing, sub), status = await exec_and_status(params, "wc -l README.md", "ls -la", "ls src")
    assert (result["sandbox"], status["sandbox"], status["sandbox_requested"]) == ("landlock", "landlock", "landlock")
    assert result["stdout"] == "3 README.md\n"
    assert listing["stdout"] == "" and "Permission denied" in listing["stderr"]  # the root holds .env: unlistable
    assert ".env" not in listing["stderr"]
    assert sub["stdout"] == "main.py\n"


@pytest.fixture(scope="module")
def git_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A repository with one commit, a JSON file and a log, readable by the image's non-root user."""
    root = tmp_path_factory.mktemp("git-workspace")
    (root / "src").mkdir()
    (root / "src" / "main.py").write_text("print('hello')\n")
    (root / "data.json").write_text('{"name": "demo", "items": [1, 2, 3]}\n')
    (root / "access.log").write_text("GET /a\nGET /b\nPOST /a\n")
    identity = ["-c", "user.email=t@example.com", "-c", "user.name=T"]
    for args in (["init", "-q", "-b", "main"], ["add", "."], [*identity, "commit", "-q", "-m", "first commit"]):
        subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)
    for path in [root, *root.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return root


EXEC_PROGRAMS = [
    ("git log --oneline", "first commit"),
    ("awk '{print $1}' access.log", "GET\nGET\nPOST\n"),
    ("jq -r .name data.json", "demo\n"),
    ("tree src", "main.py"),
    ("file data.json", "JSON"),
]


async def test_every_default_program_runs_in_the_image(git_repo: Path) -> None:
    """The tool's own example (`git log`) and the programs it advertises run: the image installs them."""
    results, status = await exec_and_status(stdio_params(git_repo), *(command for command, _ in EXEC_PROGRAMS))
    for (command, expected), result in zip(EXEC_PROGRAMS, results, strict=True):
        assert "error" not in result, (command, result)
        assert result["exit_code"] == 0 and expected in result["stdout"], (command, result)
    assert status["missing_programs"] == []


def test_image_runs_as_a_non_root_user_with_workspace_as_root() -> None:
    config = json.loads(podman("image", "inspect", IMAGE).stdout)[0]["Config"]
    assert config["User"] == "10001:10001"
    assert config["WorkingDir"] == "/workspace"
    assert "REPO_SANDBOX_WORKSPACE_ROOT=/workspace" in config["Env"]
    ids = podman("run", "--rm", "--network", "none", *HARDENED, "--entrypoint", "id", IMAGE)
    assert ids.stdout.strip().startswith("uid=10001")


def test_root_filesystem_and_workspace_are_read_only(repo: Path) -> None:
    # (podman's --read-only keeps a small tmpfs on /tmp, /var/tmp and /run; docker's keeps none)
    script = "import pathlib\nfor p in ('/workspace/x', '/opt/repo-sandbox/x', '/etc/x', '/x'):\n"
    script += "    try:\n        pathlib.Path(p).write_text('x'); print('wrote', p)\n    except OSError as e: print(e.errno)\n"
    result = podman(
        "run", "--rm", "--network", "none", *HARDENED, "-v", f"{repo}:/workspace:ro",
        "--entrypoint", "python3", IMAGE, "-c", script,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["30", "30", "30", "30"]  # EROFS everywhere
    assert not (repo / "x").exists()


def test_http_mode_refuses_to_start_without_a_token() -> None:
    result = podman(
        "run", "--rm", "--network", "none", *HARDENED, IMAGE, "serve", "--transport", "http", "--host", "0.0.0.0"
    )
    assert result.returncode == 2
    assert "without a token" in result.stderr


@pytest.fixture(scope="module")
def http_container(repo: Path) -> Iterator[str]:
    run = podman(
        "run", "-d", *HARDENED, "-p", "127.0.0.1::8765", "-e", "REPO_SANDBOX_TOKEN",
        "-v", f"{repo}:/workspace:ro", IMAGE, "serve", "--transport", "http", "--host", "0.0.0.0",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    container = run.stdout.strip()
    try:
        yield container
    finally:
        podman("rm", "-f", container)


def test_http_mode_serves_tools_with_the_token_and_stops_gracefully(http_container: str) -> None:
    port = podman("port", http_container, "8765/tcp").stdout.strip().rsplit(":", 1)[1]
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and "listening on" not in podman("logs", http_container).stderr:
        time.sleep(0.1)

    async def session() -> tuple[int, int, object]:
        async with httpx2.AsyncClient(timeout=10) as bare:
            unauthorized = (await bare.post(f"{url}/mcp", json={})).status_code
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30) as http:
            healthz = (await http.get(f"{url}/healthz")).status_code
            async with Client(streamable_http_client(f"{url}/mcp", http_client=http), mode="auto") as client:
                result = await client.call_tool("search_files", {"pattern": "*.py"})
        return unauthorized, healthz, result.structured_content

    unauthorized, healthz, files = anyio.run(session)
    assert (unauthorized, healthz) == (401, 200)
    assert files == {"files": ["src/main.py"], "total": 1, "truncated": False, "next_offset": None}
    started = time.monotonic()
    assert podman("stop", "-t", "20", http_container).returncode == 0
    assert time.monotonic() - started < 10
    state = json.loads(podman("inspect", http_container).stdout)[0]["State"]
    assert state["ExitCode"] == 0
