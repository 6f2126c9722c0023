"""What a search engine is asked, and what it streams back: one `FileHits` per file with matches."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Literal, Protocol

from repo_sandbox.errors import TimeoutExceededError

OutputMode = Literal["content", "files_with_matches", "count"]


@dataclass(slots=True)
class LineHit:
    """One matching line (or, in multiline mode, the lines of one match)."""

    line: int
    text: str
    before: list[str] = field(default_factory=list[str])
    after: list[str] = field(default_factory=list[str])


class Deadline:
    """A monotonic deadline shared by all regex calls of one search."""

    __slots__ = ("_end",)

    def __init__(self, seconds: float) -> None:
        self._end = time.monotonic() + seconds

    def remaining(self) -> float:
        left = self._end - time.monotonic()
        if left <= 0:
            raise TimeoutExceededError(
                "The search ran out of time.",
                hint="Use a more specific pattern, a narrower path or a glob filter.",
            )
        return left

    def restart(self, seconds: float) -> None:
        """The same search, given `seconds` again from now (the next page of a kept search)."""
        self._end = time.monotonic() + seconds

    def left(self) -> float:
        """Seconds left, 0 when none (never raises)."""
        return max(0.0, self._end - time.monotonic())


class CancelFlag(Protocol):
    """Set by the caller to stop a search (a `threading.Event`, or a switch that follows the current page's)."""

    def is_set(self) -> bool: ...


@dataclass(slots=True)
class HitWindow:
    """Matching lines to materialise, as [start, stop) indices over the whole result in path order; every
    other hit is only counted, so a 100k-hit search holds a page or two of lines in memory, not all of them.
    Engines read it file by file: a caller that keeps a search for its next page moves it between pages."""

    start: int = 0
    stop: int = 0


@dataclass(frozen=True, slots=True)
class SearchRequest:
    pattern: str
    path: str = "."
    glob: str | None = None
    fixed_strings: bool = False
    case_sensitive: bool = True
    multiline: bool = False
    context: int = 0
    mode: OutputMode = "content"
    include_hidden: bool | None = None
    include_ignored: bool = False
    cancel: CancelFlag | None = field(default=None, compare=False)
    """Set by the caller to stop the search (and its rg process) early; the engine then raises SearchCancelled."""
    progress: Progress | None = field(default=None, compare=False)
    keep_hits: HitWindow = field(default_factory=HitWindow, compare=False)
    deadline: Deadline | None = field(default=None, compare=False)
    """The search's time budget (`regex_timeout_s`), None: the engine starts one."""


class Progress:
    """Files examined so far, updated by the engine's thread and read by the progress reporter."""

    __slots__ = ("files",)

    def __init__(self) -> None:
        self.files = 0


class SearchCancelled(Exception):
    """The caller set `SearchRequest.cancel`."""


@dataclass(slots=True)
class FileHits:
    """Matches in one file: how many matching lines, and the ones inside the request's `keep_hits` window."""

    rel_path: str
    count: int
    """Matching lines in this file (the file's count, and its share of `total_matches`)."""
    hits: list[LineHit] = field(default_factory=list[LineHit])
    """The materialised hits, in line order."""


@dataclass(slots=True)
class SearchStats:
    """Counters an engine updates while streaming."""

    files_searched: int = 0
    """Text files whose contents were searched."""
    skipped_binary: int = 0
    """Files skipped because they look binary."""
    skipped_too_large: int = 0
    """Files skipped because they are larger than `max_file_bytes`."""
    walk_truncated: bool = False
    """The directory walk stopped at its depth or entry cap."""
