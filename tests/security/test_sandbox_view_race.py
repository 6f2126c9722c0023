"""The sandbox's view of the repository against a writer that swaps entries for symlinks (issue 19, finding 1).

Directories that hold a denied entry are rebuilt in the sandbox and each visible entry is bound back. If that
bind named the host path, an entry swapped for a symlink after the plan was followed on the host: a file
became an outside file or `../.env`, a directory became an outside tree. The binds must take the inode that
was checked (a descriptor opened beneath the root without following links), so that a swap either shows
nothing or shows the old entry, never what the symlink points at.

Two kinds of rows, through the real server and the real sandbox, under every OS backend here:
- deterministic: the swap happens at the worst moments, right after the plan (`ExecService.build` returned)
  and right before the sandbox starts (the `Popen` of the stage);
- a flipper thread exchanging (renameat2 RENAME_EXCHANGE) `d/race.txt` with a symlink to an outside file or
  to `../.env`, and `d/sub` and `d/deep` with symlinks to an outside tree, while execute_bash reads them
  2,000 times per backend: it reports flips, calls and leaks, and there must be 0 leaks.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from test_race import Flipper, exchange

from exec_support import os_backends
from repo_sandbox.calls import CallContext
from repo_sandbox.exec.sandbox import LAUNCHER
from repo_sandbox.exec.service import ExecService
from repo_sandbox.runtime.assembly import build_pipeline
from repo_sandbox.tools.registry import TOOLS
from repo_sandbox.workspace import Workspace

pytestmark = pytest.mark.anyio

OUTSIDE = "OUTSIDE-VIEW-SECRET-61aa"
ENV = "ENV-VIEW-SECRET-0c7e"
INSIDE = "INSIDE-VIEW-OK"
CALLS_PER_BACKEND = {"bwrap": 2_000, "bwrap-noproc": 2_000, "landlock": 1_000}
"""Landlock calls cost three times as much (a Python launcher per stage): fewer, to keep the suite's time."""
BWRAP_BACKENDS = [b for b in os_backends() if b.startswith("bwrap")]


def build(base: Path) -> Path:
    """`d` and `d/deep` hold a denied entry (so both are rebuilt); `spare/` holds the symlinks to swap in."""
    root, outside, spare = base / "repo", base / "outside", base / "spare"
    for directory in (root / "d" / "sub", root / "d" / "deep", outside / "dir", spare):
        directory.mkdir(parents=True)
    (root / ".env").write_text(f"KEY={ENV}\n")
    (root / "d" / ".env").write_text(f"KEY={ENV}\n")
    (root / "d" / "deep" / ".env").write_text(f"KEY={ENV}\n")
    (root / "d" / "race.txt").write_text(f"{INSIDE} file\n")
    (root / "d" / "sub" / "inner.txt").write_text(f"KEY={INSIDE} sub\n")
    (root / "d" / "deep" / "inner.txt").write_text(f"KEY={INSIDE} deep\n")
    (outside / "secret.txt").write_text(f"KEY={OUTSIDE} file\n")
    (outside / "dir" / "inner.txt").write_text(f"KEY={OUTSIDE} dir\n")
    (outside / "dir" / ".env").write_text(f"KEY={OUTSIDE} env\n")
    (spare / "abs").symlink_to(outside / "secret.txt")
    (spare / "env").symlink_to("../.env")  # from d/: the root's denied .env
    (spare / "sub").symlink_to(outside / "dir")
    (spare / "deep").symlink_to("../../outside/dir")  # relative, from d/: the outside tree
    return root


SWAPS = {
    # name: (entry in the repository, its replacement in spare/, command, what the untouched entry prints)
    "file-to-outside": ("d/race.txt", "abs", "cat d/race.txt", f"{INSIDE} file"),
    "file-to-dotenv": ("d/race.txt", "env", "cat d/race.txt", f"{INSIDE} file"),
    "dir-to-outside-cat": ("d/sub", "sub", "cat d/sub/inner.txt", f"{INSIDE} sub"),
    "dir-to-outside-grep": ("d/sub", "sub", "grep -r KEY d", f"{INSIDE} sub"),
    "deep-dir-to-outside": ("d/deep", "deep", "cat d/deep/inner.txt", f"{INSIDE} deep"),
    "deep-dir-to-outside-grep": ("d/deep", "deep", "grep -r KEY d/deep", f"{INSIDE} deep"),
}


def leaked(payload: str) -> bool:
    return OUTSIDE in payload or ENV in payload


async def call(workspace: Workspace, command: str) -> tuple[str, str]:
    """(error code or 'ok', the serialised result) of one execute_bash call through the whole server."""
    session = CallContext(session_id=uuid.uuid4().hex[:12])
    with anyio.fail_after(60):
        outcome = await build_pipeline(workspace, TOOLS).call("execute_bash", {"command": command}, session)
    return outcome.error_code or "ok", json.dumps(outcome.payload)


@pytest.mark.parametrize("swap", sorted(SWAPS))
@pytest.mark.parametrize("moment", ["after-plan", "before-spawn"])
@pytest.mark.parametrize("backend", os_backends())
async def test_an_entry_swapped_for_a_symlink_at_the_worst_moment_shows_nothing_outside(
    backend: str, moment: str, swap: str, tmp_path: Path, make_workspace: Callable[..., Workspace],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    entry, replacement, command, untouched = SWAPS[swap]
    root = build(tmp_path)
    workspace = make_workspace(root, exec={"sandbox": backend})
    swapped: list[bool] = []

    def swap_once() -> None:
        if not swapped:
            exchange(root / entry, tmp_path / "spare" / replacement)
            swapped.append(True)

    if moment == "after-plan":
        planned = ExecService.build

        def build_then_swap(self: ExecService, *args: Any, **kwargs: Any) -> Any:
            built = planned(self, *args, **kwargs)
            swap_once()
            return built

        monkeypatch.setattr(ExecService, "build", build_then_swap)
    else:
        popen = subprocess.Popen

        def swap_then_popen(argv: Any, *args: Any, **kwargs: Any) -> Any:
            if isinstance(argv, list) and (argv[0] == "bwrap" or LAUNCHER in argv):  # a stage, not git on the host
                swap_once()
            return popen(argv, *args, **kwargs)

        monkeypatch.setattr(subprocess, "Popen", swap_then_popen)
    kind, payload = await call(workspace, command)
    assert swapped == [True], "the seam was not reached: the swap never happened"
    assert not leaked(payload), payload
    if moment == "before-spawn" and backend.startswith("bwrap"):
        # the descriptors were opened before the swap: the sandbox shows the entry that was checked
        assert kind == "ok" and untouched in payload, payload


async def _race(workspace: Workspace, root: Path, spare: Path, calls: int) -> tuple[Counter[str], int, list[str]]:
    commands = ["cat d/race.txt", "cat d/sub/inner.txt", "grep -r KEY d", "cat d/deep/inner.txt"]
    flipper = Flipper([(root / "d" / "race.txt", spare / "abs"), (root / "d" / "sub", spare / "sub"),
                       (root / "d" / "race.txt", spare / "env"), (root / "d" / "deep", spare / "deep")])  # fmt: skip
    outcomes: Counter[str] = Counter()
    leaks: list[str] = []
    flipper.start()
    try:
        for index in range(calls):
            command = commands[index % len(commands)]
            kind, payload = await call(workspace, command)
            outcomes[kind] += 1
            if leaked(payload):
                leaks.append(f"{command}: {payload[:300]}")
    finally:
        flipper.stop.set()
        flipper.join(10)
    return outcomes, flipper.flips, leaks


@pytest.mark.slow
@pytest.mark.parametrize("backend", os_backends())
async def test_a_flipper_never_gets_the_sandbox_to_follow_a_swapped_symlink(
    backend: str, tmp_path: Path, make_workspace: Callable[..., Workspace]
) -> None:
    root = build(tmp_path)
    workspace = make_workspace(root, exec={"sandbox": backend})
    calls = CALLS_PER_BACKEND[backend]
    outcomes, flips, leaks = await _race(workspace, root, tmp_path / "spare", calls)
    print(f"{backend}: {calls} calls, {flips} flips, outcomes {dict(outcomes)}, {len(leaks)} leaks")
    assert leaks == [], f"{len(leaks)} of {calls} calls leaked, e.g. {leaks[:3]}"
    assert sum(outcomes.values()) == calls
    assert outcomes["ok"] > 0, "no call ever ran: the race did not run"
    assert flips > 100, "the flipper hardly ran: the race did not run"


def test_the_race_covers_both_bwrap_backends() -> None:
    assert BWRAP_BACKENDS, "bubblewrap does not work here: the race rows would test nothing"


FD_PROGRAM = """import os
open_fds = []
for fd in range(3, 4096):
    try:
        os.fstat(fd)
    except OSError:
        continue
    open_fds.append((fd, os.readlink(f"/proc/self/fd/{fd}") if os.path.isdir("/proc/self/fd") else "?"))
print("open", open_fds)"""
FD_PROBE = f"python3 -c '{FD_PROGRAM}'"
"""Prints every descriptor above 2 the program holds (with what it names, where /proc shows it)."""


@pytest.mark.parametrize("backend", os_backends())
async def test_no_bind_descriptor_reaches_the_program(
    backend: str, tmp_path: Path, make_workspace: Callable[..., Workspace]
) -> None:
    """The descriptors handed to bubblewrap name host inodes; a program holding one could walk up from it
    (`openat(fd, "..")`) out of the sandbox. bubblewrap must have closed every one before the program starts."""
    root = build(tmp_path)
    rules = {"python3": {"any_arguments": True}}
    workspace = make_workspace(root, exec={"sandbox": backend, "allow": ["python3"], "rules": rules})
    kind, payload = await call(workspace, FD_PROBE)
    assert kind == "ok", payload
    assert json.loads(payload)["stdout"] == "open []\n", payload
