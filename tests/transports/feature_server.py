"""A small MCP server whose tools exercise what a transport must carry: progress, elicitation,
cancellation, child processes, and a call that waits for the test's go-ahead.

The repository tools do none of these yet (approvals and exec come from other issues), so the
transports are checked with this server; the repository server itself is checked in test_http.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated

import anyio
from mcp.server.mcpserver import AcceptedElicitation, Context, Elicit, ElicitationResult, MCPServer, Resolve
from pydantic import BaseModel


class Confirm(BaseModel):
    confirm: bool


class NotAsked(BaseModel):
    reason: str


@dataclass
class Probe:
    """What the tools saw, for the tests to assert on."""

    started: anyio.Event = field(default_factory=anyio.Event)
    release: anyio.Event = field(default_factory=anyio.Event)
    child_pids: list[int] = field(default_factory=list[int])


def can_elicit(ctx: Context) -> bool:
    capabilities = ctx.client_capabilities
    return capabilities is not None and capabilities.elicitation is not None


async def ask_user(question: str, ctx: Context) -> Confirm | NotAsked | Elicit[Confirm]:
    if not can_elicit(ctx):
        return NotAsked(reason="client cannot elicit")
    return Elicit(question, Confirm)


def build_feature_server() -> tuple[MCPServer, Probe]:
    server = MCPServer("feature-probe")
    probe = Probe()

    @server.tool()
    async def count_with_progress(steps: int, ctx: Context) -> str:
        for step in range(1, steps + 1):
            await ctx.report_progress(step, steps, f"step {step}")
        return f"counted {steps}"

    @server.tool()
    async def confirm(question: str, answer: Annotated[ElicitationResult[Confirm], Resolve(ask_user)]) -> str:
        if not isinstance(answer, AcceptedElicitation):
            return f"not confirmed: {answer.action}"
        data: object = answer.data  # a resolver's non-marker value (NotAsked) arrives as accepted data
        if isinstance(data, NotAsked):
            return f"not asked: {data.reason}"
        return f"confirmed={answer.data.confirm}"

    @server.tool()
    async def big(kib: int) -> str:
        return "x" * (kib * 1024)

    @server.tool()
    async def wait_for_release() -> str:
        probe.started.set()
        await probe.release.wait()
        return "released"

    @server.tool()
    async def run_child() -> str:
        async with await anyio.open_process(["sleep", "300"]) as process:
            probe.child_pids.append(process.pid)
            probe.started.set()
            await process.wait()
        return "child exited"

    return server, probe
