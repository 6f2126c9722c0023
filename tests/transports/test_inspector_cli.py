"""The MCP Inspector CLI (pinned 2.12.0, Node 22) lists and calls tools over stdio and over HTTP with the token."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from harness import TOKEN, Subprocess
from nodetools import INSPECTOR, node22_env

from cache_env import in_test_cache

pytestmark = [pytest.mark.inspector, pytest.mark.e2e]


def inspect(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(INSPECTOR), "--cli", *args], check=False, env=node22_env(), capture_output=True, text=True, timeout=120
    )


@pytest.fixture(scope="module")
def stdio_target(served_repo: Subprocess) -> list[str]:
    return in_test_cache([sys.executable, "-m", "repo_sandbox", "--root", str(served_repo.root)])


def test_inspector_lists_tools_over_stdio(stdio_target: list[str]) -> None:
    result = inspect(*stdio_target, "--method", "tools/list")
    assert result.returncode == 0, result.stderr[-2000:]
    tools = {tool["name"]: tool for tool in json.loads(result.stdout)["tools"]}
    assert set(tools) == {"search_files", "read_file", "search_text", "count_lines", "execute_bash"}
    assert tools["read_file"]["annotations"]["readOnlyHint"] is True


def test_inspector_calls_a_tool_over_stdio(stdio_target: list[str]) -> None:
    result = inspect(
        *stdio_target, "--method", "tools/call", "--tool-name", "search_text", "--tool-arg", "pattern=TODO"
    )
    assert result.returncode == 0, result.stderr[-2000:]
    payload = json.loads(result.stdout)
    assert payload["isError"] is False
    assert payload["structuredContent"]["total_matches"] == 2


def test_inspector_lists_and_calls_tools_over_http_with_the_token(served_repo: Subprocess) -> None:
    auth = ["--header", f"Authorization: Bearer {TOKEN}"]
    listed = inspect(served_repo.mcp_url, *auth, "--method", "tools/list")
    assert listed.returncode == 0, listed.stderr[-2000:]
    assert len(json.loads(listed.stdout)["tools"]) == 5
    called = inspect(
        served_repo.mcp_url, *auth, "--method", "tools/call", "--tool-name", "read_file", "--tool-arg", "path=README.md"
    )
    assert called.returncode == 0, called.stderr[-2000:]
    assert json.loads(called.stdout)["structuredContent"]["content"].startswith("     1\t# Demo")


def test_inspector_graded_error_passes_its_output_schema_validation(served_repo: Subprocess) -> None:
    auth = ["--header", f"Authorization: Bearer {TOKEN}"]
    called = inspect(
        served_repo.mcp_url, *auth, "--method", "tools/call", "--tool-name", "read_file", "--tool-arg", "path=.env"
    )
    assert called.returncode == 5  # 2.12.0 exits 5 on an isError result
    assert json.loads(called.stdout)["structuredContent"]["error"]["code"] == "path_denied"


def test_inspector_without_the_token_is_refused(served_repo: Subprocess) -> None:
    result = inspect(served_repo.mcp_url, "--method", "tools/list")
    assert result.returncode != 0
    assert "tools" not in result.stdout
