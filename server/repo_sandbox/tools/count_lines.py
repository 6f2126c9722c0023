"""count_lines: count lines of a file or a tree, by extension, with the largest files."""

from __future__ import annotations

import heapq
import os
import stat
from typing import Annotated, Final

from pydantic import Field

from repo_sandbox.audit.masking import mask_text
from repo_sandbox.fs.globs import compile_glob
from repo_sandbox.fs.textfile import CHUNK_BYTES, SNIFF_BYTES, looks_binary
from repo_sandbox.fs.walk import FileEntry, Walk
from repo_sandbox.meter import OutputMeter, is_presentable
from repo_sandbox.tools._args import ToolArgs
from repo_sandbox.tools._results import ResultModel
from repo_sandbox.tree import facts
from repo_sandbox.workspace import Workspace

DESCRIPTION = """Count lines, files and bytes of a file or directory tree, like `wc -l` but jailed and
filtered; prints the totals, lines per file extension and the 10 largest files.
Use it to size up a repository or a directory, or to see how long a file is before reading it.

A line is what an editor shows (a last line without a newline counts). Binary and over-large files are
not counted, ignored and hidden ones unless asked for; a `path` naming one file is counted whatever
`pattern` says.

Example: {"path": "src", "pattern": "*.py"}
Common mistake: running `wc -l` through execute_bash over many files; this tool is faster and bounded.
"""

TOP_FILES = 10


class CountLinesArgs(ToolArgs):
    path: Annotated[str, Field(description="File or directory, relative to the root.", examples=["src"])] = "."
    pattern: Annotated[
        str | None,
        Field(max_length=1000, description="Only count files matching this glob.", examples=["*.py"]),
    ] = None
    include_hidden: Annotated[
        bool | None,
        Field(description="Also count dot files and dot directories."),
    ] = None
    include_ignored: Annotated[bool, Field(description="Also count ignored files (.gitignore, .ignore).")] = False


class ExtensionCount(ResultModel):
    extension: str = Field(description="File extension including the dot, or '' for none.")
    files: int
    lines: int


class FileLines(ResultModel):
    path: str
    lines: int


class CountLinesResult(ResultModel):
    total_lines: int
    files: int = Field(description="Text files counted.")
    bytes: int = Field(description="Bytes in the counted files.")
    by_extension: list[ExtensionCount] = Field(description="Per extension, most lines first.")
    largest: list[FileLines] = Field(description=f"The {TOP_FILES} files with the most lines (ties by path).")
    skipped_binary: int = Field(description="Binary files skipped.")
    skipped_too_large: int = Field(default=0, description="Files skipped because they exceed the file size limit.")
    truncated: bool = Field(
        default=False,
        description="True when the walk hit its depth or entry cap, or the lists were cut to fit the output limit.",
    )


LONG_EXTENSION: Final = 9
"""An "extension" longer than this may be the tail of a secret-shaped name (a JWT's signature): it is taken
from the name as output masking shows it, the rule `ls` output and search_files follow."""


def _extension(name: str) -> str:
    stem, dot, ext = name.rpartition(".")
    if len(ext) >= LONG_EXTENSION:
        stem, dot, ext = mask_text(name).rpartition(".")
    return f".{ext}" if dot and stem and stem != "." else ""


class _Ranked:
    """A (lines, path) entry of the `largest` heap: the heap's smallest is the one to drop first, i.e.
    fewer lines, or with equal lines the later path."""

    __slots__ = ("lines", "path")

    def __init__(self, lines: int, path: str) -> None:
        self.lines = lines
        self.path = path

    def __lt__(self, other: _Ranked) -> bool:
        return (self.lines, other.path) < (other.lines, self.path)


class _Tally:
    def __init__(self, max_file_bytes: int) -> None:
        self.max_file_bytes = max_file_bytes
        self.total_lines = 0
        self.files = 0
        self.bytes = 0
        self.skipped_binary = 0
        self.skipped_too_large = 0
        self.by_ext: dict[str, list[int]] = {}
        self.largest: list[_Ranked] = []
        self.buffer = bytearray(CHUNK_BYTES)

    def add_fd(self, fd: int, rel_path: str, name: str, size: int | None = None) -> tuple[int, int, int]:
        """Count an open file; (kind, lines, bytes read) for the caller to remember (lines 0 unless text)."""
        size = os.fstat(fd).st_size if size is None else size
        if size > self.max_file_bytes:
            self.skipped_too_large += 1
            return facts.TOO_LARGE, 0, 0
        # Reads go into one reused buffer (no allocation per file); the first read serves the sniff too.
        buffer = self.buffer
        got = os.readv(fd, [buffer])
        if looks_binary(bytes(buffer[: min(got, SNIFF_BYTES)])):
            self.skipped_binary += 1
            return facts.BINARY, 0, 0
        newlines = 0
        size = 0
        last = 0
        while got:
            newlines += buffer.count(b"\n", 0, got)
            size += got
            last = buffer[got - 1]
            got = os.readv(fd, [buffer]) if got == len(buffer) else 0
        lines = newlines + (1 if size and last != 0x0A else 0)
        self.add_text(rel_path, name, lines, size)
        return facts.TEXT, lines, size

    def add_text(self, rel_path: str, name: str, lines: int, size: int) -> None:
        self.total_lines += lines
        self.files += 1
        self.bytes += size
        slot = self.by_ext.setdefault(_extension(name), [0, 0])
        slot[0] += 1
        slot[1] += lines
        if len(self.largest) < TOP_FILES:
            heapq.heappush(self.largest, _Ranked(lines, rel_path))
        elif self.largest[0].lines <= lines:
            item = _Ranked(lines, rel_path)
            if self.largest[0] < item:
                heapq.heapreplace(self.largest, item)

    def add_known(self, entry: FileEntry, info: os.stat_result) -> bool:
        """Count a walked file from what the tree index remembers of it at this identity; False if nothing
        (a file over the size limit too: it is opened, as any file the walk counts, before it is skipped)."""
        if info.st_size > self.max_file_bytes:
            return False
        assert entry.facts is not None
        known = facts.recall(entry.facts, entry.slot, info)
        if known is None:
            return False
        kind, lines = known
        if kind == facts.BINARY:
            self.skipped_binary += 1
        elif lines == facts.UNKNOWN_LINES:
            return False
        else:
            self.add_text(entry.rel_path, entry.name, lines, info.st_size)
        return True

    def result(self, walk_truncated: bool, max_output_bytes: int) -> CountLinesResult:
        meter = OutputMeter(max_output_bytes)
        cut = False
        largest: list[FileLines] = []
        for item in sorted(self.largest, reverse=True):
            row = FileLines(path=item.path, lines=item.lines)
            if not meter.try_add(OutputMeter.item_cost(row)):
                cut = True
                break
            largest.append(row)
        by_extension: list[ExtensionCount] = []
        for ext, (files, lines) in sorted(self.by_ext.items(), key=lambda kv: (-kv[1][1], kv[0])):
            row = ExtensionCount(extension=ext, files=files, lines=lines)
            if not meter.try_add(OutputMeter.item_cost(row)):
                cut = True
                break
            by_extension.append(row)
        return CountLinesResult(
            total_lines=self.total_lines,
            files=self.files,
            bytes=self.bytes,
            by_extension=by_extension,
            largest=largest,
            skipped_binary=self.skipped_binary,
            skipped_too_large=self.skipped_too_large,
            truncated=walk_truncated or cut,
        )


def count_lines(ws: Workspace, args: CountLinesArgs) -> CountLinesResult:
    """Count lines of one file or of every matching file under a directory.

    A file named explicitly is counted whatever `pattern` says (as ripgrep searches any file it is given).

    Raises:
        SandboxError: invalid_glob, and the jail's refusals for `path`.
    """
    glob = compile_glob(args.pattern) if args.pattern else None
    tally = _Tally(ws.limits.max_file_bytes)
    opened, dir_fd, _ = ws.jail.open_any(args.path)
    if opened is not None:
        try:
            tally.add_fd(opened.fd, opened.rel_path, opened.rel_path.rsplit("/", 1)[-1])
        finally:
            os.close(opened.fd)
        return tally.result(False, ws.limits.max_output_bytes)
    assert dir_fd is not None
    os.close(dir_fd)
    with ws.walk(args.path, include_hidden=args.include_hidden, include_ignored=args.include_ignored) as walk:
        for entry in walk:
            if (glob is not None and not glob.matches(entry.walk_rel)) or not is_presentable(entry.rel_path):
                continue
            if entry.facts is not None and _counted_from_memory(walk, tally, entry):
                continue
            opened = walk.open_file_stat(entry)
            if opened is None:
                continue
            fd, info = opened
            try:
                kind, lines, size = tally.add_fd(fd, entry.rel_path, entry.name, info.st_size)
            finally:
                os.close(fd)
            if entry.facts is not None and kind != facts.TOO_LARGE and (kind == facts.BINARY or size == info.st_size):
                facts.remember(entry.facts, entry.slot, info, kind, lines)
        walk_truncated = walk.truncated
    return tally.result(walk_truncated, ws.limits.max_output_bytes)


def _counted_from_memory(walk: Walk, tally: _Tally, entry: FileEntry) -> bool:
    """Count a file the tree index knows at its current identity (an `lstat`, no read); False: read it.
    A file the walk's policy refuses (no longer regular, hard-linked) counts as handled."""
    try:
        info = entry.stat()
    except OSError:
        return True  # vanished since the listing
    if not stat.S_ISREG(info.st_mode) or (info.st_nlink > 1 and not walk.jail.allow_hard_links):
        return True
    return tally.add_known(entry, info)
