"""The tree index: walks through it equal live walks, unchanged directories are not listed again, changed ones
are, and every way the watches can fail (unavailable, limit reached, queue overflow, closed) falls back to
re-stat'ing or rebuilding with the same answers."""

from __future__ import annotations

import os
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from repo_sandbox.fs import walk as fs_walk
from repo_sandbox.fs.walk import Walk
from repo_sandbox.fs.watch import Subscription, WatchHub
from repo_sandbox.tools import search_files as search_files_module
from repo_sandbox.tools.search_files import SearchFilesArgs, search_files
from repo_sandbox.tree import build, node
from repo_sandbox.tree import indexes as indexes_module
from repo_sandbox.tree.index import TreeIndex
from repo_sandbox.tree.walk import IndexedWalk, file_runs, indexed_snapshot
from repo_sandbox.workspace import Workspace
from tree_files import write

WorkspaceFactory = Callable[..., Workspace]

Outcome = tuple[list[tuple[str, str]], bool, bool, bool, list[str]]


@pytest.fixture
def listings(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The directories the index lists (re-listings included), in order."""
    listed: list[str] = []
    original = fs_walk.list_directory

    def counting(jail: Any, fd: int, rel: str, *args: Any, **kwargs: Any) -> Any:
        listed.append(rel)
        return original(jail, fd, rel, *args, **kwargs)

    monkeypatch.setattr(build, "list_directory", counting)
    return listed


@pytest.fixture
def settled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Treat directories listed just now as settled, so that re-stat'ing trusts their time stamps."""
    monkeypatch.setattr(node, "RACY_NS", -1)


def walk_outcome(ws: Workspace, path: str = ".", *, hidden: bool = False, ignored: bool = False) -> Outcome:
    with ws.walk(path, include_hidden=hidden, include_ignored=ignored) as walk:
        files = [(entry.rel_path, entry.walk_rel) for entry in walk]
        return files, walk.truncated, walk.saw_rgignore, walk.saw_ancestor_ignores, sorted(walk.ignore_lines)


def live_outcome(ws: Workspace, path: str = ".", *, hidden: bool = False, ignored: bool = False) -> Outcome:
    fd, rel = ws.jail.open_dir(path)
    try:
        walk = Walk(ws.jail, fd, rel, ws.walk_options(include_hidden=hidden, include_ignored=ignored))
        files = [(entry.rel_path, entry.walk_rel) for entry in walk]
        return files, walk.truncated, walk.saw_rgignore, walk.saw_ancestor_ignores, sorted(walk.ignore_lines)
    finally:
        os.close(fd)


def runs_of(ws: Workspace, path: str = ".") -> list[str] | None:
    with ws.walk(path, include_hidden=False, include_ignored=False) as walk:
        snapshot = indexed_snapshot(walk)
        if snapshot is None:
            return None
        return [prefix + name for prefix, _, names in file_runs(snapshot, walk.start_rel) for name in names]


def the_index(ws: Workspace) -> TreeIndex:
    (index,) = ws.trees.indexes()
    return index


@pytest.fixture
def ignore_tree(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    write(root / ".gitignore", "*.log\n!keep.log\nout/\n/top_only.txt\nbuild\n")
    for rel in ("a.log", "keep.log", "top_only.txt", "out/artifact.txt", "build/x.py", "src/out", "src/debug.log"):
        write(root / rel)
    write(root / "src" / ".gitignore", "!debug.log\nlocal_only.txt\n/anchored.py\n")
    for rel in ("src/local_only.txt", "src/anchored.py", "src/deeper/anchored.py", "src/deeper/local_only.txt"):
        write(root / rel)
    write(root / "tmp" / ".gitignore", "*.tmp\n")
    write(root / "tmp" / ".ignore", "!important.tmp\n")
    write(root / "tmp" / "junk.tmp")
    write(root / "tmp" / "important.tmp")
    write(root / ".hidden" / "h.txt")
    write(root / "sub-b" / "z.py")
    write(root / "sub" / "y.py")
    write(root / "sub" / ".rgignore", "*.py\n")
    write(root / "sub" / "zz" / "deep.py")
    os.symlink("src", root / "link_in")
    return root


# -- walks through the index equal live walks ------------------------------------------------------


@pytest.mark.parametrize("path", [".", "src", "src/deeper", "link_in", "tmp", "sub", ".hidden", "out", "build"])
@pytest.mark.parametrize(("hidden", "ignored"), [(False, False), (True, False), (False, True), (True, True)])
def test_an_indexed_walk_yields_what_a_live_walk_yields(
    ignore_tree: Path, make_ws: WorkspaceFactory, path: str, hidden: bool, ignored: bool
) -> None:
    ws = make_ws(ignore_tree)
    live = live_outcome(ws, path, hidden=hidden, ignored=ignored)
    assert walk_outcome(ws, path, hidden=hidden, ignored=ignored) == live  # builds the index
    assert walk_outcome(ws, path, hidden=hidden, ignored=ignored) == live  # answers from it


@pytest.mark.parametrize("path", [".", "src", "src/deeper", "link_in", "tmp", "sub"])
def test_the_index_lists_file_paths_as_the_walk_yields_them(
    ignore_tree: Path, make_ws: WorkspaceFactory, path: str
) -> None:
    ws = make_ws(ignore_tree)
    assert runs_of(ws, path) == [rel for rel, _ in live_outcome(ws, path)[0]]


@pytest.mark.parametrize(("max_depth", "path"), [(2, "."), (2, "a"), (3, "a")])
def test_depth_caps_count_from_where_the_walk_starts(
    tmp_path: Path, make_ws: WorkspaceFactory, max_depth: int, path: str
) -> None:
    root = tmp_path / "repo"
    for rel in ("top.txt", "a/one.txt", "a/b/two.txt", "a/b/c/three.txt", "a/b/c/d/four.txt"):
        write(root / rel)
    ws = make_ws(root, max_depth=max_depth)
    assert walk_outcome(ws, path) == live_outcome(ws, path)
    assert walk_outcome(ws, path) == live_outcome(ws, path)
    if path != ".":
        assert runs_of(ws, path) is None  # the index's cuts are not a subdirectory walk's cuts


def test_a_tree_over_the_entry_cap_is_not_indexed_and_walks_stay_truncated(
    tmp_path: Path, make_ws: WorkspaceFactory
) -> None:
    root = tmp_path / "repo"
    for i in range(5):
        write(root / "a" / f"f{i}.txt")
    write(root / "b" / "late.txt")
    ws = make_ws(root, max_walk_entries=4)
    assert walk_outcome(ws) == live_outcome(ws) == ([], True, False, False, [])
    assert the_index(ws).snapshot() is None


# -- reuse and re-listing ------------------------------------------------------------------------------


@pytest.mark.parametrize("tree_index", ["watch", "stat"])
def test_an_unchanged_tree_is_not_listed_again(
    ignore_tree: Path, make_ws: WorkspaceFactory, listings: list[str], settled: None, tree_index: str
) -> None:
    ws = make_ws(ignore_tree, tree_index=tree_index)
    first = walk_outcome(ws)
    built = len(listings)
    assert built > 5
    assert walk_outcome(ws) == first
    assert len(listings) == built
    assert the_index(ws).watching == (tree_index == "watch")


@pytest.mark.parametrize("tree_index", ["watch", "stat"])
def test_a_change_lists_again_only_the_directory_it_happened_in(
    ignore_tree: Path, make_ws: WorkspaceFactory, listings: list[str], settled: None, tree_index: str
) -> None:
    ws = make_ws(ignore_tree, tree_index=tree_index)
    walk_outcome(ws)
    listings.clear()
    write(ignore_tree / "src" / "deeper" / "new.txt")
    assert walk_outcome(ws) == live_outcome(ws)
    assert listings == ["src/deeper"]


def test_a_file_written_in_place_lists_nothing_again_but_moves_the_watch_mark(
    ignore_tree: Path, make_ws: WorkspaceFactory, listings: list[str], settled: None
) -> None:
    """Content events are heard apart from entry events: they change no listing (the snapshot stays the same
    object), but a mark taken after them is not `still_since` one taken before (the census memo's test)."""
    ws = make_ws(ignore_tree, tree_index="watch")
    walk_outcome(ws)
    options = ws.walk_options(include_hidden=False, include_ignored=False)
    before, snapshot = ws.trees.watch_mark(options), ws.trees.snapshot(options)
    again = ws.trees.watch_mark(options)
    assert before is not None and again is not None and again.still_since(before)
    listings.clear()
    with (ignore_tree / "src" / "deeper" / "anchored.py").open("ab") as file:
        file.write(b"# appended\n")
    after = ws.trees.watch_mark(options)
    assert after is not None and not after.still_since(before)
    assert before.quiet_since()  # no entry changed: what the voucher asks stays true
    assert ws.trees.snapshot(options) is snapshot
    assert listings == []


def test_young_directories_are_listed_again_until_their_stamps_settle(
    ignore_tree: Path, make_ws: WorkspaceFactory, listings: list[str]
) -> None:
    """Without watches, a directory changed within the last moments could change again in the same clock tick
    without its time stamps showing it: it is listed on every call until it is old enough."""
    ws = make_ws(ignore_tree, tree_index="stat")
    walk_outcome(ws)
    listings.clear()
    assert walk_outcome(ws) == live_outcome(ws)
    assert "src/deeper" in listings


def test_an_ignore_file_rewritten_in_place_lists_its_subtree_again(
    ignore_tree: Path, make_ws: WorkspaceFactory, listings: list[str], settled: None
) -> None:
    ws = make_ws(ignore_tree)
    walk_outcome(ws)
    listings.clear()
    with open(ignore_tree / "src" / ".gitignore", "r+", encoding="utf-8") as handle:  # same inode, no dir event
        handle.write("deeper/\n")
        handle.truncate()
    outcome = walk_outcome(ws)
    assert outcome == live_outcome(ws)
    assert not any(rel.startswith("src/deeper/") for rel, _ in outcome[0])
    assert listings[0] == "src"


# -- watches failing -------------------------------------------------------------------------------


def test_without_inotify_the_index_restats_and_answers_the_same(
    ignore_tree: Path, make_ws: WorkspaceFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(WatchHub, "open", classmethod(lambda cls: None))
    ws = make_ws(ignore_tree)
    assert ws.trees.hub is None
    assert walk_outcome(ws) == live_outcome(ws)
    (ignore_tree / "sub-b" / "z.py").rename(ignore_tree / "sub-b" / "w.py")
    assert walk_outcome(ws) == live_outcome(ws)
    assert the_index(ws).watching is False


def test_reaching_the_watch_limit_falls_back_to_restating(
    ignore_tree: Path, make_ws: WorkspaceFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = Subscription.add
    placed: list[str] = []

    def limited(self: Subscription, path: str, *, follow: bool = False) -> int:
        if len(placed) >= 3:
            return -1  # as inotify_add_watch with ENOSPC
        placed.append(path)
        return original(self, path, follow=follow)

    monkeypatch.setattr(Subscription, "add", limited)
    ws = make_ws(ignore_tree)
    assert walk_outcome(ws) == live_outcome(ws)
    assert the_index(ws).watching is False
    write(ignore_tree / "tmp" / "later.txt")
    assert walk_outcome(ws) == live_outcome(ws)


def test_a_queue_overflow_rebuilds_the_index(
    ignore_tree: Path, make_ws: WorkspaceFactory, monkeypatch: pytest.MonkeyPatch, listings: list[str]
) -> None:
    ws = make_ws(ignore_tree)
    walk_outcome(ws)
    built = len(listings)
    monkeypatch.setattr(Subscription, "take", lambda self: (True, set[int]()))
    write(ignore_tree / "src" / "deeper" / "new.txt")
    assert walk_outcome(ws) == live_outcome(ws)
    assert len(listings) == 2 * built  # everything listed again


def test_a_closed_watch_instance_is_never_trusted(ignore_tree: Path, make_ws: WorkspaceFactory) -> None:
    ws = make_ws(ignore_tree)
    walk_outcome(ws)
    assert ws.trees.hub is not None
    ws.trees.hub.close()  # its descriptor is gone: every call must rebuild or re-stat
    write(ignore_tree / "sub" / "zz" / "more.py")
    assert walk_outcome(ws) == live_outcome(ws)
    assert the_index(ws).watching is False


def test_a_directory_swapped_for_another_between_calls_is_listed_afresh(
    tmp_path: Path, make_ws: WorkspaceFactory
) -> None:
    root = tmp_path / "repo"
    write(root / "a" / "old.txt")
    write(tmp_path / "other" / "new.txt")
    ws = make_ws(root, tree_index="stat")
    walk_outcome(ws)
    os.rename(root / "a", tmp_path / "a_old")
    os.rename(tmp_path / "other", root / "a")
    assert walk_outcome(ws)[0] == [("a/new.txt", "a/new.txt")]


def test_closing_the_workspace_releases_every_watch(ignore_tree: Path, make_ws: WorkspaceFactory) -> None:
    ws = make_ws(ignore_tree)
    walk_outcome(ws)
    walk_outcome(ws, hidden=True)
    assert len(ws.trees.indexes()) == 2
    ws.close()  # the fd-leak check of every test sees the inotify descriptor closed too
    assert ws.trees.indexes() == []
    assert ws.trees.snapshot(ws.walk_options(include_hidden=None, include_ignored=False)) is None


def test_walks_use_the_index_unless_it_is_off(ignore_tree: Path, make_ws: WorkspaceFactory) -> None:
    for tree_index, indexed in (("watch", True), ("stat", True), ("off", False)):
        ws = make_ws(ignore_tree, tree_index=tree_index)
        with ws.walk(".", include_hidden=False, include_ignored=False) as walk:
            assert isinstance(walk, IndexedWalk) == indexed


def test_on_a_file_system_inotify_cannot_see_directories_are_restated(
    ignore_tree: Path, make_ws: WorkspaceFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(indexes_module, "watchable", lambda path: False)  # as for NFS, SMB, 9p or FUSE
    ws = make_ws(ignore_tree)
    assert ws.trees.hub is None
    walk_outcome(ws)
    write(ignore_tree / "src" / "deeper" / "remote.txt")
    assert walk_outcome(ws) == live_outcome(ws)
    assert the_index(ws).watching is False


def test_the_local_file_system_is_watchable(tmp_path: Path) -> None:
    assert indexes_module.watchable(str(tmp_path)) is True


# -- what callers keep per snapshot ----------------------------------------------------------------------


def test_a_page_listing_kept_for_the_next_page_goes_with_its_snapshot(
    ignore_tree: Path, make_ws: WorkspaceFactory
) -> None:
    ws = make_ws(ignore_tree)
    first = search_files(ws, SearchFilesArgs(pattern="*.py", limit=1))
    assert (first.files, first.total, first.next_offset) == (["src/deeper/anchored.py"], 4, 1)
    write(ignore_tree / "a_first.py")
    second = search_files(ws, SearchFilesArgs(pattern="*.py", limit=1, offset=1))
    assert (second.files, second.total) == (["src/deeper/anchored.py"], 5)


@pytest.mark.slow
def test_every_page_of_a_large_listing_comes_from_one_listing(
    tmp_path: Path, make_ws: WorkspaceFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Paging is linear: 50,100 matches (more than the 50,000 once kept) are matched once, not once a page."""
    root = tmp_path / "repo"
    for d in range(100):
        directory = root / f"d{d:02d}"
        directory.mkdir(parents=True)
        for f in range(501):
            (directory / f"f{f:03d}.py").touch()
    ws = make_ws(root)
    listed: list[int] = []
    original = search_files_module._listed

    def counting(*args: Any) -> list[str]:
        found = original(*args)
        listed.append(len(found))
        return found

    monkeypatch.setattr(search_files_module, "_listed", counting)
    paths: list[str] = []
    offset: int | None = 0
    while offset is not None:
        page = search_files(ws, SearchFilesArgs(pattern="**/*.py", limit=1000, offset=offset))
        assert page.total == 50_100
        paths += page.files
        offset = page.next_offset
    assert paths == sorted(paths) and len(set(paths)) == 50_100
    assert listed == [50_100]


def test_kept_listings_are_bounded_oldest_first_and_one_over_the_bound_is_not_kept(
    ignore_tree: Path, make_ws: WorkspaceFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = make_ws(ignore_tree)
    snapshot = ws.trees.snapshot(ws.walk_options(include_hidden=None, include_ignored=False))
    assert snapshot is not None
    monkeypatch.setattr(type(snapshot), "MAX_DERIVED_ITEMS", 10)
    snapshot.remember("a", ["x"] * 6)
    snapshot.remember("b", ["x"] * 4)
    assert list(snapshot.derived) == ["a", "b"]
    snapshot.remember("c", ["x"] * 3)  # 13 > 10: the oldest goes
    assert list(snapshot.derived) == ["b", "c"]
    snapshot.remember("d", ["x"] * 11)  # larger than the bound alone: not kept, nothing else dropped
    assert list(snapshot.derived) == ["b", "c"]


# -- memory ---------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_the_index_of_a_large_tree_costs_about_a_hundred_bytes_a_file(
    tmp_path: Path, make_ws: WorkspaceFactory
) -> None:
    """A 200,000-file repository must fit the server's RSS budget: under 25 MiB of index. Measured on 12,000
    files in 600 directories (20 a directory, as in real trees), file facts and watches included."""
    root = tmp_path / "repo"
    for d in range(600):
        directory = root / f"pkg{d // 30:02d}" / f"mod{d % 30:02d}"
        directory.mkdir(parents=True)
        for f in range(20):
            (directory / f"module_{f:02d}.py").write_bytes(b"x = 1\n")
    ws = make_ws(root)
    options = ws.walk_options(include_hidden=None, include_ignored=False)
    tracemalloc.start()
    try:
        snapshot = ws.trees.snapshot(options)
        used, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert snapshot is not None and sum(node.file_count for node in snapshot.nodes.values()) == 12_000
    assert used / 12_000 < 125, f"{used / 12_000:.0f} bytes a file"
