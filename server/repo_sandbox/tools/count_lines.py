"""count_lines: count lines of a file or a tree, by extension, with the largest files."""

from __future__ import annotations

import heapq
import os
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from repo_sandbox.tools._glob import compile_glob
from repo_sandbox.tools._results import ResultModel
from repo_sandbox.tools._textfile import count_lines_fd, looks_binary, read_head
from repo_sandbox.workspace import Workspace

DESCRIPTION = """Count lines of code in a file or a directory tree, like `wc -l` but jailed and filtered.

Returns total lines, files and bytes, a breakdown by file extension and the 10 largest files. A line is
what an editor shows: newlines, plus one when a non-empty file does not end with a newline. Binary files
are skipped and counted in `skipped_binary`; .gitignore'd and hidden files are skipped unless asked for.

Example: {"path": "src", "pattern": "*.py"}
Common mistake: running `wc -l` through execute_bash over many files; this tool is faster and bounded.
"""

TOP_FILES = 10


class CountLinesArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: Annotated[str, Field(description="File or directory, relative to the root.", examples=[".", "src"])] = "."
    pattern: Annotated[
        str | None,
        Field(max_length=1000, description="Only count files matching this glob, e.g. '*.py'.", examples=["*.py"]),
    ] = None
    include_hidden: Annotated[bool, Field(description="Also count hidden files and directories.")] = False
    include_ignored: Annotated[bool, Field(description="Also count files ignored by .gitignore/.ignore.")] = False


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
    largest: list[FileLines] = Field(description=f"The {TOP_FILES} files with the most lines.")
    skipped_binary: int = Field(description="Binary files skipped.")
    truncated: bool = Field(default=False, description="True when the walk hit its depth or entry cap.")


def _extension(name: str) -> str:
    stem, dot, ext = name.rpartition(".")
    return f".{ext}" if dot and stem and stem != "." else ""


class _Tally:
    def __init__(self) -> None:
        self.total_lines = 0
        self.files = 0
        self.bytes = 0
        self.skipped_binary = 0
        self.by_ext: dict[str, list[int]] = {}
        self.largest: list[tuple[int, str]] = []  # min-heap of (lines, negated order key)

    def add_fd(self, fd: int, rel_path: str, name: str) -> None:
        if looks_binary(read_head(fd)):
            self.skipped_binary += 1
            return
        lines, size = count_lines_fd(fd)
        self.total_lines += lines
        self.files += 1
        self.bytes += size
        slot = self.by_ext.setdefault(_extension(name), [0, 0])
        slot[0] += 1
        slot[1] += lines
        item = (lines, rel_path)
        if len(self.largest) < TOP_FILES:
            heapq.heappush(self.largest, item)
        elif item > self.largest[0]:
            heapq.heapreplace(self.largest, item)

    def result(self, truncated: bool) -> CountLinesResult:
        by_ext = sorted(self.by_ext.items(), key=lambda kv: (-kv[1][1], kv[0]))
        return CountLinesResult(
            total_lines=self.total_lines,
            files=self.files,
            bytes=self.bytes,
            by_extension=[ExtensionCount(extension=e, files=f, lines=n) for e, (f, n) in by_ext],
            largest=[FileLines(path=p, lines=n) for n, p in sorted(self.largest, key=lambda t: (-t[0], t[1]))],
            skipped_binary=self.skipped_binary,
            truncated=truncated,
        )


def count_lines(ws: Workspace, args: CountLinesArgs) -> CountLinesResult:
    """Count lines of one file or of every matching file under a directory.

    Raises:
        SandboxError: invalid_glob, and the jail's refusals for `path`.
    """
    glob = compile_glob(args.pattern) if args.pattern else None
    tally = _Tally()
    opened, dir_fd, _ = ws.jail.open_any(args.path)
    if opened is not None:
        try:
            name = opened.rel_path.rsplit("/", 1)[-1]
            if glob is None or glob.matches(name):
                tally.add_fd(opened.fd, opened.rel_path, name)
        finally:
            os.close(opened.fd)
        return tally.result(False)
    assert dir_fd is not None
    os.close(dir_fd)
    with ws.walk(args.path, include_hidden=args.include_hidden, include_ignored=args.include_ignored) as walk:
        for entry in walk:
            if glob is not None and not glob.matches(entry.walk_rel):
                continue
            fd = walk.open_file(entry)
            if fd is None:
                continue
            try:
                tally.add_fd(fd, entry.rel_path, entry.name)
            finally:
                os.close(fd)
        return tally.result(walk.truncated)
