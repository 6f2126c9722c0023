"""Run the Python engine over a file or a directory tree of the jail, streaming `FileHits` in path order.

The calling thread walks, opens, reads and sniffs files (the walker's policy checks all happen here),
reading the text ones back to back into batch buffers; a worker thread scans each whole batch for the
pattern's required literal (`engine.pymatch`) while the next batch is read, so the two overlap on two
cores. The calling thread then searches the batch's candidate files and gives back their hits in path
order, each file's stats counted when the caller reaches it, as if the files were searched one by one.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Final

from repo_sandbox.engine.pymatch import (
    BUFFER_BYTES,
    Batch,
    BatchMatcher,
    FileResult,
    MatchState,
    give_back,
    take_buffer,
)
from repo_sandbox.engine.pysearch import Query
from repo_sandbox.engine.request import Deadline, FileHits, SearchCancelled, SearchRequest, SearchStats
from repo_sandbox.fs.globs import compile_glob
from repo_sandbox.fs.textfile import SNIFF_BYTES, looks_binary
from repo_sandbox.meter import is_presentable
from repo_sandbox.workspace import Workspace

SEARCHED: Final = 0
BINARY: Final = 1
TOO_LARGE: Final = 2
FIRST_BATCH_BYTES: Final = 64 * 1024
"""The first batch is small so that a first page full of hits comes back at once; each next one doubles."""
HEAD_FIRST_BYTES: Final = 64 * 1024
"""A file larger than this has its head read and sniffed before the rest is read."""
WORKERS: Final = max(1, min(4, (os.cpu_count() or 2) - 1))

_pool_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None


def _executor() -> ThreadPoolExecutor:
    global _pool  # noqa: PLW0603  # one pool for the process, started by the first search
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(WORKERS, thread_name_prefix="repo-sandbox-match")
        return _pool


def read_at_most(fd: int, size_hint: int, max_bytes: int) -> bytes | None:
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


class _TreeSearch:
    """The reading side of one search and its batches in flight, consumed in order."""

    def __init__(self, request: SearchRequest, stats: SearchStats, matcher: BatchMatcher, max_bytes: int) -> None:
        self.request = request
        self.stats = stats
        self.matcher = matcher
        self.state = matcher.state
        self.max_bytes = max_bytes
        self.capacity = FIRST_BATCH_BYTES
        self.batch = Batch(b"", self.capacity)  # a pooled buffer is taken when a file is read into it
        self.view = memoryview(self.batch.data)
        self.pending: deque[tuple[Batch, Future[list[int]]]] = deque()
        self.hits_before = 0

    def add(self, fd: int, rel_path: str, size: int) -> None:
        """Read one opened file (the caller closes it) into the current batch, or into one of its own."""
        batch = self.batch
        if size > self.max_bytes:
            batch.kinds.append((TOO_LARGE, rel_path))
            return
        if size >= batch.capacity - batch.used:  # it does not fit (with the byte that shows growth)
            if batch.kinds:
                self._submit()
                batch = self.batch
            if size >= batch.capacity:
                self.add_alone(fd, rel_path, size)
                return
        if not batch.data:
            batch.data = take_buffer()
            self.view = memoryview(batch.data)
        start = batch.used
        view = self.view
        if size > HEAD_FIRST_BYTES:  # its head decides first: the rest of a binary file is never read
            got = os.readv(fd, [view[start : start + SNIFF_BYTES]])
            if looks_binary(bytes(view[start : start + got])):
                batch.kinds.append((BINARY, rel_path))
                return
            got += os.readv(fd, [view[start + got : start + size + 1]])
        else:
            got = os.readv(fd, [view[start : start + size + 1]])
            if got <= size and looks_binary(bytes(view[start : start + min(got, SNIFF_BYTES)])):
                batch.kinds.append((BINARY, rel_path))
                return
        if got > size:
            os.lseek(fd, 0, os.SEEK_SET)
            self.add_alone(fd, rel_path, size)  # it grew since fstat: read it on its own
            return
        batch.kinds.append((SEARCHED, rel_path))
        batch.spans.append((start, start + got))
        batch.used = start + got

    def add_alone(self, fd: int, rel_path: str, size: int) -> None:
        """A file (a large one, one that grew, one named alone) in a batch of its own, no pooled buffer
        taken; its head is sniffed before the rest is read."""
        if self.batch.kinds:
            self._submit()
        batch = self.batch
        if size > self.max_bytes:
            batch.kinds.append((TOO_LARGE, rel_path))
            return
        if looks_binary(os.pread(fd, SNIFF_BYTES, 0)):
            batch.kinds.append((BINARY, rel_path))
            return
        data = read_at_most(fd, size, self.max_bytes)
        if data is None:
            batch.kinds.append((TOO_LARGE, rel_path))
        elif looks_binary(data[:SNIFF_BYTES]):
            batch.kinds.append((BINARY, rel_path))
        else:
            give_back(batch.data)
            batch.data = data
            batch.kinds.append((SEARCHED, rel_path))
            batch.spans.append((0, len(data)))
            self._submit()

    def _submit(self) -> None:
        batch = self.batch
        if not batch.kinds:
            return
        if batch.spans:
            future = _executor().submit(self.matcher.candidates, batch.data, batch.spans)
        else:
            future = Future[list[int]]()
            future.set_result([])
        self.pending.append((batch, future))
        self.capacity = min(self.capacity * 2, BUFFER_BYTES)
        self.batch = Batch(b"", self.capacity)
        self.view = memoryview(self.batch.data)

    def head_ready(self) -> bool:
        """Whether `ready` has something to give now (or must wait: more batches are queued than workers)."""
        pending = self.pending
        return bool(pending) and (len(pending) > WORKERS or pending[0][1].done())

    def ready(self, *, wait: bool) -> Iterator[FileHits]:
        """Results of the finished batches at the head of the queue (with `wait`, of every queued one);
        waits for the head anyway once more batches are queued than there are workers."""
        while self.pending:
            batch, future = self.pending[0]
            if not wait and not self.head_ready():
                return
            candidates = future.result()
            self.pending.popleft()
            try:
                yield from self._consume(batch, candidates)
            finally:
                give_back(batch.data)

    def finish(self) -> Iterator[FileHits]:
        self._submit()
        yield from self.ready(wait=True)

    def _consume(self, batch: Batch, candidates: list[int]) -> Iterator[FileHits]:
        stats = self.stats
        request = self.request
        cancel = request.cancel
        window = request.keep_hits  # read file by file: a kept search moves it between pages
        wanted = iter(candidates)
        next_candidate = next(wanted, -1)
        text_index = 0
        for kind, rel_path in batch.kinds:
            if cancel is not None and cancel.is_set():
                raise SearchCancelled
            if kind == TOO_LARGE:
                stats.skipped_too_large += 1
                continue
            if kind == BINARY:
                stats.skipped_binary += 1
                continue
            stats.files_searched += 1
            index, text_index = text_index, text_index + 1
            if index != next_candidate:
                continue
            next_candidate = next(wanted, -1)
            before = self.hits_before
            keep = (max(0, window.start - before), max(0, window.stop - before))
            found: FileResult = self.matcher.search(batch.data, *batch.spans[index], keep)
            if found is not None:
                self.hits_before = before + found[0]
                yield FileHits(rel_path, found[0], found[1])

    def close(self) -> None:
        """Stop the workers' part of this search: queued batches are dropped, one a worker is in the
        middle of is waited for (its buffer goes back to the pool only then)."""
        self.state.stopped = True
        for batch, future in self.pending:
            if not future.cancel():
                future.exception()  # wait; its outcome no longer matters
            give_back(batch.data)
        self.pending.clear()
        give_back(self.batch.data)


def iter_file_hits(ws: Workspace, request: SearchRequest, stats: SearchStats) -> Iterator[FileHits]:
    """Search `request.path` (a file or a directory) and yield each file's hits.

    Raises:
        SandboxError: invalid_regex/invalid_glob, the jail's refusals, timeout.
        SearchCancelled: the request's `cancel` was set.
    """
    query = Query.compile(
        request.pattern,
        fixed_strings=request.fixed_strings,
        case_sensitive=request.case_sensitive,
        multiline=request.multiline,
    )
    matcher = BatchMatcher(query, request, request.deadline or Deadline(ws.limits.regex_timeout_s), MatchState())
    glob = compile_glob(request.glob) if request.glob else None
    progress = request.progress
    opened, dir_fd, _ = ws.jail.open_any(request.path)
    if dir_fd is not None:
        os.close(dir_fd)
    search = _TreeSearch(request, stats, matcher, ws.limits.max_file_bytes)
    try:
        if opened is not None:  # a file named explicitly is searched whatever the glob says (as in ripgrep)
            try:
                search.add_alone(opened.fd, opened.rel_path, os.fstat(opened.fd).st_size)
            finally:
                os.close(opened.fd)
            if progress is not None:
                progress.files += 1
            yield from search.finish()
            return
        with ws.walk(
            request.path, include_hidden=request.include_hidden, include_ignored=request.include_ignored
        ) as walk:
            for entry in walk:
                if (glob is not None and not glob.matches(entry.walk_rel)) or not is_presentable(entry.rel_path):
                    continue
                if request.cancel is not None and request.cancel.is_set():
                    raise SearchCancelled
                opened_file = walk.open_file_stat(entry)
                if opened_file is None:
                    continue
                fd, info = opened_file
                try:
                    search.add(fd, entry.rel_path, info.st_size)
                finally:
                    os.close(fd)
                if progress is not None:
                    progress.files += 1
                if search.head_ready():
                    yield from search.ready(wait=False)
            yield from search.finish()
            stats.walk_truncated = walk.truncated
    finally:
        search.close()
