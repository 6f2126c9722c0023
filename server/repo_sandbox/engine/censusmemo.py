"""A census taken again in O(1) while nothing under the tree changed since it was taken: the census memo.

A census stats every file under the start directory (its kind, identity and the hard-link policy), about
4 us a file: 10 ms for CPython's stdlib, on every search. What it found can change only when
- a listing changes (an entry created, removed, renamed, relinked, chmod'ed; an ignore file rewritten): the
  tree index then publishes a new snapshot, so the memo is used only with the very snapshot it was taken on;
- a file is written (or truncated): the tree index's watches hear it (`IN_MODIFY`, `IN_CLOSE_WRITE`,
  counted as `touched`), so the memo is used only while the watch mark taken now equals the one taken
  before the memo's census looked at anything (`WatchMark.still_since`), same subscription included;
- the settings change: never, within a workspace.
So without an event in between, every stat the memo's census made would read the same now. What inotify does
not hear: writes through a shared memory mapping, and a hard link made (or a file written through one) from
outside the tree; git's fsmonitor, which skips `lstat` on the same grounds, has the same blind spots. None
can show anything the policy hides: the voucher stats every file rg reports before its result is used, and
one that is not the file the memo saw, or has a second link, makes the search forget the memo and take a
new census (`engine.rgsearch`); the memo never stands in for the jail's own reads. What they can do is leave
a file's kind stale: a memo is therefore used for at most `MAX_AGE_S` (an agent's pause between calls is
often longer than 10 s), after which a census stats every file again.

Where no watch covers the whole tree (no inotify, a network file system, a mount inside the root, a queue
that overflowed), there is no mark and every census stats every file.

The censuses of one workspace that may keep a memo take turns (`turn`): one that waited for another of the
same files (the one the preparation takes ahead of the first search, say) finds its memo instead of stating
every file again, and two at once would have shared the one core Python has anyway.
"""

from __future__ import annotations

import threading
import time
import weakref
from array import array
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from repo_sandbox.fs.watch import WatchMark
from repo_sandbox.tree.index import Snapshot
from repo_sandbox.workspace import Workspace

if TYPE_CHECKING:
    from repo_sandbox.engine.census import Census, Positions

MAX_AGE_S: Final = 60.0
"""How long a memo may stand in for a census (bounds what the blind spots above can leave stale)."""
MAX_MEMOS: Final = 4
"""Memos kept per workspace (one per start directory, glob and option set searched lately)."""
TURN_POLL_S: Final = 0.05
"""How often a census waiting for its turn looks whether its search has ended."""

MemoKey = tuple[str, str | None, bool | None, bool]
"""(start directory relative to the root, glob, include_hidden, include_ignored)."""


@dataclass(frozen=True, slots=True)
class CensusMemo:
    """What one complete census found; never changed after it is kept (searches share its arrays)."""

    snapshot: Snapshot
    mark: WatchMark
    kinds: bytearray
    position: Positions
    devices: array[int]
    inodes: array[int]
    walk_truncated: bool
    rg_ignores_agree: bool
    taken_at: float = field(default_factory=time.monotonic)

    @classmethod
    def of(cls, census: Census, snapshot: Snapshot, mark: WatchMark) -> CensusMemo:
        """The memo of a complete census, walked on `snapshot` after `mark` was taken."""
        return cls(
            snapshot, mark, census.kinds, census.position, census.devices, census.inodes, census.walk_truncated,
            census.rg_ignores_agree,
        )  # fmt: skip


def adopt(census: Census, memo: CensusMemo) -> None:
    """Fill `census` from the memo."""
    census.from_memo = True
    census.kinds, census.position, census.devices, census.inodes = memo.kinds, memo.position, memo.devices, memo.inodes
    census.walk_truncated, census.rg_ignores_agree = memo.walk_truncated, memo.rg_ignores_agree
    if census.request.progress is not None:
        census.request.progress.files = len(census.kinds)


_memos: weakref.WeakKeyDictionary[Workspace, dict[MemoKey, CensusMemo]] = weakref.WeakKeyDictionary()
_turns: weakref.WeakKeyDictionary[Workspace, threading.Lock] = weakref.WeakKeyDictionary()
_searched: weakref.WeakSet[Workspace] = weakref.WeakSet()
_lock = threading.Lock()


def search_begins(ws: Workspace) -> None:
    """Note that a search of this workspace has begun: it takes its own census (`searched`)."""
    with _lock:
        _searched.add(ws)


def searched(ws: Workspace) -> bool:
    """Whether a search of this workspace has begun: a census taken ahead would only make it wait its turn."""
    with _lock:
        return ws in _searched


@contextmanager
def turn(ws: Workspace, stop: threading.Event) -> Iterator[bool]:
    """The workspace's census turn, held inside: True once it is this census's, False when `stop` was set
    while it waited (the turn is then not taken)."""
    with _lock:
        held = _turns.get(ws)
        if held is None:
            held = _turns[ws] = threading.Lock()
    while not held.acquire(timeout=TURN_POLL_S):
        if stop.is_set():
            yield False
            return
    try:
        yield True
    finally:
        held.release()


def recall(ws: Workspace, key: MemoKey, snapshot: Snapshot, mark: WatchMark) -> CensusMemo | None:
    """The memo for `key` when it was taken on `snapshot` and nothing happened between its mark and `mark`."""
    with _lock:
        memo = _memos.get(ws, {}).get(key)
    if memo is None or memo.snapshot is not snapshot or not mark.still_since(memo.mark):
        return None
    if time.monotonic() - memo.taken_at > MAX_AGE_S:
        return None
    return memo


def forget(ws: Workspace) -> None:
    """Drop the workspace's memos (one proved stale)."""
    with _lock:
        _memos.pop(ws, None)


def keep(ws: Workspace, key: MemoKey, memo: CensusMemo) -> None:
    with _lock:
        memos = _memos.setdefault(ws, {})
        memos.pop(key, None)
        if len(memos) >= MAX_MEMOS:
            memos.pop(next(iter(memos)))
        memos[key] = memo
