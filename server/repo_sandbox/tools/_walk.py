"""The directory walker shared by the tools.

Walks with directory file descriptors (`scandir(fd)` and `openat(O_NOFOLLOW)`), so a directory swapped for
a symlink mid-walk cannot lead outside the root. Symlinks are never followed. Applies, in this order: the
deny-list, hidden-file filtering and .gitignore/.ignore rules (nested files included, deeper files winning,
`.ignore` over `.gitignore` in one directory). Depth and entry counts are capped; hitting a cap marks the
walk truncated.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass

from pathspec import GitIgnoreSpec

from repo_sandbox.errors import SandboxError
from repo_sandbox.policy.paths import Jail

IGNORE_FILES = (".gitignore", ".ignore")
"""Per-directory ignore files, lowest precedence first."""
MAX_IGNORE_FILE_BYTES = 1024 * 1024

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


@dataclass(frozen=True, slots=True)
class WalkOptions:
    include_hidden: bool = False
    include_ignored: bool = False
    max_depth: int = 64
    max_entries: int = 1_000_000


@dataclass(slots=True)
class FileEntry:
    """A regular file found by the walk. `dir_fd` is valid only until the iterator advances."""

    rel_path: str
    """Path relative to the repository root."""
    walk_rel: str
    """Path relative to the directory the walk started from (what globs match against)."""
    name: str
    dir_fd: int
    entry: os.DirEntry[str]


def _read_small_file(dir_fd: int, name: str) -> str | None:
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_IGNORE_FILE_BYTES:
            return None
        return os.read(fd, MAX_IGNORE_FILE_BYTES).decode("utf-8", "replace")
    except OSError:
        return None
    finally:
        os.close(fd)


def _load_ignore_spec(dir_fd: int, present: set[str]) -> GitIgnoreSpec | None:
    lines: list[str] = []
    for name in IGNORE_FILES:
        if name in present:
            text = _read_small_file(dir_fd, name)
            if text:
                lines.extend(text.splitlines())
    if not any(line.strip() and not line.startswith("#") for line in lines):
        return None
    return GitIgnoreSpec.from_lines(lines)


class IgnoreStack:
    """The ignore specs in force for one directory: (directory relative to root, spec), root first."""

    __slots__ = ("_specs",)

    def __init__(self, specs: tuple[tuple[str, GitIgnoreSpec], ...] = ()) -> None:
        self._specs = specs

    def pushed(self, dir_rel: str, spec: GitIgnoreSpec | None) -> IgnoreStack:
        return self if spec is None else IgnoreStack((*self._specs, (dir_rel, spec)))

    def is_ignored(self, rel_path: str, *, is_dir: bool) -> bool:
        for base, spec in reversed(self._specs):
            sub = rel_path if base == "." else rel_path[len(base) + 1 :]
            result = spec.check_file(sub + "/" if is_dir else sub)
            if result.include is not None:
                return result.include
        return False


def _join(base: str, name: str) -> str:
    return name if base == "." else f"{base}/{name}"


class Walk:
    """Iterate the regular files under a directory of the jail. Check `truncated` after iterating."""

    def __init__(self, jail: Jail, start_fd: int, start_rel: str, options: WalkOptions) -> None:
        self.jail = jail
        self.start_fd = start_fd
        self.start_rel = start_rel
        self.options = options
        self.truncated = False
        self.entries_seen = 0

    def _ancestor_ignores(self) -> IgnoreStack:
        """Ignore files of the root and every directory above the start directory apply too."""
        stack = IgnoreStack()
        if self.options.include_ignored:
            return stack
        parts = [] if self.start_rel == "." else self.start_rel.split("/")
        for depth in range(len(parts)):
            dir_rel = "/".join(parts[:depth]) or "."
            try:
                fd, _ = self.jail.open_dir(dir_rel)
            except SandboxError:
                continue  # a denied or vanished ancestor contributes no ignore rules
            try:
                present = {n for n in IGNORE_FILES if _exists_at(fd, n)}
                stack = stack.pushed(dir_rel, _load_ignore_spec(fd, present))
            finally:
                os.close(fd)
        return stack

    def open_file(self, entry: FileEntry) -> int | None:
        """Open a walked file without following symlinks; None if it changed into something else meanwhile,
        or is a hard link the policy refuses. The caller closes the fd."""
        try:
            fd = os.open(entry.name, _FILE_FLAGS, dir_fd=entry.dir_fd)
        except OSError:
            return None
        try:
            info = os.fstat(fd)
        except OSError:
            os.close(fd)
            return None
        if not stat.S_ISREG(info.st_mode) or (info.st_nlink > 1 and not self.jail.allow_hard_links):
            os.close(fd)
            return None
        return fd

    def __iter__(self) -> Iterator[FileEntry]:
        yield from self._walk(self.start_fd, self.start_rel, "", self._ancestor_ignores(), 0, own_fd=False)

    def _walk(
        self, dir_fd: int, dir_rel: str, walk_prefix: str, ignores: IgnoreStack, depth: int, *, own_fd: bool
    ) -> Iterator[FileEntry]:
        opts = self.options
        try:
            try:
                with os.scandir(dir_fd) as it:
                    entries = sorted(it, key=lambda e: e.name)
            except OSError:
                return
            if not opts.include_ignored:
                names = {e.name for e in entries}
                ignores = ignores.pushed(dir_rel, _load_ignore_spec(dir_fd, names & set(IGNORE_FILES)))
            for entry in entries:
                self.entries_seen += 1
                if self.entries_seen > opts.max_entries:
                    self.truncated = True
                    return
                name = entry.name
                if not opts.include_hidden and name.startswith("."):
                    continue
                try:
                    is_dir = entry.is_dir(follow_symlinks=False)
                    is_file = not is_dir and entry.is_file(follow_symlinks=False)
                except OSError:
                    continue
                if not (is_dir or is_file):
                    continue  # symlinks, FIFOs, sockets, devices
                rel = _join(dir_rel, name)
                if self.jail.deny.is_entry_denied(rel, is_dir=is_dir):
                    continue
                if not opts.include_ignored and ignores.is_ignored(rel, is_dir=is_dir):
                    continue
                walk_rel = walk_prefix + name
                if is_file:
                    yield FileEntry(rel_path=rel, walk_rel=walk_rel, name=name, dir_fd=dir_fd, entry=entry)
                    continue
                if depth + 1 >= opts.max_depth:
                    self.truncated = True
                    continue
                try:
                    child_fd = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
                except OSError:
                    continue
                yield from self._walk(child_fd, rel, walk_rel + "/", ignores, depth + 1, own_fd=True)
                if self.truncated and self.entries_seen > opts.max_entries:
                    return
        finally:
            if own_fd:
                os.close(dir_fd)


def _exists_at(dir_fd: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return False
    return True
