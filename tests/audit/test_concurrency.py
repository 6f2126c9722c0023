"""20 concurrent sessions writing audit events, with the file rotating under them: valid JSONL, nothing lost,
no interleaved lines."""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from repo_sandbox.audit.log import AuditLog
from repo_sandbox.config.model import AuditConfig, Settings
from repo_sandbox.wiring.assembly import build_server
from repo_sandbox.workspace import Workspace

pytestmark = pytest.mark.slow

SettingsFactory = Callable[..., Settings]

SESSIONS = 20
CALLS_PER_SESSION = 15
SECRET = "ghp_" + "Cc4" * 12


def read_all(directory: Path, name: str) -> list[str]:
    """Every line of the audit file and its rotated copies, oldest first."""
    rotated = sorted(directory.glob(f"{name}.*"), key=lambda p: int(p.suffix[1:]), reverse=True)
    return [line for path in [*rotated, directory / name] for line in path.read_text(encoding="utf-8").splitlines()]


def session_calls(number: int) -> list[tuple[str, dict[str, Any]]]:
    calls: list[tuple[str, dict[str, Any]]] = []
    for index in range(CALLS_PER_SESSION):
        match index % 5:
            case 0:
                calls.append(("read_file", {"path": "src/main.py", "note": f"s{number}-{index} {SECRET}"}))
            case 1:
                calls.append(("search_text", {"pattern": "TODO", "context": 1}))
            case 2:
                calls.append(("read_file", {"path": "../outside/secret.txt"}))
            case 3:
                calls.append(("search_files", {"pattern": "*.py", "token": SECRET}))
            case _:
                calls.append(("count_lines", {"path": "."}))
    return calls


@pytest.mark.anyio
async def test_twenty_concurrent_sessions_write_valid_jsonl_while_the_file_rotates(
    repo: Path, make_settings: SettingsFactory, tmp_path: Path
) -> None:
    audit_dir = tmp_path / "audit"
    audit_dir.mkdir()
    settings = make_settings(
        repo, audit={"path": str(audit_dir / "audit.jsonl"), "max_bytes": 8192, "backup_count": 1000}
    )
    ws = Workspace(settings)
    server = build_server(ws)

    async def run_session(number: int) -> None:
        # legacy era: a session per connection (2026-07-28 requests are sessionless, each gets its own id)
        async with Client(server, mode="legacy") as client:
            for tool, arguments in session_calls(number):
                await client.call_tool(tool, arguments)

    try:
        with anyio.fail_after(60):
            async with anyio.create_task_group() as group:
                for number in range(SESSIONS):
                    group.start_soon(run_session, number)
        assert ws.audit.flush(10)
        health = ws.audit.health()
    finally:
        ws.close()

    lines = read_all(audit_dir, "audit.jsonl")
    events = [json.loads(line) for line in lines]  # every line is one whole JSON object
    calls = [e for e in events if e["event"] == "tool_call"]
    per_session = Counter(e["session"] for e in calls)
    assert len(calls) == SESSIONS * CALLS_PER_SESSION == 300
    assert len(per_session) == SESSIONS
    assert set(per_session.values()) == {CALLS_PER_SESSION}
    assert health["rotations"] > 5
    assert (health["written"], health["dropped"], health["failed"]) == (len(events), 0, 0)
    assert SECRET not in "\n".join(lines)
    errors = Counter(e["error_code"] for e in calls if e["error_code"])
    assert errors == Counter({"path_outside_root": SESSIONS * 3, "invalid_arguments": SESSIONS * 6})


def test_twenty_threads_emitting_at_once_never_interleave_lines(tmp_path: Path) -> None:
    log = AuditLog(AuditConfig(path=str(tmp_path / "a.jsonl"), max_bytes=16_384, backup_count=1000))
    barrier = threading.Barrier(SESSIONS)

    def emit_many(number: int) -> None:
        barrier.wait(5)
        for index in range(250):
            log.emit({"event": "tool_call", "session": f"t{number}", "n": index, "pad": "x" * (index % 300)})

    threads = [threading.Thread(target=emit_many, args=(n,)) for n in range(SESSIONS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert log.close(10)
    events = [json.loads(line) for line in read_all(tmp_path, "a.jsonl")]
    assert len(events) == SESSIONS * 250 == 5000
    for number in range(SESSIONS):
        assert [e["n"] for e in events if e["session"] == f"t{number}"] == list(range(250)), "in order per thread"
    assert log.health()["rotations"] > 10
