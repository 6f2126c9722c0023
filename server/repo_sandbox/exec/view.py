"""What a sandboxed command sees of the repository: everything except the entries the policy hides.

Hidden: deny-listed entries (not descended into), FIFOs, sockets and devices, and hard-linked files unless
the operator allows them. A recursive program (`grep -r`, `find`, `diff -r`, `du`) would otherwise reach
them even though no operand names them. The scan walks the whole tree once (hidden and ignored files
included) and is reused while no directory's mtime changes; every call re-stats the directories it saw, so
an entry created since (which changes its directory's mtime) triggers a rescan.

The sandbox backends turn a `RepoView` into mounts (bwrap: a read-only tmpfs over each directory that has
hidden entries, with its other entries bound back in, so hidden names do not even appear) or into Landlock
rules (access granted entry by entry, so hidden entries are unreadable; their names still list).
"""

from __future__ import annotations

import os
import stat
import threading
from dataclasses import dataclass
from typing import Final, Literal

from repo_sandbox.policy.paths import Jail

EntryKind = Literal["dir", "file", "symlink"]
MAX_SCAN_ENTRIES: Final = 2_000_000
"""Beyond this many entries the scan stops and the view fails closed (see `RepoView.complete`)."""
_DIR_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass(frozen=True, slots=True)
class Entry:
    name: str
    kind: EntryKind
    link_target: str | None = None


@dataclass(frozen=True, slots=True)
class RepoView:
    """The hidden entries of the repository (root-relative) and the listing of each directory above them."""

    root: str
    hidden: frozenset[str]
    overlays: dict[str, tuple[Entry, ...]]
    """Directories with hidden entries somewhere below, with their visible entries (root is '.')."""
    complete: bool

    def for_git(self) -> RepoView:
        """The view of a git stage: the root's .git directory (when it is a real directory) is visible."""
        if ".git" not in self.hidden or not is_real_dir(os.path.join(self.root, ".git")):
            return self
        overlays = dict(self.overlays)
        overlays["."] = (*overlays["."], Entry(".git", "dir"))
        return RepoView(self.root, self.hidden - {".git"}, overlays, self.complete)


def is_real_dir(path: str) -> bool:
    """A directory that is not a symlink (a symlinked .git could point anywhere)."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


class ViewCache:
    """Scans once and rescans when a directory changed; thread-safe."""

    def __init__(self, jail: Jail) -> None:
        self.jail = jail
        self._lock = threading.Lock()
        self._view: RepoView | None = None
        self._dir_mtimes: dict[str, int] = {}

    def current(self) -> RepoView:
        with self._lock:
            if self._view is None or self._changed():
                self._view, self._dir_mtimes = _scan(self.jail)
            return self._view

    def _changed(self) -> bool:
        root = self.jail.root
        for rel, mtime in self._dir_mtimes.items():
            try:
                if os.stat(root if rel == "." else os.path.join(root, rel), follow_symlinks=False).st_mtime_ns != mtime:
                    return True
            except OSError:
                return True
        return False


def _scan(jail: Jail) -> tuple[RepoView, dict[str, int]]:
    hidden: set[str] = set()
    listings: dict[str, tuple[Entry, ...]] = {}
    mtimes: dict[str, int] = {}
    budget = [MAX_SCAN_ENTRIES]
    root_fd = os.open(jail.root, _DIR_FLAGS)
    complete = _scan_dir(jail, root_fd, ".", hidden, listings, mtimes, budget)
    overlays: dict[str, tuple[Entry, ...]] = {}
    for rel in hidden:
        parent = rel.rpartition("/")[0] or "."
        while True:
            if parent not in overlays:
                overlays[parent] = tuple(e for e in listings.get(parent, ()) if _join(parent, e.name) not in hidden)
            if parent == ".":
                break
            parent = parent.rpartition("/")[0] or "."
    return RepoView(jail.root, frozenset(hidden), overlays, complete), mtimes


def _join(parent: str, name: str) -> str:
    return name if parent == "." else f"{parent}/{name}"


def _scan_dir(
    jail: Jail,
    dir_fd: int,
    rel: str,
    hidden: set[str],
    listings: dict[str, tuple[Entry, ...]],
    mtimes: dict[str, int],
    budget: list[int],
) -> bool:
    try:
        mtimes[rel] = os.fstat(dir_fd).st_mtime_ns
        entries: list[Entry] = []
        subdirs: list[str] = []
        with os.scandir(dir_fd) as it:
            for entry in it:
                budget[0] -= 1
                if budget[0] < 0:
                    return False
                child = _join(rel, entry.name)
                kind = _classify(jail, entry, child)
                if kind is None:
                    hidden.add(child)
                    continue
                target = os.readlink(entry.name, dir_fd=dir_fd) if kind == "symlink" else None
                entries.append(Entry(entry.name, kind, target))
                if kind == "dir":
                    subdirs.append(entry.name)
        listings[rel] = tuple(entries)
        for name in subdirs:
            try:
                child_fd = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
            except OSError:
                continue
            if not _scan_dir(jail, child_fd, _join(rel, name), hidden, listings, mtimes, budget):
                return False
        return True
    finally:
        os.close(dir_fd)


def _classify(jail: Jail, entry: os.DirEntry[str], rel: str) -> EntryKind | None:
    """The kind of a visible entry, or None for one the view hides."""
    try:
        info = entry.stat(follow_symlinks=False)
    except OSError:
        return None
    mode = info.st_mode
    is_dir = stat.S_ISDIR(mode)
    if jail.deny.is_entry_denied(rel, is_dir=is_dir):
        return None
    if is_dir:
        return "dir"
    if stat.S_ISLNK(mode):
        return "symlink"
    if stat.S_ISREG(mode) and (info.st_nlink == 1 or jail.allow_hard_links):
        return "file"
    return None
