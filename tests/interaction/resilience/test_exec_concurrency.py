"""execute_bash reserves its timeout from the exec budget and runs at most so many commands at once, end to end.

Before: with `max_exec_s = 10`, ten concurrent 8 s commands all ran (80 s spent), and one stdio session ran 24
CPU-bound sandboxed processes at once. Now a command holds its timeout from the budget while it runs (what it
does not use is given back), and commands beyond the per-session or per-server cap are answered
`too_many_commands` (limit_exceeded, retryable, `retry_after_s`). Commands run in the machine's real sandbox.
"""

from __future__ import annotations

import time
from typing import Any

import anyio
import pytest
from mcp import Client

from repo_sandbox.policy.exec_model import DEFAULT_ALLOW
from repo_sandbox.testing import Mode, ServerFactory, open_session

pytestmark = pytest.mark.anyio

SLEEP: dict[str, Any] = {"allow": DEFAULT_ALLOW}  # sleep is a built-in read-only program
NO_GUARD = {"repeat_threshold": 1000, "failure_threshold": 1000}


async def call(client: Client, arguments: dict[str, Any]) -> dict[str, Any]:
    with anyio.fail_after(60):
        result = await client.call_tool("execute_bash", arguments)
    payload = result.structured_content
    assert isinstance(payload, dict)
    return {"is_error": True, **payload["error"]} if result.is_error else payload


async def all_at_once(
    client: Client, commands: list[dict[str, Any]], *, stagger_s: float = 0.05
) -> list[dict[str, Any]]:
    """Start every command, `stagger_s` apart (the first is surely running when the others arrive)."""
    results: list[dict[str, Any]] = [{} for _ in commands]

    async def one(index: int) -> None:
        await anyio.sleep(index * stagger_s)
        results[index] = await call(client, commands[index])

    async with anyio.create_task_group() as group:
        for index in range(len(commands)):
            group.start_soon(one, index)
    return results


def refused(result: dict[str, Any]) -> bool:
    if result.get("code") != "too_many_commands":
        return False
    assert (result["category"], result["retryable"]) == ("limit_exceeded", True), result
    assert 0 < result["details"]["retry_after_s"] <= 120, result
    return True


@pytest.mark.slow
async def test_ten_concurrent_8s_commands_under_a_10s_budget_run_one(make_server: ServerFactory, era: Mode) -> None:
    server = make_server(
        exec=SLEEP, budget={"max_exec_s": 10, "max_concurrent_exec": 10, "max_concurrent_exec_server": 10},
        guard=NO_GUARD,
    )  # fmt: skip
    async with open_session(server, era) as session:
        started = time.monotonic()
        results = await all_at_once(session.client, [{"command": "sleep 8", "timeout": 9}] * 10)
        elapsed = time.monotonic() - started
        status = await session.status()
    ran = [result for result in results if not result.get("is_error")]
    assert len(ran) == 1 and ran[0]["exit_code"] == 0, results
    assert all(refused(result) for result in results if result.get("is_error")), results
    assert all(r["details"]["limit"] == "exec_seconds" for r in results if r.get("is_error")), results
    assert 8 <= status["budget"]["exec_seconds"]["used"] < 10, status["budget"]
    assert elapsed < 30, elapsed


@pytest.mark.slow
async def test_an_unused_reservation_is_given_back(make_server: ServerFactory, era: Mode) -> None:
    server = make_server(exec=SLEEP, budget={"max_exec_s": 10}, guard=NO_GUARD)
    async with open_session(server, era) as session:
        first, second = await all_at_once(session.client, [{"command": "sleep 1", "timeout": 6}] * 2)
        assert first["exit_code"] == 0 and refused(second), (first, second)  # 6 s held: 4 left < 6
        again = await call(session.client, {"command": "sleep 1", "timeout": 6})  # 1 s spent: 9 left
        assert again["exit_code"] == 0, again
        short = await call(session.client, {"command": "sleep 0.1", "timeout": 60})
        assert short["exit_code"] == 0, short  # alone, it gets what is left, as before
        status = await session.status()
    assert 2 <= status["budget"]["exec_seconds"]["used"] < 4, status["budget"]


@pytest.mark.slow
async def test_a_session_runs_at_most_max_concurrent_exec_commands(make_server: ServerFactory, era: Mode) -> None:
    server = make_server(exec=SLEEP, budget={"max_concurrent_exec": 2}, guard=NO_GUARD)
    async with open_session(server, era) as session:
        results = await all_at_once(session.client, [{"command": "sleep 2"}] * 5)
        later = await call(session.client, {"command": "sleep 0.1"})
    assert sum(1 for result in results if not result.get("is_error")) == 2, results
    errors = [result for result in results if result.get("is_error")]
    assert len(errors) == 3 and all(refused(result) for result in errors), results
    assert all(e["details"]["scope"] == "session" and e["details"]["max"] == 2 for e in errors), errors
    assert all(e["details"]["retry_after_s"] <= 30 for e in errors), errors  # the running ones' timeouts
    assert later["exit_code"] == 0, later  # the slots are free again


@pytest.mark.slow
async def test_the_server_runs_at_most_max_concurrent_exec_server_commands(
    make_server: ServerFactory, era: Mode
) -> None:
    server = make_server(exec=SLEEP, budget={"max_concurrent_exec": 2, "max_concurrent_exec_server": 3}, guard=NO_GUARD)
    async with open_session(server, era) as first, open_session(server, era) as second:
        results: list[list[dict[str, Any]]] = [[], []]

        async def run(index: int, client: Client, delay: float) -> None:
            await anyio.sleep(delay)
            results[index] = await all_at_once(client, [{"command": "sleep 2"}] * 2)

        async with anyio.create_task_group() as group:
            group.start_soon(run, 0, first.client, 0.0)
            group.start_soon(run, 1, second.client, 0.3)
    flat = results[0] + results[1]
    assert all(not result.get("is_error") for result in results[0]), results
    assert sum(1 for result in results[1] if not result.get("is_error")) == 1, results
    (error,) = [result for result in flat if result.get("is_error")]
    assert refused(error) and error["details"]["scope"] == "server" and error["details"]["max"] == 3, error
