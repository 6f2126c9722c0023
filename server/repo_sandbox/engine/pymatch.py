"""The matching half of the Python engine: one batch of text files, read back to back into one buffer.

A worker thread finds the files of the batch that can match with one scan of the whole buffer for the
pattern's required literal (`regex` releases the GIL while it scans, so the walking and reading thread
keeps going meanwhile). Only those files are then checked for a NUL byte, decoded and searched line by
line, by the reading thread when it reaches the batch: the worker holds the GIL only a few times per
batch, so the two threads rarely wait for each other.
"""

from __future__ import annotations

import threading
from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Any, Final

import regex

from repo_sandbox.engine.pylines import LONG_LINE_CHARS, long_lines, search_text_buffer
from repo_sandbox.engine.pysearch import Query, decode_for_search, displayed
from repo_sandbox.engine.request import Deadline, LineHit, SearchRequest

BUFFER_BYTES: Final = 4 * 1024 * 1024
"""A batch buffer; a file larger than what is left of it is read into a batch of its own."""
MAX_FREE_BUFFERS: Final = 3
"""Buffers kept for the next search (one being filled, one being scanned, one being searched)."""

FileResult = tuple[int, list[LineHit]] | None
"""A searched file's count of matching lines and its materialised hits, or None when it has no match."""


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

    __slots__ = ("stopped",)

    def __init__(self) -> None:
        self.stopped = False
        """The caller stopped reading: batches still queued need not be scanned."""


class BatchMatcher:
    def __init__(self, query: Query, request: SearchRequest, deadline: Deadline, state: MatchState) -> None:
        self.query = query
        self.request = request
        self.deadline = deadline
        self.state = state
        self.required: Any = None  # regex.Pattern[bytes]; the regex stubs are incomplete
        if query.required is not None:
            self.required = regex.compile(regex.escape(query.required))

    def candidates(self, data: bytearray | bytes, spans: list[tuple[int, int]]) -> list[int]:
        """Indices of the files that hold the required literal (all of them when there is none); run in a
        worker thread."""
        if self.required is None and self.query.min_chars >= LONG_LINE_CHARS:
            # A line of that many characters has at least as many bytes: other files cannot match.
            width = self.query.min_chars
            return [i for i, (start, end) in enumerate(spans) if next(long_lines(data, start, end, width), None)]
        if self.required is None or not spans:
            return list(range(len(spans)))
        starts = [start for start, _ in spans]
        end = spans[-1][1]
        found: list[int] = []
        position = spans[0][0]
        while position < end and not self.state.stopped:
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

    def search(self, data: bytearray | bytes, start: int, end: int, keep: tuple[int, int]) -> FileResult:
        """One candidate file's matching lines, with the hits whose index is in `keep` materialised.

        Raises:
            TimeoutExceededError.
        """
        request = self.request
        if data.find(b"\x00", start, end) >= 0:
            return None  # a NUL byte past the sniffed head: searched, but no line is reported (as in rg)
        text, valid = decode_for_search(memoryview(data)[start:end])
        query = self.query if valid else self.query.for_invalid_utf8()
        count, hits = search_text_buffer(query, text, context=request.context, deadline=self.deadline, keep=keep)
        if not valid:
            for hit in hits:
                hit.text = displayed(hit.text)
                hit.before = [displayed(line) for line in hit.before]
                hit.after = [displayed(line) for line in hit.after]
        return (count, hits) if count else None
