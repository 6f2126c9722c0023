"""The files a search may read, decided by the policy walker, with each one's kind: the census.

The ripgrep engine runs this in a thread while rg searches: rg may only *add* candidates (it is given
the policy as flags too), so its output is kept only for files the census lists as text. The census
sees each file exactly as the Python engine does (open without following links, the hard-link policy,
the size limit, an 8 KiB binary sniff), so both engines count `files_searched`, `skipped_binary` and
`skipped_too_large` alike.
"""

from __future__ import annotations

import os
import stat
import threading
import time
import weakref
from dataclasses import dataclass, field
from typing import Final

from repo_sandbox.engine.request import SearchRequest, SearchStats
from repo_sandbox.tools._glob import Glob
from repo_sandbox.tools._results import is_presentable
from repo_sandbox.tools._textfile import SNIFF_BYTES, looks_binary
from repo_sandbox.tools._walk import UNREAD_IGNORE_FILE, FileEntry, Walk
from repo_sandbox.tree import facts
from repo_sandbox.workspace import Workspace

TEXT: Final = facts.TEXT
BINARY: Final = facts.BINARY
TOO_LARGE: Final = facts.TOO_LARGE

_UNSHARED_CHARS: Final = frozenset("\\[]?{}")


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


RACY_NS: Final = 2_000_000_000
"""Kinds of files changed less than this long ago (ns) are not remembered (timestamps are coarse)."""
MAX_KNOWN: Final = 200_000
"""Most remembered file kinds per workspace (about 30 MiB at the limit)."""
_known_by_workspace: weakref.WeakKeyDictionary[Workspace, dict[str, tuple[tuple[int, ...], int]]] = (
    weakref.WeakKeyDictionary()
)
_known_lock = threading.Lock()


def known_kinds(ws: Workspace) -> dict[str, tuple[tuple[int, ...], int]]:
    """The workspace's memory of sniffed kinds. A kind is reused only while the file keeps its identity
    and change time (device, inode, size, mtime, ctime: any write, rename over it or chmod changes one), so
    a repeated search stats each file instead of opening and reading its head."""
    with _known_lock:
        return _known_by_workspace.setdefault(ws, {})


def _identity(info: os.stat_result) -> tuple[int, ...]:
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


@dataclass
class Census:
    """Fill with `run()` (in a thread); read after `done` is set."""

    ws: Workspace
    request: SearchRequest
    glob: Glob | None
    files: list[str] = field(default_factory=list[str])
    """Root-relative paths in path order."""
    kinds: list[int] = field(default_factory=list[int])
    position: dict[str, int] = field(default_factory=dict[str, int])
    walk_truncated: bool = False
    rg_ignores_agree: bool = True
    """No ignore file that ripgrep could read differently (see `simple_rule`), no `.rgignore`, and none
    above the start directory (ripgrep is told not to look upwards)."""
    known: dict[str, tuple[tuple[int, ...], int]] = field(default_factory=dict[str, tuple[tuple[int, ...], int]])
    """Kinds sniffed before (see `known_kinds`), by path, with the file identity they were sniffed at."""
    done: threading.Event = field(default_factory=threading.Event)
    stop: threading.Event = field(default_factory=threading.Event)
    error: BaseException | None = None
    _running: list[tuple[int, int, int]] = field(default_factory=list[tuple[int, int, int]])

    def run(self) -> None:
        try:
            self._walk()
        except BaseException as exc:  # noqa: BLE001  # re-raised by the searching thread
            self.error = exc
        finally:
            self.done.set()

    def _walk(self) -> None:
        max_bytes = self.ws.limits.max_file_bytes
        request = self.request
        progress = request.progress
        with self.ws.walk(
            request.path, include_hidden=request.include_hidden, include_ignored=request.include_ignored
        ) as walk:
            for entry in walk:
                if self.stop.is_set():
                    break
                if (self.glob is not None and not self.glob.matches(entry.walk_rel)) or not is_presentable(
                    entry.rel_path
                ):
                    continue
                kind = self._kind(walk, entry, max_bytes)
                if kind is None:
                    continue
                if progress is not None:
                    progress.files += 1
                self.position[entry.rel_path] = len(self.files)
                self.files.append(entry.rel_path)
                self.kinds.append(kind)
            self.walk_truncated = walk.truncated
            self.rg_ignores_agree = (
                not walk.saw_rgignore
                and not walk.saw_ancestor_ignores
                and UNREAD_IGNORE_FILE not in walk.ignore_lines
                and all(simple_rule(line) for line in walk.ignore_lines)
            )

    def _kind(self, walk: Walk, entry: FileEntry, max_bytes: int) -> int | None:
        """The file's kind, or None when the walk's policy refuses it (not a regular file, hard-linked)."""
        try:
            info = entry.stat()
        except OSError:
            return None
        if not stat.S_ISREG(info.st_mode) or (info.st_nlink > 1 and not walk.jail.allow_hard_links):
            return None
        if info.st_size > max_bytes:
            return TOO_LARGE
        if entry.facts is not None:
            remembered = facts.recall(entry.facts, entry.slot, info)
            if remembered is not None:
                return remembered[0]
        else:
            known = self.known.get(entry.rel_path)
            if known is not None and known[0] == _identity(info):
                return known[1]
        opened = walk.open_file_stat(entry)
        if opened is None:
            return None
        fd, info = opened
        try:
            if info.st_size > max_bytes:
                return TOO_LARGE
            kind = BINARY if looks_binary(os.pread(fd, SNIFF_BYTES, 0)) else TEXT
        finally:
            os.close(fd)
        # As git's racy-clean rule: a file changed in the last moments may change again within the same
        # timestamp tick without its identity showing it, so its kind is not remembered yet.
        if entry.facts is not None:
            facts.remember(entry.facts, entry.slot, info, kind, racy_ns=RACY_NS)
        elif len(self.known) < MAX_KNOWN and time.time_ns() - info.st_ctime_ns > RACY_NS:
            self.known[entry.rel_path] = (_identity(info), kind)
        return kind

    def stats_through(self, index: int, stats: SearchStats) -> None:
        """Set `stats` to the counts of the files up to and including `index` (-1: none); call after `done`."""
        if len(self._running) != len(self.kinds) + 1:
            running = [(0, 0, 0)]
            counts = [0, 0, 0]
            for kind in self.kinds:
                counts[kind] += 1
                running.append((counts[0], counts[1], counts[2]))
            self._running = running
        stats.files_searched, stats.skipped_binary, stats.skipped_too_large = self._running[index + 1]

    def progress(self) -> int:
        return len(self.files)
