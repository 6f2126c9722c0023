"""The session circuit breaker as a state machine over a fake clock (no sleeps)."""

from __future__ import annotations

import pytest

from repo_sandbox.config.model import GuardConfig
from repo_sandbox.runtime.breaker import Blocked, FailureInfo, SessionBreaker, Ticket
from repo_sandbox.runtime.clock import FakeClock

NOT_FOUND = FailureInfo("not_found", "Nothing at 'a.py'.", "Search first.")
A = {"path": "src/a.py"}


def fail(breaker: SessionBreaker, arguments: dict[str, str], tool: str = "read_file") -> list[str]:
    ticket = breaker.admit(tool, arguments)
    assert isinstance(ticket, Ticket)
    return [change.kind for change in breaker.record(tool, arguments, ticket, NOT_FOUND)]


def succeed(breaker: SessionBreaker, arguments: dict[str, str], tool: str = "read_file") -> list[str]:
    ticket = breaker.admit(tool, arguments)
    assert isinstance(ticket, Ticket)
    return [change.kind for change in breaker.record(tool, arguments, ticket, None)]


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def breaker(clock: FakeClock) -> SessionBreaker:
    return SessionBreaker(GuardConfig(), clock)


def test_closed_to_open_to_half_open_to_closed(breaker: SessionBreaker, clock: FakeClock) -> None:
    assert fail(breaker, A) == []
    assert fail(breaker, A) == []
    assert fail(breaker, A) == ["opened"]
    blocked = breaker.admit("read_file", A)
    assert isinstance(blocked, Blocked)
    assert blocked.retry_after_s == 300
    assert breaker.snapshot()[0]["state"] == "open"
    clock.advance(120)
    blocked = breaker.admit("read_file", A)
    assert isinstance(blocked, Blocked) and blocked.retry_after_s == 180
    clock.advance(180)
    assert breaker.snapshot()[0]["state"] == "half_open"
    assert succeed(breaker, A) == ["closed"]
    assert breaker.circuits() == []
    assert isinstance(breaker.admit("read_file", A), Ticket)


def test_half_open_lets_exactly_one_trial_call_through(breaker: SessionBreaker, clock: FakeClock) -> None:
    for _ in range(3):
        fail(breaker, A)
    clock.advance(300)
    trial = breaker.admit("read_file", A)
    assert isinstance(trial, Ticket) and len(trial.probes) == 1
    second = breaker.admit("read_file", A)
    assert isinstance(second, Blocked) and second.retry_after_s == 1.0
    assert breaker.record("read_file", A, trial, NOT_FOUND) == []  # failed trial: open again, no list change
    again = breaker.admit("read_file", A)
    assert isinstance(again, Blocked) and again.retry_after_s == 300
    assert breaker.circuits()[0].failures == 4


def test_a_trial_call_that_ends_without_outcome_frees_the_slot(breaker: SessionBreaker, clock: FakeClock) -> None:
    for _ in range(3):
        fail(breaker, A)
    clock.advance(300)
    trial = breaker.admit("read_file", A)
    assert isinstance(trial, Ticket)
    breaker.release(trial)
    assert isinstance(breaker.admit("read_file", A), Ticket)


def test_circuits_are_per_tool_and_per_argument_cluster(breaker: SessionBreaker) -> None:
    for _ in range(3):
        fail(breaker, A)
    assert isinstance(breaker.admit("read_file", {"path": "./src/a.py"}), Blocked)  # similar (0.71)
    assert isinstance(breaker.admit("read_file", {"path": "src/b.py"}), Ticket)  # another file (0.67)
    assert isinstance(breaker.admit("read_file", {"path": "docs/index.md"}), Ticket)
    assert isinstance(breaker.admit("count_lines", A), Ticket)


def test_failures_of_different_arguments_do_not_add_up(breaker: SessionBreaker) -> None:
    for path in ("src/a.py", "docs/guide.md", "tests/test_x.py", "Makefile"):
        assert fail(breaker, {"path": path}) == []
    assert breaker.circuits() == []


def test_a_similar_success_breaks_the_streak(breaker: SessionBreaker) -> None:
    fail(breaker, A)
    fail(breaker, A)
    succeed(breaker, A)
    assert fail(breaker, A) == []
    assert fail(breaker, A) == []
    assert fail(breaker, A) == ["opened"]


def test_only_failures_within_the_window_count(breaker: SessionBreaker, clock: FakeClock) -> None:
    fail(breaker, A)
    fail(breaker, A)
    clock.advance(300.5)
    assert fail(breaker, A) == []
    assert fail(breaker, A) == []
    assert fail(breaker, A) == ["opened"]


def test_snapshot_reports_the_last_error_and_the_time_left(breaker: SessionBreaker, clock: FakeClock) -> None:
    for _ in range(3):
        fail(breaker, A)
    clock.advance(100)
    assert breaker.snapshot() == [
        {
            "tool": "read_file",
            "state": "open",
            "arguments_like": A,
            "failures": 3,
            "last_error": {"code": "not_found", "message": "Nothing at 'a.py'.", "hint": "Search first."},
            "retry_after_s": 200.0,
        }
    ]
