"""The matching half of the Python engine: one batch of text files, read back to back into one buffer.

A worker thread finds the files of the batch that can match with one scan of the whole buffer for the
pattern's required literal (`regex` releases the GIL while it scans, so the walking and reading thread
keeps going meanwhile); only those are checked for a NUL byte, decoded and searched line by line.
"""

from __future__ import annotations

import threading
from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Any, Final

import regex

from repo_sandbox.engine.pysearch import Deadline, Query, decode_for_search, displayed, search_text_buffer
from repo_sandbox.engine.request import LineHit, SearchCancelled, SearchRequest

BUFFER_BYTES: Final = 4 * 1024 * 1024
"""A batch buffer; a file larger than what is left of it is read into a batch of its own."""
MAX_FREE_BUFFERS: Final = 6

FileResult = tuple[int, list[LineHit]] | None
"""A searched file's matching lines and its materialised hits, or None when it has no match."""


@dataclass(slots=True)
class Batch:
    """Text files read back to back into `data` (a pooled buffer, or one large file's own bytes)."""

    data: bytearray | bytes
    capacity: int
    """How much of `data` this batch may fill (the first batches are kept small)."""
    kinds: list[tuple[int, str]] = field(default_factory=list[tuple[int, str]])
    """(kind, root-relative path) of every file the batch accounts for, in walk order."""
    spans: list[tuple[int, int]] = field(default_factory=list[tuple[int, int]])
    """(start, end) in `data` of each text file, in the same order."""
    used: int = 0


_free_lock = threading.Lock()
_free: list[bytearray] = []


def take_buffer() -> bytearray:
    with _free_lock:
        if _free:
            return _free.pop()
    return bytearray(BUFFER_BYTES)


def give_back(data: bytearray | bytes) -> None:
    """Return a batch's buffer once its worker is done with it (nothing in a result refers into it)."""
    if isinstance(data, bytearray) and len(data) == BUFFER_BYTES:
        with _free_lock:
            if len(_free) < MAX_FREE_BUFFERS:
                _free.append(data)


class MatchState:
    """What the reading thread tells the workers while a search runs."""

    __slots__ = ("hits_before", "stopped")

    def __init__(self) -> None:
        self.hits_before = 0
        """Matching lines of the files the caller has been given: no later file has fewer before it."""
        self.stopped = False
        """The caller stopped reading: batches still queued need not be searched."""


class BatchMatcher:
    def __init__(self, query: Query, request: SearchRequest, deadline: Deadline, state: MatchState) -> None:
        self.query = query
        self.request = request
        self.deadline = deadline
        self.state = state
        self.required: Any = None  # regex.Pattern[bytes]; the regex stubs are incomplete
        if query.required is not None:
            self.required = regex.compile(regex.escape(query.required))

    def run(self, data: bytearray | bytes, spans: list[tuple[int, int]]) -> list[FileResult]:
        """Each text file's result, in order. The hits kept per file are its first `stop - hits_before`
        (the request's window cut at the hits the caller has seen so far); the caller cuts them to its
        window.

        Raises:
            TimeoutExceededError, SearchCancelled.
        """
        results: list[FileResult] = [None] * len(spans)
        for index in self._candidates(data, spans):
            if self.state.stopped:
                break
            results[index] = self._search(data, *spans[index])
        return results

    def _candidates(self, data: bytearray | bytes, spans: list[tuple[int, int]]) -> list[int]:
        """Indices of the files that hold the required literal (all of them when there is none)."""
        if self.required is None or not spans:
            return list(range(len(spans)))
        starts = [start for start, _ in spans]
        end = spans[-1][1]
        found: list[int] = []
        position = spans[0][0]
        while position < end:
            match = self.required.search(data, position, end, concurrent=True)
            if match is None:
                break
            index = bisect_right(starts, match.start()) - 1
            file_end = spans[index][1]
            if match.end() <= file_end:
                found.append(index)
            # An occurrence that runs into the next file means none lies wholly in this one (it is the
            # leftmost, and the literal has one length); the next file is scanned from its own start.
            position = file_end
        return found

    def _search(self, data: bytearray | bytes, start: int, end: int) -> FileResult:
        request = self.request
        if request.cancel is not None and request.cancel.is_set():
            raise SearchCancelled
        if data.find(b"\x00", start, end) >= 0:
            return None  # a NUL byte past the sniffed head: searched, but no line is reported (as in rg)
        text, valid = decode_for_search(memoryview(data)[start:end])
        query = self.query if valid else self.query.for_invalid_utf8()
        keep = (0, max(0, request.keep_hits[1] - self.state.hits_before))
        count, hits = search_text_buffer(query, text, context=request.context, deadline=self.deadline, keep=keep)
        if not valid:
            for hit in hits:
                hit.text = displayed(hit.text)
                hit.before = [displayed(line) for line in hit.before]
                hit.after = [displayed(line) for line in hit.after]
        return (count, hits) if count else None
