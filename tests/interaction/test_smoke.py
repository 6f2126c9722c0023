"""The server answers through the real MCP SDK client, in both protocol eras."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from mcp import Client

from repo_sandbox.wiring.assembly import build_server
from repo_sandbox.workspace import Workspace

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["legacy", "auto"])
async def client(request: pytest.FixtureRequest, workspace: Workspace) -> AsyncIterator[Client]:
    async with Client(build_server(workspace), mode=request.param) as c:
        yield c


async def test_tools_list_has_schemas_and_annotations(client: Client) -> None:
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == {"search_files", "read_file", "search_text", "count_lines", "execute_bash"}
    for tool in tools.values():
        assert tool.input_schema["type"] == "object"
        assert tool.output_schema is not None and tool.output_schema["type"] == "object"
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint is (tool.name != "execute_bash")


async def test_read_file_returns_structured_content(client: Client) -> None:
    result = await client.call_tool("read_file", {"path": "src/util.py"})
    assert result.is_error is False
    assert result.structured_content is not None
    assert result.structured_content["content"] == "     1\tdef helper(x):\n     2\t    return x * 2\n"


async def test_read_file_outside_root_returns_graded_error(client: Client) -> None:
    result = await client.call_tool("read_file", {"path": "../outside/secret.txt"})
    assert result.is_error is True
    assert result.structured_content is not None
    error = result.structured_content["error"]
    assert error["code"] == "path_outside_root"
    assert error["category"] == "permission_denied"
    assert error["retryable"] is False


async def test_schema_invalid_input_is_invalid_arguments_naming_field(client: Client) -> None:
    result = await client.call_tool("read_file", {"path": "README.md", "limit": 0})
    assert result.is_error is True
    assert result.structured_content is not None
    assert result.structured_content["error"]["code"] == "invalid_arguments"
    assert result.structured_content["error"]["details"]["field"] == "limit"
