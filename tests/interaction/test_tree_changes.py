"""The tree index end to end: a tree changed between calls answers as a fresh walk of it does, through the SDK client.

Each row changes a tree after the tools have indexed it (and remembered file kinds and line counts), then asks
the same questions again. The answers must equal those of a server that walks afresh on every call
(`tree_index = "off"`), and must differ from the answers before the change (the row did change something).
Modes: inotify watches, re-stat'ing (by configuration), and inotify unavailable (the watch factory fails).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from e2e_tree import call_ok, write
from mcp import Client

from repo_sandbox.config.loader import load_settings
from repo_sandbox.fs.watch import WatchHub
from repo_sandbox.tree import facts
from repo_sandbox.wiring.assembly import build_server
from repo_sandbox.workspace import Workspace

pytestmark = pytest.mark.anyio

MAX_FILE_BYTES = 512
SECRET = "OUTSIDE-SECRET TODO"

CALLS: list[tuple[str, dict[str, Any]]] = [
    ("search_files", {"pattern": "*", "limit": 1000}),
    ("search_files", {"pattern": "**/*.py", "path": "src", "limit": 1000}),
    ("search_files", {"pattern": "*", "limit": 1000, "sort": "modified"}),
    ("count_lines", {"path": "."}),
    ("count_lines", {"path": "src", "pattern": "*.py"}),
    ("search_text", {"pattern": "TODO", "limit": 1000}),
    ("search_text", {"pattern": "TODO", "output_mode": "count", "path": "src"}),
]


def build(root: Path) -> None:
    write(root / ".gitignore", "*.log\n")
    write(root / "build.log", "ignored TODO\n")
    write(root / "src" / "a.py", "def a():\n    return 1  # TODO\n")
    write(root / "src" / "b.py", "def b():\n    return 2\n")
    write(root / "src" / "sub" / "c.py", "c = 3  # TODO\n")
    write(root / "src" / "sub" / "deep" / "d.py", "d = 4\n# TODO\n")
    write(root / "docs" / "readme.md", "# Docs TODO\n")
    write(root / "data.bin", b"TODO\x00\x01\x02")


def _rewrite_keeping_times(path: Path) -> None:
    """Only the change time (and the watch, which sees the write) can tell."""
    info = path.stat()
    path.write_bytes(path.read_bytes().replace(b"return 2", b"TODO    "))
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))


def _move_out(root: Path, outside: Path, rel: str) -> None:
    shutil.move(root / rel, outside / rel.replace("/", "_"))


CHANGES: dict[str, Callable[[Path, Path], object]] = {
    # -- entries appearing, disappearing, moving ----------------------------------------------------
    "file added": lambda root, _: write(root / "src" / "sub" / "deep" / "new.py", "new = 1  # TODO\n"),
    "file removed": lambda root, _: (root / "src" / "b.py").unlink(),
    "file renamed": lambda root, _: (root / "src" / "a.py").rename(root / "src" / "sub" / "a2.py"),
    "directory added": lambda root, _: write(root / "lib" / "x" / "y.py", "y = 1  # TODO\n"),
    "directory removed": lambda root, outside: _move_out(root, outside, "src/sub"),
    "file replaced by a directory": lambda root, _: (
        (root / "src" / "b.py").unlink(),
        write(root / "src" / "b.py" / "inner.py", "# TODO inside\n"),
    ),
    # -- contents (no directory event: the file's identity tells) ------------------------------------
    "content changed to binary": lambda root, _: (root / "src" / "a.py").write_bytes(b"TODO\x00 now binary\n"),
    "content grown by lines": lambda root, _: (root / "src" / "b.py").write_text("b = 1\nb = 2\nb = 3  # TODO\n"),
    "grown past the size limit": lambda root, _: (root / "src" / "a.py").write_text("# TODO\n" * 100),
    "same size rewritten, times put back": lambda root, _: _rewrite_keeping_times(root / "src" / "b.py"),
    # -- ignore rules -------------------------------------------------------------------------------
    ".gitignore edited in place": lambda root, _: (root / ".gitignore").write_text("sub/\n"),
    ".gitignore edited, same size": lambda root, _: (root / ".gitignore").write_text("*.md\n"),
    "nested .gitignore added": lambda root, _: write(root / "src" / ".ignore", "deep/\n*.md\n"),
    # -- policy: links -------------------------------------------------------------------------------
    "directory replaced by a symlink": lambda root, outside: (
        _move_out(root, outside, "src/sub"),
        os.symlink(outside / "secrets", root / "src" / "sub"),
    ),
    "hard link added": lambda root, outside: os.link(root / "src" / "a.py", outside / "a_link.py"),
    "file renamed over by a hard link to an outside file": lambda root, outside: (
        os.link(outside / "secrets" / "key.py", root / "src" / "swap.tmp"),
        (root / "src" / "swap.tmp").rename(root / "src" / "a.py"),
    ),
}


@pytest.fixture
def trees(tmp_path: Path) -> tuple[Path, Path]:
    root, outside = tmp_path / "repo", tmp_path / "outside"
    build(root)
    write(outside / "secrets" / "key.py", f"{SECRET}\n")
    return root, outside


@pytest.fixture(params=["watch", "stat", "no-inotify"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "no-inotify":
        monkeypatch.setattr(WatchHub, "open", classmethod(lambda cls: None))
    # Remember kinds and counts even of files written just now, so that the rows test forgetting them.
    monkeypatch.setattr(facts, "RACY_NS", -1)
    return request.param


def workspace(root: Path, tree_index: str) -> Workspace:
    overrides: dict[tuple[str, str], Any] = {
        ("workspace", "root"): str(root),
        ("workspace", "tree_index"): "watch" if tree_index == "no-inotify" else tree_index,
        ("limits", "max_file_bytes"): MAX_FILE_BYTES,
        ("guard", "repeat_threshold"): 1000,
    }
    return Workspace(load_settings(None, env={}, overrides=overrides))


@pytest.fixture
def indexed(trees: tuple[Path, Path], mode: str) -> Iterator[Workspace]:
    ws = workspace(trees[0], mode)
    yield ws
    ws.close()


async def answers(client: Client) -> list[dict[str, Any]]:
    return [await call_ok(client, tool, arguments) for tool, arguments in CALLS]


async def fresh_answers(root: Path) -> list[dict[str, Any]]:
    ws = workspace(root, "off")
    try:
        async with Client(build_server(ws), mode="legacy") as client:
            return await answers(client)
    finally:
        ws.close()


@pytest.mark.slow
@pytest.mark.parametrize("change", list(CHANGES))
async def test_a_tree_changed_between_calls_answers_as_a_fresh_walk(
    change: str, trees: tuple[Path, Path], indexed: Workspace, mode: str
) -> None:
    root, outside = trees
    async with Client(build_server(indexed), mode="legacy") as client:
        before = await answers(client)
        assert before == await answers(client)  # answered from the index and the remembered facts
        assert before == await fresh_answers(root)
        snapshot = indexed.trees.snapshot(indexed.walk_options(include_hidden=None, include_ignored=False))
        assert snapshot is not None and "src/sub/deep" in snapshot.nodes
        CHANGES[change](root, outside)
        after = await answers(client)
    assert after == await fresh_answers(root)
    assert after != before
    assert SECRET not in str(after)
    watching = indexed.trees.hub is not None and any(index.watching for index in indexed.trees.indexes())
    assert watching == (mode == "watch")
