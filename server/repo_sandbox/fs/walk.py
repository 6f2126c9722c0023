"""The directory walker shared by the tools.

Walks with directory file descriptors (`scandir(fd)` and `openat(O_NOFOLLOW)`), so a directory swapped for
a symlink mid-walk cannot lead outside the root. Symlinks are never followed. Applies, in this order: the
deny-list, hidden-file filtering and .gitignore/.ignore rules (nested files included, deeper files winning,
`.ignore` over `.gitignore` in one directory, `.git/info/exclude` below them all) except that, in a git
repository, a file in the index is never ignored (`fs.gitrepo`). Depth and entry counts are capped;
hitting a cap marks the walk truncated.
"""

from __future__ import annotations

import errno
import itertools
import operator
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Final

from repo_sandbox.errors import SandboxError
from repo_sandbox.fs.gitrepo import Tracked, repo_rules
from repo_sandbox.fs.jail import Jail
from repo_sandbox.policy.git.ignore import IgnoreRules

GIT_IGNORE_FILE: Final = ".gitignore"
IGNORE_FILES = (GIT_IGNORE_FILE, ".ignore")
"""Per-directory ignore files, lowest precedence first."""
MAX_IGNORE_FILE_BYTES = 1024 * 1024
UNREAD_IGNORE_FILE = "\x00unread"
"""Stands in `Walk.ignore_lines` for a deny-listed ignore file this walker did not read (no real line has NUL)."""

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
    facts: bytearray | None = None
    """Where a tree index remembers what it learnt about this file (`tree.facts`), at `slot`; None: nowhere."""
    slot: int = -1

    def stat(self) -> os.stat_result:
        """The file's `lstat`, relative to its directory's fd (raises OSError if it vanished)."""
        return os.stat(self.name, dir_fd=self.dir_fd, follow_symlinks=False)


@dataclass(slots=True)
class Run:
    """Consecutive regular files of one directory, in walk order. `dir_fd` is valid until the iterator advances."""

    dir_fd: int
    prefix: str
    """The directory's root-relative path and '/' ('' for the root): a file's path is `prefix + name`."""
    walk_prefix: str
    """The same relative to where the walk started (what globs match against)."""
    names: list[str]
    facts: bytearray | None
    """Where a tree index remembers facts about these files (see `FileEntry`), from slot `first_slot` on."""
    first_slot: int
    listing: str | None = None
    """The tree index's listing of all the directory's files ('/'-joined, slot order), when it has one."""


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


IgnoreStamp = tuple[str, tuple[int, ...] | None]
"""An ignore file a directory holds and its `lstat` identity taken before it was read (None: gone)."""


def stamp_of(info: os.stat_result) -> tuple[int, ...]:
    """A file's identity and change times: any write, rename over it, chmod or new hard link changes one."""
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_mode)


def stamp_at(dir_fd: int, name: str) -> tuple[int, ...] | None:
    try:
        return stamp_of(os.stat(name, dir_fd=dir_fd, follow_symlinks=False))
    except OSError:
        return None


def _load_ignore_specs(
    dir_fd: int,
    dir_rel: str,
    present: set[str],
    jail: Jail,
    sink: list[str] | None = None,
    stamps: list[IgnoreStamp] | None = None,
) -> list[tuple[IgnoreRules, bool]]:
    """The rules of the directory's ignore files, in `IGNORE_FILES` order (a later file's rule wins), each with
    whether it is git's (`IgnoreStack.at_repository`)."""
    specs: list[tuple[IgnoreRules, bool]] = []
    for name in IGNORE_FILES:
        lines: list[str] = []
        # A deny-listed ignore file is not read either: its rules would reveal its content through what they hide.
        if name in present and not jail.deny.is_entry_denied(_join(dir_rel, name)):
            if stamps is not None:
                stamps.append((name, stamp_at(dir_fd, name)))
            text = _read_small_file(dir_fd, name)
            if text:
                lines = text.removeprefix("\ufeff").splitlines()  # git skips a byte-order mark
                if sink is not None and text.startswith("\ufeff"):
                    sink.append(text.splitlines()[0])  # ripgrep does not: `census.simple_rule` refuses this line
            elif text is None and sink is not None:
                sink.append(UNREAD_IGNORE_FILE)  # unreadable or over the size cap: rg might still read it
        elif name in present and sink is not None:
            sink.append(UNREAD_IGNORE_FILE)
        if sink is not None:
            sink.extend(lines)
        if rules := IgnoreRules(lines):
            specs.append((rules, name == GIT_IGNORE_FILE))
    return specs


class IgnoreStack:
    """The ignore specs in force for one directory: (directory relative to root, spec, whether git's), root
    first; and in a git repository, its tracked files (never ignored)."""

    __slots__ = ("_specs", "tracked")

    def __init__(self, specs: tuple[tuple[str, IgnoreRules, bool], ...] = (), tracked: Tracked | None = None) -> None:
        self._specs = specs
        self.tracked = tracked

    def pushed(self, dir_rel: str, spec: IgnoreRules | None, *, git: bool = True) -> IgnoreStack:
        return self if spec is None else IgnoreStack((*self._specs, (dir_rel, spec, git)), self.tracked)

    def pushed_all(self, dir_rel: str, specs: list[tuple[IgnoreRules, bool]]) -> IgnoreStack:
        stack = self
        for spec, git in specs:
            stack = stack.pushed(dir_rel, spec, git=git)
        return stack

    def with_tracked(self, tracked: Tracked | None) -> IgnoreStack:
        return IgnoreStack(self._specs, tracked)

    def at_repository(self) -> IgnoreStack:
        """The rules inside a nested repository (a directory holding `.git`): git's from above (`.gitignore`
        files, `info/exclude`) and the outer index stop there, as in git and ripgrep; `.ignore` files go on."""
        if self.tracked is None and all(not git for _, _, git in self._specs):
            return self
        return IgnoreStack(tuple(spec for spec in self._specs if not spec[2]))

    def excludes_dir(self, dir_rel: str) -> bool:
        """Whether the rules ignore the directory or one above it: git lists no untracked file inside it."""
        parts = dir_rel.split("/")
        for depth in range(1, len(parts) + 1):
            path = "/".join(parts[:depth])
            for base, spec, _ in reversed(self._specs):
                if base != "." and not path.startswith(base + "/"):
                    continue
                include, _ = spec.check(path if base == "." else path[len(base) + 1 :], is_dir=True)
                if include is not None:
                    if include:
                        return True
                    break
        return False

    def __bool__(self) -> bool:
        return bool(self._specs)

    def is_ignored(self, rel_path: str, *, is_dir: bool) -> bool:
        """The deepest ignore file with a rule for the path decides; within one, the last matching rule."""
        for base, spec, _ in reversed(self._specs):
            sub = rel_path if base == "." else rel_path[len(base) + 1 :]
            include, _ = spec.check(sub, is_dir=is_dir)
            if include is not None:
                return include
        return False


def _join(base: str, name: str) -> str:
    return name if base == "." else f"{base}/{name}"


Kept = tuple[str, bool]
"""An entry that passed the filters: (name, is_dir)."""


@dataclass(slots=True)
class Listing:
    """One directory as the policy walk sees it."""

    kept: list[Kept]
    """The entries the walk reports or enters, in name order."""
    ignores: IgnoreStack
    """The ignore rules in force for the entries: the directory's own pushed on its parent's."""
    entries: int = 0
    """Entries listed, hidden, ignored and denied ones included: what the walk's entry cap counts."""
    ignore_lines: list[str] = field(default_factory=list[str])
    """The lines of the ignore files this directory holds (see `Walk.ignore_lines`)."""
    has_ignore_files: bool = False
    rgignore: bool = False
    """An ignore file ripgrep would read and the walk does not, or a tracked entry kept despite a rule that
    ripgrep would apply (see `Walk.saw_rgignore`)."""
    ignore_stamps: list[IgnoreStamp] = field(default_factory=list[IgnoreStamp])
    """The ignore files read, each with its identity before the read (only when asked for)."""


def list_directory(
    jail: Jail,
    dir_fd: int,
    dir_rel: str,
    ignores: IgnoreStack,
    options: WalkOptions,
    budget: int,
    *,
    stamps: bool = False,
) -> Listing | None:
    """List one open directory and apply the policy to its entries; None when it holds more than `budget`
    entries (the walk's entry cap). An unreadable or vanished directory lists as empty."""
    try:
        with os.scandir(dir_fd) as it:
            entries = list(itertools.islice(it, max(budget, 0) + 1))
    except OSError:
        entries = []
    if len(entries) > budget:
        return None
    if not entries:
        return Listing([], ignores)
    entries.sort(key=_entry_name)
    listing = Listing([], ignores, len(entries))
    if not options.include_ignored:
        present = {e.name for e in entries if e.name in IGNORE_FILES}
        listing.has_ignore_files = bool(present)
        listing.rgignore = any(
            e.name == ".rgignore" or (e.name in IGNORE_FILES and not e.is_file(follow_symlinks=False)) for e in entries
        )
        if dir_rel == ".":
            ignores = _repo_base(jail, ignores, listing.ignore_lines, listing.ignore_stamps if stamps else None)
        elif any(e.name == ".git" for e in entries):
            ignores = ignores.at_repository()
            listing.rgignore = True  # rg, told --no-require-git, applies the outer .gitignore files inside
        specs = _load_ignore_specs(
            dir_fd, dir_rel, present, jail, listing.ignore_lines, listing.ignore_stamps if stamps else None
        )
        listing.ignores = ignores.pushed_all(dir_rel, specs)
    listing.kept, exempted = _keep(jail, dir_rel, entries, listing.ignores, options)
    listing.rgignore |= exempted
    return listing


def _repo_base(
    jail: Jail, ignores: IgnoreStack, sink: list[str], stamps: list[IgnoreStamp] | None = None
) -> IgnoreStack:
    """The root's inherited rules with git's additions: `.git/info/exclude` and the tracked files."""
    rules = repo_rules(jail.root, jail.root_fd)
    sink.extend(rules.lines)
    if stamps is not None:
        stamps.extend(rules.stamps)
    if rules.exclude is None and rules.tracked is None:
        return ignores
    return ignores.pushed(".", rules.exclude).with_tracked(rules.tracked)


def _keep(
    jail: Jail, dir_rel: str, entries: list[os.DirEntry[str]], ignores: IgnoreStack, options: WalkOptions
) -> tuple[list[Kept], bool]:
    """The entries of one directory that the walk reports or enters, in name order, and whether a tracked
    entry was kept that a rule ignores.

    Skipped: hidden names (unless asked for), symlinks, FIFOs, sockets and devices, deny-listed entries
    and, unless asked for, ignored ones that are not tracked (a directory is tracked when it holds a tracked
    file; inside an ignored directory only tracked entries are kept). Filtering a whole listing at once keeps
    the per-entry cost low.
    """
    include_hidden = options.include_hidden
    denied = jail.deny.denied_names(dir_rel, [e.name for e in entries])
    check_ignores = bool(ignores) and not options.include_ignored
    tracked = ignores.tracked if check_ignores else None
    excluded = tracked is not None and tracked.holds(dir_rel, is_dir=True) and ignores.excludes_dir(dir_rel)
    exempted = False
    prefix = "" if dir_rel == "." else dir_rel + "/"
    kept: list[Kept] = []
    for entry in entries:
        name = entry.name
        if not include_hidden and name.startswith("."):
            continue
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
            if not is_dir and not entry.is_file(follow_symlinks=False):
                continue  # symlinks, FIFOs, sockets, devices
        except OSError:
            continue
        if name in denied:
            continue
        if check_ignores and (excluded or ignores.is_ignored(prefix + name, is_dir=is_dir)):
            if tracked is None or not tracked.holds(prefix + name, is_dir=is_dir):
                continue
            exempted = True
        kept.append((name, is_dir))
    return kept, exempted


@dataclass(slots=True)
class Frame:
    """One directory being walked: its fd, where it is, the ignore rules in force and what is left of it."""

    fd: int
    rel: str
    walk_prefix: str
    ignores: IgnoreStack
    depth: int
    kept: list[Kept]
    own_fd: bool
    facts: bytearray | None = None
    """Where a tree index remembers facts about this directory's files, by file slot (see `FileEntry`)."""
    listing: str | None = None
    next_index: int = 0
    next_slot: int = 0


class Walk:
    """Iterate the regular files under a directory of the jail, in path order. Check `truncated` after.

    Iterative (an explicit stack of directory fds), so depth costs neither recursion nor more than one fd
    per level; each level is opened with `O_NOFOLLOW` relative to its parent's fd. `tree.walk.IndexedWalk`
    is this walk with the listings taken from the tree index where it provably still holds.
    """

    def __init__(self, jail: Jail, start_fd: int, start_rel: str, options: WalkOptions) -> None:
        self.jail = jail
        self.start_fd = start_fd
        self.start_rel = start_rel
        self.options = options
        self.truncated = False
        self.entries_seen = 0
        self._stopped = False
        self.ignore_lines: list[str] = []
        """Every line of the ignore files this walk applied (ancestors' included), for engines that must
        know whether ripgrep's own ignore matching would agree."""
        self.saw_ancestor_ignores = False
        self.saw_rgignore = False
        """A walked directory holds an ignore file ripgrep would read and this walker does not: a `.rgignore`,
        or a `.gitignore`/`.ignore` that is a symlink (ripgrep follows it); or a nested repository, inside which
        ripgrep (told `--no-require-git`) goes on applying the outer `.gitignore` files."""

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
                self.saw_ancestor_ignores |= bool(present)
                if depth == 0:
                    stack = _repo_base(self.jail, stack, self.ignore_lines)
                elif _exists_at(fd, ".git"):
                    stack = stack.at_repository()
                    self.saw_rgignore = True
                specs = _load_ignore_specs(fd, dir_rel, present, self.jail, self.ignore_lines)
                stack = stack.pushed_all(dir_rel, specs)
            finally:
                os.close(fd)
        return stack

    def open_file(self, entry: FileEntry) -> int | None:
        """Open a walked file without following symlinks; None if it changed into something else meanwhile,
        or is a hard link the policy refuses. The caller closes the fd."""
        opened = self.open_file_stat(entry)
        return None if opened is None else opened[0]

    def open_file_stat(self, entry: FileEntry) -> tuple[int, os.stat_result] | None:
        """As `open_file`, also returning the `fstat` of the opened file."""
        return self.open_at(entry.dir_fd, entry.name)

    def open_at(self, dir_fd: int, name: str) -> tuple[int, os.stat_result] | None:
        """As `open_file_stat`, for the file `name` of a run's directory."""
        try:
            fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
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
        return fd, info

    def _listing(self, fd: int, rel: str, ignores: IgnoreStack) -> Listing:
        """The directory's listing, counted against the entry cap (the walk ends when it is reached)."""
        listing = list_directory(
            self.jail, fd, rel, ignores, self.options, self.options.max_entries - self.entries_seen
        )
        if listing is None:
            self.truncated = self._stopped = True
            return Listing([], ignores)
        self.entries_seen += listing.entries
        self.saw_rgignore |= listing.rgignore
        self.ignore_lines.extend(listing.ignore_lines)
        return listing

    def _frame(self, fd: int, rel: str, walk_prefix: str, ignores: IgnoreStack, depth: int, *, own_fd: bool) -> Frame:
        listing = self._listing(fd, rel, ignores)
        return Frame(fd, rel, walk_prefix, listing.ignores, depth, listing.kept, own_fd)

    def __iter__(self) -> Iterator[FileEntry]:
        for run in self.runs():
            prefix, walk_prefix, fd, facts, slot = run.prefix, run.walk_prefix, run.dir_fd, run.facts, run.first_slot
            for offset, name in enumerate(run.names):
                yield FileEntry(prefix + name, walk_prefix + name, name, fd, facts, slot + offset)

    def runs(self) -> Iterator[Run]:
        """The walk's files in runs of consecutive files of one directory (cheaper than one entry per file)."""
        frames = [self._frame(self.start_fd, self.start_rel, "", self._ancestor_ignores(), 0, own_fd=False)]
        try:
            while frames and not self._stopped:
                frame = frames[-1]
                kept, index, count = frame.kept, frame.next_index, len(frame.kept)
                if index >= count:
                    frames.pop()
                    if frame.own_fd:
                        os.close(frame.fd)
                    continue
                names: list[str] = []
                while index < count and not kept[index][1]:
                    names.append(kept[index][0])
                    index += 1
                if names:
                    frame.next_index = index
                    frame.next_slot += len(names)
                    prefix = "" if frame.rel == "." else frame.rel + "/"
                    first = frame.next_slot - len(names)
                    yield Run(frame.fd, prefix, frame.walk_prefix, names, frame.facts, first, frame.listing)
                    continue
                name = kept[index][0]
                frame.next_index = index + 1
                if frame.depth + 1 >= self.options.max_depth:
                    self.truncated = True
                    continue
                child_fd = self._open_child(frame.fd, name)
                if child_fd is not None:
                    child_rel = name if frame.rel == "." else f"{frame.rel}/{name}"
                    child = self._frame(
                        child_fd, child_rel, f"{frame.walk_prefix}{name}/", frame.ignores, frame.depth + 1, own_fd=True
                    )
                    frames.append(child)
        finally:
            for frame in frames:
                if frame.own_fd:
                    os.close(frame.fd)

    def _open_child(self, dir_fd: int, name: str) -> int | None:
        """Open a subdirectory without following a symlink (one swapped in since the listing fails here)."""
        try:
            return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
        except OSError as exc:
            if exc.errno in (errno.EMFILE, errno.ENFILE, errno.ENOMEM):
                self.truncated = True  # out of descriptors: say the result is incomplete rather than skip quietly
            return None


_entry_name = operator.attrgetter("name")


def _exists_at(dir_fd: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return False
    return True
