"""Finding the processes of a call that outlived its stages, through /proc: by session or process group, as
children of a stage, or by the call's tag in their environment (what a double-forking daemon cannot shed)."""

from __future__ import annotations

import contextlib
import os
import signal
from typing import Final

import anyio

TAG_VARIABLE: Final = "REPO_SANDBOX_CALL"
"""Environment variable carrying the call's id into every process it starts (to find them in /proc)."""


def session_members(sessions: set[int]) -> list[int]:
    """PIDs whose session or process group is one of `sessions` (a /proc scan)."""
    found: list[int] = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) in sessions or int(fields[3]) in sessions:
            found.append(int(name))
    return found


def children_of(pid: int) -> list[int]:
    """Direct children of `pid` (all its threads)."""
    found: list[int] = []
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError), open(f"/proc/{pid}/task/{task}/children") as handle:
                found += [int(c) for c in handle.read().split()]
    return found


def tagged(tag: str) -> list[int]:
    """Live processes whose environment carries `tag` (the call's TAG_VARIABLE value)."""
    needle = f"{TAG_VARIABLE}={tag}\0".encode()
    found: list[int] = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            with contextlib.suppress(OSError), open(f"/proc/{name}/environ", "rb") as handle:
                if needle in handle.read() + b"\0":
                    found.append(int(name))
    return found


async def sweep_tagged(tag: str) -> None:
    """SIGKILL every process of the call still alive until none is left (bounded)."""
    with anyio.move_on_after(2):
        while pids := tagged(tag):
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            await anyio.sleep(0.01)
