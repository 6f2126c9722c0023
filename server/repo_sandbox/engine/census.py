"""The files a search may read, decided by the policy walker, with each one's kind: the census.

The ripgrep engine runs this in a thread while rg searches: rg may only *add* candidates (it is given
the policy as flags too), so its output is kept only for files the census lists as text. The census
sees each file exactly as the Python engine does (open without following links, the hard-link policy,
the size limit, an 8 KiB binary sniff), so both engines count `files_searched`, `skipped_binary` and
`skipped_too_large` alike.
"""

from __future__ import annotations

import bisect
import os
import stat
import threading
from array import array
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from repo_sandbox.engine import censusmemo
from repo_sandbox.engine.request import SearchRequest, SearchStats
from repo_sandbox.fs.globs import Glob
from repo_sandbox.fs.textfile import SNIFF_BYTES, looks_binary
from repo_sandbox.fs.walk import UNREAD_IGNORE_FILE, Run, Walk
from repo_sandbox.fs.watch import WatchMark
from repo_sandbox.meter import is_presentable
from repo_sandbox.tree import facts
from repo_sandbox.tree.walk import indexed_snapshot
from repo_sandbox.workspace import Workspace

TEXT: Final = facts.TEXT
BINARY: Final = facts.BINARY
TOO_LARGE: Final = facts.TOO_LARGE

_UNSHARED_CHARS: Final = frozenset("\\[]?{}\ufeff")
"""Characters ripgrep reads differently in an ignore rule (it keeps a byte-order mark as part of the first)."""


def simple_rule(line: str) -> bool:
    """Whether ripgrep's ignore matcher and git provably read this ignore line alike: plain names, `*`
    inside a segment, `**` as a whole segment, anchoring and directory slashes, negation of a plain path.
    Escapes, classes, `?`, braces, odd whitespace and negated wildcards are left to the census (ripgrep
    is then told to ignore nothing)."""
    line = line.rstrip("\r\n")
    if not line.strip() or line.startswith("#"):
        return True
    if line != line.strip() or any(ch in _UNSHARED_CHARS for ch in line):
        return False
    body = line.removeprefix("!")
    if body != line and "*" in body:
        return False
    return all(segment == "**" or "**" not in segment for segment in body.split("/"))


@dataclass(slots=True)
class _Directory:
    names: list[str]
    """The files' names in slot order (sorted, as the walk lists them)."""
    listing: str | None
    """The tree index's '/'-joined listing instead of `names`, until first looked up."""
    slots: array[int]
    """Each slot's census position, -1 when the file is not in the census."""


class Positions:
    """Census positions by root-relative path, held without a string per file (a census of a large tree
    would otherwise hold a path and a dict entry for each of its files): per directory, its files' names
    (or the tree index's listing of them, split when first looked up) and each slot's position."""

    __slots__ = ("_dirs",)

    def __init__(self) -> None:
        self._dirs: dict[str, _Directory] = {}

    def add(self, run: Run, positions: array[int]) -> None:
        directory = self._dirs.get(run.prefix)
        if directory is None:
            directory = self._dirs[run.prefix] = _Directory([], run.listing, array("i"))
        if run.listing is None:
            directory.names.extend(run.names)
        slots = directory.slots
        if len(slots) < run.first_slot:
            slots.extend([-1] * (run.first_slot - len(slots)))
        slots.extend(positions)

    def get(self, path: str) -> int | None:
        """The census position of a root-relative path, or None."""
        parent, _, name = path.rpartition("/")
        directory = self._dirs.get(f"{parent}/" if parent else "")
        if directory is None:
            return None
        listing = directory.listing  # searches sharing a memo's positions may split it at the same time
        if listing is not None:
            names = directory.names = listing.split("/")
            directory.listing = None
        else:
            names = directory.names
        index = bisect.bisect_left(names, name)
        if index < len(directory.slots) and index < len(names) and names[index] == name:
            position = directory.slots[index]
            return position if position >= 0 else None
        return None


@dataclass
class Census:
    """Fill with `run()` (in a thread); read after `done` is set."""

    ws: Workspace
    request: SearchRequest
    glob: Glob | None
    kinds: bytearray = field(default_factory=bytearray)
    """Each census file's kind, in path order (a file's position is its index here)."""
    position: Positions = field(default_factory=Positions)
    devices: array[int] = field(default_factory=lambda: array("Q"))
    inodes: array[int] = field(default_factory=lambda: array("Q"))
    """Each census file's device and inode as the census saw it (`same_file` compares them later)."""
    walk_truncated: bool = False
    rg_ignores_agree: bool = True
    """No ignore file that ripgrep could read differently (see `simple_rule`), no `.rgignore`, and none
    above the start directory (ripgrep is told not to look upwards)."""
    mark: WatchMark | None = None
    """The tree's watch state taken before the census looks at anything: a memo (`engine.censusmemo`) is
    kept and used only with one."""
    late_mark: Callable[[], WatchMark | None] | None = None
    """Without a `mark`: takes one when the census starts (waiting for the tree index being built)."""
    recall_memo: bool = True
    from_memo: bool = False
    done: threading.Event = field(default_factory=threading.Event)
    stop: threading.Event = field(default_factory=threading.Event)
    error: BaseException | None = None
    max_bytes: int = field(init=False, default=0)
    _counted: list[int] = field(default_factory=lambda: [0, 0, 0, 0])
    """(files counted, text, binary, too large) for `stats_through`, which is asked in increasing order."""

    def __post_init__(self) -> None:
        self.max_bytes = self.ws.limits.max_file_bytes

    def run(self) -> None:
        try:
            self._walk()
        except BaseException as exc:  # noqa: BLE001  # re-raised by the searching thread
            self.error = exc
        finally:
            self.done.set()

    def _walk(self) -> None:
        request = self.request
        if self.mark is None and self.late_mark is not None:
            self.mark = self.late_mark()
        with self.ws.walk(
            request.path, include_hidden=request.include_hidden, include_ignored=request.include_ignored
        ) as walk:
            snapshot = indexed_snapshot(walk) if self.mark is not None else None
            if snapshot is None or self.mark is None:
                self._count(walk)
                return
            key = (walk.start_rel, request.glob, request.include_hidden, request.include_ignored)
            with censusmemo.turn(self.ws, self.stop) as mine:
                if not mine:
                    return
                memo = censusmemo.recall(self.ws, key, snapshot, self.mark) if self.recall_memo else None
                if memo is not None:
                    censusmemo.adopt(self, memo)
                    return
                self._count(walk)
                if not self.stop.is_set():
                    censusmemo.keep(self.ws, key, censusmemo.CensusMemo.of(self, snapshot, self.mark))

    def _count(self, walk: Walk) -> None:
        """Look at every file the walk lists (each one's kind, identity and position)."""
        progress = self.request.progress
        glob = self.glob
        kinds, devices, inodes = self.kinds, self.devices, self.inodes
        for run in walk.runs():
            if self.stop.is_set():
                break
            prefix, walk_prefix, slot = run.prefix, run.walk_prefix, run.first_slot
            positions = array("i", [-1]) * len(run.names)
            every_name_shows = is_presentable(prefix + (run.listing or "/".join(run.names)))
            for offset, name in enumerate(run.names):
                if glob is not None and not glob.matches(walk_prefix + name):
                    continue
                if not every_name_shows and not is_presentable(prefix + name):
                    continue
                seen = self._kind(walk, run, name, slot + offset)
                if seen is not None:
                    positions[offset] = len(kinds)
                    kinds.append(seen[0])
                    devices.append(seen[1].st_dev)
                    inodes.append(seen[1].st_ino)
            self.position.add(run, positions)
            if progress is not None:
                progress.files = len(kinds)
        self.walk_truncated = walk.truncated
        self.rg_ignores_agree = (
            not walk.saw_rgignore
            and not walk.saw_ancestor_ignores
            and UNREAD_IGNORE_FILE not in walk.ignore_lines
            and all(simple_rule(line) for line in walk.ignore_lines)
        )

    def _kind(self, walk: Walk, run: Run, name: str, slot: int) -> tuple[int, os.stat_result] | None:
        """The file's kind and what its stat said, or None when the walk's policy refuses it (not a regular
        file, hard-linked). A file the tree index remembers nothing of is opened straight away (the listing
        said it is a regular file; the open never follows a link, never blocks, and its `fstat` decides)."""
        # A tree index remembers kinds (`tree.facts`); without one, or without a record, the file is sniffed.
        remembered = facts.record(run.facts, slot) if run.facts is not None else None
        if remembered is not None:
            try:
                info = os.stat(name, dir_fd=run.dir_fd, follow_symlinks=False)
            except OSError:
                return None
            if not stat.S_ISREG(info.st_mode) or (info.st_nlink > 1 and not walk.jail.allow_hard_links):
                return None
            if info.st_size > self.max_bytes:
                return TOO_LARGE, info
            recalled = facts.recall_record(remembered, info)
            if recalled is not None:
                return recalled[0], info
        opened = walk.open_at(run.dir_fd, name)
        if opened is None:
            return None
        fd, info = opened
        try:
            if info.st_size > self.max_bytes:
                return TOO_LARGE, info
            kind = BINARY if looks_binary(os.pread(fd, SNIFF_BYTES, 0)) else TEXT
        finally:
            os.close(fd)
        if run.facts is not None:
            facts.remember(run.facts, slot, info, kind)
        return kind, info

    def stats_through(self, index: int, stats: SearchStats) -> None:
        """Set `stats` to the counts of the files up to and including `index` (-1: none); call after `done`."""
        counted = self._counted
        end = index + 1
        if end < counted[0]:
            counted[:] = [0, 0, 0, 0]
        kinds = self.kinds
        for kind in (TEXT, BINARY, TOO_LARGE):
            counted[kind + 1] += kinds.count(kind, counted[0], end)
        counted[0] = max(counted[0], end)
        stats.files_searched, stats.skipped_binary, stats.skipped_too_large = counted[1:]

    def same_file(self, position: int, info: os.stat_result) -> bool:
        """Whether `info` is of the file the census saw at `position` (same device and inode)."""
        return self.inodes[position] == info.st_ino and self.devices[position] == info.st_dev

    def progress(self) -> int:
        return len(self.kinds)


def take_ahead(ws: Workspace, stop: threading.Event) -> bool:
    """Take the census of a search of the whole tree with the default options, and keep its memo: the first
    such search then recalls it (or waits for its turn, then recalls it) instead of stating every file.
    Whether a memo was kept (none without watches, once a search has begun, when `stop` was set, or after an
    error)."""
    if censusmemo.searched(ws):
        return False
    options = ws.walk_options(include_hidden=None, include_ignored=False)
    census = Census(ws, SearchRequest(pattern=""), None, stop=stop)
    census.mark = ws.trees.watch_mark(options)
    if census.mark is None:
        return False
    census.run()
    return census.error is None and not stop.is_set() and not census.from_memo
