"""Progress, elicitation and cancellation travel over both network transports, in both protocol eras."""

from __future__ import annotations

import os
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from feature_server import build_feature_server
from harness import mcp_client, serve_in_process, wait_until
from mcp import MCPError
from mcp.client.context import ClientRequestContext
from mcp.types import ElicitRequestParams, ElicitResult, TextContent

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

TRANSPORTS_AND_ERAS = [
    pytest.param("http", "legacy", id="http-2025-11-25"),
    pytest.param("http", "auto", id="http-2026-07-28"),
    pytest.param("ws", "legacy", id="ws-2025-11-25"),
    pytest.param("ws", "auto", id="ws-2026-07-28"),
]


def text_of(result: Any) -> str:
    content = result.content[0]
    assert isinstance(content, TextContent)
    return content.text


def is_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.parametrize(("transport", "mode"), TRANSPORTS_AND_ERAS)
async def test_progress_notifications_reach_the_caller(transport: str, mode: str) -> None:
    server, _ = build_feature_server()
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    with anyio.fail_after(20):
        async with serve_in_process(server) as running, mcp_client(running, transport, mode) as client:
            result = await client.call_tool("count_with_progress", {"steps": 3}, progress_callback=on_progress)
    assert text_of(result) == "counted 3"
    assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]


@pytest.mark.parametrize(("transport", "mode"), TRANSPORTS_AND_ERAS)
@pytest.mark.parametrize(("action", "expected"), [("accept", "confirmed=True"), ("decline", "not confirmed: decline")])
async def test_elicitation_asks_the_user_and_returns_the_answer(
    transport: str, mode: str, action: str, expected: str
) -> None:
    server, _ = build_feature_server()
    questions: list[str] = []

    async def answer(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        questions.append(params.message)
        if action == "accept":
            return ElicitResult(action="accept", content={"confirm": True})
        return ElicitResult(action="decline")

    with anyio.fail_after(20):
        async with (
            serve_in_process(server) as running,
            mcp_client(running, transport, mode, elicitation_callback=answer) as client,
        ):
            result = await client.call_tool("confirm", {"question": "Run `make`?"})
    assert questions == ["Run `make`?"]
    assert text_of(result) == expected


@pytest.mark.parametrize(("transport", "mode"), TRANSPORTS_AND_ERAS)
async def test_cancelling_a_call_cancels_the_tool_and_kills_its_process(transport: str, mode: str) -> None:
    server, probe = build_feature_server()
    with anyio.fail_after(20):
        async with serve_in_process(server) as running, mcp_client(running, transport, mode) as client:
            async with anyio.create_task_group() as tg:
                tg.start_soon(client.call_tool, "run_child", {})
                await probe.started.wait()
                assert is_alive(probe.child_pids[0])
                tg.cancel_scope.cancel()
            await wait_until(lambda: not is_alive(probe.child_pids[0]))
            # The session stays usable after a cancellation.
            assert text_of(await client.call_tool("count_with_progress", {"steps": 1})) == "counted 1"


async def test_client_without_elicitation_gets_a_result_not_a_protocol_error() -> None:
    server, _ = build_feature_server()
    with anyio.fail_after(20):
        async with serve_in_process(server) as running, mcp_client(running, "ws", "legacy") as client:
            result = await client.call_tool("confirm", {"question": "Run `make`?"})
    assert text_of(result) == "not asked: client cannot elicit"


async def test_requests_after_shutdown_began_are_refused_with_an_error() -> None:
    server, probe = build_feature_server()
    with anyio.fail_after(20):
        async with serve_in_process(server) as running, mcp_client(running, "ws", "legacy") as client:
            assert running.service is not None
            await client.list_tools()  # the client validates results against the tools' output schemas
            results: list[str] = []

            async def call_in_flight() -> None:
                results.append(text_of(await client.call_tool("wait_for_release", {})))

            async with anyio.create_task_group() as tg:
                tg.start_soon(call_in_flight)
                await probe.started.wait()
                tg.start_soon(running.service.drain.drain, 10.0)
                await anyio.lowlevel.checkpoint()
                with pytest.raises(MCPError, match="shutting down"):
                    await client.call_tool("count_with_progress", {"steps": 1})
                probe.release.set()
    assert results == ["released"]  # the call in flight when shutdown began was allowed to finish
