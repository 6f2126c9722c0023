"""Run the Python engine over a file or a directory tree of the jail, streaming `FileHits` in path order."""

from __future__ import annotations

import os
from collections.abc import Iterator

from repo_sandbox.engine.pysearch import Deadline, Query, decode_for_search, displayed, search_text_buffer
from repo_sandbox.engine.request import FileHits, SearchCancelled, SearchRequest, SearchStats
from repo_sandbox.tools._glob import compile_glob
from repo_sandbox.tools._results import is_presentable
from repo_sandbox.tools._textfile import SNIFF_BYTES, looks_binary
from repo_sandbox.workspace import Workspace


def _read_at_most(fd: int, size_hint: int, max_bytes: int) -> bytes | None:
    """The whole file, or None when it holds more than `max_bytes` (it may grow after `fstat`)."""
    chunks: list[bytes] = []
    got = 0
    while True:
        want = max(min(size_hint, max_bytes) + 1 - got, 65536)
        chunk = os.read(fd, want)
        if len(chunk) < want and got + len(chunk) <= max_bytes:
            chunks.append(chunk)  # a short read of a regular file is its end: no read just to see b""
            return b"".join(chunks)
        if not chunk:
            return b"".join(chunks)
        got += len(chunk)
        if got > max_bytes:
            return None
        chunks.append(chunk)


BUFFER_BYTES = 1024 * 1024
"""Files smaller than this are read into one reused buffer."""


class _FileSearcher:
    """Searches one file after another, keeping the running hit count that places each file's hits in
    the request's `keep_hits` window."""

    def __init__(self, ws: Workspace, request: SearchRequest, stats: SearchStats) -> None:
        self.max_bytes = ws.limits.max_file_bytes
        self.request = request
        self.stats = stats
        self.query = Query.compile(
            request.pattern,
            fixed_strings=request.fixed_strings,
            case_sensitive=request.case_sensitive,
            multiline=request.multiline,
        )
        self.deadline = Deadline(ws.limits.regex_timeout_s)
        self.hits_before = 0
        self.buffer = bytearray(BUFFER_BYTES)

    def _read(self, fd: int, size: int) -> tuple[bytes | bytearray, int] | None:
        """(data, length) of the whole file, or None past `max_bytes`. A file that fits the reused buffer is
        read into it (valid until the next file): no allocation, no fresh pages per file."""
        if size < BUFFER_BYTES:
            got = os.readv(fd, [self.buffer])
            if got < BUFFER_BYTES:
                return (self.buffer, got) if got <= self.max_bytes else None
            rest = _read_at_most(fd, size, self.max_bytes - got)  # it grew since fstat
            return None if rest is None else (bytes(self.buffer) + rest, got + len(rest))
        if looks_binary(os.pread(fd, SNIFF_BYTES, 0)):
            return b"\x00", 1  # a large binary file: its head decides, the rest is never read
        data = _read_at_most(fd, size, self.max_bytes)
        return None if data is None else (data, len(data))

    def search(self, fd: int, rel_path: str, size: int | None = None) -> FileHits | None:
        request = self.request
        if request.cancel is not None and request.cancel.is_set():
            raise SearchCancelled
        if request.progress is not None:
            request.progress.files += 1
        size = os.fstat(fd).st_size if size is None else size
        read = None if size > self.max_bytes else self._read(fd, size)
        if read is None:
            self.stats.skipped_too_large += 1
            return None
        data, length = read
        if looks_binary(bytes(data[: min(length, SNIFF_BYTES)])):
            self.stats.skipped_binary += 1
            return None
        self.stats.files_searched += 1
        if data.find(b"\x00", 0, length) >= 0:
            return None  # a NUL byte past the sniffed head: searched, but no line of it is reported (as in rg)
        required = self.query.required
        if required is not None and data.find(required, 0, length) < 0:
            return None  # cannot match: no need to decode it
        start, stop = self.request.keep_hits
        keep = (max(0, start - self.hits_before), max(0, stop - self.hits_before))
        text, valid = decode_for_search(memoryview(data)[:length])
        query = self.query if valid else self.query.for_invalid_utf8()
        count, hits = search_text_buffer(query, text, context=self.request.context, deadline=self.deadline, keep=keep)
        if not valid:
            for hit in hits:
                hit.text = displayed(hit.text)
                hit.before = [displayed(line) for line in hit.before]
                hit.after = [displayed(line) for line in hit.after]
        self.hits_before += count
        return FileHits(rel_path, count, hits) if count else None


def iter_file_hits(ws: Workspace, request: SearchRequest, stats: SearchStats) -> Iterator[FileHits]:
    """Search `request.path` (a file or a directory) and yield each file's hits.

    Raises:
        SandboxError: invalid_regex/invalid_glob, the jail's refusals, timeout.
    """
    searcher = _FileSearcher(ws, request, stats)
    glob = compile_glob(request.glob) if request.glob else None
    opened, dir_fd, _ = ws.jail.open_any(request.path)
    if opened is not None:  # a file named explicitly is searched whatever the glob says (as in ripgrep)
        try:
            found = searcher.search(opened.fd, opened.rel_path)
        finally:
            os.close(opened.fd)
        if found is not None:
            yield found
        return
    assert dir_fd is not None
    os.close(dir_fd)
    with ws.walk(request.path, include_hidden=request.include_hidden, include_ignored=request.include_ignored) as walk:
        for entry in walk:
            if (glob is not None and not glob.matches(entry.walk_rel)) or not is_presentable(entry.rel_path):
                continue
            opened = walk.open_file_stat(entry)
            if opened is None:
                continue
            fd, info = opened
            try:
                found = searcher.search(fd, entry.rel_path, info.st_size)
            finally:
                os.close(fd)
            if found is not None:
                yield found
        stats.walk_truncated = walk.truncated
