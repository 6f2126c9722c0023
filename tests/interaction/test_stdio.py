"""The one stdio subprocess test: the installed `repo-sandbox` spawned by the SDK client, as MCP clients do."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest
from e2e_tree import build_tree, call_error, call_ok, write
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from cache_env import default_client_env

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

REPO_SANDBOX = str(Path(sys.executable).with_name("repo-sandbox"))


async def test_stdio_server_lists_tools_answers_each_tool_and_grades_errors(tmp_path: Path) -> None:
    root = build_tree(tmp_path / "repo")
    write(root / "docs" / "bad\udcff.txt", "TODO\n")  # a name that is not UTF-8 must not break the stream
    params = StdioServerParameters(command=REPO_SANDBOX, args=["--root", str(root)], env=default_client_env())
    with anyio.fail_after(60):
        async with Client(params, mode="legacy") as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert set(tools) == {"search_files", "read_file", "search_text", "count_lines", "execute_bash"}
            assert all(tool.output_schema and tool.annotations for tool in tools.values())

            listed = await call_ok(client, "search_files", {"pattern": "*", "path": "docs"})
            assert listed["files"] == ["docs/café.md", "docs/emoji_🎉.txt", "docs/guide.md", "docs/日本語.txt"]
            read = await call_ok(client, "read_file", {"path": "docs/日本語.txt"})
            assert read["content"] == "     1\tこんにちは TODO 世界\n"
            found = await call_ok(client, "search_text", {"pattern": "TODO", "path": "docs"})
            assert [m["path"] for m in found["matches"]] == listed["files"]
            counted = await call_ok(client, "count_lines", {"path": "docs"})
            assert (counted["files"], counted["total_lines"]) == (4, 5)

            error = await call_error(client, "read_file", {"path": "../../etc/passwd"})
            assert (error["code"], error["category"], error["retryable"]) == (
                "path_outside_root",
                "permission_denied",
                False,
            )
            assert (await call_ok(client, "read_file", {"path": "README.md"}))["total_lines"] == 3
