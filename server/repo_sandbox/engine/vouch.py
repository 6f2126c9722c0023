"""Nothing rg read is believed until the jail has read it too.

rg opens the files it lists by name. A writer who swaps a listed file (or a directory above it) for a link
to a denied file (`.env`, `.git/config`), or for a hard link to one, between the census's look and rg's open
makes rg read that file: its Landlock domain allows the whole root. So each file rg reports is opened again
here as the policy walker opens it: beneath the root with no symlink on the way, a regular file within the
size limit and the hard-link policy, no NUL byte. Its result is then made from those bytes only:
- content mode: rg's lines stand when each one, context included, is the jailed file's line of that number,
  so nothing is shown that `read_file` would not show; otherwise the file changed under the search and the
  Python engine searches the jailed bytes instead;
- count and files_with_matches modes (rg printed counts, not lines): the Python engine counts the jailed bytes.
A file that cannot be opened that way gives no result, as the Python engine would skip it.

Reading again is skipped where it provably changes nothing: when the tree index watched every directory
from before rg started and the census began (`fs.watch.WatchMark`), each file still has the device and
inode the census saw once rg has printed it (and a single link, where the policy refuses hard links), and
only then no directory has seen an entry created, removed, renamed or relinked. A swap still in place shows
in the identity; one already undone had its event queued before the directory could be changed back (the
kernel queues it while the directory is still locked), so it shows in the watch. A link made outside the
tree to one of its files is heard by no watch (nor by a census memo): the link count is checked here, as
the jail checks it.
"""

from __future__ import annotations

import os
import stat
from typing import Final

from repo_sandbox.engine.census import Census
from repo_sandbox.engine.pymatch import BatchMatcher, FileResult
from repo_sandbox.engine.pytree import read_at_most
from repo_sandbox.engine.rgprocess import FileOutput
from repo_sandbox.fs import beneath
from repo_sandbox.fs.watch import WatchMark
from repo_sandbox.workspace import Workspace

_BOM: Final = b"\xef\xbb\xbf"
_NEWLINE: Final = ord("\n")
_SAME: Final = 0
_OTHER_DEVICE: Final = 1
"""The file the census saw, on another file system than the root (a mount inside it): always read again."""
_DIFFERENT: Final = 2
"""Not the file the census saw (or gone, or hard-linked where the policy refuses that)."""
_WALK_LINES: Final = 8
"""Lines up to this far apart are walked newline by newline; farther ones are found by their text."""


def jailed_bytes(ws: Workspace, rel_path: str) -> bytes | None:
    """The file's bytes as the policy walker would read them, or None when it would not read them."""
    jail = ws.jail
    try:
        fd = beneath.open_without_links(jail.root_fd, rel_path, openat2=jail.uses_openat2)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        max_bytes = ws.limits.max_file_bytes
        if not stat.S_ISREG(info.st_mode) or (info.st_nlink > 1 and not jail.allow_hard_links):
            return None
        if info.st_size > max_bytes:
            return None
        data = read_at_most(fd, info.st_size, max_bytes)
    except OSError:
        return None
    finally:
        os.close(fd)
    if data is None or b"\0" in data:
        return None
    return data


def _seek(data: bytes, text: bytes, offset: int, line: int, number: int) -> int | None:
    """Where line `number` starts, if it starts with `text` (non-empty), searching from the start of line
    `line` at `offset`: the text is looked for, and the lines before a find counted, rather than each line
    between walked (or split off) one by one."""
    position = offset
    while (position := data.find(text, position)) >= 0:
        if position == offset or data[position - 1] == _NEWLINE:
            line += data.count(b"\n", offset, position)
            if line >= number:
                return position if line == number else None
            offset = position
        position += 1
    return None


def lines_hold(data: bytes, output: FileOutput) -> bool:
    """Whether every line rg printed for the file (in line order) is the line of that number in `data`."""
    offset = len(_BOM) if data.startswith(_BOM) else 0  # rg reads past a UTF-8 byte-order mark, as we do
    line = 1
    size = len(data)
    for number, _, text in output.lines:
        if number - line > _WALK_LINES and text:
            found = _seek(data, text, offset, line, number)
            if found is None:
                return False
            offset, line = found, number
        while line < number:
            newline = data.find(b"\n", offset)
            if newline < 0:
                return False
            offset, line = newline + 1, line + 1
        end = offset + len(text)
        if (end < size and data[end] != _NEWLINE) or data[offset:end] != text:
            return False
    return bool(output.lines)


class Voucher:
    """Checks the files of one rg search; `matcher` searches jailed bytes with the Python engine, `mark` is
    the tree's watch state taken before the census began (None: every file is read again)."""

    def __init__(
        self, ws: Workspace, matcher: BatchMatcher, census: Census, mark: WatchMark | None, *, lines: bool
    ) -> None:
        self.ws = ws
        self.matcher = matcher
        self.census = census
        self.mark = mark
        self.lines = lines
        """rg printed lines (content mode): they may stand; else only its counts, which stand only if trusted."""
        self._trusted: set[int] = set()
        self._root_device = os.fstat(ws.jail.root_fd).st_dev
        """Files on other file systems (mounts inside the root) are always read again."""
        self.unread = 0
        """Files whose rg output was taken as printed (trusted)."""
        self.read_again = 0
        """Files read again through the jail."""
        self._seen: dict[int, int] = {}
        """Census position -> `_SAME`, `_OTHER_DEVICE` or `_DIFFERENT`, for files `observe` stat'ed already."""

    def observe(self, rel_path: str, position: int) -> None:
        """Stat a file rg has just printed, while rg still runs (the census must be done): `trust` then uses
        this stat, taken after rg printed the file as the rule asks, and checks the watch after it."""
        if self.mark is not None or self.census.from_memo:
            self._seen[position] = self._identity(rel_path, position)

    def forget_observed(self) -> None:
        """Drop what `observe` saw: a new rg run is starting, whose prints are what `trust` must follow."""
        self._seen.clear()

    def _identity(self, rel_path: str, position: int) -> int:
        jail = self.ws.jail
        try:
            info = os.stat(rel_path, dir_fd=jail.root_fd, follow_symlinks=False)
        except OSError:
            return _DIFFERENT
        if not self.census.same_file(position, info) or (info.st_nlink > 1 and not jail.allow_hard_links):
            return _DIFFERENT
        return _SAME if info.st_dev == self._root_device else _OTHER_DEVICE

    def trust(self, files: list[tuple[str, int]]) -> bool:
        """Decide for these (root-relative path, census position) files, which rg has printed, whether rg
        read what the census saw (see the module's docstring): their identities first, the watch after.
        Returns whether each one is, by its stat now, the file the census saw (same device and inode, and a
        single link where the policy refuses hard links): checked with a mark, or for a census from a memo
        (`engine.censusmemo`), which a file that is not proves stale."""
        mark = self.mark
        if mark is None and not self.census.from_memo:
            return True
        same: list[int] = []
        agree = True
        seen = self._seen
        for rel_path, position in files:
            identity = seen.pop(position, None)
            if identity is None:
                identity = self._identity(rel_path, position)
            if identity == _DIFFERENT:
                agree = False
            elif identity == _SAME:
                same.append(position)
        if same and mark is not None and mark.quiet_since():
            self._trusted.update(same)
        return agree

    def check(self, rel_path: str, position: int, output: FileOutput, keep: tuple[int, int]) -> FileOutput | FileResult:
        """`output` itself when trusted or its lines hold, else the Python engine's result over the jailed
        bytes (`keep`: the hits to materialise, as `BatchMatcher.search`); None when the file gives nothing."""
        if position not in self._trusted:
            self.trust([(rel_path, position)])  # a stream's files come one at a time
        if position in self._trusted:
            self.unread += 1
            return output
        self.read_again += 1
        data = jailed_bytes(self.ws, rel_path)
        if data is None:
            return None
        if self.lines and lines_hold(data, output):
            return output
        return self.matcher.search(data, 0, len(data), keep)
