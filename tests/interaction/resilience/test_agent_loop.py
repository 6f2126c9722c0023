"""A scripted agent loop that plays an LLM: it reads each graded error and follows its `category`,
`retryable` and `hint` (DESIGN.md §4), and reaches every goal without human help.

Each scenario prints its transcript (see it with `pytest -s`) and asserts on it. Faults the read-only tools
cannot produce on demand (an I/O error, a crash) come from two test tools registered next to the real ones;
their errors travel through the real pipeline, server and SDK client like any other.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, ConfigDict, Field

from repo_sandbox.errors import IOFailureError
from repo_sandbox.runtime.clock import FakeClock
from repo_sandbox.testing import Mode, ServerFactory, Session, open_session
from repo_sandbox.tools._results import ResultModel
from repo_sandbox.tools.registry import TOOLS, TOOLS_BY_NAME
from repo_sandbox.tools.spec import ToolSpec
from repo_sandbox.wiring import handlers
from repo_sandbox.workspace import Workspace

pytestmark = pytest.mark.anyio

Call = tuple[str, dict[str, Any]]


@dataclass
class Task:
    goal: str
    first: Call
    done: Any
    """`done(result) -> bool`: the result reaches the goal."""
    alternative: Call | None = None
    """What to do instead when told not to retry (permission_denied, internal, a circuit)."""
    poll: bool = False
    """Check again while the result is not what the goal needs (a naive "has it changed yet?" loop)."""


@dataclass
class ScriptedAgent:
    session: Session
    clock: FakeClock
    stubborn: bool = False
    """Repeat a failing call as the agent of seed 002 did, until the server says to change approach."""
    transcript: list[str] = field(default_factory=list[str])
    seen: dict[str, dict[str, Any]] = field(default_factory=dict[str, dict[str, Any]])
    """Results already obtained, by call: what "use what you already have" refers to."""

    def say(self, line: str) -> None:
        self.transcript.append(line)
        print(line)

    async def act(self, call: Call) -> dict[str, Any]:
        tool, arguments = call
        self.say(f"  -> {tool} {json.dumps(arguments)}")
        result = await self.session.call(tool, arguments)
        if result.get("is_error"):
            self.say(
                f"  <- error {result['code']} ({result['category']}, retryable={str(result['retryable']).lower()}): "
                f"{result['hint']}"
            )
        else:
            self.seen[json.dumps(call)] = result
            self.say(f"  <- ok {json.dumps(result)[:100]}")
        return result

    async def solve(self, task: Task, max_steps: int = 12) -> dict[str, Any] | None:
        self.say(f"task: {task.goal}")
        call: Call | None = task.first
        pending_path: Call | None = None
        for _ in range(max_steps):
            assert call is not None
            result = await self.act(call)
            if not result.get("is_error"):
                if task.done(result):
                    self.say("  done")
                    return result
                if task.poll:
                    self.say("  agent: no change yet; check again")
                    continue
                if pending_path is not None and result.get("files"):
                    tool, arguments = pending_path
                    call, pending_path = (tool, {**arguments, "path": result["files"][0]}), None
                    self.say(f"  agent: found it; retry {tool} with path {result['files'][0]!r}")
                    continue
                self.say("  agent: not what I need; giving up on this goal")
                return None
            decision = self.recover(task, call, result)
            if decision is None:
                return None
            call, pending_path = decision
        raise AssertionError("the agent did not reach its goal within the step budget")

    def recover(self, task: Task, call: Call, error: dict[str, Any]) -> tuple[Call, Call | None] | None:
        tool, arguments = call
        category, hint, details = error["category"], error["hint"], error["details"]
        if category == "invalid_argument":
            if "fixed_strings=true" in hint:
                self.say("  agent: invalid_argument -> fix the arguments: the hint says fixed_strings=true")
                return (tool, {**arguments, "fixed_strings": True}), None
            field_name = details.get("field")
            self.say(f"  agent: invalid_argument -> fix the arguments: drop {field_name!r} (use its default)")
            return (tool, {k: v for k, v in arguments.items() if k != field_name}), None
        if category == "not_found":
            if self.stubborn:
                self.say("  agent: (stubborn) the file must be there; same call again")
                return call, None
            stem = re.sub(r"\.\w+$", "", str(arguments["path"]).rsplit("/", 1)[-1])
            self.say(f"  agent: not_found -> search first, as the hint says: search_files '{stem}*'")
            return ("search_files", {"pattern": f"{stem}*"}), call
        if category == "limit_exceeded":
            if error["code"] == "budget_exhausted":
                have = len(self.seen)
                self.say(f"  agent: limit_exceeded (budget) -> finish with what I have ({have} results)")
                return None
            self.say("  agent: limit_exceeded -> narrow the request")
            return (tool, {**arguments, "limit": 1}), None
        if category == "unavailable":
            if error["code"] == "repeated_call":
                self.say("  agent: unavailable (repeated_call) -> the result has not changed: use the one I have")
                return None
            if "change the approach" in hint.lower() and task.alternative is not None:
                self.stubborn = False
                self.say(f"  agent: unavailable (circuit_open after {details['failures']} failures) -> change approach")
                return task.alternative, (call if task.alternative[0] == "search_files" else None)
            self.say(f"  agent: unavailable -> wait {details['retry_after_s']} s, then one trial call")
            self.clock.advance(details["retry_after_s"])
            return call, None
        if category == "execution_failed" and error["retryable"]:
            self.say("  agent: execution_failed, retryable -> try the same call once more")
            return call, None
        if category in ("permission_denied", "execution_failed", "internal"):
            if category == "internal":
                self.say(f"  agent: internal -> report incident {details['incident_id']} to the user")
            self.say(f"  agent: {category} -> do not retry; another approach")
            return (task.alternative, None) if task.alternative is not None else None
        raise AssertionError(f"unknown category {category}")


def has_match(path: str) -> Any:
    return lambda result: any(m["path"] == path for m in result.get("matches", []))


def read(path: str) -> Any:
    return lambda result: result.get("path") == path and "content" in result


# Faults on demand ----------------------------------------------------------------------------------


class PathArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: Annotated[str, Field(min_length=1)]


class PathResult(ResultModel):
    path: str
    content: str


FLAKY_CALLS: list[str] = []


def flaky_read(ws: Workspace, args: PathArgs) -> PathResult:
    """Fails with a (retryable) I/O error on its first call, then works."""
    FLAKY_CALLS.append(args.path)
    if len(FLAKY_CALLS) == 1:
        raise IOFailureError(f"Reading '{args.path}' failed: Input/output error.", path=args.path)
    return PathResult(path=args.path, content="flaky but fine")


def crashing_read(ws: Workspace, args: PathArgs) -> PathResult:
    raise RuntimeError(f"bug while reading /home/operator/secret/{args.path}")


FAULTY = (
    ToolSpec("flaky_read", "Flaky read", "test tool", PathArgs, (PathResult,), flaky_read),
    ToolSpec("crashing_read", "Crashing read", "test tool", PathArgs, (PathResult,), crashing_read),
)


@pytest.fixture
def faulty_tools(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(handlers, "TOOLS", (*TOOLS, *FAULTY))
    for spec in FAULTY:
        monkeypatch.setitem(TOOLS_BY_NAME, spec.name, spec)
    FLAKY_CALLS.clear()
    yield


# Scenarios ------------------------------------------------------------------------------------------


async def test_agent_recovers_from_invalid_argument(make_server: ServerFactory, clock: FakeClock, era: Mode) -> None:
    async with open_session(make_server(), era) as session:
        agent = ScriptedAgent(session, clock)
        task = Task("find where print( is called", ("search_text", {"pattern": "print("}), has_match("src/main.py"))
        assert await agent.solve(task) is not None
    assert "  agent: invalid_argument -> fix the arguments: the hint says fixed_strings=true" in agent.transcript


async def test_agent_recovers_from_a_bad_field(make_server: ServerFactory, clock: FakeClock, era: Mode) -> None:
    async with open_session(make_server(), era) as session:
        agent = ScriptedAgent(session, clock)
        task = Task("read the helper", ("read_file", {"path": "src/util.py", "limit": 0}), read("src/util.py"))
        assert await agent.solve(task) is not None
    assert "  agent: invalid_argument -> fix the arguments: drop 'limit' (use its default)" in agent.transcript


async def test_agent_recovers_from_not_found(make_server: ServerFactory, clock: FakeClock, era: Mode) -> None:
    async with open_session(make_server(), era) as session:
        agent = ScriptedAgent(session, clock)
        task = Task("read the main module", ("read_file", {"path": "main.py"}), read("src/main.py"))
        assert await agent.solve(task) is not None
    assert "  agent: found it; retry read_file with path 'src/main.py'" in agent.transcript


async def test_agent_takes_another_approach_after_permission_denied(
    make_server: ServerFactory, clock: FakeClock, era: Mode
) -> None:
    async with open_session(make_server(), era) as session:
        agent = ScriptedAgent(session, clock)
        task = Task(
            "learn how the app is configured",
            ("read_file", {"path": ".env"}),
            read("README.md"),
            alternative=("read_file", {"path": "README.md"}),
        )
        assert await agent.solve(task) is not None
    assert sum(line.startswith('  -> read_file {"path": ".env"}') for line in agent.transcript) == 1
    assert "  agent: permission_denied -> do not retry; another approach" in agent.transcript


async def test_agent_finishes_with_what_it_has_when_the_budget_is_spent(
    make_server: ServerFactory, clock: FakeClock, era: Mode
) -> None:
    async with open_session(make_server(budget={"max_calls": 2}), era) as session:
        agent = ScriptedAgent(session, clock)
        for path in ("README.md", "src/util.py", "src/main.py"):
            await agent.solve(Task(f"read {path}", ("read_file", {"path": path}), read(path)))
    assert "  agent: limit_exceeded (budget) -> finish with what I have (2 results)" in agent.transcript
    assert agent.transcript[-1].startswith("  agent: limit_exceeded (budget)")


async def test_stubborn_agent_is_stopped_by_the_breaker_and_changes_approach(
    make_server: ServerFactory, clock: FakeClock, era: Mode
) -> None:
    """Seed 002's loop: the same failing call again and again, until circuit_open tells it to change approach."""
    async with open_session(make_server(), era) as session:
        agent = ScriptedAgent(session, clock, stubborn=True)
        task = Task(
            "read the main module",
            ("read_file", {"path": "src/mian.py"}),
            read("src/main.py"),
            alternative=("search_files", {"pattern": "*main*"}),
        )
        assert await agent.solve(task) is not None
    calls = [line for line in agent.transcript if line.startswith('  -> read_file {"path": "src/mian.py"}')]
    assert len(calls) == 4  # 3 real failures, then circuit_open
    assert "  agent: unavailable (circuit_open after 3 failures) -> change approach" in agent.transcript


async def test_agent_waits_out_an_open_circuit_when_it_has_no_alternative(
    make_server: ServerFactory, clock: FakeClock, era: Mode, repo: Any
) -> None:
    async with open_session(make_server(), era) as session:
        agent = ScriptedAgent(session, clock, stubborn=True)
        for _ in range(3):
            await agent.act(("read_file", {"path": "gen/out.py"}))
        (repo / "gen").mkdir()
        (repo / "gen" / "out.py").write_text("generated = True\n")  # the build finished meanwhile
        assert await agent.solve(
            Task("read the generated file", ("read_file", {"path": "gen/out.py"}), read("gen/out.py"))
        )
    assert "  agent: unavailable -> wait 300.0 s, then one trial call" in agent.transcript


async def test_agent_stops_repeating_an_unchanging_call(
    make_server: ServerFactory, clock: FakeClock, era: Mode
) -> None:
    async with open_session(make_server(), era) as session:
        agent = ScriptedAgent(session, clock)
        task = Task("wait for the README to change", ("read_file", {"path": "README.md"}), lambda r: False, poll=True)
        assert await agent.solve(task) is None
    assert agent.transcript.count("  agent: no change yet; check again") == 5
    assert "  agent: unavailable (repeated_call) -> the result has not changed: use the one I have" in agent.transcript


async def test_agent_retries_a_retryable_execution_failure(
    make_server: ServerFactory, clock: FakeClock, era: Mode, faulty_tools: None
) -> None:
    async with open_session(make_server(), era) as session:
        agent = ScriptedAgent(session, clock)
        task = Task("read through a flaky disk", ("flaky_read", {"path": "a.txt"}), lambda r: "content" in r)
        assert await agent.solve(task) is not None
    assert "  agent: execution_failed, retryable -> try the same call once more" in agent.transcript
    assert FLAKY_CALLS == ["a.txt", "a.txt"]


async def test_agent_reports_an_internal_error_and_works_around_it(
    make_server: ServerFactory, clock: FakeClock, era: Mode, faulty_tools: None
) -> None:
    async with open_session(make_server(), era) as session:
        agent = ScriptedAgent(session, clock)
        task = Task(
            "read a file",
            ("crashing_read", {"path": "src/util.py"}),
            read("src/util.py"),
            alternative=("read_file", {"path": "src/util.py"}),
        )
        assert await agent.solve(task) is not None
    assert any(line.startswith("  agent: internal -> report incident ") for line in agent.transcript)
    assert not any("secret" in line or "/home/" in line for line in agent.transcript)
