"""Which needles (`exec.git.excludes`) occur among the names git could show, and which of those names hold a
byte outside ASCII (`exec.git.foreign` judges them), kept current for one repository.

A path git prints is made of names from the index, from a tree object, or from the working tree. This
module keeps the needles and the non-ASCII names found in:
- the index: `git ls-files -z`, read again when the index's stat data or trailing checksum change;
- every tree object in the object database, reachable or not (`git show <id>` and abbreviated ids reach
  dangling objects): each pack once (`git show-index` lists its objects, `git cat-file --batch-check`
  picks the trees, `git cat-file --batch` streams them), each loose object once (inflated here, or through
  git when there are many). Objects that disappear leave their needles and names counted: more exclusions,
  never fewer. Every tree is read to the end (a non-ASCII name may be in any of them), unless every needle is
  found and the non-ASCII names are too many to keep (`records.MAX_FOREIGN_NAMES`: `foreign` is None).

Scans run in a background thread: a caller waits for one as long as it chooses (`found(wait_s)`), so the
first scan of a large repository (about 2 s near `MAX_TREES`) does not hold up a command, which runs with
every exclusion meanwhile.

Invalidation: inotify watches on `.git`, `.git/objects`, `objects/pack`, `objects/info` and every loose
object directory, each placed before that directory is read, report every entry created, renamed or deleted
and every file written in place (`IN_MODIFY`, `IN_CLOSE_WRITE`: an index overwritten by `cp`). Anything
reported is read again before the next answer, and `generation()` goes up, so a caller can tell whether
anything changed between two moments. The answer is None (the caller passes every exclusion) when inotify
is unavailable, when the repository borrows objects or another git directory (`objects/info/alternates`,
`commondir`, submodules under `.git/modules`), when something is not a plain file or directory where git
expects one, when git fails, or when one scan would read more than `MAX_TREES` trees.
"""

from __future__ import annotations

import os
import stat
import tempfile
import threading
import time
import zlib
from collections.abc import Callable, Iterable
from typing import Final, NamedTuple

from repo_sandbox.exec.git.records import Findings, NeedleSearch, component_haystack, union_names
from repo_sandbox.exec.git.scan import MAX_OBJECTS, GitReader, index_key, kind, loose_tree, pack_object_count
from repo_sandbox.fs.gitrun import ScanError
from repo_sandbox.fs.watch import CONTENT_EVENTS, WATCH_MASK, DirWatch

__all__ = ["Found", "GitNames", "NeedleSearch", "component_haystack"]

MAX_LOOSE_BATCH: Final = 2_000
"""More new loose objects than this at once are read through git rather than inflated one by one."""
PackKey = dict[str, tuple[tuple[int, int, int], tuple[int, int, int]]]
"""Pack name -> stat data of its `.idx` and `.pack`."""


class _WriteWatch(DirWatch):
    """A DirWatch that also reports files written in place."""

    def add(self, path: str) -> bool:
        mask = WATCH_MASK | CONTENT_EVENTS
        return self._libc.inotify_add_watch(self._fd, os.fsencode(path), mask) >= 0


class Found(NamedTuple):
    """What git's records hold now."""

    needles: frozenset[bytes]
    foreign: frozenset[bytes] | None
    """Every name holding a byte outside ASCII; None when there are too many to keep."""
    generation: int


def _is_hex(name: str, *lengths: int) -> bool:
    return len(name) in lengths and all(c in "0123456789abcdef" for c in name)


class GitNames:
    """The needles found in one repository's index and object database. Thread-safe."""

    def __init__(
        self, git_dir: str, git_binary: str | None, env: Callable[[], dict[str, str]], needles: Iterable[bytes]
    ) -> None:
        self.git_dir = git_dir
        self.objects = os.path.join(git_dir, "objects")
        self.needles = frozenset(needles)
        self._reader = GitReader(git_binary, env, os.path.dirname(git_dir)) if git_binary else None
        self._lock = threading.Lock()
        self._generation = 0
        self._meta: DirWatch | None = None
        """Watches `.git` itself: the index and the layout."""
        self._odb: DirWatch | None = None
        """Watches the object directories."""
        self._watched: tuple[object, ...] = ()
        """Inodes of `.git` and `.git/objects` when the watches were placed."""
        self._signature: tuple[object, ...] = ()
        self._pending_meta = self._pending_odb = False
        self._index: frozenset[bytes] | None = None
        self._index_foreign: frozenset[bytes] | None = None
        self._index_key: object = None
        self._history: set[bytes] | None = None
        self._history_foreign: frozenset[bytes] | None = None
        self._foreign: tuple[object, object, frozenset[bytes] | None] = (None, None, None)
        """The union of the two foreign sets last asked for, with both (the same answer, the same object)."""
        self._packs: PackKey | None = None
        """The packs read; while they stay, a database found too large is not read again."""
        self._loose: set[str] = set()
        self._scanning = False
        self._closing = False
        self._idle = threading.Event()
        self._idle.set()

    def found(self, wait_s: float | None = None) -> Found | None:
        """The needles and non-ASCII names found, or None when unknown (the caller then passes every exclusion).

        What changed is read again in a background thread; this waits for it at most `wait_s` seconds (None:
        until it is done), so that a first scan of a large repository does not hold up a command that can
        run with every exclusion meanwhile.
        """
        deadline = None if wait_s is None else time.monotonic() + wait_s
        for _ in range(2):  # one scan at most: one that cannot settle (a borrowed database) answers None
            if self._closing or not self._lock.acquire(
                timeout=-1 if deadline is None else max(0.0, deadline - time.monotonic())
            ):
                return None
            try:
                if self._closing or self._reader is None or (self._meta is None and not self._open()):
                    return None
                self._poll()
                if not (self._pending_meta or self._pending_odb):
                    if self._index is None or self._history is None:
                        return None
                    return Found(self._index | self._history, self._all_foreign(), self._generation)
                if not self._scanning:
                    self._scanning = True
                    self._idle.clear()
                    threading.Thread(target=self._scan, name="repo-sandbox-git-names", daemon=True).start()
            finally:
                self._lock.release()
            if not self._idle.wait(None if deadline is None else max(0.0, deadline - time.monotonic())):
                return None
        return None

    def _all_foreign(self) -> frozenset[bytes] | None:
        index, history, union = self._foreign
        if index is not self._index_foreign or history is not self._history_foreign:
            union = union_names(self._index_foreign, self._history_foreign)
            self._foreign = (self._index_foreign, self._history_foreign, union)
        return union

    def generation(self) -> int:
        """Goes up whenever the index, the layout or the object database changed since the last call; -1
        (never a generation) while a scan runs, which only happens when something changed."""
        if not self._lock.acquire(blocking=False):
            return -1
        try:
            if self._meta is not None:
                self._poll()
            return self._generation
        finally:
            self._lock.release()

    def close(self) -> None:
        """Drop the watches now, or when a running scan ends (not waiting for it)."""
        self._closing = True
        if self._lock.acquire(blocking=False):
            try:
                self._drop()
            finally:
                self._lock.release()

    def _scan(self) -> None:
        with self._lock:
            try:
                if self._meta is not None and not self._closing:
                    self._poll()
                    if self._pending_meta or self._pending_odb:
                        self._update()
            finally:
                if self._closing:
                    self._drop()
                self._scanning = False
                self._idle.set()

    def _open(self) -> bool:
        self._meta, self._odb = _WriteWatch.open(), _WriteWatch.open()
        if self._meta is None or self._odb is None or not self._meta.add(self.git_dir):
            self._drop()
            return False
        self._signature = self._layout()
        self._watched = self._signature[:2]
        self._pending_meta = self._pending_odb = True
        self._generation += 1
        return True

    def _drop(self) -> None:
        for watch in (self._meta, self._odb):
            if watch is not None:
                watch.close()
        self._meta = self._odb = None
        self._forget()

    def _forget(self) -> None:
        self._index, self._index_key, self._history, self._packs = None, None, None, None
        self._index_foreign = self._history_foreign = None
        self._loose = set()

    def _layout(self) -> tuple[object, ...]:
        """Inodes of `.git` and `.git/objects`, the kinds of the entries deciding whether the repository can
        be read soundly, and the index's key."""

        def inode(path: str) -> int | None:
            try:
                return os.lstat(path).st_ino
            except OSError:
                return None

        names = ("", "objects", "objects/pack", "objects/info", "commondir", "modules", "objects/info/alternates")
        return (
            inode(self.git_dir), inode(self.objects), *(kind(os.path.join(self.git_dir, n)) for n in names),
            index_key(os.path.join(self.git_dir, "index")),
        )  # fmt: skip

    def _poll(self) -> None:
        assert self._meta is not None and self._odb is not None
        meta, odb = self._meta.changed(), self._odb.changed()
        if not (meta or odb):
            return
        signature = self._layout()
        if odb or signature != self._signature or signature[-1] == b"":
            self._generation += 1
        self._signature = signature
        self._pending_meta |= meta
        self._pending_odb |= odb

    def _update(self) -> None:
        for _ in range(2):
            assert self._odb is not None
            for name in ("", "pack", "info"):  # watched before the layout is read again
                path = os.path.join(self.objects, name)
                if kind(path) == stat.S_IFDIR and not self._odb.add(path):
                    self._forget()
                    return
            self._signature = self._layout()
            if self._signature[:2] == self._watched:
                break
            self._drop()  # .git or .git/objects was replaced: watch the new ones
            if not self._open():
                return
        meta, odb = self._pending_meta, self._pending_odb
        self._pending_meta = self._pending_odb = False
        git_dir, objects, pack, info, *borrowed = self._signature[2:-1]
        directories = git_dir == objects == stat.S_IFDIR and {pack, info} <= {None, stat.S_IFDIR}
        if self._signature[:2] != self._watched or not directories or any(e is not None for e in borrowed):
            self._forget()
            return
        if meta or self._index is None:
            self._read_index()
        if odb or self._history is None:
            self._read_history()

    def _read_index(self) -> None:
        assert self._reader is not None
        key = self._signature[-1]
        if key is None:
            self._index, self._index_foreign, self._index_key = frozenset(), frozenset(), None
            return
        if key != b"" and key == self._index_key and self._index is not None:
            return
        self._index, self._index_foreign, self._index_key = None, None, None
        try:
            found = self._reader.index_names(self.needles)
        except ScanError:
            return
        if found is not None:
            foreign = None if found.foreign is None else frozenset(found.foreign)
            self._index, self._index_foreign, self._index_key = frozenset(found.search.found), foreign, key

    def _read_history(self) -> None:
        try:
            packs = self._pack_key()
            known, known_foreign, previous = self._history, self._history_foreign, self._packs or {}
            if known is None and packs == self._packs:
                return  # too many trees in these packs: wait until they change
            todo = [name for name, key in packs.items() if known is None or previous.get(name) != key]
            listed = self._list_loose()
            self._history, self._history_foreign, self._packs = None, None, packs
            names = known is None or known_foreign is not None
            found = self._read_objects(todo, listed if known is None else listed - self._loose, known or set(), names)
            if found is not None:
                self._history, self._loose = (known or set()) | found.search.found, listed
                fresh = None if found.foreign is None else frozenset(found.foreign)
                self._history_foreign = union_names(frozenset() if known is None else known_foreign, fresh)
        except (ScanError, OSError, zlib.error):
            self._history, self._history_foreign, self._packs = None, None, None

    def _pack_key(self) -> PackKey:
        pack_dir = os.path.join(self.objects, "pack")
        if kind(pack_dir) is None:
            return {}
        files: dict[str, dict[str, tuple[int, int, int]]] = {}
        with os.scandir(pack_dir) as entries:
            for entry in entries:
                stem, dot, suffix = entry.name.rpartition(".")
                if dot and suffix in ("idx", "pack"):
                    info = entry.stat(follow_symlinks=False)
                    if not stat.S_ISREG(info.st_mode):
                        raise ScanError(f"objects/pack/{entry.name} is not a plain file")
                    files.setdefault(stem, {})[suffix] = (info.st_ino, info.st_size, info.st_mtime_ns)
        return {stem: (parts["idx"], parts.get("pack", (0, 0, 0))) for stem, parts in files.items() if "idx" in parts}

    def _list_loose(self) -> set[str]:
        """Every loose object id; each fan-out directory is watched before it is listed."""
        assert self._odb is not None
        found: set[str] = set()
        with os.scandir(self.objects) as entries:
            fanout = [entry.name for entry in entries if _is_hex(entry.name, 2)]
        for name in fanout:
            path = os.path.join(self.objects, name)
            if kind(path) != stat.S_IFDIR or not self._odb.add(path):
                raise ScanError(f"objects/{name} is not a watchable directory")
            found.update(name + rest for rest in os.listdir(path) if _is_hex(rest, 38, 62))
        return found

    def _read_objects(self, packs: list[str], loose: set[str], known: set[bytes], names: bool) -> Findings | None:
        """Needles not yet `known` (and, with `names`, the non-ASCII names) in the trees of these packs and
        loose objects; None beyond MAX_TREES."""
        assert self._reader is not None
        found = Findings(self.needles - known)
        if not names:
            found.foreign = None
        if found.done:
            return found
        paths = [os.path.join(self.objects, "pack", f"{name}.idx") for name in packs]
        if sum(map(pack_object_count, paths)) + len(loose) > MAX_OBJECTS:
            return None
        with tempfile.TemporaryFile() as ids, tempfile.TemporaryFile() as trees:
            for path in paths:
                self._reader.pack_ids(path, ids)
            if len(loose) > MAX_LOOSE_BATCH:
                ids.writelines(oid.encode() + b"\n" for oid in loose)
                loose = set()
            if ids.tell() and not self._reader.tree_names(found, ids, trees):
                return None
        for oid in loose:
            if found.done:
                break
            content = loose_tree(os.path.join(self.objects, oid[:2], oid[2:]))
            if content is not None:
                found.tree(content, len(oid) // 2)
        found.finish()
        return found
