"""execute_bash through the real MCP SDK client, in process, in both protocol eras."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from exec_support import auto_os_layer, git, write
from repo_sandbox.wiring.assembly import build_server
from repo_sandbox.workspace import Workspace

pytestmark = pytest.mark.anyio


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    write(root / "README.md", "one\ntwo\nthree\n")
    write(root / ".env", "TOKEN=MCP-SECRET\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "-c", "user.email=t@example.com", "-c", "user.name=T", "add", "README.md")
    git(root, "-c", "user.email=t@example.com", "-c", "user.name=T", "commit", "-q", "-m", "start here")
    return root


@pytest.fixture
def ws(project: Path, make_workspace: Any) -> Workspace:
    return make_workspace(project)


@pytest.fixture(params=["legacy", "auto"])
async def client(request: pytest.FixtureRequest, ws: Workspace) -> AsyncIterator[Client]:
    async with Client(build_server(ws), mode=request.param) as c:
        yield c


async def test_execute_bash_is_listed_with_honest_annotations(client: Client) -> None:
    tools = {t.name: t for t in (await client.list_tools()).tools}
    tool = tools["execute_bash"]
    assert tool.annotations is not None
    assert tool.annotations.read_only_hint is False
    assert tool.annotations.destructive_hint is False
    assert tool.annotations.open_world_hint is False
    assert "search_text" in (tool.description or "")
    assert set(tool.input_schema["properties"]) == {"command", "timeout", "cwd"}
    assert tool.output_schema is not None and "anyOf" in tool.output_schema


async def test_pipeline_result_is_structured(client: Client) -> None:
    with anyio.fail_after(20):
        result = await client.call_tool("execute_bash", {"command": "git log --format=%s | wc -l"})
    assert result.is_error is False
    assert result.structured_content is not None
    content = result.structured_content
    assert content["exit_code"] == 0
    assert content["stdout"].strip() == "1"
    assert content["sandbox"] == auto_os_layer()
    assert set(content) == {
        "exit_code", "stdout", "stderr", "stdout_truncated", "stderr_truncated", "duration_ms", "sandbox", "steps",
        "redactions",
    }  # fmt: skip
    assert content["steps"] is None  # a pipeline, not a list


@pytest.mark.parametrize(
    ("command", "code", "category"),
    [
        ("cat README.md & cat .env", "command_parse_error", "invalid_argument"),
        ("cat README.md; cat .env", "path_denied", "permission_denied"),
        ("cat .env", "path_denied", "permission_denied"),
        ("sort -o out README.md", "argument_not_allowed", "permission_denied"),
        ("bash -c id", "command_not_allowed", "permission_denied"),
    ],
)
async def test_refusals_are_graded_errors(client: Client, command: str, code: str, category: str) -> None:
    with anyio.fail_after(20):
        result = await client.call_tool("execute_bash", {"command": command})
    assert result.is_error is True
    assert result.structured_content is not None
    error = result.structured_content["error"]
    assert (error["code"], error["category"], error["retryable"]) == (code, category, False)
    assert "MCP-SECRET" not in str(result.structured_content)


@pytest.mark.slow
async def test_timeout_error_carries_partial_output(client: Client) -> None:
    command = "awk 'BEGIN{print \"started\"; fflush(); while (1) {}}'"
    with anyio.fail_after(20):
        result = await client.call_tool("execute_bash", {"command": command, "timeout": 1})
    assert result.is_error is True
    assert result.structured_content is not None
    error = result.structured_content["error"]
    assert (error["code"], error["category"]) == ("timeout", "limit_exceeded")
    assert error["details"]["stdout"] == "started\n"
    assert (error["details"]["stdout_truncated"], error["details"]["stderr_truncated"]) == (False, False)


@pytest.mark.slow
async def test_timeout_error_says_when_its_partial_output_was_cut(client: Client) -> None:
    missing = " ".join(f"missing-{n:02d}-{'x' * 120}" for n in range(40))  # ~6 KB of "No such file" on stderr
    command = (
        f"cat {missing} | awk 'BEGIN{{for (i = 0; i < 3000; i++) print i, \"{'y' * 40}\"; fflush(); while (1) {{}}}}'"
    )
    with anyio.fail_after(20):
        result = await client.call_tool("execute_bash", {"command": command, "timeout": 1})
    assert result.structured_content is not None
    error = result.structured_content["error"]
    assert error["code"] == "timeout"
    details = error["details"]
    assert (details["stdout_truncated"], details["stderr_truncated"]) == (True, True)
    assert details["stdout"].startswith("0 y") and details["stdout"].endswith(f"2999 {'y' * 40}\n")
    assert details["stderr"].startswith("cat: missing-00-") and "omitted by repo-sandbox" in details["stderr"]


@pytest.mark.e2e
def test_cli_call_runs_execute_bash(project: Path) -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "repo_sandbox", "call", "--root", str(project), "execute_bash",
         '{"command": "sed -n 2p README.md"}'],
        capture_output=True, check=True, timeout=60,
    )  # fmt: skip
    assert b'"stdout": "two\\n"' in completed.stdout


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_output_of_control_characters_stays_within_the_smallest_output_limit(
    project: Path, make_workspace: Any, mode: str
) -> None:
    """Each control character costs 6 bytes once JSON-escaped: both streams are cut to fit, and say so."""
    ws = make_workspace(project, limits={"max_output_bytes": 4096})
    command = """jq -rn '("\\u0001" * 100000), ("\\u0002" * 100000 | error)'"""
    async with Client(build_server(ws), mode=mode) as client:
        with anyio.fail_after(20):
            result = await client.call_tool("execute_bash", {"command": command})
    assert result.structured_content is not None
    content = result.structured_content
    assert len(json.dumps(content, ensure_ascii=False, separators=(",", ":")).encode()) <= 4096
    assert (content["exit_code"], content["stdout_truncated"], content["stderr_truncated"]) == (5, True, True)
    assert content["stdout"].startswith("\x01") and "omitted by repo-sandbox" in content["stdout"]
    assert content["stderr"].startswith("jq: error") and "omitted by repo-sandbox" in content["stderr"]
