"""Directory watches: "did anything change in these directories since I last asked?" in O(1).

Re-stat'ing every directory costs milliseconds on a large tree; one non-blocking read of an inotify
descriptor costs microseconds. Linux only: `DirWatch.open()` and `WatchHub.open()` return None when inotify
is missing or its instance limit is reached, and callers fall back to re-stat'ing (`is_settled` says which
time stamps can be trusted).

What a directory watch reports: entries appearing, disappearing, being renamed, or changing metadata
(chmod, a new link count) in that directory, and the directory itself being deleted or moved. A `WatchHub`
also hears its files written (`IN_MODIFY`, `IN_CLOSE_WRITE`), counted apart (`Subscription.touched`): they
change no listing, but a caller that learnt something from the files' contents may ask `WatchMark.still_since`
whether any was written. A queue overflow or a read error is reported as "everything changed" (fail closed).

- `DirWatch`: one inotify instance, one answer ("anything at all?"); the repository view of execute_bash.
- `WatchHub`: one instance per workspace shared by several `Subscription`s, each told which of its own
  watch descriptors saw events; the tree indexes (one per walk option set) watch the same directories
  through it without spending a watch each.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import struct
import threading
from dataclasses import dataclass
from typing import Final

IN_MODIFY: Final = 0x00000002
IN_ATTRIB: Final = 0x00000004
IN_CLOSE_WRITE: Final = 0x00000008
IN_MOVED_FROM: Final = 0x00000040
IN_MOVED_TO: Final = 0x00000080
IN_CREATE: Final = 0x00000100
IN_DELETE: Final = 0x00000200
IN_DELETE_SELF: Final = 0x00000400
IN_MOVE_SELF: Final = 0x00000800
IN_Q_OVERFLOW: Final = 0x00004000
IN_IGNORED: Final = 0x00008000
IN_ONLYDIR: Final = 0x01000000
IN_DONT_FOLLOW: Final = 0x02000000
IN_NONBLOCK: Final = 0o4000
IN_CLOEXEC: Final = 0o2000000
WATCH_MASK: Final = (
    IN_ATTRIB | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF
    | IN_ONLYDIR | IN_DONT_FOLLOW
)  # fmt: skip
"""Entries appearing, disappearing or changing metadata (a new hard link changes the link count)."""
CONTENT_EVENTS: Final = IN_MODIFY | IN_CLOSE_WRITE
"""A file written (or truncated) in a watched directory: heard by a `WatchHub`, counted apart."""
RACY_NS: Final = 2_000_000_000
"""A time stamp less than this old (ns) may not change on the next change (time stamps are coarse)."""

_EVENT: Final = struct.Struct("iIII")
_READ_BYTES: Final = 65536
PARSE_BYTES: Final = 256 * 1024
"""Past this many bytes of events in one drain (about 8000 events), the rest is read without being parsed and
every subscription is told "overflow": rebuilding is cheaper than reading that many events one by one."""


def _init() -> tuple[ctypes.CDLL, int] | None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fd = libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
    except (OSError, AttributeError):
        return None
    return (libc, fd) if fd >= 0 else None


def is_settled(info: os.stat_result, now_ns: int, racy_ns: int = RACY_NS) -> bool:
    """Whether the entry's time stamps are old enough that its next change will show in them (git's
    racy-clean rule): a change within the same clock tick as the last one leaves them as they were."""
    return now_ns - max(info.st_mtime_ns, info.st_ctime_ns) > racy_ns


class DirWatch:
    """Watches a set of directories; `changed()` says whether any event arrived since the last call."""

    def __init__(self, libc: ctypes.CDLL, fd: int) -> None:
        self._fd = fd
        self._libc = libc

    @classmethod
    def open(cls) -> DirWatch | None:
        opened = _init()
        return None if opened is None else cls(*opened)

    def add(self, path: str) -> bool:
        """False when the directory cannot be watched (e.g. the per-user watch limit is reached)."""
        return self._libc.inotify_add_watch(self._fd, os.fsencode(path), WATCH_MASK) >= 0

    def changed(self) -> bool:
        """True when events (or an overflow) arrived; drains them."""
        seen = False
        while True:
            try:
                data = os.read(self._fd, _READ_BYTES)
            except BlockingIOError:
                return seen
            except OSError:
                return True
            if not data:
                return seen
            seen = True

    def close(self) -> None:
        if self._fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = -1


class WatchHub:
    """One inotify instance whose events are routed, by watch descriptor, to the subscriptions that hold it.

    The kernel gives one watch descriptor per watched inode and instance, so subscriptions watching the same
    directory share it; it is removed when the last one lets go. Thread-safe.
    """

    def __init__(self, libc: ctypes.CDLL, fd: int) -> None:
        self._libc = libc
        self._fd = fd
        self._lock = threading.Lock()
        self._holders: dict[int, tuple[Subscription, ...]] = {}
        """Who holds each watch descriptor (a tuple: mostly one holder, and a set costs 200 bytes a watch)."""
        self._subscriptions: set[Subscription] = set()

    @classmethod
    def open(cls) -> WatchHub | None:
        opened = _init()
        return None if opened is None else cls(*opened)

    def subscribe(self) -> Subscription:
        subscription = Subscription(self)
        with self._lock:
            self._subscriptions.add(subscription)
        return subscription

    def close(self) -> None:
        with self._lock:
            if self._fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(self._fd)
                self._fd = -1
            for subscription in self._subscriptions:
                subscription.overflowed = True
                subscription.events += 1
            self._holders.clear()

    def watch_for(self, subscription: Subscription, path: str, *, follow: bool) -> int:
        mask = (WATCH_MASK | CONTENT_EVENTS) & ~(IN_DONT_FOLLOW if follow else 0)
        with self._lock:
            if self._fd < 0:
                return -1
            wd = self._libc.inotify_add_watch(self._fd, os.fsencode(path), mask)
            if wd >= 0:
                holders = self._holders.get(wd, ())
                if subscription not in holders:
                    self._holders[wd] = (*holders, subscription)
            return wd

    def unwatch_for(self, subscription: Subscription, wd: int) -> None:
        with self._lock:
            holders = self._holders.get(wd)
            if holders is None:
                return
            holders = tuple(holder for holder in holders if holder is not subscription)
            if holders:
                self._holders[wd] = holders
            else:
                del self._holders[wd]
                if self._fd >= 0:
                    self._libc.inotify_rm_watch(self._fd, wd)  # fails harmlessly if the kernel dropped it

    def leave(self, subscription: Subscription, wds: list[int]) -> None:
        for wd in wds:
            self.unwatch_for(subscription, wd)
        with self._lock:
            self._subscriptions.discard(subscription)

    def take_for(self, subscription: Subscription) -> tuple[bool, set[int]]:
        with self._lock:
            self._drain()
            overflowed, pending = subscription.overflowed or self._fd < 0, subscription.pending
            subscription.overflowed, subscription.pending = False, set()
            return overflowed, pending

    def quiet_for(self, subscription: Subscription, mark: int | None) -> int | None:
        """The subscription's event count after reading the queue; None when it has seen more than `mark`
        (any, when `mark` is None) or can no longer see events (closed, here or by its owner)."""
        counts = self.counts_for(subscription)
        return None if counts is None or (mark is not None and counts[0] != mark) else counts[0]

    def counts_for(self, subscription: Subscription) -> tuple[int, int] | None:
        """(events, files written) of the subscription after reading the queue; None when it can no longer see
        events (closed, here or by its owner)."""
        with self._lock:
            self._drain()
            if self._fd < 0 or subscription.closed:
                return None
            return subscription.events, subscription.touched

    def _drain(self) -> None:
        """Read every queued event and hand each to the subscriptions holding its watch descriptor (the lock is
        held)."""
        drained = 0
        while self._fd >= 0:
            try:
                data = os.read(self._fd, _READ_BYTES)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            drained += len(data)
            if not data or drained > PARSE_BYTES:  # a read error, or a flood: nothing is worth parsing
                for subscription in self._subscriptions:
                    subscription.overflowed = True
                    subscription.events += 1
                if not data:
                    return
                continue
            self._route(data)

    def _route(self, data: bytes) -> None:
        offset = 0
        while offset + _EVENT.size <= len(data):
            wd, mask, _, length = _EVENT.unpack_from(data, offset)
            offset += _EVENT.size + length
            if mask & IN_Q_OVERFLOW:
                for subscription in self._subscriptions:
                    subscription.overflowed = True
                    subscription.events += 1
                continue
            holders = self._holders.get(wd)
            if holders is None:
                continue
            if not mask & ~CONTENT_EVENTS:  # a file written: no listing changed
                for subscription in holders:
                    subscription.touched += 1
                continue
            for subscription in holders:
                subscription.pending.add(wd)
                subscription.events += 1
            if mask & IN_IGNORED:  # the kernel removed the watch (its directory is gone)
                del self._holders[wd]


class Subscription:
    """One watcher's share of a `WatchHub`: the watch descriptors it placed and which of them saw events."""

    def __init__(self, hub: WatchHub) -> None:
        self.hub = hub
        self.pending: set[int] = set()
        self.overflowed = False
        self.events = 0
        """Events (and overflows) that reached this subscription, ever: `take` does not reset it."""
        self.touched = 0
        """Files written in its directories, ever (not in `events`: they change no listing)."""
        self.closed = False
        self._refs: dict[int, int] = {}

    def add(self, path: str, *, follow: bool = False) -> int:
        """Watch a directory (a final symlink is followed only with `follow`, for /proc/self/fd paths);
        returns its watch descriptor, or -1 when it cannot be watched (e.g. the watch limit is reached)."""
        wd = self.hub.watch_for(self, path, follow=follow)
        if wd >= 0:
            self._refs[wd] = self._refs.get(wd, 0) + 1
        return wd

    def remove(self, wd: int) -> None:
        count = self._refs.get(wd, 0) - 1
        if count > 0:
            self._refs[wd] = count
            return
        self._refs.pop(wd, None)
        self.hub.unwatch_for(self, wd)

    def take(self) -> tuple[bool, set[int]]:
        """(overflowed, watch descriptors with events) since the last call; reading the queue first. A
        closed hub reports an overflow every time (nothing it says can be trusted)."""
        return self.hub.take_for(self)

    def mark(self) -> tuple[int, int] | None:
        """The counts of events and of files written so far (the queue read first), for `quiet_since` and
        `still_since`; None once closed."""
        return self.hub.counts_for(self)

    def quiet_since(self, mark: int) -> bool:
        """Whether no event has reached this subscription since `mark()` returned `mark` (the queue read
        first), and it still watches. The kernel queues a directory's event before the operation that
        caused it releases the directory, so no later change of that directory can precede the event."""
        return self.hub.quiet_for(self, mark) is not None

    def close(self) -> None:
        """Drop every watch this subscription holds (watches other subscriptions share stay)."""
        self.closed = True
        wds = list(self._refs)
        self._refs.clear()
        self.hub.leave(self, wds)


@dataclass(frozen=True, slots=True)
class WatchMark:
    """The watch state of a whole tree at one moment: `quiet_since()` says whether no entry of any of its
    directories was created, removed, renamed or relinked since (and the watches still stand)."""

    subscription: Subscription
    events: int
    touched: int

    def quiet_since(self) -> bool:
        return self.subscription.quiet_since(self.events)

    def still_since(self, earlier: WatchMark) -> bool:
        """Whether this mark, taken after `earlier`, shows no event at all in between: no entry changed and
        no file written (and the watches still stood: the same subscription)."""
        return (
            earlier.subscription is self.subscription
            and earlier.events == self.events
            and earlier.touched == self.touched
        )
