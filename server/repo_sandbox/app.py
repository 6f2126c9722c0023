"""Wire the tools to an MCP server once. Transports (stdio, later HTTP/WebSocket) serve what this builds."""

from __future__ import annotations

import json
import uuid
import weakref
from typing import Any

from mcp.server import MCPServer, ServerRequestContext
from mcp.server.request_state import RequestStateSecurity
from mcp.types import (
    CallToolRequestParams,
    CallToolResult,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
    Tool,
    ToolAnnotations,
)

from repo_sandbox import __version__
from repo_sandbox.runtime.assembly import build_pipeline
from repo_sandbox.runtime.pipeline import CallContext, CallOutcome
from repo_sandbox.tools.registry import TOOLS, TOOLS_BY_NAME, ToolSpec
from repo_sandbox.transports.scope import transport_session_id
from repo_sandbox.workspace import Workspace

SERVER_NAME = "repo-sandbox"

INSTRUCTIONS = """Read-only access to one code repository, behind a policy (path jail, deny-list, size limits).
Paths are relative to the repository root. Find files with search_files, search contents with search_text,
read with read_file (by line range), measure with count_lines. Every failure is a JSON error with a
`category` telling you what to do next, a `hint`, and `retryable`. Listing results are paged: when
`truncated` is true, pass `next_offset` as `offset`."""


class SessionIds:
    """A stable random id per client connection.

    The SDK builds a session object per request; legacy-era requests of one connection share its
    `_connection`. (2026-07-28 requests are sessionless by design: each may arrive on its own connection.)
    """

    def __init__(self) -> None:
        self._ids: weakref.WeakKeyDictionary[object, str] = weakref.WeakKeyDictionary()

    def id_for(self, session: object) -> str:
        session = getattr(session, "_connection", None) or session
        try:
            return self._ids[session]
        except KeyError:
            new_id = uuid.uuid4().hex[:16]
            self._ids[session] = new_id
            return new_id
        except TypeError:  # not weak-referenceable
            return "unknown"


def mcp_tool(spec: ToolSpec) -> Tool:
    """The MCP tool definition: description, input/output schemas and annotations."""
    return Tool(
        name=spec.name,
        title=spec.title,
        description=spec.description,
        input_schema=spec.input_schema(),
        output_schema=spec.output_schema(),
        annotations=ToolAnnotations(
            title=spec.title,
            read_only_hint=spec.read_only,
            destructive_hint=spec.destructive,
            idempotent_hint=spec.idempotent,
            open_world_hint=spec.open_world,
        ),
    )


def call_tool_result(outcome: CallOutcome) -> CallToolResult:
    """A pipeline outcome as an MCP result: JSON text plus the same object as structured content."""
    return CallToolResult(
        content=[TextContent(type="text", text=outcome.to_json())],
        structured_content=outcome.payload,
        is_error=outcome.is_error,
    )


def build_server(workspace: Workspace, *, request_state_security: RequestStateSecurity | None = None) -> MCPServer[Any]:
    """An MCP server exposing the tools over `workspace`.

    `request_state_security` carries the key shared by replicas (2026-07-28 request state); None: per process.
    """
    pipeline = build_pipeline(workspace)
    session_ids = SessionIds()
    tools = [mcp_tool(spec) for spec in TOOLS]
    schemas = {tool.name: tool.input_schema for tool in tools}
    server: MCPServer[Any] = MCPServer(
        SERVER_NAME,
        version=__version__,
        instructions=INSTRUCTIONS,
        log_level="WARNING",
        request_state_security=request_state_security,
    )

    async def list_tools(ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None) -> ListToolsResult:
        return ListToolsResult(tools=tools)

    async def call_tool(ctx: ServerRequestContext[Any], params: CallToolRequestParams) -> CallToolResult:
        context = CallContext(
            session_id=transport_session_id(ctx.request) or session_ids.id_for(ctx.session),
            request_id=None if ctx.request_id is None else str(ctx.request_id),
            report_progress=ctx.session.report_progress,
        )
        return call_tool_result(await pipeline.call(params.name, params.arguments, context))

    lowlevel = server._lowlevel_server  # pyright: ignore[reportPrivateUsage]  # the SDK's documented escape hatch
    lowlevel.add_request_handler("tools/list", PaginatedRequestParams, list_tools)
    lowlevel.add_request_handler("tools/call", CallToolRequestParams, call_tool)
    lowlevel.get_tool_input_schema = schemas.get
    return server


def tools_listing() -> str:
    """The tools with their schemas and annotations, as JSON (for `repo-sandbox tools`)."""
    return json.dumps(
        [
            mcp_tool(TOOLS_BY_NAME[spec.name]).model_dump(mode="json", by_alias=True, exclude_none=True)
            for spec in TOOLS
        ],
        indent=2,
    )
