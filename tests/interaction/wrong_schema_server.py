"""A deliberately wrong MCP server for the Inspector's negative control: its graded error does not match
the tool's output schema (which admits only the success shape), so a validating client must reject it."""

from __future__ import annotations

from typing import Any

import anyio
from mcp.server import MCPServer, ServerRequestContext
from mcp.types import CallToolRequestParams, CallToolResult, ListToolsResult, PaginatedRequestParams, TextContent, Tool

from repo_sandbox.wiring import sdk_adapter

SUCCESS_ONLY = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}


def main() -> None:
    server: MCPServer[Any] = MCPServer("bad-schema")

    async def list_tools(ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None) -> ListToolsResult:
        return ListToolsResult(
            tools=[Tool(name="read_file", input_schema={"type": "object"}, output_schema=SUCCESS_ONLY)]
        )

    async def call_tool(ctx: ServerRequestContext[Any], params: CallToolRequestParams) -> CallToolResult:
        error = {"error": {"code": "not_found", "message": "no such file"}}
        return CallToolResult(
            content=[TextContent(type="text", text="no such file")], structured_content=error, is_error=True
        )

    low = sdk_adapter.lowlevel_server(server)
    low.add_request_handler("tools/list", PaginatedRequestParams, list_tools)
    low.add_request_handler("tools/call", CallToolRequestParams, call_tool)
    anyio.run(server.run_stdio_async)


if __name__ == "__main__":
    main()
