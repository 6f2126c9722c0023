"""execute_bash's policy decisions in a real audit file: command-policy refusals, every approval step, and
a sandbox fallback, each tied to its call (session, request id, tool), through the SDK client."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp.types import ElicitResult

from repo_sandbox.audit.view import compute_stats
from repo_sandbox.exec import sandbox as sandbox_module
from repo_sandbox.exec import selection as selection_module
from repo_sandbox.policy.exec_model import DEFAULT_ALLOW
from repo_sandbox.testing import ERAS, ScriptedUser, open_session
from repo_sandbox.wiring.assembly import build_server
from repo_sandbox.workspace import Workspace

pytestmark = pytest.mark.anyio

ASK_WC: dict[str, Any] = {"ask": ["wc"], "allow": [name for name in DEFAULT_ALLOW if name != "wc"]}


@pytest.fixture
def audited(repo: Path, make_settings: Callable[..., Any], tmp_path: Path) -> Iterator[Callable[..., Workspace]]:
    opened: list[Workspace] = []

    def factory(**exec_config: Any) -> Workspace:
        settings = make_settings(repo, exec=exec_config, audit={"path": str(tmp_path / "audit.jsonl")})
        opened.append(Workspace(settings))
        return opened[-1]

    yield factory
    for workspace in opened:
        workspace.close()


def events(workspace: Workspace) -> list[dict[str, Any]]:
    assert workspace.audit.flush(5)
    path = Path(workspace.settings.audit.path)
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def decisions(workspace: Workspace) -> list[dict[str, Any]]:
    return [event for event in events(workspace) if event["event"] == "policy_decision"]


def summary(events: list[dict[str, Any]]) -> list[tuple[str, str, str | None]]:
    return [(event["kind"], event["decision"], event["rule"]) for event in events]


@pytest.mark.parametrize("era", ERAS)
async def test_command_policy_refusals_are_audited_with_their_rule(audited: Callable[..., Workspace], era: str) -> None:
    workspace = audited()
    async with open_session(build_server(workspace), era) as session:
        assert (await session.call("execute_bash", {"command": "curl http://x"}))["code"] == "command_not_allowed"
        assert (await session.call("execute_bash", {"command": "sort -o out README.md"}))["code"] == (
            "argument_not_allowed"
        )
        assert (await session.call("execute_bash", {"command": "ls & id"}))["code"] == "command_parse_error"
        assert (await session.call("execute_bash", {"command": "echo ok"}))["stdout"] == "ok\n"
    events = decisions(workspace)
    assert summary(events) == [
        ("command_denied", "deny", "exec.allow"),
        ("command_denied", "deny", "sort: -o"),
        ("command_denied", "deny", "command_parse_error"),
    ]
    assert events[0]["details"] == {"code": "command_not_allowed", "program": "curl"}
    assert events[1]["details"] == {"code": "argument_not_allowed", "program": "sort", "option": "-o"}
    assert {event["tool"] for event in events} == {"execute_bash"}
    assert len({event["request_id"] for event in events}) == 3
    assert len({event["session"] for event in events}) == 1


async def test_approval_steps_are_audited(audited: Callable[..., Workspace]) -> None:
    workspace = audited(**ASK_WC)
    user = ScriptedUser([ElicitResult(action="accept", content={"approve": True}), ElicitResult(action="decline")])
    async with open_session(build_server(workspace), "legacy", user=user) as session:
        assert (await session.call("execute_bash", {"command": "wc -l README.md"}))["exit_code"] == 0
        assert (await session.call("execute_bash", {"command": "wc -c README.md"}))["code"] == "approval_denied"
    async with open_session(build_server(workspace), "legacy") as session:
        assert (await session.call("execute_bash", {"command": "wc -w README.md"}))["code"] == "approval_required"
    events = decisions(workspace)
    assert summary(events) == [
        ("approval_asked", "ask", "exec.ask"),
        ("approval_granted", "allow", "exec.ask"),
        ("approval_asked", "ask", "exec.ask"),
        ("approval_denied", "deny", "exec.ask"),
        ("approval_required", "deny", "exec.ask"),
    ]
    assert [event["details"]["command"] for event in events] == [
        "wc -l README.md", "wc -l README.md", "wc -c README.md", "wc -c README.md", "wc -w README.md"
    ]  # fmt: skip
    assert all(event["details"]["programs"] == ["wc"] for event in events)


async def test_modern_era_approval_is_audited_when_asked_and_when_answered(audited: Callable[..., Workspace]) -> None:
    workspace = audited(**ASK_WC)
    user = ScriptedUser([ElicitResult(action="accept", content={"approve": True})])
    async with open_session(build_server(workspace), "auto", user=user) as session:
        assert (await session.call("execute_bash", {"command": "wc -l README.md"}))["exit_code"] == 0
    # the call pauses for the answer (InputRequiredResult) and runs again with it: asked twice, granted once
    assert summary(decisions(workspace)) == [
        ("approval_asked", "ask", "exec.ask"),
        ("approval_asked", "ask", "exec.ask"),
        ("approval_granted", "allow", "exec.ask"),
    ]
    # one tool_call event per round: the paused one says it paused (not that the client cancelled it)
    calls = [event for event in events(workspace) if event["event"] == "tool_call"]
    assert [(event["tool"], event["outcome"]) for event in calls] == [
        ("execute_bash", "input_required"),
        ("execute_bash", "ok"),
    ]
    assert compute_stats(calls)["per_tool"]["execute_bash"]["calls"] == 1


async def test_sandbox_fallback_is_audited_once(
    audited: Callable[..., Workspace], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(selection_module, "_probes", {})
    monkeypatch.setattr(sandbox_module, "_probe_one", lambda backend, network: f"{backend} refused")
    workspace = audited()
    async with open_session(build_server(workspace), "legacy") as session:
        first = await session.call("execute_bash", {"command": "echo one"})
        await session.call("execute_bash", {"command": "echo two"})
    assert first["sandbox"] == "none"
    [event] = decisions(workspace)
    assert summary([event]) == [("sandbox_fallback", "unsandboxed", "exec.sandbox")]
    assert event["details"] == {
        "requested": "auto",
        "backend": "none",
        "rejected": {"bwrap": "bwrap refused", "bwrap-noproc": "bwrap-noproc refused", "landlock": "landlock refused"},
    }
    assert event["tool"] == "execute_bash"


async def test_a_backend_that_works_first_time_is_not_a_fallback(audited: Callable[..., Workspace]) -> None:
    workspace = audited()
    async with open_session(build_server(workspace), "legacy") as session:
        assert (await session.call("execute_bash", {"command": "echo ok"}))["stdout"] == "ok\n"
    assert decisions(workspace) == []
