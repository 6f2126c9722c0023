"""Per-session state tables stay bounded."""

from __future__ import annotations

from repo_sandbox.runtime.sessions import SessionTable


def test_each_session_gets_its_own_state() -> None:
    table: SessionTable[list[int]] = SessionTable(list)
    table.get("a").append(1)
    assert table.get("b") == []
    assert table.get("a") == [1]
    assert table.peek("c") is None


def test_least_recently_used_session_is_forgotten_beyond_the_bound() -> None:
    table: SessionTable[list[int]] = SessionTable(list, max_sessions=2)
    table.get("a").append(1)
    table.get("b")
    table.get("a")
    table.get("c")
    assert list(table) == ["a", "c"]
    assert len(table) == 2
