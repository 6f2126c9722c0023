"""The circuit breaker and the repeated-call guard, through the real SDK client in both eras, with a fake clock."""

from __future__ import annotations

from pathlib import Path

import pytest

from repo_sandbox.runtime.clock import FakeClock
from repo_sandbox.testing import Mode, ServerFactory, open_session

pytestmark = pytest.mark.anyio

MISSING = {"path": "src/missing.py"}


async def test_breaker_opens_blocks_half_opens_and_closes(
    make_server: ServerFactory, clock: FakeClock, era: Mode, repo: Path
) -> None:
    async with open_session(make_server(), era) as session:
        for _ in range(3):
            assert (await session.call("read_file", MISSING))["code"] == "not_found"
        blocked = await session.call("read_file", MISSING)
        assert blocked["code"] == "circuit_open"
        assert blocked["category"] == "unavailable"
        # one instruction (issue 21): not retryable, no "do not repeat" next to "then retry"
        assert blocked["retryable"] is False
        assert "retry" not in blocked["hint"].lower() and "do not repeat" not in blocked["hint"].lower()
        assert blocked["details"]["failures"] == 3
        assert blocked["details"]["last_error"]["code"] == "not_found"
        assert blocked["details"]["retry_after_s"] == 300.0
        assert "change the approach" in blocked["hint"].lower()

        clock.advance(299)
        assert (await session.call("read_file", MISSING))["code"] == "circuit_open"
        clock.advance(1)  # half-open: one trial call goes through, fails, and opens the circuit again
        assert (await session.call("read_file", MISSING))["code"] == "not_found"
        reopened = await session.call("read_file", MISSING)
        assert reopened["code"] == "circuit_open"
        assert reopened["details"]["failures"] == 4

        clock.advance(300)
        (repo / "src" / "missing.py").write_text("now it exists\n")
        assert (await session.call("read_file", MISSING))["content"].endswith("now it exists\n")
        assert (await session.call("read_file", MISSING))["content"].endswith("now it exists\n")
        assert (await session.status())["guard"]["circuits"] == []


async def test_seed_002_loop_stops_at_call_4_and_stays_stopped(make_server: ServerFactory, era: Mode) -> None:
    """The 72 identical failing calls of seed 002: calls 1-3 get the real error, every later one circuit_open."""
    bad = {"pattern": 'cron add (kind: "exec"'}
    codes: list[str] = []
    async with open_session(make_server(), era) as session:
        for _ in range(72):
            codes.append((await session.call("search_text", bad))["code"])
        status = await session.status()
    assert codes[:3] == ["invalid_regex"] * 3
    assert codes[3:] == ["circuit_open"] * 69
    assert status["tools"]["search_text"]["calls"] == 72
    assert status["tools"]["search_text"]["error_codes"] == {"circuit_open": 69, "invalid_regex": 3}


async def test_similar_arguments_are_blocked_and_different_ones_are_not(make_server: ServerFactory, era: Mode) -> None:
    async with open_session(make_server(), era) as session:
        for _ in range(3):
            await session.call("read_file", MISSING)
        similar = await session.call("read_file", {"path": "./src/missing.py"})
        assert similar["code"] == "circuit_open"
        assert (await session.call("read_file", {**MISSING, "line_numbers": False}))["code"] == "circuit_open"
        assert similar["details"]["similarity"] >= 0.7
        assert similar["details"]["blocked_arguments"] == MISSING
        # other arguments of the same tool, and other tools, still work
        assert (await session.call("read_file", {"path": "src/util.py"}))["total_lines"] == 2
        assert (await session.call("read_file", {"path": "docs/other.md"}))["code"] == "not_found"
        assert (await session.call("read_file", {"path": "src/missing.txt"}))["code"] == "not_found"
        assert (await session.call("search_files", {"pattern": "missing*"}))["files"] == []


async def test_a_success_of_a_different_call_does_not_reset_the_failure_streak(
    make_server: ServerFactory, era: Mode
) -> None:
    async with open_session(make_server(), era) as session:
        for _ in range(3):
            assert (await session.call("read_file", MISSING))["code"] == "not_found"
            assert "content" in await session.call("read_file", {"path": "README.md"})
        assert (await session.call("read_file", MISSING))["code"] == "circuit_open"


async def test_failures_outside_the_window_do_not_open_the_circuit(
    make_server: ServerFactory, clock: FakeClock, era: Mode
) -> None:
    async with open_session(make_server(), era) as session:
        for _ in range(2):
            await session.call("read_file", MISSING)
        clock.advance(301)
        for _ in range(3):
            assert (await session.call("read_file", MISSING))["code"] == "not_found"
        assert (await session.call("read_file", MISSING))["code"] == "circuit_open"


async def test_sixth_identical_call_is_refused_as_repeated(
    make_server: ServerFactory, clock: FakeClock, era: Mode
) -> None:
    call = {"path": "README.md"}
    async with open_session(make_server(), era) as session:
        first = await session.call("read_file", call)
        for _ in range(4):
            assert await session.call("read_file", call) == first
        refused = await session.call("read_file", call)
        assert refused["code"] == "repeated_call"
        assert refused["category"] == "unavailable"
        assert refused["details"]["count"] == 5
        assert "has not changed" in refused["hint"]
        # default-valued arguments make no difference: still the same call
        assert (await session.call("read_file", {**call, "offset": 1}))["code"] == "repeated_call"
        # another call in between starts a new streak
        assert "content" in await session.call("read_file", {"path": "src/util.py"})
        assert await session.call("read_file", call) == first
        clock.advance(1)


async def test_repeated_call_guard_forgets_after_the_window(
    make_server: ServerFactory, clock: FakeClock, era: Mode
) -> None:
    call = {"path": "README.md"}
    async with open_session(make_server(), era) as session:
        for _ in range(5):
            await session.call("read_file", call)
        assert (await session.call("read_file", call))["details"]["retry_after_s"] == 300.0
        clock.advance(300)
        assert "content" in await session.call("read_file", call)


async def test_thresholds_come_from_the_guard_config(make_server: ServerFactory, era: Mode) -> None:
    server = make_server(guard={"failure_threshold": 1, "repeat_threshold": 2})
    async with open_session(server, era) as session:
        assert (await session.call("read_file", MISSING))["code"] == "not_found"
        assert (await session.call("read_file", MISSING))["code"] == "circuit_open"
        for _ in range(2):
            await session.call("count_lines", {"path": "src"})
        assert (await session.call("count_lines", {"path": "src"}))["code"] == "repeated_call"


async def test_opening_and_closing_a_circuit_notifies_list_changed_and_marks_the_tool(
    make_server: ServerFactory, clock: FakeClock, era: Mode, repo: Path
) -> None:
    async with open_session(make_server(), era) as session:
        for _ in range(3):
            await session.call("read_file", MISSING)
        await session.wait_for_change(1)
        descriptions = await session.tool_descriptions()
        assert "Temporarily blocked for arguments like" in descriptions["read_file"]
        assert '"src/missing.py"' in descriptions["read_file"]
        assert "other arguments still work" in descriptions["read_file"]
        assert "Temporarily blocked" not in descriptions["search_text"]

        clock.advance(300)
        assert "a single trial call is allowed now" in (await session.tool_descriptions())["read_file"]
        (repo / "src" / "missing.py").write_text("x\n")
        assert "content" in await session.call("read_file", MISSING)
        await session.wait_for_change(2)
        assert "Temporarily blocked" not in (await session.tool_descriptions())["read_file"]


async def test_two_clients_never_share_a_breaker_or_a_budget(make_server: ServerFactory, era: Mode) -> None:
    server = make_server(budget={"max_calls": 4})
    async with open_session(server, era) as first, open_session(server, era) as second:
        for _ in range(3):
            await first.call("read_file", MISSING)
        assert (await first.call("read_file", MISSING))["code"] == "circuit_open"
        assert (await first.call("read_file", MISSING))["code"] == "budget_exhausted"
        assert (await second.call("read_file", MISSING))["code"] == "not_found"
        second_status = await second.status()
        first_status = await first.status()
    assert second_status["guard"]["circuits"] == []
    assert second_status["budget"]["calls"]["used"] == 1
    assert first_status["budget"]["calls"]["used"] == 4
    assert first_status["session"]["id"] != second_status["session"]["id"]
    assert len(first_status["guard"]["circuits"]) == 1
