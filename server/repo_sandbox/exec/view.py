"""What a sandboxed command sees of the repository: everything except the entries the policy hides.

Hidden entries come in two kinds:
- *invisible*: deny-listed entries (not descended into) and symlinks whose target names a denied entry.
  DESIGN.md §3: a denied file never appears in any result, not even as a name, so the sandbox must not
  show their names at all (`exec.mounts` rebuilds the directories that hold them, or refuses to list them);
- *masked*: FIFOs, sockets, devices and (unless the operator allows them) hard-linked files. Their content
  is hidden (an empty file takes their place); their names are not secret.
A recursive program (`grep -r`, `find`, `ls -R`, `du`) would otherwise reach them even though no operand
names them.

The scan walks the whole tree (hidden and ignored directories included) and is reused until something
changes: an inotify watch on every directory scanned says so in O(1) (a new entry, a rename, a link-count
change); where inotify is unavailable every directory is re-stat'ed instead. Watches are placed before a
directory is listed, so nothing created during the scan is missed. For every directory on the way to a
hidden entry the scan keeps the listing of its visible entries, so that the sandbox plans built from a view
(`exec.mounts`, cached in the view) describe exactly the snapshot the scan saw.
"""

from __future__ import annotations

import errno
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from repo_sandbox.fs.gitenv import is_real_dir
from repo_sandbox.fs.jail import Jail
from repo_sandbox.fs.watch import DirWatch

EntryKind = Literal["dir", "file", "symlink"]
MAX_SCAN_ENTRIES: Final = 2_000_000
"""Beyond this many entries the scan stops and the view fails closed (see `RepoView.complete`)."""
_DIR_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass(frozen=True, slots=True)
class Entry:
    """A visible entry of a listed directory; `target` is a symlink's target text."""

    name: str
    kind: EntryKind
    target: str = ""


@dataclass(frozen=True, slots=True)
class RepoView:
    """The hidden entries of the repository (root-relative, with their kind) and the listings around them."""

    root: str
    hidden: dict[str, EntryKind] = field(default_factory=dict[str, EntryKind])
    complete: bool = True
    invisible: frozenset[str] = frozenset()
    """Hidden entries whose names must not show (deny-listed, or symlinks naming a denied target)."""
    listings: Mapping[str, tuple[Entry, ...]] = field(default_factory=dict[str, tuple[Entry, ...]])
    """The visible entries of every directory that holds a hidden entry at any depth ('.' is the root)."""
    shown: frozenset[str] = frozenset()
    """Hidden entries that this view shows anyway (the root's .git for git stages under Landlock)."""
    cache: dict[str, Any] = field(default_factory=dict[str, Any], compare=False)
    """Sandbox plans built from this view (`exec.mounts`); the view is immutable, so they never go stale."""

    @property
    def masked(self) -> dict[str, EntryKind]:
        """Hidden entries whose content is replaced by an empty file or directory (their names may show)."""
        return {rel: kind for rel, kind in self.hidden.items() if rel not in self.shown and rel not in self.invisible}

    @property
    def unnamed(self) -> frozenset[str]:
        """Invisible entries of this view (those not shown)."""
        return self.invisible - self.shown

    def for_git(self) -> RepoView:
        """The view of a git stage that sees the root's .git in place (when it is a real directory)."""
        if ".git" not in self.hidden or not is_real_dir(os.path.join(self.root, ".git")):
            return self
        cached = self.cache.get("git-view")
        if cached is None:
            cached = RepoView(
                self.root, self.hidden, self.complete, self.invisible, self.listings, self.shown | {".git"}
            )
            self.cache["git-view"] = cached
        return cached


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
        self.deny = jail.deny
        self.watch = watch
        self.watching = watch is not None
        self.hidden: dict[str, EntryKind] = {}
        self.invisible: set[str] = set()
        self.listings: dict[str, tuple[Entry, ...]] = {}
        self.mtimes: dict[str, int] = {}
        self.budget = MAX_SCAN_ENTRIES

    def run(self) -> tuple[RepoView, dict[str, int]]:
        complete = self._scan_dir(os.open(self.root, _DIR_FLAGS), ".") is not None
        view = RepoView(self.root, self.hidden, complete, frozenset(self.invisible), self.listings)
        return view, self.mtimes

    def _scan_dir(self, dir_fd: int, rel: str) -> bool | None:
        """Whether anything under `rel` is hidden; None when the scan ran out of budget."""
        try:
            if self.watching and self.watch is not None:
                self.watching = self.watch.add(self.root if rel == "." else os.path.join(self.root, rel))
            self.mtimes[rel] = os.fstat(dir_fd).st_mtime_ns
            visible: list[tuple[str, EntryKind, str]] = []  # Entry objects only for the listings kept
            subdirs: list[str] = []
            hides = False
            with os.scandir(dir_fd) as entries:
                for entry in entries:
                    self.budget -= 1
                    if self.budget < 0:
                        return None
                    child = _join(rel, entry.name)
                    kind, target, verdict = self._classify(entry, child, dir_fd)
                    if verdict == "visible":
                        visible.append((entry.name, kind, target))
                        if kind == "dir":
                            subdirs.append(entry.name)
                        continue
                    hides = True
                    self.hidden[child] = kind
                    if verdict == "invisible":
                        self.invisible.add(child)
            for name in subdirs:
                try:
                    child_fd = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
                except OSError as exc:
                    if exc.errno in (errno.EACCES, errno.EPERM):
                        continue  # unreadable: the sandbox cannot read it either
                    # swapped (for a link, a file) or removed since it was listed: what it holds is unknown,
                    # so it does not show at all (a bind made later could show a denied entry inside it)
                    visible = [fields for fields in visible if fields[0] != name]
                    self.hidden[_join(rel, name)] = "dir"
                    self.invisible.add(_join(rel, name))
                    hides = True
                    continue
                below = self._scan_dir(child_fd, _join(rel, name))
                if below is None:
                    return None
                hides = hides or below
            if hides:
                self.listings[rel] = tuple(Entry(*fields) for fields in visible)
            return hides
        finally:
            os.close(dir_fd)

    def _classify(self, entry: os.DirEntry[str], rel: str, dir_fd: int) -> tuple[EntryKind, str, str]:
        """(kind, symlink target, "visible" | "invisible" | "masked"); d_type answers most of it without a stat."""
        try:
            if entry.is_dir(follow_symlinks=False):
                return "dir", "", "invisible" if self.deny.is_entry_denied(rel) else "visible"
            if entry.is_symlink():
                target = os.readlink(entry.name, dir_fd=dir_fd)
                return "symlink", target, "invisible" if self._names_denied(rel, target) else "visible"
            if self.deny.is_entry_denied(rel):
                return "file", "", "invisible"
            if not entry.is_file(follow_symlinks=False):
                return "file", "", "masked"  # FIFO, socket or device
            hard_link = entry.stat(follow_symlinks=False).st_nlink > 1 and not self.jail.allow_hard_links
            return "file", "", "masked" if hard_link else "visible"
        except OSError:
            return "file", "", "invisible"

    def _names_denied(self, rel: str, target: str) -> bool:
        """A symlink whose own path or whose target (as written, or as resolved inside the root) is denied:
        `ls -l` would print the denied name as the link's target."""
        if self.deny.is_entry_denied(rel):
            return True
        if any(part not in ("", ".", "..") and self.deny.is_entry_denied(part) for part in target.split("/")):
            return True
        real = os.path.realpath(os.path.join(self.root, rel))
        inside = os.path.relpath(real, self.root)
        return inside != ".." and not inside.startswith("../") and self.deny.is_denied(inside)


def _join(parent: str, name: str) -> str:
    return name if parent == "." else f"{parent}/{name}"
