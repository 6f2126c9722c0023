"""Assemble the MCP server once: tools, resources and middleware over a workspace. Transports (stdio, HTTP,
WebSocket) serve what this builds.

Dependencies point one way: this module loads `handlers` and `resources` (on first use), never the reverse.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

import anyio
from mcp.server import MCPServer, ServerRequestContext
from mcp.server.context import CallNext, HandlerResult
from mcp.server.request_state import RequestStateSecurity
from mcp.server.subscriptions import InMemorySubscriptionBus
from mcp.types import (
    CallToolRequestParams,
    CallToolResult,
    InputRequiredResult,
    ListToolsResult,
    NotificationParams,
    PaginatedRequestParams,
)

from repo_sandbox import __version__
from repo_sandbox.roots import RootPolicy, SessionRoots
from repo_sandbox.wiring import sdk_adapter
from repo_sandbox.wiring.identity import INSTRUCTIONS, POLICY_URI, SERVER_NAME, STATUS_URI
from repo_sandbox.wiring.preparation import Preparation
from repo_sandbox.wiring.session_ids import SessionIds
from repo_sandbox.workspace import Workspace

if TYPE_CHECKING:
    from repo_sandbox.runtime.clock import Clock
    from repo_sandbox.wiring import resources
    from repo_sandbox.wiring.handlers import ToolHandlers


_current_request: ContextVar[ServerRequestContext[Any] | None] = ContextVar("repo_sandbox_request", default=None)
"""The request being served, for handlers the SDK calls without it (static resources)."""


async def _remember_request(ctx: ServerRequestContext[Any], call_next: CallNext) -> HandlerResult:
    token = _current_request.set(ctx)
    try:
        return await call_next(ctx)
    finally:
        _current_request.reset(token)


def build_server(
    workspace: Workspace,
    *,
    clock: Clock | None = None,
    request_state_security: RequestStateSecurity | None = None,
    roots: RootPolicy | None = None,
) -> MCPServer[Any]:
    """An MCP server exposing the tools over `workspace`.

    `clock` drives the guard rails (tests pass a fake); `request_state_security` carries the key shared by
    replicas (2026-07-28 request state), None: a key per process. The tool machinery (`handlers`) is built
    on first use, not before `initialize`: a client that spawns the server waits for that answer.
    `roots`: how the client's MCP roots count (`repo_sandbox.roots`); None: `workspace` is the operator's
    root, which they may only narrow.
    """
    session_ids = SessionIds()
    bus = InMemorySubscriptionBus()
    root_policy = roots or RootPolicy("--root/config")
    session_roots = SessionRoots(workspace, root_policy)

    async def note_roots_capability(ctx: ServerRequestContext[Any], call_next: CallNext) -> HandlerResult:
        capabilities = (ctx.params or {}).get("capabilities") if ctx.method == "initialize" else None
        if isinstance(capabilities, dict) and capabilities.get("roots") is not None:  # pyright: ignore[reportUnknownMemberType]
            root_policy.client_declared_roots.set()
        return await call_next(ctx)

    preparation = Preparation(workspace)

    async def prepare_once_initialized(ctx: ServerRequestContext[Any], call_next: CallNext) -> HandlerResult:
        result = await call_next(ctx)
        if ctx.method == "initialize":
            preparation.start()
        return result

    session_of = session_ids.session_of

    @functools.cache
    def tools() -> ToolHandlers:
        from repo_sandbox.wiring.handlers import ToolHandlers

        return ToolHandlers(workspace, clock, bus, session_of, session_roots, preparation.start)

    server: MCPServer[Any] = MCPServer(
        SERVER_NAME,
        version=__version__,
        instructions=INSTRUCTIONS,
        log_level="WARNING",
        subscriptions=bus,
        middleware=[_remember_request, note_roots_capability, prepare_once_initialized],
        request_state_security=request_state_security,
    )

    async def list_tools(ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None) -> ListToolsResult:
        return await tools().list_tools(ctx)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: CallToolRequestParams
    ) -> CallToolResult | InputRequiredResult:
        return await tools().call_tool(ctx, params)

    _add_resources(server, workspace, tools, session_of, session_roots)
    lowlevel = sdk_adapter.lowlevel_server(server)

    async def roots_changed(ctx: ServerRequestContext[Any], params: NotificationParams) -> None:
        session_roots.forget(session_of(ctx))

    lowlevel.add_notification_handler("notifications/roots/list_changed", NotificationParams, roots_changed)
    lowlevel.add_request_handler("tools/list", PaginatedRequestParams, list_tools)
    lowlevel.add_request_handler("tools/call", CallToolRequestParams, call_tool)
    lowlevel.get_tool_input_schema = lambda name: tools().input_schemas.get(name)  # noqa: PLW0108  # built lazily
    # MCPServer advertises listChanged:false to handshake-era clients; our listing does change (circuits).
    sdk_adapter.advertise_tools_changed(server)
    return server


def _add_resources(
    server: MCPServer[Any],
    workspace: Workspace,
    tools: Callable[[], ToolHandlers],
    session_of: Callable[[ServerRequestContext[Any]], str],
    session_roots: SessionRoots,
) -> None:
    def caller() -> resources.Caller:
        from repo_sandbox.runtime.elicitation import can_ask_user
        from repo_sandbox.wiring import resources

        ctx = _current_request.get()
        if ctx is None:
            return resources.Caller(session_id="local", can_elicit=False)
        return resources.Caller(session_id=session_of(ctx), can_elicit=can_ask_user(ctx.session, ctx.protocol_version))

    @server.resource(POLICY_URI, name="policy", mime_type="application/json")
    async def policy() -> str:
        """What the operator allows (tools, paths, limits, exec, guard, budget), so the agent need not probe."""
        from repo_sandbox.wiring import resources

        exec_entry = await anyio.to_thread.run_sync(lambda: resources.exec_report(workspace, programs=True))
        return resources.to_json(resources.policy_document(workspace, caller(), exec_entry))

    @server.resource(STATUS_URI, name="status", mime_type="application/json")
    async def status() -> str:
        """This session's circuits, budget and per-tool calls/errors/time, with the limits and the exec sandbox."""
        from repo_sandbox.wiring import resources

        exec_entry = await anyio.to_thread.run_sync(resources.exec_report, workspace)
        who = caller()
        document = resources.status_document(workspace, tools().loop, who, exec_entry)
        return resources.to_json({**document, "roots": session_roots.describe(who.session_id)})
