"""Time-of-check/time-of-use: a thread swaps in-root entries for symlinks out of the root while the tools use them.

A flipper thread atomically exchanges (renameat2 RENAME_EXCHANGE) `flip` between a regular file and a symlink
to an outside secret, and `flipdir` between a directory and a symlink to an outside directory, as fast as it
can. The main thread reads, searches, counts and lists them 10,000 times. Every outcome must be either an
in-root result or a graded refusal, and no outcome may hold outside content.
"""

from __future__ import annotations

import ctypes
import inspect
import os
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from attack_tree import OUTSIDE_MARKER

from jail_backends import workspace_on
from repo_sandbox.calls import CallContext
from repo_sandbox.engine import select
from repo_sandbox.errors import SandboxError
from repo_sandbox.tools.registry import TOOLS_BY_NAME
from repo_sandbox.workspace import Workspace

pytestmark = pytest.mark.slow

TRIES = 10_000
INSIDE = "INSIDE-RACE-OK"
AT_FDCWD = -100
RENAME_EXCHANGE = 2

_libc = ctypes.CDLL(None, use_errno=True)


def exchange(a: Path, b: Path) -> None:
    if _libc.renameat2(AT_FDCWD, os.fsencode(a), AT_FDCWD, os.fsencode(b), RENAME_EXCHANGE) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def _renameat2_works(tmp: Path) -> bool:
    (tmp / "x").touch()
    (tmp / "y").mkdir()
    try:
        exchange(tmp / "x", tmp / "y")
    except OSError:
        return False
    return True


class Flipper(threading.Thread):
    """Exchanges each (entry, spare) pair over and over until stopped, resting `pause_s` after each exchange."""

    def __init__(self, pairs: list[tuple[Path, Path]], pause_s: float = 0.0) -> None:
        super().__init__(daemon=True)
        self.pairs = pairs
        self.pause_s = pause_s
        self.flips = 0
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            for entry, spare in self.pairs:
                exchange(entry, spare)
                self.flips += 1
                if self.pause_s:
                    self.stop.wait(self.pause_s)


@pytest.fixture
def race_root(tmp_path: Path) -> Path:
    if not _renameat2_works(tmp_path):
        pytest.skip("renameat2(RENAME_EXCHANGE) is not available here (needs Linux >= 3.15 and glibc >= 2.28)")
    outside = tmp_path / "outside"
    (outside / "dir").mkdir(parents=True)
    (outside / "secret.txt").write_text(f"{OUTSIDE_MARKER} file\n")
    (outside / "dir" / "inner.txt").write_text(f"{OUTSIDE_MARKER} dir\n")
    root = tmp_path / "repo"
    (root / "flipdir").mkdir(parents=True)
    (root / "flip").write_text(f"{INSIDE} file\n")
    (root / "flipdir" / "inner.txt").write_text(f"{INSIDE} dir\n")
    spare = tmp_path / "spare"  # the other halves live outside the walked tree, on the same filesystem
    spare.mkdir()
    os.symlink(outside / "secret.txt", spare / "flip")
    os.symlink("../outside/dir", spare / "flipdir")  # relative to the repo: ../outside/dir from the root
    (root / "rel_flip").write_text(f"{INSIDE} rel\n")
    os.symlink("../outside/secret.txt", spare / "rel_flip")
    return root


def _calls() -> list[tuple[str, dict[str, Any]]]:
    everything = {"include_hidden": True, "include_ignored": True}
    return [
        ("read_file", {"path": "flip"}),
        ("search_text", {"pattern": "RACE|SECRET", "path": "flip"}),
        ("count_lines", {"path": "flip"}),
        ("read_file", {"path": "flipdir/inner.txt"}),
        ("search_files", {"pattern": "*", "path": "flipdir", **everything}),
        ("search_text", {"pattern": "RACE|SECRET", "path": "flipdir", **everything}),
        ("count_lines", {"path": "flipdir", **everything}),
        ("read_file", {"path": "rel_flip"}),
        ("search_text", {"pattern": "RACE|SECRET", "path": ".", **everything}),
    ]


JAIL_BACKENDS = ["openat2", "walk-noproc"]


@pytest.fixture(params=JAIL_BACKENDS)
def race_ws(request: pytest.FixtureRequest, race_root: Path) -> Iterator[Workspace]:
    ws = workspace_on(race_root, request.param)
    try:
        yield ws
    finally:
        ws.close()


def run_once(ws: Workspace, tool: str, arguments: dict[str, Any]) -> tuple[str, str]:
    """(outcome kind, serialised result) of one call of the tool body, as the pipeline would run it."""
    spec = TOOLS_BY_NAME[tool]
    args = spec.args_model.model_validate(arguments)
    try:
        if inspect.iscoroutinefunction(spec.body):  # search_text: an async body that runs in a worker thread
            result = anyio.run(spec.body, ws, args, CallContext())
        else:
            result = spec.body(ws, args)
    except SandboxError as exc:
        return exc.code, str(exc.to_payload())
    return "ok", result.model_dump_json()


def race(
    ws: Workspace, flipper: Flipper, calls: list[tuple[str, dict[str, Any]]], tries: int, leaked: Callable[..., bool]
) -> tuple[Counter[str], list[str]]:
    """Run `tries` calls round the table while `flipper` flips entries: the outcome kinds and the leaks, where
    `leaked(arguments, kind, text)` says whether a serialised result gave something away."""
    outcomes: Counter[str] = Counter()
    leaks: list[str] = []
    flipper.start()
    try:
        for i in range(tries):
            tool, arguments = calls[i % len(calls)]
            kind, text = run_once(ws, tool, arguments)
            outcomes[kind] += 1
            if leaked(arguments, kind, text):
                leaks.append(f"{tool} {arguments}: {text[:300]}")
    finally:
        flipper.stop.set()
        flipper.join(10)
    return outcomes, leaks


def test_flipping_files_and_dirs_to_outside_symlinks_never_leaks(race_root: Path, race_ws: Workspace) -> None:
    root = race_root
    spare = root.parent / "spare"
    flipper = Flipper([(root / name, spare / name) for name in ("flip", "flipdir", "rel_flip")])
    outcomes, leaks = race(race_ws, flipper, _calls(), TRIES, lambda arguments, kind, text: OUTSIDE_MARKER in text)
    print(f"race: {TRIES} calls, {flipper.flips} flips, outcomes {dict(outcomes)}, leaks {len(leaks)}")
    assert leaks == []
    assert sum(outcomes.values()) == TRIES
    assert outcomes["ok"] > 0, "the in-root state was never observed: the race did not run"
    assert outcomes["path_outside_root"] > 0, "the symlink state was never observed: the race did not run"
    allowed = {"ok", "path_outside_root", "not_found", "not_a_file", "not_a_directory", "io_error", "special_file"}
    assert set(outcomes) <= allowed, outcomes
    assert flipper.flips > 100


DENIED = "DENIED-RACE-SECRET-3e9d"


DENIED_TRIES = 4000


@pytest.fixture
def denied_race_root(race_root: Path) -> Path:
    """`envflip` / `gitflip` swap with in-root links to the denied `.env` / `.git`: only the deny check on the
    real path (not the jail) stands between the caller and their content."""
    root, spare = race_root, race_root.parent / "spare"
    (root / ".env").write_text(f"{DENIED} env\n")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text(f"{DENIED} git\n")
    (root / "envflip").write_text(f"{INSIDE} env\n")
    os.symlink(".env", spare / "envflip")
    (root / "gitflip").mkdir()
    (root / "gitflip" / "config").write_text(f"{INSIDE} git\n")
    os.symlink(".git", spare / "gitflip")
    (root / "hardflip").write_text(f"{INSIDE} hard\n")
    (root / ".env.hard").write_text(f"{DENIED} hard\n")
    os.link(root / ".env.hard", spare / "hardflip")  # a hard link to a denied file, refused by its link count
    return root


# rg opens the files the census listed by name, so a file swapped for a link to `.env` (or a hard link to it)
# between the two is read by rg: its Landlock domain allows the whole root. The ripgrep rows hold because every
# file rg reports is read again through the jail before its result is believed, unless the watched tree provably
# did not change under rg (`engine.vouch`): the paced rows rest between swaps, so that both ways are taken.
@pytest.mark.parametrize(
    ("engine", "pause_s"),
    [("ripgrep", 0.0), ("ripgrep", 0.015), ("python", 0.0)],
    ids=["rg", "rg-paced", "python"],
)
@pytest.mark.parametrize("backend", JAIL_BACKENDS)
def test_flipping_entries_to_links_to_denied_files_never_leaks(
    denied_race_root: Path, backend: str, engine: str, pause_s: float
) -> None:
    root = denied_race_root
    ws = workspace_on(root, backend, {("search", "engine"): engine})
    if engine == "ripgrep" and ws.jail.uses_proc:  # without /proc the server itself searches with Python
        assert select.report(ws)["engine"] == "ripgrep", "no usable rg: the ripgrep wheel is a dependency"
    everything = {"include_hidden": True, "include_ignored": True}
    calls: list[tuple[str, dict[str, Any]]] = [
        ("read_file", {"path": "envflip"}),
        ("count_lines", {"path": "envflip"}),
        ("search_text", {"pattern": "RACE|SECRET", "path": "envflip"}),
        ("read_file", {"path": "gitflip/config"}),
        ("search_text", {"pattern": "RACE|SECRET", "path": "gitflip", **everything}),
        ("search_files", {"pattern": "**", "path": "gitflip", **everything}),
        ("search_text", {"pattern": "RACE|SECRET", "path": ".", **everything}),
        ("search_text", {"pattern": "SECRET", "path": ".", "output_mode": "count", **everything}),
        ("search_text", {"pattern": "SECRET", "path": ".", "output_mode": "files_with_matches", **everything}),
        ("search_text", {"pattern": "RACE|SECRET", "path": ".", "context": 1, **everything}),
        ("search_text", {"pattern": "secret", "case_sensitive": False, "glob": "*flip*", **everything}),
        ("search_text", {"pattern": "SECRET", "fixed_strings": True, "path": "gitflip", **everything}),
        ("search_text", {"pattern": "RACE", "path": ".", **everything}),
        ("search_text", {"pattern": r"RACE-\w+", "path": ".", "context": 1, **everything}),
    ]
    spare = root.parent / "spare"
    flipper = Flipper([(root / name, spare / name) for name in ("envflip", "gitflip", "hardflip")], pause_s)

    def leaked(arguments: dict[str, Any], kind: str, text: str) -> bool:
        # a count or a file list names only files holding the secret: the in-root files say RACE, not SECRET
        named = arguments.get("output_mode") in ("count", "files_with_matches") and kind == "ok" and "flip" in text
        return DENIED in text or named

    uses_rg = engine == "ripgrep" and ws.jail.uses_proc
    try:
        outcomes, leaks = race(ws, flipper, calls, DENIED_TRIES, leaked)
        report = select.report(ws)
        believed = report.get("rg_output", {})  # how rg's output was taken, file by file
    finally:
        ws.close()
    print(
        f"denied race: {DENIED_TRIES} calls, {flipper.flips} flips, outcomes {dict(outcomes)}, leaks {len(leaks)}, "
        f"rg output {believed}"
    )
    assert leaks == []
    if uses_rg:
        assert believed["files_read_again"] > 0, believed
        if pause_s:
            assert believed["files_unread"] > 0, believed
    assert outcomes["ok"] > 0 and outcomes["path_denied"] > 0, outcomes
    # path_outside_root: the directory opened a moment ago was exchanged into the spare directory, outside the root
    allowed = {"ok", "path_denied", "path_outside_root", "not_found", "not_a_file", "not_a_directory", "io_error"}
    assert set(outcomes) <= allowed, outcomes
