"""Per-session state keys on the session a transport knows: one id per WebSocket connection (both eras)
and per stateful HTTP session; a sessionless 2026-07-28 HTTP request is a session of its own."""

from __future__ import annotations

import pytest
from harness import mcp_client, serve_in_process

from repo_sandbox.runtime.pipeline import CallOutcome, CallPipeline, Handler, ToolCall
from repo_sandbox.wiring import assembly, handlers
from repo_sandbox.workspace import Workspace

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


class RecordSessions:
    def __init__(self) -> None:
        self.seen: list[str] = []

    async def __call__(self, call: ToolCall, call_next: Handler) -> CallOutcome:
        self.seen.append(call.context.session_id)
        return await call_next(call)


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> RecordSessions:
    recorder = RecordSessions()
    monkeypatch.setattr(
        handlers, "build_pipeline", lambda workspace, tools, loop=None: CallPipeline(workspace, tools, [recorder])
    )
    return recorder


@pytest.mark.parametrize(
    ("transport", "mode", "same_within_connection"),
    [
        pytest.param("ws", "legacy", True, id="ws-2025-11-25"),
        pytest.param("ws", "auto", True, id="ws-2026-07-28"),
        pytest.param("http", "legacy", True, id="http-2025-11-25"),
        pytest.param("http", "auto", False, id="http-2026-07-28-sessionless"),
    ],
)
async def test_session_id_follows_the_connection(
    recorder: RecordSessions, workspace: Workspace, transport: str, mode: str, same_within_connection: bool
) -> None:
    async with serve_in_process(assembly.build_server(workspace)) as running:
        for _ in range(2):
            async with mcp_client(running, transport, mode) as client:
                for _ in range(2):
                    assert (await client.call_tool("count_lines", {})).is_error is False
    first, second = recorder.seen[:2], recorder.seen[2:]
    assert (first[0] == first[1]) is same_within_connection
    assert (second[0] == second[1]) is same_within_connection
    assert set(first).isdisjoint(second)
    if transport == "ws":
        assert all(session.startswith("ws-") for session in recorder.seen)
