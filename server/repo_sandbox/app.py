"""Wire the tools to an MCP server once. Transports (stdio, later HTTP/WebSocket) serve what this builds."""

from __future__ import annotations

import functools
import json
import re
import uuid
import weakref
from collections.abc import Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

import anyio
from mcp.server import MCPServer, NotificationOptions, ServerRequestContext
from mcp.server.connection import NotifyOnlyOutbound
from mcp.server.context import CallNext, HandlerResult
from mcp.server.models import InitializationOptions
from mcp.server.request_state import RequestStateSecurity
from mcp.server.subscriptions import InMemorySubscriptionBus
from mcp.types import (
    CallToolRequestParams,
    CallToolResult,
    InputRequiredResult,
    ListToolsResult,
    NotificationParams,
    PaginatedRequestParams,
    TextContent,
    Tool,
    ToolAnnotations,
)

from repo_sandbox import __version__
from repo_sandbox.roots import RootPolicy, SessionRoots
from repo_sandbox.transports.scope import transport_session_id
from repo_sandbox.workspace import Workspace

if TYPE_CHECKING:
    from repo_sandbox import resources
    from repo_sandbox.config.model import Settings
    from repo_sandbox.handlers import ToolHandlers
    from repo_sandbox.runtime.clock import Clock
    from repo_sandbox.runtime.pipeline import CallOutcome
    from repo_sandbox.tools.registry import ToolSpec

SERVER_NAME = "repo-sandbox"
POLICY_URI = "repo-sandbox://policy"
STATUS_URI = "repo-sandbox://status"

INSTRUCTIONS = """Read-only access to one code repository, behind a policy (path jail, deny-list, size limits).
Paths are relative to the repository root. Find files with search_files, search contents with search_text,
read with read_file (by line range), measure with count_lines; execute_bash runs one allowlisted read-only
command or '|' pipeline (git log/diff/show/blame, sort | uniq -c, jq, ...) in a sandbox, without a shell. Every failure is a JSON error with a
`category` telling you what to do next, a `hint`, and `retryable`. Listing results are paged: when
`truncated` is true, pass `next_offset` as `offset`. A call that keeps failing is blocked for a while
(`circuit_open`): change the approach. Read repo-sandbox://policy for what is allowed and
repo-sandbox://status for this session's budget and blocked calls."""


class SessionIds:
    """A stable random id per client connection.

    The SDK builds a session object per request; legacy-era requests of one connection share its
    `_connection`. 2026-07-28 requests are sessionless by design and each gets its own `Connection`:
    - on a duplex stream (stdio) they share the stream's notify channel (`NotifyOnlyOutbound`);
    - an in-process `Client(server, mode="auto")` dispatches directly; its requests share the direct
      dispatcher's transport context (reached through private attributes, checked by a test);
    - a single-exchange HTTP request has neither: it is a session of its own.
    """

    def __init__(self) -> None:
        self._ids: dict[int, tuple[weakref.ref[object], str]] = {}
        """By object identity (not equality: transport contexts are frozen dataclasses that compare equal)."""

    @staticmethod
    def _stream_of(session: object) -> object:
        connection = getattr(session, "_connection", None) or session
        outbound = getattr(connection, "outbound", None)
        if isinstance(outbound, NotifyOnlyOutbound):
            return outbound
        request_channel = getattr(getattr(session, "_request_outbound", None), "_inner", None)
        if type(request_channel).__name__ == "_DirectDispatchContext":
            return getattr(request_channel, "transport", connection)
        return connection

    def id_for(self, session: object) -> str:
        stream = self._stream_of(session)
        key = id(stream)
        entry = self._ids.get(key)
        if entry is not None and entry[0]() is stream:
            return entry[1]
        new_id = uuid.uuid4().hex[:16]
        try:
            ref = weakref.ref(stream, lambda dead, key=key: self._forget(key, dead))
        except TypeError:  # not weak-referenceable: treat the request as a session of its own
            return new_id
        self._ids[key] = (ref, new_id)
        return new_id

    def _forget(self, key: int, dead: weakref.ref[object]) -> None:
        entry = self._ids.get(key)
        if entry is not None and entry[0] is dead:
            del self._ids[key]


def mcp_tool(spec: ToolSpec, settings: Settings | None = None) -> Tool:
    """The MCP tool definition: description, input/output schemas and annotations; the input schema shows
    the defaults and bounds of the operator's `settings` (None: the built-in ones)."""
    return Tool(
        name=spec.name,
        title=spec.title,
        description=spec.description_for(settings),
        input_schema=spec.input_schema(settings),
        output_schema=spec.output_schema(),
        annotations=ToolAnnotations(  # no title here: the tool's own `title` says it once
            read_only_hint=spec.read_only,
            destructive_hint=spec.destructive,
            idempotent_hint=spec.idempotent,
            open_world_hint=spec.open_world,
        ),
    )


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _without_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {_without_surrogates(k): _without_surrogates(v) for k, v in value.items()}  # pyright: ignore[reportUnknownVariableType]
    if isinstance(value, list):
        return [_without_surrogates(v) for v in value]  # pyright: ignore[reportUnknownVariableType]
    return value


def call_tool_result(outcome: CallOutcome, *, json_text: bool = False) -> CallToolResult:
    """A pipeline outcome as an MCP result: the typed object as structured content, and as text its compact
    rendering for the model (`render`), or with `json_text` (and always for an error) the same object as JSON.

    Lone surrogates (undecodable file-name bytes, or escapes a client sent) cannot be written as UTF-8;
    they would break the transport for every later message, so they are replaced here as a last resort.
    """
    from repo_sandbox.render import result_text

    def text_of(payload: dict[str, Any], to_json: Callable[[], str]) -> str:
        return (
            to_json() if json_text else result_text(outcome.tool, payload, is_error=outcome.is_error, json_text=to_json)
        )

    payload = outcome.payload
    text = text_of(payload, outcome.to_json)
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            payload = _without_surrogates(payload)
            text = text_of(payload, lambda: json.dumps(payload, ensure_ascii=False, separators=(",", ":")))
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=payload,
        is_error=outcome.is_error,
    )


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

    def session_of(ctx: ServerRequestContext[Any]) -> str:
        """One id per client session: the transport's (HTTP session, WebSocket) when it has one, else the connection's."""
        return transport_session_id(ctx.request) or session_ids.id_for(ctx.session)

    @functools.cache
    def tools() -> ToolHandlers:
        from repo_sandbox.handlers import ToolHandlers

        return ToolHandlers(workspace, clock, bus, session_of, session_roots)

    server: MCPServer[Any] = MCPServer(
        SERVER_NAME,
        version=__version__,
        instructions=INSTRUCTIONS,
        log_level="WARNING",
        subscriptions=bus,
        middleware=[_remember_request, note_roots_capability],
        request_state_security=request_state_security,
    )

    async def list_tools(ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None) -> ListToolsResult:
        return await tools().list_tools(ctx)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: CallToolRequestParams
    ) -> CallToolResult | InputRequiredResult:
        return await tools().call_tool(ctx, params)

    _add_resources(server, workspace, tools, session_of, session_roots)
    lowlevel = server._lowlevel_server  # pyright: ignore[reportPrivateUsage]  # the SDK's documented escape hatch

    async def roots_changed(ctx: ServerRequestContext[Any], params: NotificationParams) -> None:
        session_roots.forget(session_of(ctx))

    lowlevel.add_notification_handler("notifications/roots/list_changed", NotificationParams, roots_changed)
    lowlevel.add_request_handler("tools/list", PaginatedRequestParams, list_tools)
    lowlevel.add_request_handler("tools/call", CallToolRequestParams, call_tool)
    lowlevel.get_tool_input_schema = lambda name: tools().input_schemas.get(name)  # noqa: PLW0108  # built lazily
    # MCPServer advertises listChanged:false to handshake-era clients; our listing does change (circuits).
    create_options = lowlevel.create_initialization_options

    def with_tools_changed(
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        options = notification_options or NotificationOptions(tools_changed=True)
        return create_options(options, experimental_capabilities, extensions)

    lowlevel.create_initialization_options = with_tools_changed
    return server


def _add_resources(
    server: MCPServer[Any],
    workspace: Workspace,
    tools: Callable[[], ToolHandlers],
    session_of: Callable[[ServerRequestContext[Any]], str],
    session_roots: SessionRoots,
) -> None:
    def caller() -> resources.Caller:
        from repo_sandbox import resources
        from repo_sandbox.runtime.elicitation import can_ask_user

        ctx = _current_request.get()
        if ctx is None:
            return resources.Caller(session_id="local", can_elicit=False)
        return resources.Caller(session_id=session_of(ctx), can_elicit=can_ask_user(ctx.session, ctx.protocol_version))

    @server.resource(POLICY_URI, name="policy", mime_type="application/json")
    async def policy() -> str:
        """What the operator allows (tools, paths, limits, exec, guard, budget), so the agent need not probe."""
        from repo_sandbox import resources

        exec_entry = await anyio.to_thread.run_sync(lambda: resources.exec_report(workspace, programs=True))
        return resources.to_json(resources.policy_document(workspace, caller(), exec_entry))

    @server.resource(STATUS_URI, name="status", mime_type="application/json")
    async def status() -> str:
        """This session's circuits, budget and per-tool calls/errors/time, with the limits and the exec sandbox."""
        from repo_sandbox import resources

        exec_entry = await anyio.to_thread.run_sync(resources.exec_report, workspace)
        who = caller()
        document = resources.status_document(workspace, tools().loop, who, exec_entry)
        return resources.to_json({**document, "roots": session_roots.describe(who.session_id)})


def tools_listing(settings: Settings | None = None) -> str:
    """The tools with their schemas and annotations, as JSON (for `repo-sandbox tools`): every tool a client
    that can elicit is offered, with the defaults and bounds of the operator's `settings`."""
    from repo_sandbox.tools.registry import TOOLS

    return json.dumps(
        [
            mcp_tool(spec, settings).model_dump(mode="json", by_alias=True, exclude_none=True)
            for spec in TOOLS
            if spec.offered(settings, can_elicit=True)
        ],
        indent=2,
    )
