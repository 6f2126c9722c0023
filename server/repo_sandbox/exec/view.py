"""What a sandboxed command sees of the repository: everything except the entries the policy hides.

Hidden: deny-listed entries (not descended into), FIFOs, sockets and devices, and hard-linked files unless
the operator allows them. A recursive program (`grep -r`, `find`, `diff -r`, `du`) would otherwise reach
them even though no operand names them. The scan walks the whole tree (hidden and ignored directories
included) and is reused until something changes: an inotify watch on every directory scanned says so in
O(1) (a new entry, a rename, a link-count change); where inotify is unavailable every directory is re-stat'ed
instead. Watches are placed before a directory is listed, so nothing created during the scan is missed.

The sandbox backends turn a `RepoView` into mounts (bwrap masks each hidden entry with an empty file or
directory) or into Landlock rules (access granted entry by entry: hidden entries are unreadable, though their
names still list).
"""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final, Literal

from repo_sandbox.exec._inotify import DirWatch
from repo_sandbox.policy.paths import Jail

EntryKind = Literal["dir", "file", "symlink"]
MAX_SCAN_ENTRIES: Final = 2_000_000
"""Beyond this many entries the scan stops and the view fails closed (see `RepoView.complete`)."""
_DIR_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass(frozen=True, slots=True)
class Entry:
    name: str
    kind: EntryKind


@dataclass(frozen=True, slots=True)
class RepoView:
    """The hidden entries of the repository, root-relative, with their kind ('dir', 'symlink' or 'file')."""

    root: str
    hidden: dict[str, EntryKind] = field(default_factory=dict[str, EntryKind])
    complete: bool = True
    shown: frozenset[str] = frozenset()
    """Hidden entries that this view shows anyway (the root's .git for git stages)."""

    @property
    def masked(self) -> dict[str, EntryKind]:
        return {rel: kind for rel, kind in self.hidden.items() if rel not in self.shown}

    def for_git(self) -> RepoView:
        """The view of a git stage: the root's .git directory (when it is a real directory) is visible."""
        if ".git" not in self.hidden or not is_real_dir(os.path.join(self.root, ".git")):
            return self
        return RepoView(self.root, self.hidden, self.complete, self.shown | {".git"})

    def overlays(self) -> dict[str, tuple[Entry, ...]]:
        """Every directory above a masked entry, with its entries that stay visible ('.' is the root)."""
        masked = self.masked
        parents: set[str] = set()
        for rel in masked:
            parent = rel.rpartition("/")[0] or "."
            while parent not in parents:
                parents.add(parent)
                if parent == ".":
                    break
                parent = parent.rpartition("/")[0] or "."
        result: dict[str, tuple[Entry, ...]] = {}
        for parent in parents:
            path = self.root if parent == "." else os.path.join(self.root, parent)
            listing: list[tuple[str, EntryKind | None]]
            try:
                with os.scandir(path) as entries:
                    listing = [(e.name, _kind(e)) for e in entries]
            except OSError:
                listing = []
            result[parent] = tuple(
                Entry(name, kind) for name, kind in listing if kind is not None and _join(parent, name) not in masked
            )
        return result


def is_real_dir(path: str) -> bool:
    """A directory that is not a symlink (a symlinked .git could point anywhere)."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _kind(entry: os.DirEntry[str]) -> EntryKind | None:
    try:
        if entry.is_symlink():
            return "symlink"
        if entry.is_dir(follow_symlinks=False):
            return "dir"
        return "file" if entry.is_file(follow_symlinks=False) else None
    except OSError:
        return None


class ViewCache:
    """Scans once and rescans when something changed; thread-safe. `close()` releases the watch."""

    def __init__(self, jail: Jail) -> None:
        self.jail = jail
        self._lock = threading.Lock()
        self._view: RepoView | None = None
        self._dir_mtimes: dict[str, int] = {}
        self._watch: DirWatch | None = None

    def current(self) -> RepoView:
        with self._lock:
            if self._view is None or self._changed():
                self._rescan()
            assert self._view is not None
            return self._view

    def close(self) -> None:
        with self._lock:
            if self._watch is not None:
                self._watch.close()
                self._watch = None

    def _rescan(self) -> None:
        if self._watch is not None:
            self._watch.close()
        self._watch = DirWatch.open()
        scanner = _Scanner(self.jail, self._watch)
        self._view, self._dir_mtimes = scanner.run()
        if not scanner.watching and self._watch is not None:
            self._watch.close()
            self._watch = None

    def _changed(self) -> bool:
        if self._watch is not None:
            return self._watch.changed()
        root = self.jail.root
        for rel, mtime in self._dir_mtimes.items():
            try:
                if os.stat(root if rel == "." else os.path.join(root, rel), follow_symlinks=False).st_mtime_ns != mtime:
                    return True
            except OSError:
                return True
        return False


class _Scanner:
    def __init__(self, jail: Jail, watch: DirWatch | None) -> None:
        self.jail = jail
        self.root = jail.root
        deny = jail.deny
        self.denied: Callable[[str, bool], bool] = lambda rel, _is_dir: deny.is_entry_denied(rel)
        self.watch = watch
        self.watching = watch is not None
        self.hidden: dict[str, EntryKind] = {}
        self.mtimes: dict[str, int] = {}
        self.budget = MAX_SCAN_ENTRIES

    def run(self) -> tuple[RepoView, dict[str, int]]:
        complete = self._scan_dir(os.open(self.root, _DIR_FLAGS), ".")
        return RepoView(self.root, self.hidden, complete), self.mtimes

    def _scan_dir(self, dir_fd: int, rel: str) -> bool:
        try:
            if self.watching and self.watch is not None:
                self.watching = self.watch.add(self.root if rel == "." else os.path.join(self.root, rel))
            self.mtimes[rel] = os.fstat(dir_fd).st_mtime_ns
            subdirs: list[str] = []
            with os.scandir(dir_fd) as entries:
                for entry in entries:
                    self.budget -= 1
                    if self.budget < 0:
                        return False
                    child = _join(rel, entry.name)
                    kind, hide = self._classify(entry, child)
                    if hide:
                        self.hidden[child] = kind
                    elif kind == "dir":
                        subdirs.append(entry.name)
            for name in subdirs:
                try:
                    child_fd = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
                except OSError:
                    continue
                if not self._scan_dir(child_fd, _join(rel, name)):
                    return False
            return True
        finally:
            os.close(dir_fd)

    def _classify(self, entry: os.DirEntry[str], rel: str) -> tuple[EntryKind, bool]:
        """(kind, hidden) of one entry; d_type answers most of it without a stat."""
        try:
            if entry.is_dir(follow_symlinks=False):
                return "dir", self.denied(rel, True)
            if entry.is_symlink():
                return "symlink", self.denied(rel, False)
            if self.denied(rel, False):
                return "file", True
            if not entry.is_file(follow_symlinks=False):
                return "file", True  # FIFO, socket or device
            return "file", entry.stat(follow_symlinks=False).st_nlink > 1 and not self.jail.allow_hard_links
        except OSError:
            return "file", True


def _join(parent: str, name: str) -> str:
    return name if parent == "." else f"{parent}/{name}"
