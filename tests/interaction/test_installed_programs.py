"""execute_bash's description, the policy resource and a refused command's details name only the programs that
are installed here; the status resource names the allowed ones that are missing (a container without git, a
host without jq). Through the real SDK client, in process, in both protocol eras."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.types import TextResourceContents

from repo_sandbox.exec.installed import binary_of
from repo_sandbox.exec.sandbox import installed
from repo_sandbox.wiring.assembly import build_server
from repo_sandbox.wiring.identity import POLICY_URI, STATUS_URI

pytestmark = pytest.mark.anyio

ABSENT = "repo-sandbox-no-such-program"
EXEC = {
    "allow": ["cat", "awk", "git", ABSENT],
    "rules": {ABSENT: {"any_arguments": True}},
}


async def resource(client: Client, uri: str) -> dict[str, Any]:
    contents = (await client.read_resource(uri)).contents[0]
    assert isinstance(contents, TextResourceContents)
    return json.loads(contents.text)


def listed_programs(description: str) -> list[str]:
    match = re.search(
        r"run \(repo-sandbox://policy\): (.*?)(?: and the read-only git sub-commands)?\.", description, re.DOTALL
    )
    assert match, description
    return match.group(1).split()


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_only_installed_programs_are_offered_and_the_missing_are_named(
    tmp_path: Path, make_workspace: Any, mode: str
) -> None:
    (tmp_path / "a.txt").write_text("hello\n")
    ws = make_workspace(tmp_path, exec=EXEC)
    async with Client(build_server(ws), mode=mode) as client:
        tool = {t.name: t for t in (await client.list_tools()).tools}["execute_bash"]
        policy = await resource(client, POLICY_URI)
        status = await resource(client, STATUS_URI)
        refused = await client.call_tool("execute_bash", {"command": "curl http://example.com"})
        missing = await client.call_tool("execute_bash", {"command": f"{ABSENT} x"})
    description = tool.description or ""
    assert listed_programs(description) == ["awk", "cat"]
    assert "git sub-commands" in description
    assert ABSENT not in description
    assert sorted(policy["exec"]["programs"]) == ["awk", "cat", "git"]
    assert status["exec"]["missing_programs"] == [ABSENT]
    for result in (refused, missing):
        assert result.is_error and isinstance(result.structured_content, dict)
        error = result.structured_content["error"]
        assert error["code"] == "command_not_allowed"
        assert error["details"]["allowed_programs"] == "awk cat git"
        assert "allowed_programs" in error["hint"]


async def test_the_default_description_names_only_programs_installed_on_this_host(
    tmp_path: Path, make_workspace: Any
) -> None:
    async with Client(build_server(make_workspace(tmp_path)), mode="legacy") as client:
        tool = {t.name: t for t in (await client.list_tools()).tools}["execute_bash"]
    names = listed_programs(tool.description or "")
    assert names, tool.description
    assert [name for name in names if installed(binary_of(name)) is None] == []
