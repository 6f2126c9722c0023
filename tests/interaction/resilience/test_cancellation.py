"""Cancelling a call through the real client stops the work and kills the processes it started (DESIGN.md §6).

In the 2025-11-25 era the client sends `notifications/cancelled`; in 2026-07-28 (in process) the call's
scope is cancelled. Either way the command's or the search's processes must be gone at once, found by their
real PIDs among this test process's descendants (the server runs in it), and the session must stay usable.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from repo_sandbox.policy.exec_model import DEFAULT_ALLOW
from repo_sandbox.testing import Mode
from repo_sandbox.wiring.assembly import build_server
from repo_sandbox.workspace import Workspace

pytestmark = pytest.mark.anyio

SLOW_PATTERN = r"(?:\b\w+\b\W+){300}\d"
"""Unicode word boundaries keep ripgrep off its fast engines: ~8 s per MB of the text below on this machine."""
SLOW_TEXT = " ".join(("alpha", "beta", "délta", "εψιλον", "ηta")[i % 5] for i in range(2000)) + "\n"


def descendants() -> dict[int, list[str]]:
    """argv of every live descendant of this process, by PID (a /proc scan)."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as handle:
                parent = int(handle.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(parent, []).append(int(name))
    found: dict[int, list[str]] = {}
    pending = [os.getpid()]
    while pending:
        for child in children.get(pending.pop(), []):
            pending.append(child)
            try:
                with open(f"/proc/{child}/cmdline", "rb") as handle:
                    argv = handle.read().split(b"\0")
            except OSError:
                continue
            found[child] = [arg.decode(errors="replace") for arg in argv if arg]
    return found


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


async def started(matches: Callable[[list[str]], bool]) -> list[int]:
    """The PIDs of the descendants whose argv `matches`, once there is at least one."""
    with anyio.fail_after(10):
        while True:
            pids = [pid for pid, argv in descendants().items() if argv and matches(argv)]
            if pids:
                return pids
            await anyio.sleep(0.01)


async def gone(pids: list[int]) -> None:
    with anyio.fail_after(3):  # far less than the work would take: only the cancellation can have ended it
        while any(alive(pid) for pid in pids):  # noqa: ASYNC110  # no event to wait on: the kernel reaps them
            await anyio.sleep(0.01)


@pytest.fixture
def open_workspace(make_settings: Callable[..., Any]) -> Iterator[Callable[..., Workspace]]:
    opened: list[Workspace] = []

    def factory(root: Path, **sections: dict[str, Any]) -> Workspace:
        opened.append(Workspace(make_settings(root, **sections)))
        return opened[-1]

    yield factory
    for workspace in opened:
        workspace.close()


async def test_cancelling_execute_bash_kills_its_command_and_the_session_goes_on(
    open_workspace: Callable[..., Workspace], tmp_path: Path, era: Mode
) -> None:
    (tmp_path / "repo").mkdir()
    exec_config = {"allow": [*DEFAULT_ALLOW]}  # sleep is a built-in rule
    workspace = open_workspace(tmp_path / "repo", exec=exec_config)
    sleeping: list[int] = []
    async with Client(build_server(workspace), mode=era) as client:
        async with anyio.create_task_group() as group:
            group.start_soon(client.call_tool, "execute_bash", {"command": "sleep 97", "timeout": 120})
            sleeping = await started(lambda argv: os.path.basename(argv[0]) == "sleep" and argv[1:] == ["97"])
            group.cancel_scope.cancel()
        await gone(sleeping)
        with anyio.fail_after(10):
            result = await client.call_tool("execute_bash", {"command": "echo still here"})
    assert result.structured_content is not None
    assert result.structured_content["stdout"] == "still here\n"


@pytest.mark.slow
async def test_a_long_search_reports_progress_and_cancelling_it_kills_its_rg(
    open_workspace: Callable[..., Workspace], tmp_path: Path, era: Mode
) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    for name in ("a.txt", "b.txt"):  # two files: a single file is searched by the Python engine
        (root / name).write_text(SLOW_TEXT * 130)
    workspace = open_workspace(root, search={"engine": "ripgrep"}, limits={"regex_timeout_s": 120})
    messages: list[str | None] = []
    reported = anyio.Event()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        messages.append(message)
        reported.set()

    searching: list[int] = []
    async with Client(build_server(workspace), mode=era) as client:
        async with anyio.create_task_group() as group:
            group.start_soon(
                lambda: client.call_tool("search_text", {"pattern": SLOW_PATTERN}, progress_callback=on_progress)
            )
            searching = await started(lambda argv: os.path.basename(argv[0]) == "rg" and SLOW_PATTERN in argv)
            with anyio.fail_after(10):
                await reported.wait()
            assert all(alive(pid) for pid in searching), "the search ended before it could be cancelled"
            group.cancel_scope.cancel()
        await gone(searching)
        with anyio.fail_after(10):
            result = await client.call_tool("search_text", {"pattern": "délta", "output_mode": "count"})
    assert messages and all(message is not None and message.endswith("files examined") for message in messages)
    assert result.structured_content is not None
    assert result.structured_content["counts"] == [{"path": "a.txt", "count": 130}, {"path": "b.txt", "count": 130}]


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["ripgrep", "python"])
async def test_a_search_past_its_time_budget_is_a_timeout_and_its_rg_is_gone(
    open_workspace: Callable[..., Workspace], tmp_path: Path, era: Mode, engine: str
) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    for name in ("a.txt", "b.txt"):
        (root / name).write_text(SLOW_TEXT * 130)
    workspace = open_workspace(root, search={"engine": engine}, limits={"regex_timeout_s": 1})
    async with Client(build_server(workspace), mode=era) as client:
        with anyio.fail_after(20):  # the whole search would take about 17 s with ripgrep
            result = await client.call_tool("search_text", {"pattern": SLOW_PATTERN})
        assert result.is_error
        assert result.structured_content is not None
        error = result.structured_content["error"]
        assert (error["code"], error["category"]) == ("timeout", "limit_exceeded")
        assert [pid for pid, argv in descendants().items() if SLOW_PATTERN in argv] == []
        with anyio.fail_after(10):
            followed = await client.call_tool("search_text", {"pattern": "délta", "output_mode": "count"})
    assert followed.structured_content is not None
    assert followed.structured_content["counts"] == [{"path": "a.txt", "count": 130}, {"path": "b.txt", "count": 130}]
