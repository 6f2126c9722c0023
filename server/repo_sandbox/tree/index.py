"""The tree index: the policy walk's listing of every directory, reused between calls while provably unchanged.

Why reusing it is correct. A directory's listing (its entries, and what the deny-list, hidden-name and ignore
rules keep of them) changes only when
- an entry is added, removed or renamed in it, or changes kind or metadata (a symlink swapped in for a
  directory is a removal and an addition): its watch reports the event. Each directory is watched *before*
  it is listed, so a change made during the listing is reported too. Where no watch can be placed (no
  inotify, its limits reached, a network file system whose remote changes it would not see), each
  directory's identity and time stamps are compared instead, and a directory whose stamps were younger than
  `RACY_NS` when it was listed is listed again every time (a change in the same clock tick leaves them be);
- an ignore file's content changes (no directory event): every ignore file's stat identity is compared on
  every call, and a young one is read again every time; at the root, so are `.git/info/exclude` and
  `.git/index` (`fs.gitrepo`), and the root's rules read differently when the tracked paths changed;
- the walk's own rules change: they are the workspace's settings, fixed for its life.
Every call first drains the events (or compares the stamps) and lists again exactly the directories that
changed, top down; a re-listed directory whose ignore rules read differently has its whole subtree listed
again. A queue overflow, a read error or anything unexpected rebuilds the index; a tree too large to index
is walked on every call. File *contents* are never trusted to the index: callers compare each file's stat
identity (`tree.facts`) before reusing what they learnt from it.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final, Literal

from repo_sandbox.fs.jail import Jail
from repo_sandbox.fs.walk import IgnoreStack, WalkOptions, stamp_at
from repo_sandbox.fs.watch import Subscription, WatchHub, WatchMark
from repo_sandbox.tree.build import DIR_FLAGS, Builder, TooLarge
from repo_sandbox.tree.factstore import Seeds
from repo_sandbox.tree.node import Node

TreeIndexMode = Literal["watch", "stat", "off"]
ROOT_IGNORES: Final = IgnoreStack()
"""What the root inherits: one object, so that rebuilt nodes can tell their rules are the same ones."""
TOO_LARGE_RETRY_S: Final = 300.0
"""After a tree proved too large to index, how long calls walk it before an index is tried again."""
BUSY_RETRY_S: Final = 10.0
"""After the watch queue overflowed, how long the index compares time stamps before it watches again."""
LIMIT_RETRY_S: Final = 300.0
"""After a directory could not be watched (the watch limit), how long before watching is tried again."""
_DERIVED_LOCK: Final = threading.Lock()


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The index as it was at one call: never changed afterwards (later changes make a new snapshot)."""

    nodes: Mapping[str, Node]
    truncated: bool
    """A directory was not entered (depth cap, out of descriptors): a walk from the root is truncated."""
    with_ignores: tuple[Node, ...]
    retry: tuple[str, ...]
    one_device: bool = False
    """Every directory is on the root's file system (which inotify was found to see all changes of)."""
    derived: dict[Hashable, Any] = field(default_factory=dict[Hashable, Any], compare=False)
    """What callers computed from this snapshot alone (`remember`): valid as long as the snapshot is."""

    MAX_DERIVED: ClassVar[int] = 8
    MAX_DERIVED_ITEMS: ClassVar[int] = 250_000
    """Most items (paths, about 100 bytes each) kept over all `derived` values: the oldest values go first, and
    a value larger than this alone is not kept."""

    def remember(self, key: Hashable, value: Sequence[object]) -> None:
        """Keep something computed from this snapshot's listings alone (never from file contents or time
        stamps, which the snapshot does not vouch for), for as long as the snapshot is current."""
        if len(value) > self.MAX_DERIVED_ITEMS:
            return
        with _DERIVED_LOCK:  # calls in other threads may remember at the same time
            derived = self.derived
            derived.pop(key, None)
            while derived and (
                len(derived) >= self.MAX_DERIVED
                or sum(map(len, derived.values())) + len(value) > self.MAX_DERIVED_ITEMS
            ):
                derived.pop(next(iter(derived)))
            derived[key] = value


class TreeIndex:
    """The index of one set of walk options. Thread-safe; `snapshot()` is fresh when it returns."""

    def __init__(self, jail: Jail, options: WalkOptions, hub: WatchHub | None, seeds: Seeds | None = None) -> None:
        self.jail = jail
        self.options = options
        self.hub = hub
        self._seeds: Seeds = {} if seeds is None else seeds
        """Facts a previous run kept (`tree.factstore`), for the first build only."""
        self._lock = threading.Lock()
        self._snapshot: Snapshot | None = None
        self._subscription: Subscription | None = None
        self._by_wd: dict[int, str | set[str]] = {}
        """The directories each watch descriptor stands for (one, unless a directory is mounted twice)."""
        self._watch_lost = False
        self._watch_again_at = 0.0
        self._too_large_until = 0.0
        self._closed = False

    @property
    def watching(self) -> bool:
        return self._subscription is not None

    def describe(self) -> dict[str, Any]:
        """This index for the status resource, as it stands (not refreshed)."""
        snapshot = self._snapshot
        if snapshot is not None:
            state = "watching" if self.watching else "comparing time stamps"
        elif time.monotonic() < self._too_large_until:
            state = "too large: walked on every call"
        else:
            state = "not built yet"
        return {
            "include_hidden": self.options.include_hidden,
            "include_ignored": self.options.include_ignored,
            "state": state,
            "directories": len(snapshot.nodes) if snapshot is not None else 0,
            "truncated": snapshot.truncated if snapshot is not None else False,
        }

    def snapshot(self) -> Snapshot | None:
        """The index brought up to date, or None when there is none (too large, closed, unreadable root)."""
        with self._lock:
            if self._closed:
                return None
            try:
                if self._snapshot is None:
                    if time.monotonic() >= self._too_large_until:
                        seeds, self._seeds = self._seeds, {}
                        self._rebuild({}, seeds=seeds)
                else:
                    self._refresh(self._snapshot)
            except TooLarge:
                self._drop_all()
                self._too_large_until = time.monotonic() + TOO_LARGE_RETRY_S
            except OSError:
                self._drop_all()  # fail closed: the next call tries again from scratch
            return self._snapshot

    @property
    def busy(self) -> bool:
        """Whether the index is being built or brought up to date right now."""
        return self._lock.locked()

    def watch_mark(self, *, wait: bool = True) -> WatchMark | None:
        """A mark to ask `quiet_since` about: None unless every directory of a whole listing is watched, on
        the root's file system (a mount inside the root may be one whose remote changes inotify misses).
        Without `wait`, also None while the index is being built or brought up to date."""
        if not self._lock.acquire(blocking=wait):
            return None
        try:
            subscription, snapshot = self._subscription, self._snapshot
            whole = snapshot is not None and not snapshot.truncated and snapshot.one_device
            if subscription is None or not whole or self._closed:
                return None
            counts = subscription.mark()
            return None if counts is None else WatchMark(subscription, *counts)
        finally:
            self._lock.release()

    def learnt(self) -> list[tuple[str, str, bytearray]]:
        """(directory, its files' names joined by '/', their fact records) of the current snapshot."""
        with self._lock:
            snapshot = self._snapshot
        if snapshot is None:
            return []
        return [(rel, node.files, node.facts) for rel, node in snapshot.nodes.items()]

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._drop_all()

    def _drop_all(self) -> None:
        self._snapshot = None
        if self._subscription is not None:
            self._subscription.close()
        self._subscription = None
        self._by_wd = {}

    def _watch(self, fd: int, rel: str) -> int:
        if self._subscription is None:
            return -1
        if self.jail.uses_proc:  # exactly the directory open at fd, whatever its path is now
            wd = self._subscription.add(f"/proc/self/fd/{fd}", follow=True)
        else:
            wd = self._subscription.add(self.jail.root if rel == "." else os.path.join(self.jail.root, rel))
        if wd < 0:
            self._watch_lost = True
        else:
            held = self._by_wd.get(wd)
            if held is None:
                self._by_wd[wd] = rel
            elif isinstance(held, set):
                held.add(rel)
            elif held != rel:
                self._by_wd[wd] = {held, rel}
        return wd

    def _unwatch(self, node: Node) -> None:
        if node.wd < 0 or self._subscription is None:
            return
        self._subscription.remove(node.wd)
        held = self._by_wd.get(node.wd)
        if held == node.rel:
            del self._by_wd[node.wd]
        elif isinstance(held, set):
            held.discard(node.rel)

    def _builder(self, nodes: dict[str, Node], previous: Mapping[str, Node], seeds: Seeds | None = None) -> Builder:
        return Builder(self.jail, self.options, nodes, previous, self._watch, self._unwatch, seeds)

    def _rebuild(self, previous: Mapping[str, Node], *, watch: bool = True, seeds: Seeds | None = None) -> None:
        old = self._subscription
        self._subscription = self.hub.subscribe() if self.hub is not None and watch else None
        self._by_wd = {}
        self._watch_lost = False
        nodes: dict[str, Node] = {}
        try:
            root_fd = os.open(".", DIR_FLAGS, dir_fd=self.jail.root_fd)
            self._builder(nodes, previous, seeds).subtree(root_fd, ".", 0, ROOT_IGNORES)
        finally:
            if old is not None:
                old.close()  # after the new watches are placed: shared watch descriptors stay
        self._publish(nodes)

    def _refresh(self, snapshot: Snapshot) -> None:
        dirty: set[str] = set(snapshot.retry)
        if self._subscription is not None:
            overflowed, wds = self._subscription.take()
            if overflowed:  # too busy to watch: compare stamps for a while (also drops the queue)
                self._rebuild(snapshot.nodes, watch=False)
                self._watch_again_at = time.monotonic() + BUSY_RETRY_S
                return
            for wd in wds:
                held = self._by_wd.get(wd)
                if isinstance(held, str):
                    dirty.add(held)
                elif held is not None:
                    dirty |= held
        elif self.hub is not None and time.monotonic() >= self._watch_again_at:
            self._rebuild(snapshot.nodes)
            return
        else:
            dirty |= self._restamped(snapshot)
        for node in snapshot.with_ignores:
            if not node.ignores_settled or any(
                stamp_at(self.jail.root_fd, node.prefix + name) != stamp for name, stamp in node.ignore_stamps
            ):
                dirty.add(node.rel)
        if dirty:
            self._apply(snapshot, dirty)

    def _restamped(self, snapshot: Snapshot) -> set[str]:
        """Without watches: the directories whose identity or stamps changed, or were too young to tell."""
        changed: set[str] = set()
        root_fd = self.jail.root_fd
        for rel, node in snapshot.nodes.items():
            if not node.settled:
                changed.add(rel)
                continue
            try:
                info = os.stat(rel, dir_fd=root_fd, follow_symlinks=False)
            except OSError:
                changed.add(rel)
                continue
            if (info.st_dev, info.st_ino) != node.ident or (info.st_mtime_ns, info.st_ctime_ns) != node.stamp:
                changed.add(rel)
        return changed

    def _apply(self, snapshot: Snapshot, dirty: set[str]) -> None:
        nodes = dict(snapshot.nodes)
        builder = self._builder(nodes, snapshot.nodes)
        for rel in sorted(dirty, key=lambda rel: 0 if rel == "." else rel.count("/") + 1):
            node = nodes.get(rel)
            if node is None or node is not snapshot.nodes.get(rel):
                continue  # dropped or listed afresh by a parent's re-listing
            if not builder.relist(node):
                self._rebuild(snapshot.nodes)
                return
        for node in builder.unlisted_children():
            if nodes.get(node.rel) is node and not builder.relist(node):
                break
        if builder.unlisted_children():  # still not whole: never publish a partial listing
            self._rebuild(snapshot.nodes)
            return
        self._publish(nodes)

    def _publish(self, nodes: dict[str, Node]) -> None:
        if self._watch_lost and self._subscription is not None:  # some directory is unwatched: compare stamps
            self._subscription.close()
            self._subscription = None
            self._by_wd = {}
            self._watch_again_at = time.monotonic() + LIMIT_RETRY_S
        values = nodes.values()
        root_device = os.fstat(self.jail.root_fd).st_dev
        self._snapshot = Snapshot(
            nodes,
            truncated=any(node.cut for node in values),
            with_ignores=tuple(node for node in values if node.ignore_stamps or not node.ignores_settled),
            retry=tuple(node.rel for node in values if node.retry),
            one_device=all(node.ident[0] == root_device for node in values),
        )
