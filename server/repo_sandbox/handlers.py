"""The tools/list and tools/call handlers and the state they share: `app.build_server` loads this on first use.

Everything a tool call needs is imported here (the tool table and its models, the stages, elicitation), so
that answering `initialize` does not wait for it.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

from mcp.server import ServerRequestContext
from mcp.server.subscriptions import InMemorySubscriptionBus, ToolsListChanged
from mcp.types import CallToolRequestParams, CallToolResult, InputRequiredResult, ListToolsResult, Tool

from repo_sandbox.app import call_tool_result, mcp_tool
from repo_sandbox.engine import select
from repo_sandbox.runtime.approvals import APPROVE, make_approve
from repo_sandbox.runtime.assembly import AgentLoopState, build_pipeline
from repo_sandbox.runtime.clock import Clock
from repo_sandbox.runtime.elicitation import ELICIT, InputRequired, can_ask_user, elicitor_for, uses_input_required
from repo_sandbox.runtime.guard import TOOLS_CHANGED
from repo_sandbox.runtime.pipeline import CallContext
from repo_sandbox.tools.registry import TOOLS, TOOLS_BY_NAME
from repo_sandbox.workspace import Workspace


class ToolHandlers:
    """The tool listing and tool calls of one server: the guard rails (`loop`) and the call pipeline."""

    def __init__(
        self,
        workspace: Workspace,
        clock: Clock | None,
        bus: InMemorySubscriptionBus,
        session_of: Callable[[ServerRequestContext[Any]], str],
    ) -> None:
        self.workspace = workspace
        self.loop = AgentLoopState.from_workspace(workspace, clock)
        self.pipeline = build_pipeline(workspace, self.loop)
        self._bus = bus
        self._session_of = session_of
        self._prepared = False

    @functools.cached_property
    def definitions(self) -> list[Tool]:
        return [mcp_tool(spec, self.workspace.settings) for spec in TOOLS]

    @functools.cached_property
    def input_schemas(self) -> dict[str, dict[str, Any]]:
        return {tool.name: tool.input_schema for tool in self.definitions}

    async def list_tools(self, ctx: ServerRequestContext[Any]) -> ListToolsResult:
        """The tools this client may use, each blocked circuit noted in its tool's description."""
        if not self._prepared:  # calls follow a listing: the search engine gets ready meanwhile
            self._prepared = True
            threading.Thread(
                target=select.prepare, args=(self.workspace,), name="repo-sandbox-prepare", daemon=True
            ).start()
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

        extras: dict[str, Any] = {TOOLS_CHANGED: tools_changed}
        elicit = elicitor_for(
            ctx.session,
            ctx.protocol_version,
            ctx.request_id,
            request_state=params.request_state,
            input_responses=params.input_responses,
            ledger=self.loop.nonces,
        )
        if elicit is not None:
            extras[ELICIT] = elicit
            extras[APPROVE] = make_approve(elicit)
        context = CallContext(
            session_id=self._session_of(ctx),
            request_id=None if ctx.request_id is None else str(ctx.request_id),
            report_progress=ctx.session.report_progress,
            extras=extras,
        )
        try:
            return call_tool_result(await self.pipeline.call(params.name, params.arguments, context))
        except InputRequired as pause:
            return InputRequiredResult(input_requests=pause.requests, request_state=pause.state)
