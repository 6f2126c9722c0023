"""The census memo: a repeated search takes its census without a stat per file, and only while nothing changed.

Every row changes the tree between two searches in a way a census would see; the search after it must give
exactly what a fresh Python-engine workspace gives, and must not have used the memo (whose use the status
counts), for a search of the root, of a subdirectory and with a glob.
"""

from __future__ import annotations

import mmap
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from repo_sandbox.config.loader import load_settings
from repo_sandbox.engine import census, censusmemo, rgstate
from repo_sandbox.engine.census import Census
from repo_sandbox.fs.walk import Walk
from repo_sandbox.tools.search_text import SearchTextArgs, search_text
from repo_sandbox.workspace import Workspace

SEARCHES = ({"pattern": "MARKER"}, {"pattern": r"MARKER \w+", "path": "sub"}, {"pattern": "MARKER", "glob": "*.txt"})


def _workspace(root: Path, engine: str = "ripgrep") -> Workspace:
    overrides: dict[tuple[str, str], Any] = {("workspace", "root"): str(root), ("search", "engine"): engine}
    return Workspace(load_settings(None, env={}, overrides=overrides))


def _tree(root: Path) -> Path:
    root.mkdir()
    for i in range(20):
        (root / f"f{i:02d}.txt").write_text(f"plain file {i}\n")
    (root / "sub").mkdir()
    (root / "sub" / "kept.txt").write_text("MARKER kept\n")
    (root / "sub" / "code.py").write_text("x = 1  # MARKER code\n")
    (root / "notes.md").write_text("MARKER notes\n")
    return root


def _from_memo(ws: Workspace) -> int:
    return rgstate.counts(ws)["census"]["from_memo"]


def _append(path: Path, data: bytes) -> None:
    with path.open("ab") as file:
        file.write(data)


def _write_in_place(path: Path, data: bytes) -> None:
    with path.open("r+b") as file:
        file.write(data)


def _swap_for_link(root: Path) -> None:
    (root / "f05.txt").unlink()
    (root / "f05.txt").symlink_to("notes.md")


Change = Callable[[Path], object]
CHANGES: list[tuple[str, Change]] = [
    ("appended", lambda root: _append(root / "f03.txt", b"MARKER appended\n")),
    ("rewritten in place, same size", lambda root: _write_in_place(root / "f04.txt", b"MARKER file 4\n")),
    ("truncated", lambda root: os.truncate(root / "notes.md", 0)),
    ("made binary", lambda root: _write_in_place(root / "sub" / "kept.txt", b"MARKER\0")),
    ("created", lambda root: (root / "sub" / "new.txt").write_text("MARKER new\n")),
    ("created in a new directory", lambda root: (root / "sub" / "deep").mkdir() or (root / "sub" / "deep" / "n.txt").write_text("MARKER deep\n")),
    ("deleted", lambda root: (root / "sub" / "kept.txt").unlink()),
    ("renamed", lambda root: (root / "notes.md").rename(root / "sub" / "notes.txt")),
    ("renamed over", lambda root: (root / "sub" / "kept.txt").replace(root / "f06.txt")),
    ("made unreadable by type", _swap_for_link),
    ("hard-linked inside", lambda root: os.link(root / "notes.md", root / "sub" / "twin.txt")),
    ("ignored", lambda root: (root / ".gitignore").write_text("notes.md\n")),
    ("time stamps set back", lambda root: _write_in_place(root / "f07.txt", b"MARKER 7") or os.utime(root / "f07.txt", (0, 0))),
]  # fmt: skip


@pytest.fixture
def memo_ws(tmp_path: Path) -> Iterator[tuple[Path, Workspace]]:
    root = _tree(tmp_path / "repo")
    ws = _workspace(root)
    try:
        yield root, ws
    finally:
        ws.close()


def _warm(ws: Workspace, arguments: dict[str, Any]) -> None:
    """Two searches: the first takes a census, the second a memo's."""
    args = SearchTextArgs.model_validate(arguments)
    search_text(ws, args)
    before = _from_memo(ws)
    search_text(ws, args)
    search_text(ws, args)
    assert _from_memo(ws) >= before + 1, "an unchanged tree should take its census from the memo"


@pytest.mark.slow
@pytest.mark.parametrize(("change", "apply"), CHANGES, ids=[c[0] for c in CHANGES])
@pytest.mark.parametrize("arguments", SEARCHES, ids=["root", "sub", "glob"])
def test_a_change_between_searches_is_never_answered_from_the_memo(
    memo_ws: tuple[Path, Workspace], change: str, apply: Change, arguments: dict[str, Any]
) -> None:
    root, ws = memo_ws
    _warm(ws, arguments)
    apply(root)
    reference = _workspace(root, "python")
    try:
        before = _from_memo(ws)
        args = SearchTextArgs.model_validate(arguments)
        assert search_text(ws, args) == search_text(reference, args), change
        assert _from_memo(ws) == before, f"{change}: the census came from a stale memo"
        assert search_text(ws, args) == search_text(reference, args), change  # a memo kept after it holds too
    finally:
        reference.close()


def test_a_memo_answers_as_a_census_would(memo_ws: tuple[Path, Workspace]) -> None:
    root, ws = memo_ws
    reference = _workspace(root, "python")
    try:
        for arguments in (*SEARCHES, {"pattern": "MARKER", "output_mode": "count"}, {"pattern": "plain"}):
            _warm(ws, arguments)
            args = SearchTextArgs.model_validate(arguments)
            assert search_text(ws, args) == search_text(reference, args), arguments
    finally:
        reference.close()


def test_a_hard_link_made_outside_the_tree_is_refused_though_no_watch_hears_it(
    memo_ws: tuple[Path, Workspace], tmp_path: Path
) -> None:
    """link(2) from outside changes the link count without an event in the tree's directories: the memo
    cannot know, so each file rg reports is stat'ed, and a second link sends the search to a new census."""
    root, ws = memo_ws
    arguments = {"pattern": "MARKER"}
    _warm(ws, arguments)
    os.link(root / "notes.md", tmp_path / "outside-link")
    reference = _workspace(root, "python")
    try:
        args = SearchTextArgs.model_validate(arguments)
        result = search_text(ws, args)
        assert result == search_text(reference, args)
        assert "notes.md" not in [match.path for match in result.matches]  # type: ignore[union-attr]
    finally:
        reference.close()


def test_a_write_no_watch_hears_shows_once_the_memo_is_too_old(
    memo_ws: tuple[Path, Workspace], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write through a shared mapping makes no inotify event (only closing the file later does): a memo
    stands in for a census for at most `MAX_AGE_S`, after which every file is stat'ed again (the kernel
    stamped the write's time) and the change shows."""
    root, ws = memo_ws
    with (root / "f08.txt").open("r+b") as file:
        mapped = mmap.mmap(file.fileno(), 0)  # holds its own descriptor: the file stays open for writing
    arguments = {"pattern": "MAPPED"}
    reference = _workspace(root, "python")
    try:
        _warm(ws, arguments)
        mapped[:8] = b"MAPPED 8"
        monkeypatch.setattr(censusmemo, "MAX_AGE_S", -1.0)  # as if MAX_AGE_S had passed since the memo
        args = SearchTextArgs.model_validate(arguments)
        result = search_text(ws, args)
        assert result == search_text(reference, args)
        assert result.total_matches == 1
    finally:
        mapped.close()
        reference.close()


def test_without_watches_there_is_no_memo(tmp_path: Path) -> None:
    root = _tree(tmp_path / "repo")
    overrides = {("workspace", "root"): str(root), ("workspace", "tree_index"): "stat"}
    ws = Workspace(load_settings(None, env={}, overrides=overrides))
    try:
        for _ in range(3):
            search_text(ws, SearchTextArgs(pattern="MARKER"))
        assert rgstate.counts(ws)["census"] == {"taken": 3, "from_memo": 0, "taken_ahead": 0}
    finally:
        ws.close()


def test_a_census_of_files_the_index_knows_nothing_of_opens_them_without_a_stat_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from repo_sandbox.engine import census as census_module
    from repo_sandbox.tree import facts

    monkeypatch.setattr(facts, "RACY_NS", 0)  # files written just now are remembered at once
    root = _tree(tmp_path / "repo")
    ws = _workspace(root)
    try:
        stats: list[str] = []
        real_stat = os.stat

        def counting_stat(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
            if sys._getframe(1).f_code.co_filename == census_module.__file__:  # the census's own stats
                stats.append(str(path))
            return real_stat(path, *args, **kwargs)

        monkeypatch.setattr(os, "stat", counting_stat)
        arguments = {"pattern": "x", "include_hidden": True}
        first = search_text(ws, SearchTextArgs(**arguments))
        assert stats == []  # a fresh index: every file opened (and fstat'ed) once, no stat by name before
        censusmemo.forget(ws)
        again = search_text(ws, SearchTextArgs(**arguments))
        assert stats  # the kinds are remembered now: a stat proves each identity, no file is opened
        assert again.model_dump() == first.model_dump()
    finally:
        ws.close()


def _index(ws: Workspace) -> None:
    ws.trees.snapshot(ws.walk_options(include_hidden=None, include_ignored=False))


def test_the_census_taken_ahead_answers_the_first_search_of_the_tree(memo_ws: tuple[Path, Workspace]) -> None:
    root, ws = memo_ws
    _index(ws)
    assert census.take_ahead(ws, threading.Event())
    reference = _workspace(root, "python")
    try:
        args = SearchTextArgs(pattern="MARKER")
        assert search_text(ws, args) == search_text(reference, args)
        assert rgstate.counts(ws)["census"] == {"taken": 1, "from_memo": 1, "taken_ahead": 0}
        assert not census.take_ahead(ws, threading.Event())  # a search has begun: it takes its own censuses
    finally:
        reference.close()


AHEAD_CHANGES = CHANGES[:2] + CHANGES[4:5]


@pytest.mark.parametrize(("change", "apply"), AHEAD_CHANGES, ids=[c[0] for c in AHEAD_CHANGES])
def test_a_change_after_the_census_taken_ahead_is_never_answered_from_it(
    memo_ws: tuple[Path, Workspace], change: str, apply: Change
) -> None:
    root, ws = memo_ws
    _index(ws)
    assert census.take_ahead(ws, threading.Event())
    apply(root)
    reference = _workspace(root, "python")
    try:
        args = SearchTextArgs(pattern="MARKER")
        assert search_text(ws, args) == search_text(reference, args), change
        assert _from_memo(ws) == 0, f"{change}: the census came from a stale memo"
    finally:
        reference.close()


def test_a_search_waits_for_the_census_being_taken_ahead_then_recalls_it(
    memo_ws: tuple[Path, Workspace], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two censuses of the same files do not run side by side: the search's waits for its turn, then finds
    the memo the one taken ahead kept, instead of stating every file again."""
    _, ws = memo_ws
    _index(ws)
    real_count = Census._count
    counting = threading.Event()

    def slow_count(self: Census, walk: Walk) -> None:
        counting.set()
        time.sleep(0.3)
        real_count(self, walk)

    monkeypatch.setattr(Census, "_count", slow_count)
    ahead = threading.Thread(target=census.take_ahead, args=(ws, threading.Event()))
    ahead.start()
    try:
        assert counting.wait(10)
        monkeypatch.setattr(Census, "_count", real_count)
        search_text(ws, SearchTextArgs(pattern="MARKER"))
    finally:
        ahead.join()
    assert rgstate.counts(ws)["census"] == {"taken": 1, "from_memo": 1, "taken_ahead": 0}


def test_a_census_taken_ahead_that_was_stopped_keeps_no_memo(memo_ws: tuple[Path, Workspace]) -> None:
    _, ws = memo_ws
    _index(ws)
    stop = threading.Event()
    stop.set()
    assert not census.take_ahead(ws, stop)
    search_text(ws, SearchTextArgs(pattern="MARKER"))
    assert _from_memo(ws) == 0


def test_no_census_is_taken_ahead_once_a_search_has_begun(memo_ws: tuple[Path, Workspace]) -> None:
    """A search's census with another glob would otherwise wait for its turn behind one nobody asked for."""
    _, ws = memo_ws
    _index(ws)
    search_text(ws, SearchTextArgs(pattern="MARKER", glob="*.txt"))
    censusmemo.forget(ws)
    assert not census.take_ahead(ws, threading.Event())
    search_text(ws, SearchTextArgs(pattern="MARKER"))
    assert _from_memo(ws) == 0
