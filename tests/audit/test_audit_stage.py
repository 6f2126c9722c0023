"""The audit stage and the decision API: one event per call whatever its outcome, decisions tied to their call."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from repo_sandbox.calls import CallContext
from repo_sandbox.config.model import Settings
from repo_sandbox.errors import CommandNotAllowedError
from repo_sandbox.runtime.assembly import build_stages
from repo_sandbox.runtime.audit_stage import AuditStage, OutputMaskingStage
from repo_sandbox.runtime.pipeline import CallOutcome, CallPipeline, Handler, ToolCall
from repo_sandbox.tools.registry import TOOLS
from repo_sandbox.wiring.assembly import build_server
from repo_sandbox.workspace import Workspace

pytestmark = pytest.mark.anyio

SettingsFactory = Callable[..., Settings]


@pytest.fixture
def audited(repo: Path, make_settings: SettingsFactory, tmp_path: Path) -> Iterator[tuple[Workspace, Path]]:
    path = tmp_path / "audit.jsonl"
    ws = Workspace(make_settings(repo, audit={"path": str(path)}))
    yield ws, path
    ws.close()


def events(ws: Workspace, path: Path) -> list[dict[str, Any]]:
    assert ws.audit.flush(5)
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


class DenyingStage:
    """Stands for a later policy stage: records a decision (from a worker thread too), then refuses."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws

    async def __call__(self, call: ToolCall, call_next: Handler) -> CallOutcome:
        if call.tool == "search_files":
            return await call_next(call)
        await anyio.to_thread.run_sync(
            lambda: self.ws.audit.decision("command_denied", rule="exec.allow", command="curl -u bob:s3cr3t-pw x")
        )
        raise CommandNotAllowedError("'curl' is not allowed.", program="curl")


def test_audit_is_outermost_and_masking_innermost(audited: tuple[Workspace, Path]) -> None:
    stages = build_stages(audited[0])
    assert isinstance(stages[0], AuditStage)
    assert isinstance(stages[-1], OutputMaskingStage)


async def test_refusal_by_an_inner_stage_is_recorded_with_its_decision(audited: tuple[Workspace, Path]) -> None:
    ws, path = audited
    pipeline = CallPipeline(ws, TOOLS, [AuditStage(ws.audit), DenyingStage(ws)])
    outcome = await pipeline.call("read_file", {"path": "README.md"}, CallContext(session_id="sess-1", request_id="7"))
    assert outcome.error_code == "command_not_allowed"
    decision, call = events(ws, path)
    assert decision["event"] == "policy_decision"
    assert (decision["session"], decision["request_id"], decision["tool"]) == ("sess-1", "7", "read_file")
    assert (decision["kind"], decision["decision"], decision["rule"]) == ("command_denied", "deny", "exec.allow")
    assert decision["details"] == {"command": "curl -u bob:*** x"}
    assert call["event"] == "tool_call"
    assert call["outcome"] == "error"
    assert (call["error_code"], call["error_category"]) == ("command_not_allowed", "permission_denied")


async def test_call_event_has_every_field(audited: tuple[Workspace, Path]) -> None:
    ws, path = audited
    pipeline = CallPipeline(ws, TOOLS, build_stages(ws))
    outcome = await pipeline.call("read_file", {"path": "src/util.py"}, CallContext(session_id="s", request_id="1"))
    (event,) = events(ws, path)
    assert set(event) == {
        "ts", "event", "session", "request_id", "tool", "arguments", "outcome", "error_code", "error_category",
        "duration_ms", "output_bytes", "redactions",
    }  # fmt: skip
    assert event["arguments"] == {"path": "src/util.py"}
    assert event["outcome"] == "ok"
    assert event["output_bytes"] == len(outcome.to_json().encode())
    assert event["redactions"] == 0
    assert 0 <= event["duration_ms"] == pytest.approx(outcome.duration_ms, abs=0.001)


async def test_decision_outside_any_call_has_no_session(audited: tuple[Workspace, Path]) -> None:
    ws, path = audited
    ws.audit.decision("breaker_opened", decision="block", rule="guard.failure_threshold", failures=3)
    (event,) = events(ws, path)
    assert (event["session"], event["tool"], event["details"]) == (None, None, {"failures": 3})


async def test_cancelled_call_is_recorded_as_cancelled(audited: tuple[Workspace, Path]) -> None:
    ws, path = audited
    entered = anyio.Event()

    async def hang(call: ToolCall, call_next: Handler) -> CallOutcome:
        entered.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    pipeline = CallPipeline(ws, TOOLS, [AuditStage(ws.audit), hang])
    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(pipeline.call, "search_text", {"pattern": "x"})
            await entered.wait()
            group.cancel_scope.cancel()
    (event,) = events(ws, path)
    assert event["outcome"] == "cancelled"
    assert event["tool"] == "search_text"


async def test_each_mcp_session_gets_its_own_id_and_the_request_id(audited: tuple[Workspace, Path]) -> None:
    ws, path = audited
    server = build_server(ws)
    with anyio.fail_after(10):
        async with Client(server, mode="legacy") as first, Client(server, mode="legacy") as second:
            await first.call_tool("search_files", {"pattern": "*.py"})
            await second.call_tool("read_file", {"path": "../outside/secret.txt"})
            await first.call_tool("count_lines", {})
    calls = [e for e in events(ws, path) if e["event"] == "tool_call"]
    assert [e["tool"] for e in calls] == ["search_files", "read_file", "count_lines"]
    assert calls[0]["session"] == calls[2]["session"] != calls[1]["session"]
    assert all(e["request_id"] is not None for e in calls)
    assert calls[1]["error_code"] == "path_outside_root"
