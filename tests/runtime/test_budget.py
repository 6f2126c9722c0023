"""Budget accounting on the stage itself, including execute_bash seconds (end to end: test_exec_approvals.py)."""

from __future__ import annotations

from typing import Any

import pytest

from repo_sandbox.calls import CallContext
from repo_sandbox.config.model import BudgetConfig, LimitsConfig
from repo_sandbox.errors import BudgetExhaustedError
from repo_sandbox.runtime.budget import BudgetStage
from repo_sandbox.runtime.pipeline import CallOutcome, ToolCall

pytestmark = pytest.mark.anyio


def exec_result(duration_ms: float) -> dict[str, Any]:
    return {"exit_code": 0, "stdout": "", "stderr": "", "duration_ms": duration_ms, "sandbox": "none"}


async def run(stage: BudgetStage, tool: str, payload: dict[str, Any], *, is_error: bool = False) -> CallOutcome:
    async def body(call: ToolCall) -> CallOutcome:
        return call.outcome(payload, is_error=is_error)

    return await stage(ToolCall(tool, {"command": "ls"}, CallContext(session_id="s1")), body)


async def test_exec_seconds_add_up_and_then_refuse_only_execute_bash() -> None:
    stage = BudgetStage(BudgetConfig(max_exec_s=2.0), LimitsConfig())
    await run(stage, "execute_bash", exec_result(1500))
    await run(stage, "execute_bash", exec_result(600))
    with pytest.raises(BudgetExhaustedError) as refused:
        await run(stage, "execute_bash", exec_result(10))
    assert refused.value.details == {"budget": "exec_seconds", "used": 2.1, "limit": 2.0}
    await run(stage, "read_file", {"content": "x"})  # other tools still run
    assert stage.snapshot("s1")["exec_seconds"] == {"used": 2.1, "limit": 2.0, "remaining": 0}


async def test_exec_errors_count_the_duration_they_report() -> None:
    stage = BudgetStage(BudgetConfig(max_exec_s=100.0), LimitsConfig())
    timeout = {"error": {"code": "timeout", "details": {"duration_ms": 30_000}}}
    await run(stage, "execute_bash", timeout, is_error=True)
    refusal = {"error": {"code": "command_not_allowed", "details": {"program": "rm"}}}
    await run(stage, "execute_bash", refusal, is_error=True)
    assert stage.snapshot("s1")["exec_seconds"]["used"] == 30.0


async def test_budgets_are_kept_per_session() -> None:
    stage = BudgetStage(BudgetConfig(max_calls=1), LimitsConfig())
    await run(stage, "read_file", {"content": "x"})
    with pytest.raises(BudgetExhaustedError):
        await run(stage, "read_file", {"content": "x"})
    assert stage.snapshot("other")["calls"] == {"used": 0, "limit": 1, "remaining": 1}
