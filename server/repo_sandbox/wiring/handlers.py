"""The tools/list and tools/call handlers and the state they share: `assembly.build_server` loads this on first use.

Everything a tool call needs is imported here (the tool table and its models, the stages, elicitation), so
that answering `initialize` does not wait for it.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Awaitable, Callable
from typing import Any

from mcp.server import ServerRequestContext
from mcp.server.subscriptions import InMemorySubscriptionBus, ToolsListChanged
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp.types import (
    CallToolRequestParams,
    CallToolResult,
    InputRequiredResult,
    ListRootsResult,
    ListToolsResult,
    Tool,
)

from repo_sandbox.calls import CallContext
from repo_sandbox.errors import SandboxFailedError
from repo_sandbox.roots import SessionRoots
from repo_sandbox.runtime.approvals import make_approve
from repo_sandbox.runtime.assembly import AgentLoopState, build_pipeline
from repo_sandbox.runtime.clock import Clock
from repo_sandbox.runtime.elicitation import InputRequired, can_ask_user, elicitor_for, uses_input_required
from repo_sandbox.runtime.pipeline import CallPipeline, ToolCall
from repo_sandbox.tools.registry import TOOLS, TOOLS_BY_NAME
from repo_sandbox.wiring.convert import call_tool_result, mcp_tool
from repo_sandbox.workspace import Workspace


class ToolHandlers:
    """The tool listing and tool calls of one server: the guard rails (`loop`) and the call pipeline."""

    def __init__(
        self,
        workspace: Workspace,
        clock: Clock | None,
        bus: InMemorySubscriptionBus,
        session_of: Callable[[ServerRequestContext[Any]], str],
        roots: SessionRoots | None = None,
        prepare: Callable[[], None] = lambda: None,
    ) -> None:
        """`prepare`: gets the search engine ready in the background (idempotent)."""
        self.workspace = workspace
        self.loop = AgentLoopState.from_workspace(workspace, clock)
        self.pipeline = build_pipeline(workspace, TOOLS, self.loop)
        self.roots = roots
        self._pipelines: dict[int, CallPipeline] = {id(workspace): self.pipeline}
        """One pipeline per served workspace (client roots), all sharing the session state of `loop`."""
        self._bus = bus
        self._session_of = session_of
        self._prepare = prepare

    def _pipeline(self, workspace: Workspace) -> CallPipeline:
        pipeline = self._pipelines.get(id(workspace))
        if pipeline is None:
            pipeline = self._pipelines[id(workspace)] = build_pipeline(workspace, TOOLS, self.loop)
        return pipeline

    @functools.cached_property
    def definitions(self) -> list[Tool]:
        return [mcp_tool(spec, self.workspace.settings) for spec in TOOLS]

    @functools.cached_property
    def input_schemas(self) -> dict[str, dict[str, Any]]:
        return {tool.name: tool.input_schema for tool in self.definitions}

    async def list_tools(self, ctx: ServerRequestContext[Any]) -> ListToolsResult:
        """The tools this client may use, each blocked circuit noted in its tool's description."""
        self._prepare()  # normally started by `initialize` already (`wiring.preparation`)
        can_elicit = can_ask_user(ctx.session, ctx.protocol_version)
        notes = self.loop.guard.blocked_descriptions(self._session_of(ctx))
        listed: list[Tool] = []
        for tool in self.definitions:
            if not TOOLS_BY_NAME[tool.name].offered(self.workspace.settings, can_elicit=can_elicit):
                continue
            marked = "\n\n".join([tool.description or "", *notes[tool.name]]) if tool.name in notes else None
            listed.append(tool if marked is None else tool.model_copy(update={"description": marked}))
        return ListToolsResult(tools=listed)

    async def call_tool(
        self, ctx: ServerRequestContext[Any], params: CallToolRequestParams
    ) -> CallToolResult | InputRequiredResult:
        """One call through the pipeline, with what this transport can do for it (progress, elicitation)."""

        async def tools_changed() -> None:
            if uses_input_required(ctx.protocol_version):
                await self._bus.publish(ToolsListChanged())
            else:
                await ctx.session.send_tool_list_changed()

        elicit = elicitor_for(
            ctx.session,
            ctx.protocol_version,
            ctx.request_id,
            request_state=params.request_state,
            input_responses=params.input_responses,
            ledger=self.loop.nonces,
        )
        session_id = self._session_of(ctx)
        pipeline = self.pipeline
        if self.roots is not None:
            root = await self.roots.for_session(session_id, roots_asker(ctx))
            if root.workspace is None:
                refusal = SandboxFailedError(
                    root.error or "No root to serve.",
                    hint="Ask the user to open a folder in the client, or to start the server with --root.",
                )
                return call_tool_result(
                    ToolCall(params.name, params.arguments, CallContext(session_id)).failed(refusal)
                )
            pipeline = self._pipeline(root.workspace)
        context = CallContext(
            session_id=session_id,
            request_id=None if ctx.request_id is None else str(ctx.request_id),
            report_progress=ctx.session.report_progress,
            elicit=elicit,
            approve=None if elicit is None else make_approve(elicit),
            tools_changed=tools_changed,
        )
        try:
            outcome = await pipeline.call(params.name, params.arguments, context)
            return call_tool_result(outcome, json_text=self.workspace.settings.server.result_text == "json")
        except InputRequired as pause:
            return InputRequiredResult(input_requests=pause.requests, request_state=pause.state)


def roots_asker(ctx: ServerRequestContext[Any]) -> Callable[[], Awaitable[ListRootsResult]] | None:
    """How to ask this client for its roots (`roots/list`): None when it declared no roots or cannot be asked
    (2026-07-28 removed roots; a request without a back-channel cannot send one)."""
    capabilities = ctx.session.client_capabilities
    if capabilities is None or capabilities.roots is None or uses_input_required(ctx.protocol_version):
        return None
    if not ctx.session.can_send_request:
        return None

    async def ask() -> ListRootsResult:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)  # deprecated in 2026-07-28, alive before it
            pending = ctx.session.list_roots()  # pyright: ignore[reportDeprecated]
        return await pending

    return ask
