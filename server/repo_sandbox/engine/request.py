"""What a search engine is asked, and what it streams back: one `FileHits` per file with matches."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from repo_sandbox.engine.pysearch import LineHit

OutputMode = Literal["content", "files_with_matches", "count"]


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


@dataclass(slots=True)
class FileHits:
    """Matches in one file, in line order. `hits` holds every matching line (its count is the file's count)."""

    rel_path: str
    hits: list[LineHit] = field(default_factory=list[LineHit])


@dataclass(slots=True)
class SearchStats:
    """Counters an engine updates while streaming."""

    files_searched: int = 0
    walk_truncated: bool = False
