"""repo-sandbox://status and repo-sandbox://policy: what the calling session needs to know, as JSON."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from repo_sandbox.runtime.clock import FakeClock
from repo_sandbox.testing import Mode, ScriptedUser, ServerFactory, open_session

pytestmark = pytest.mark.anyio


async def test_resources_are_listed_as_json(make_server: ServerFactory, era: Mode) -> None:
    async with open_session(make_server(), era) as session:
        listing = await session.client.list_resources()
    by_uri = {str(r.uri): r for r in listing.resources}
    assert set(by_uri) == {"repo-sandbox://status", "repo-sandbox://policy"}
    assert {r.mime_type for r in by_uri.values()} == {"application/json"}


async def test_status_reflects_calls_errors_circuits_and_budget(
    make_server: ServerFactory, clock: FakeClock, era: Mode
) -> None:
    server = make_server(budget={"max_calls": 100})
    async with open_session(server, era) as session:
        fresh = await session.status()
        for _ in range(4):
            await session.call("read_file", {"path": "src/missing.py"})
        await session.call("search_text", {"pattern": "TODO"})
        clock.advance(30)
        status = await session.status()
    assert fresh["tools"] == {}
    assert fresh["guard"]["circuits"] == []
    assert fresh["budget"]["calls"] == {"used": 0, "limit": 100, "remaining": 100}

    read_file = status["tools"]["read_file"]
    assert (read_file["calls"], read_file["errors"]) == (4, 4)
    assert read_file["error_codes"] == {"not_found": 3, "circuit_open": 1}
    assert read_file["total_ms"] > 0 and read_file["avg_ms"] > 0
    assert (status["tools"]["search_text"]["calls"], status["tools"]["search_text"]["errors"]) == (1, 0)
    assert status["server_tools"]["read_file"]["calls"] == 4

    [circuit] = status["guard"]["circuits"]
    assert circuit == {
        "tool": "read_file",
        "state": "open",
        "arguments_like": {"path": "src/missing.py"},
        "failures": 3,
        "last_error": circuit["last_error"],
        "retry_after_s": 270.0,
    }
    assert circuit["last_error"]["code"] == "not_found"
    assert status["guard"]["config"]["failure_threshold"] == 3
    assert status["budget"]["calls"] == {"used": 5, "limit": 100, "remaining": 95}
    assert status["budget"]["output_bytes"]["used"] > 0
    assert status["exec"]["enabled"] in (True, False)
    assert "sandbox" in status["exec"]
    assert status["limits"]["max_output_bytes"] == 131072
    assert status["session"]["client_can_elicit"] is False
    tree_index = status["tree_index"]
    assert tree_index["mode"] == "watch" and tree_index["inotify"] is True
    [index] = tree_index["indexes"]
    assert index["state"] == "watching" and index["directories"] > 1 and index["truncated"] is False
    assert (index["include_hidden"], index["include_ignored"]) == (False, False)


async def test_policy_says_what_is_allowed_without_revealing_the_deny_list(
    make_server: ServerFactory, era: Mode
) -> None:
    server = make_server(workspace={"extra_deny": ["secret-project/"]})
    async with open_session(server, era, user=ScriptedUser()) as session:
        policy = await session.resource("repo-sandbox://policy")
        raw = (await session.client.read_resource("repo-sandbox://policy")).contents[0]
    assert [t["name"] for t in policy["tools"]] == [
        "search_files",
        "read_file",
        "search_text",
        "count_lines",
        "ask_user",
        "execute_bash",
    ]
    assert all(t["available"] for t in policy["tools"])
    assert policy["paths"]["read_only"] is True
    assert policy["paths"]["respect_gitignore"] is True
    assert policy["paths"]["deny_rules"] == 26
    assert policy["limits"]["max_file_bytes"] == 100 * 1024 * 1024
    assert policy["guard"] == {
        "failure_threshold": 3,
        "window_s": 300.0,
        "similarity": 0.7,
        "recovery_s": 300.0,
        "repeat_threshold": 5,
    }
    assert policy["budget"]["max_calls"] == 10_000
    assert set(policy["exec"]) >= {"enabled", "sandbox"}
    assert policy["interaction"]["client_can_elicit"] is True
    assert "secret-project" not in str(raw)
    assert "id_rsa" not in str(raw)


async def test_status_reports_the_audit_trail_without_its_host_path(
    make_server: ServerFactory, era: Mode, tmp_path: Path
) -> None:
    for audit_file, healthy in ((tmp_path / "audit.jsonl", True), (tmp_path / "missing-dir" / "audit.jsonl", False)):
        async with open_session(make_server(audit={"path": str(audit_file)}), era) as session:
            for _ in range(3):
                await session.call("read_file", {"path": "README.md"})
            with anyio.fail_after(5):  # the writer thread handles the events after the calls return
                while (audit := (await session.status())["audit"])["written"] + audit["failed"] < 3:  # noqa: ASYNC110
                    await anyio.sleep(0.01)
            raw = (await session.client.read_resource("repo-sandbox://status")).contents[0]
        assert (audit["destination"], audit["redact"], audit["redact_output"]) == ("file", True, True)
        assert (audit["submitted"], audit["dropped"], audit["healthy"]) == (3, 0, healthy)
        assert audit["failed"] == (0 if healthy else 3)
        assert str(tmp_path) not in str(raw)
    async with open_session(make_server(), era) as session:
        assert (await session.status())["audit"] == {
            "destination": "off",
            "redact": True,
            "redact_output": True,
            "healthy": True,
        }


async def test_the_search_engine_gets_ready_before_the_first_call(make_server: ServerFactory, era: Mode) -> None:
    """A client initializes and lists the tools before it calls one: the tree index is built meanwhile (from
    `initialize` on, or from the listing where a protocol era has none), not by the first call."""
    async with open_session(make_server(), era) as session:
        await session.client.list_tools()
        status = await session.status()
        for _ in range(500):  # 10 s at most
            status = await session.status()
            if status["tree_index"]["indexes"]:
                break
            await anyio.sleep(0.02)
        assert status["tree_index"]["indexes"], "the tree index was not built after the listing"
        found = await session.call("search_text", {"pattern": "TODO"})
    assert status["tools"] == {}  # built by the listing alone
    assert found["total_matches"] >= 1
