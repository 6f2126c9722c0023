"""What a search engine is asked, and what it streams back: one `FileHits` per file with matches."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Literal

OutputMode = Literal["content", "files_with_matches", "count"]


@dataclass(slots=True)
class LineHit:
    """One matching line (or, in multiline mode, the lines of one match)."""

    line: int
    text: str
    before: list[str] = field(default_factory=list[str])
    after: list[str] = field(default_factory=list[str])


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
    cancel: threading.Event | None = field(default=None, compare=False)
    """Set by the caller to stop the search (and its rg process) early; the engine then raises SearchCancelled."""
    progress: Progress | None = field(default=None, compare=False)
    keep_hits: tuple[int, int] = (0, 0)
    """Matching lines to materialise, as [start, stop) indices over the whole result in path order; every
    other hit is only counted, so a 100k-hit search holds one page of lines in memory, not all of them."""


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
