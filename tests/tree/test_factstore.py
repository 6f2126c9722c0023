"""File facts kept between runs (`tree.factstore`): a second server on the same repository answers as the first
without reading the files again, a file changed while no server ran is read again, and a store this run
cannot trust (not ours, open to others, inside the repository, damaged, of another root) is never used."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from repo_sandbox.config.loader import load_settings
from repo_sandbox.tools.count_lines import CountLinesArgs, count_lines
from repo_sandbox.tools.search_text import SearchTextArgs, search_text
from repo_sandbox.tree import facts, factstore
from repo_sandbox.tree.factstore import MAGIC, MAX_STORES, FactStore
from repo_sandbox.workspace import Workspace


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(directory))
    monkeypatch.setattr(facts, "RACY_NS", 0)  # the files are written just now: remember them at once
    return directory


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    for n in range(5):
        (root / "src" / f"m{n}.py").write_text("import os\n" * (n + 1) + "# MARKER\n")
    (root / "data.bin").write_bytes(b"\0\1\2MARKER\n")
    (root / "README.md").write_text("MARKER\nno newline at the end")
    (root / ".env").write_text("TOKEN=MARKER-secret\n")
    return root


def _open(root: Path, **workspace: Any) -> Workspace:
    overrides = {("workspace", "root"): str(root), **{("workspace", key): value for key, value in workspace.items()}}
    return Workspace(load_settings(None, env={}, overrides=overrides))


def _session(root: Path, **workspace: Any) -> dict[str, Any]:
    """One run of a server: a search and a count, then the workspace closes (and keeps its facts)."""
    ws = _open(root, **workspace)
    try:
        found = search_text(ws, SearchTextArgs(pattern="MARKER")).model_dump()
        counted = count_lines(ws, CountLinesArgs()).model_dump()
        return {"search": found, "count": counted}
    finally:
        ws.close()


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Every file read for its content (a sniff or a count), as the number of reads made."""
    made: list[int] = []
    real_pread, real_readv = os.pread, os.readv

    def pread(fd: int, length: int, offset: int) -> bytes:
        made.append(fd)
        return real_pread(fd, length, offset)

    def readv(fd: int, buffers: Any) -> int:
        made.append(fd)
        return real_readv(fd, buffers)

    monkeypatch.setattr(os, "pread", pread)
    monkeypatch.setattr(os, "readv", readv)
    yield made


def _stores(cache: Path) -> list[Path]:
    directory = cache / "repo-sandbox" / "facts"
    return sorted(directory.iterdir()) if directory.exists() else []


def test_a_second_run_answers_alike_without_reading_the_files_again(root: Path, cache: Path, reads: list[int]) -> None:
    first = _session(root)
    first_reads = len(reads)
    assert first_reads > 0 and len(_stores(cache)) == 1
    reads.clear()
    second = _session(root)
    assert second == first
    assert reads == []  # the kinds (search) and line counts (count) came from the store
    ws = _open(root)
    try:
        assert ws.trees.describe()["facts_cache"] == {"file": _stores(cache)[0].name, "directories_loaded": 0}
        search_text(ws, SearchTextArgs(pattern="MARKER"))
        assert ws.trees.describe()["facts_cache"]["directories_loaded"] == 2  # the root and src
    finally:
        ws.close()
    off = _open(root, facts_cache=False)
    try:
        assert off.trees.describe()["facts_cache"] is None
    finally:
        off.close()
    assert first["count"]["skipped_binary"] == 1 and first["search"]["files_searched"] == 6


def test_a_file_changed_while_no_server_ran_is_read_again(root: Path, cache: Path) -> None:
    first = _session(root)
    path = root / "src" / "m0.py"
    size = path.stat().st_size
    path.write_bytes(b"\0" * size)  # the same size, now binary
    (root / "README.md").write_text("MARKER\nMARKER\n")
    second = _session(root)
    assert second["count"]["skipped_binary"] == first["count"]["skipped_binary"] + 1
    assert second["search"]["total_matches"] == first["search"]["total_matches"]  # m0's gone, README's added
    assert second == _session(root, facts_cache=False)


def test_nothing_denied_or_outside_the_walk_is_kept(root: Path, cache: Path) -> None:
    _session(root)
    (store,) = _stores(cache)
    data = store.read_bytes()
    assert b".env" not in data and b"secret" not in data
    assert b"m0.py" in data


def test_no_store_is_written_when_switched_off_or_without_an_index(root: Path, cache: Path) -> None:
    _session(root, facts_cache=False)
    _session(root, tree_index="off")
    assert _stores(cache) == []


def test_the_store_is_private(root: Path, cache: Path) -> None:
    _session(root)
    (store,) = _stores(cache)
    assert store.stat().st_mode & 0o777 == 0o600
    assert store.parent.stat().st_mode & 0o777 == 0o700


def _damage_not_ours(store: Path) -> None:
    os.chmod(store, 0o644)


def _damage_dir_open(store: Path) -> None:
    os.chmod(store.parent, 0o755)


def _damage_magic(store: Path) -> None:
    store.write_bytes(b"garbage" + store.read_bytes())


def _damage_truncated(store: Path) -> None:
    store.write_bytes(store.read_bytes()[:-7])


def _damage_records(store: Path) -> None:
    data = bytearray(store.read_bytes())
    data += (4).to_bytes(4, "little") + b"dir2" + (3).to_bytes(4, "little") + b"a/b" + (1).to_bytes(4, "little") + b"x"
    store.write_bytes(bytes(data))


def _damage_symlink(store: Path) -> None:
    target = store.with_name("elsewhere")
    store.rename(target)
    store.symlink_to(target)


def _damage_other_root(store: Path) -> None:
    data = store.read_bytes()[len(MAGIC) :]
    length = int.from_bytes(data[:4], "little")
    other = b"/somewhere/else"
    store.write_bytes(MAGIC + len(other).to_bytes(4, "little") + other + data[4 + length :])


DAMAGE: list[Callable[[Path], None]] = [
    _damage_not_ours,
    _damage_dir_open,
    _damage_magic,
    _damage_truncated,
    _damage_records,
    _damage_symlink,
    _damage_other_root,
]


@pytest.mark.parametrize("damage", DAMAGE, ids=lambda f: f.__name__.removeprefix("_damage_"))
def test_a_store_this_run_cannot_trust_is_not_used(root: Path, cache: Path, damage: Callable[[Path], None]) -> None:
    first = _session(root)
    (store,) = _stores(cache)
    damage(store)
    ws = _open(root)
    try:
        assert FactStore(ws.root, ws.jail.root_fd).load() == {}
    finally:
        ws.close()
    assert _session(root) == first


def test_a_store_directory_inside_the_repository_is_never_used(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(root / "cache"))
    _session(root)
    assert not (root / "cache").exists()


def test_at_most_max_stores_repositories_are_kept(tmp_path: Path, cache: Path) -> None:
    for n in range(MAX_STORES + 3):
        other = tmp_path / f"repo{n}"
        other.mkdir()
        (other / "a.txt").write_text("x\n")
        _session(other)
    assert len(_stores(cache)) == MAX_STORES


def test_the_store_directory_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert factstore.store_dir({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "repo-sandbox" / "facts"
    monkeypatch.setenv("HOME", str(tmp_path))
    assert factstore.store_dir({}) == tmp_path / ".cache" / "repo-sandbox" / "facts"


def test_a_store_over_the_size_limit_is_neither_read_nor_written(
    root: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _session(root)
    (store,) = _stores(cache)
    written = store.stat()
    monkeypatch.setattr(factstore, "MAX_STORE_BYTES", written.st_size - 1)
    ws = _open(root)
    try:
        assert FactStore(ws.root, ws.jail.root_fd).load() == {}
        count_lines(ws, CountLinesArgs())  # learns the same facts again
    finally:
        ws.close()  # they are as large: the old store is not replaced
    assert store.stat().st_ino == written.st_ino
