"""execute_bash approvals (programs in `exec.ask`) and the exec-seconds budget, end to end, in both eras.

The commands run in the machine's real OS sandbox (`exec.sandbox = "auto"`). The approval machinery alone is
also tested through `approval_probe` in test_elicitation_eras.py.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from mcp import Client, MCPError
from mcp.types import CallToolResult, ElicitResult, InputRequiredResult

from repo_sandbox.policy.exec_model import DEFAULT_ALLOW
from repo_sandbox.testing import Mode, ScriptedUser, ServerFactory, open_session

pytestmark = pytest.mark.anyio

EXEC: dict[str, Any] = {"ask": ["wc"], "allow": [name for name in DEFAULT_ALLOW if name != "wc"]}
"""`wc` moved from exec.allow to exec.ask; `wc -l README.md` prints '3 README.md' on the sample repository."""
SLEEP: dict[str, Any] = {"allow": [*DEFAULT_ALLOW]}  # sleep is a built-in rule
"""An operator rule for sleep(1), to spend exec time."""

COMMAND = {"command": "wc -l README.md"}


def yes() -> ElicitResult:
    return ElicitResult(action="accept", content={"approve": True})


async def test_ask_program_runs_after_the_user_approves(make_server: ServerFactory, era: Mode) -> None:
    user = ScriptedUser([yes()])
    async with open_session(make_server(exec=EXEC), era, user=user) as session:
        result = await session.call("execute_bash", COMMAND)
        again = await session.call("execute_bash", COMMAND)
    assert result["exit_code"] == 0
    assert result["stdout"].split() == ["3", "README.md"]
    assert "    wc -l README.md\n" in user.shown[0].message
    assert again["code"] == "approval_denied"  # the approval covered that one call; the script then cancels
    assert len(user.shown) == 2


@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_ask_program_declined_or_cancelled_is_denied(make_server: ServerFactory, era: Mode, action: str) -> None:
    user = ScriptedUser([ElicitResult(action=action)])  # pyright: ignore[reportArgumentType]
    async with open_session(make_server(exec=EXEC), era, user=user) as session:
        result = await session.call("execute_bash", COMMAND)
    assert result["code"] == "approval_denied"


async def test_ask_program_without_elicitation_fails_closed(make_server: ServerFactory, era: Mode) -> None:
    async with open_session(make_server(exec=EXEC), era) as session:
        result = await session.call("execute_bash", COMMAND)
    assert result["code"] == "approval_required"


async def test_modern_approval_of_one_command_does_not_run_another(make_server: ServerFactory) -> None:
    async with Client(make_server(exec=EXEC), mode="auto", elicitation_callback=ScriptedUser()) as client:
        await client.list_tools()
        with anyio.fail_after(5):
            asked = await client.session.call_tool("execute_bash", COMMAND, allow_input_required=True)
            assert isinstance(asked, InputRequiredResult)
            with pytest.raises(MCPError):
                await client.session.call_tool(
                    "execute_bash",
                    {"command": "wc -l src/main.py"},
                    input_responses={"q0": yes()},
                    request_state=asked.request_state,
                    allow_input_required=True,
                )
            ran = await client.session.call_tool(
                "execute_bash",
                COMMAND,
                input_responses={"q0": yes()},
                request_state=asked.request_state,
                allow_input_required=True,
            )
    assert isinstance(ran, CallToolResult) and ran.is_error is False


async def test_approval_question_shows_the_whole_pipeline_exactly_as_typed(
    make_server: ServerFactory, era: Mode
) -> None:
    command = "grep -c 'TODO' README.md src/main.py | wc -l"
    user = ScriptedUser([yes()])
    async with open_session(make_server(exec=EXEC), era, user=user) as session:
        result = await session.call("execute_bash", {"command": command, "cwd": "."})
    assert result["stdout"] == "2\n"
    message = user.shown[0].message
    assert f"    {command}\n" in message
    assert 'programs: ["wc"]' in message and "rule: exec.ask" in message


async def test_allowed_programs_never_ask(make_server: ServerFactory, era: Mode) -> None:
    user = ScriptedUser()
    async with open_session(make_server(exec=EXEC), era, user=user) as session:
        result = await session.call("execute_bash", {"command": "grep -c TODO README.md"})
    assert result["stdout"] == "1\n"
    assert user.shown == []


@pytest.mark.slow
async def test_timed_out_command_counts_against_the_exec_budget(make_server: ServerFactory, era: Mode) -> None:
    server = make_server(exec=SLEEP, budget={"max_exec_s": 5})
    async with open_session(server, era) as session:
        timed_out = await session.call("execute_bash", {"command": "sleep 30", "timeout": 0.6})
        status = await session.status()
    assert timed_out["code"] == "timeout"  # its own timeout came first: the budget had 5 s left
    assert timed_out["details"]["duration_ms"] >= 600
    assert 0.6 <= status["budget"]["exec_seconds"]["used"] < 5
    assert status["budget"]["exhausted"] == []


@pytest.mark.slow
@pytest.mark.parametrize("requested_s", [None, 30, 1.5])
async def test_a_command_gets_no_more_time_than_the_exec_budget_has_left(
    make_server: ServerFactory, era: Mode, requested_s: float | None
) -> None:
    server = make_server(exec=SLEEP, budget={"max_exec_s": 1.0})
    arguments: dict[str, Any] = {"command": "sleep 30"}
    if requested_s is not None:
        arguments["timeout"] = requested_s
    async with open_session(server, era) as session:
        with anyio.fail_after(10):  # far less than the command's own timeout: only the budget can stop it
            stopped = await session.call("execute_bash", arguments)
        status = await session.status()
        refused = await session.call("execute_bash", {"command": "echo hi"})
        read = await session.call("read_file", {"path": "README.md"})
    assert (stopped["code"], stopped["category"], stopped["retryable"]) == ("budget_exhausted", "limit_exceeded", False)
    assert stopped["details"]["budget"] == "exec_seconds" and stopped["details"]["limit"] == 1.0
    assert 1000 <= stopped["details"]["duration_ms"] < 5000
    assert stopped["details"]["stdout"] == "" and stopped["details"]["stdout_truncated"] is False
    assert status["budget"]["exhausted"] == ["exec_seconds"]
    assert refused["code"] == "budget_exhausted" and "stdout" not in refused["details"]
    assert read["total_lines"] == 3


async def test_an_invalid_timeout_is_refused_as_such_whatever_the_budget(make_server: ServerFactory, era: Mode) -> None:
    server = make_server(exec=SLEEP, budget={"max_exec_s": 1.0})
    async with open_session(server, era) as session:
        too_long = await session.call("execute_bash", {"command": "sleep 1", "timeout": 10_000})
        not_a_number = await session.call("execute_bash", {"command": "sleep 1", "timeout": "5"})
    assert (too_long["code"], not_a_number["code"]) == ("invalid_arguments", "invalid_arguments")


@pytest.mark.slow
async def test_exec_seconds_budget_stops_execute_bash_only(make_server: ServerFactory, era: Mode) -> None:
    server = make_server(exec=SLEEP, budget={"max_exec_s": 0.3})
    async with open_session(server, era) as session:
        first = await session.call("execute_bash", {"command": "wc -l README.md"})
        spent = await session.call("execute_bash", {"command": "sleep 5"})
        refused = await session.call("execute_bash", {"command": "wc -l src/util.py"})
        still = await session.call("read_file", {"path": "README.md"})
        found = await session.call("search_text", {"pattern": "TODO"})
        counted = await session.call("count_lines", {})
        listed = await session.call("search_files", {"pattern": "*.py"})
    assert first["exit_code"] == 0
    assert spent["code"] == "budget_exhausted"
    assert refused["code"] == "budget_exhausted"
    assert refused["details"]["budget"] == "exec_seconds"
    assert "content" in still
    assert found["total_matches"] >= 2
    assert counted["files"] >= 3
    assert "src/main.py" in listed["files"]
