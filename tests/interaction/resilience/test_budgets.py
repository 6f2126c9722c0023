"""Per-session budgets (calls, output bytes) and the degraded search near the output budget, through the client.

The exec-seconds budget is tested end to end with execute_bash in test_exec_approvals.py, and its accounting on
the stage in tests/runtime/test_budget.py.
"""

from __future__ import annotations

import pytest

from repo_sandbox.testing import Mode, ServerFactory, open_session

pytestmark = pytest.mark.anyio


async def test_calls_budget_refuses_the_call_after_the_last_one(make_server: ServerFactory, era: Mode) -> None:
    async with open_session(make_server(budget={"max_calls": 3}), era) as session:
        for path in ("README.md", "src/util.py", "src/main.py"):
            assert "content" in await session.call("read_file", {"path": path})
        refused = await session.call("search_files", {"pattern": "*.py"})
        status = await session.status()
    assert refused["code"] == "budget_exhausted"
    assert refused["category"] == "limit_exceeded"
    assert refused["retryable"] is False
    assert refused["details"] == {"budget": "calls", "used": 3, "limit": 3}
    assert status["budget"]["calls"] == {"used": 3, "limit": 3, "remaining": 0}
    assert status["budget"]["exhausted"] == ["calls"]


async def test_output_budget_counts_result_bytes_and_refuses_once_spent(make_server: ServerFactory, era: Mode) -> None:
    server = make_server(budget={"max_output_bytes": 1500, "degrade_below_bytes": 0})
    results: list[dict[str, object]] = []
    async with open_session(server, era) as session:
        for offset in range(1, 20):
            results.append(await session.call("read_file", {"path": "src/main.py", "offset": offset % 5 + 1}))
            if results[-1].get("code") == "budget_exhausted":
                break
        status = await session.status()
    refused = results[-1]
    assert refused["code"] == "budget_exhausted"
    assert all("content" in r for r in results[:-1])
    assert len(results) > 2
    details = refused["details"]
    assert isinstance(details, dict)
    assert details["budget"] == "output_bytes"
    assert details["used"] >= 1500
    assert status["budget"]["output_bytes"]["remaining"] == 0


async def test_search_text_degrades_to_file_names_near_the_output_budget(make_server: ServerFactory, era: Mode) -> None:
    server = make_server(budget={"max_output_bytes": 100_000, "degrade_below_bytes": 99_990})
    async with open_session(server, era) as session:
        full = await session.call("search_text", {"pattern": "TODO"})
        degraded = await session.call("search_text", {"pattern": "TODO"})
        counted = await session.call("search_text", {"pattern": "TODO", "output_mode": "count"})
        status = await session.status()
    assert "degraded" not in full
    assert [m["path"] for m in full["matches"]] == ["README.md", "src/main.py"]
    assert "matches" not in degraded
    assert degraded["files"] == ["README.md", "src/main.py"]
    assert "files_with_matches" in degraded["degraded"]
    assert "output budget" in degraded["degraded"]
    assert "degraded" not in counted  # already small: only content searches are narrowed
    assert status["budget"]["search_degraded"] is True
    assert status["budget"]["degraded_calls"] == 1


async def test_zero_means_unlimited(make_server: ServerFactory, era: Mode) -> None:
    server = make_server(
        budget={"max_calls": 0, "max_output_bytes": 0, "max_exec_s": 0}, guard={"repeat_threshold": 50}
    )
    async with open_session(server, era) as session:
        for _ in range(30):
            assert "content" in await session.call("read_file", {"path": "README.md"})
        status = await session.status()
    assert status["budget"]["calls"] == {"used": 30, "limit": None, "remaining": None}
    assert status["budget"]["exhausted"] == []
