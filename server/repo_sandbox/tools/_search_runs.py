"""A search_text run kept for its next page.

An agent that read page N of a search asks for page N+1 next. The run that produced page N has read the tree
that far (rg's sorted stream, or the Python engine's walk); starting again from the first file for every
page made paging through a large result quadratic. A kept run makes it linear:
- it answers only the same arguments (every one but `offset`), at exactly the `next_offset` it gave;
- the call that resumes it takes it out of the store (a run never has two readers) and keeps it again after;
- it holds its rg process (blocked on a full pipe), one file's pending hits and at most two pages of lines;
- it is closed (its rg killed) after `[search] keep_run_s` unused, when more than `MAX_KEPT` runs of one
  workspace are kept, and when the workspace closes.

Nothing is trusted for longer than before: every file a resumed run yields is vouched for as it is read
(`engine.vouch`), as in a run that never paused, which is all a paused run is: a slow reader.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Hashable, Iterator
from dataclasses import dataclass, field
from typing import Final

from repo_sandbox.engine.request import CancelFlag, Deadline, FileHits, HitWindow, Progress, SearchStats
from repo_sandbox.workspace import Workspace

logger = logging.getLogger("repo_sandbox")

MAX_KEPT: Final = 2
"""Runs kept per workspace: the searches an agent pages through side by side."""


class CancelSwitch:
    """The cancel flag of a kept run: the flag of the call that reads it now."""

    __slots__ = ("current",)

    def __init__(self, current: CancelFlag | None) -> None:
        self.current = current

    def is_set(self) -> bool:
        return self.current is not None and self.current.is_set()


@dataclass(eq=False)
class SearchRun:
    """One search's files in path order, read as far as the pages served so far needed."""

    files: Iterator[FileHits]
    stats: SearchStats
    window: HitWindow
    cancel: CancelSwitch
    deadline: Deadline
    progress: Progress = field(default_factory=Progress)
    row: int = 0
    """Row index of the next file: `pending`'s, when there is one."""
    total: int = 0
    """Matching lines in the files before `row`."""
    pending: FileHits | None = None
    """A file read but not (wholly) shown: the next page starts with it."""
    pending_first_hit: int = 0
    """Row index of `pending.hits[0]` (its hits were materialised from the window of its page)."""

    def files_with_first_hits(self) -> Iterator[tuple[FileHits, int]]:
        """Each file from `row` on, with the row index of its first materialised hit."""
        if self.pending is not None:
            pending, self.pending = self.pending, None
            yield pending, self.pending_first_hit
        for file_hits in self.files:
            yield file_hits, max(self.row, self.window.start)

    def holds_lines_for(self, offset: int, end: int) -> bool:
        """Whether the pending file holds every line the page [offset, end) shows of it: it does unless that
        one file has hits beyond the page after the one that read it (then a new run must read it again)."""
        pending = self.pending
        if pending is None:
            return True
        first = self.pending_first_hit
        return first <= max(offset, self.row) and first + len(pending.hits) >= min(end, self.row + pending.count)

    def hold(self, file_hits: FileHits, row: int, first_hit: int, total: int) -> None:
        """Stop before `file_hits` (at `row`, after `total` matching lines): the next page starts with it."""
        self.pending, self.row, self.pending_first_hit, self.total = file_hits, row, first_hit, total

    def advance(self, rows: int, lines: int) -> None:
        """Past a file of `rows` rows and `lines` matching lines."""
        self.row += rows
        self.total += lines

    def close(self) -> None:
        """End the run: its rg is killed, its descriptors closed (a failure there is logged, never raised)."""
        close = getattr(self.files, "close", None)
        try:
            if close is not None:
                close()
        except Exception:
            logger.exception("closing a kept search run failed")


@dataclass(eq=False)
class _Kept:
    next_offset: int
    run: SearchRun
    until: float
    """`time.monotonic()` after which the reaper closes the run."""


class _Runs:
    def __init__(self) -> None:
        self.by_key: OrderedDict[Hashable, _Kept] = OrderedDict()
        self.closed = False


_runs: weakref.WeakKeyDictionary[Workspace, _Runs] = weakref.WeakKeyDictionary()
_lock = threading.Lock()
_due = threading.Condition(_lock)
"""Notified when a run is kept: the reaper then sleeps until the earliest `until`."""
_reaper: list[threading.Thread] = []


def take(ws: Workspace, key: Hashable, offset: int) -> SearchRun | None:
    """The run kept for `key` whose next page starts at `offset`, now the caller's alone; None when none is."""
    with _lock:
        runs = _runs.get(ws)
        kept = None if runs is None else runs.by_key.get(key)
        if runs is None or kept is None or kept.next_offset != offset:
            return None
        del runs.by_key[key]
    return kept.run


def keep(ws: Workspace, key: Hashable, next_offset: int, run: SearchRun) -> None:
    """Keep `run` for the page at `next_offset`, closing the run it replaces and any beyond `MAX_KEPT`."""
    wait_s = ws.settings.search.keep_run_s
    kept = _Kept(next_offset, run, time.monotonic() + wait_s)
    with _lock:
        runs = _runs.get(ws)
        if runs is None:
            runs = _runs[ws] = _Runs()
            ws.on_close.append(lambda: _close_all(runs))
        dropped: list[_Kept] = []
        if runs.closed or wait_s <= 0:
            dropped.append(kept)
        else:
            if (old := runs.by_key.pop(key, None)) is not None:
                dropped.append(old)
            runs.by_key[key] = kept
            while len(runs.by_key) > MAX_KEPT:
                dropped.append(runs.by_key.popitem(last=False)[1])
            if not _reaper:  # one thread for the process, started with the first kept run
                _reaper.append(threading.Thread(target=_reap, name="repo-sandbox-search-runs", daemon=True))
                _reaper[0].start()
            _due.notify()
    for gone in dropped:
        gone.run.close()


def _reap() -> None:
    """Close every kept run whose time is up, then sleep until the next one's is."""
    while True:
        with _due:
            now = time.monotonic()
            every = [(runs, key, kept) for runs in list(_runs.values()) for key, kept in runs.by_key.items()]
            expired = [(runs, key, kept) for runs, key, kept in every if kept.until <= now]
            for runs, key, _ in expired:
                del runs.by_key[key]
            if not expired:
                _due.wait(min((kept.until for _, _, kept in every), default=now + 3600) - now)
                continue
        for _, _, kept in expired:
            kept.run.close()


def _close_all(runs: _Runs) -> None:
    with _lock:
        runs.closed = True
        dropped = list(runs.by_key.values())
        runs.by_key.clear()
    for gone in dropped:
        gone.run.close()


def kept_count(ws: Workspace) -> int:
    """Runs kept for `ws` now (for tests)."""
    with _lock:
        runs = _runs.get(ws)
        return 0 if runs is None else len(runs.by_key)
