"""A workspace's tree indexes: one per walk option set in use, sharing one inotify instance where inotify
sees every change of the root's file system."""

from __future__ import annotations

import ctypes
import os
import threading
from typing import Any, Final

from repo_sandbox.fs.jail import Jail
from repo_sandbox.fs.walk import WalkOptions
from repo_sandbox.fs.watch import WatchHub, WatchMark
from repo_sandbox.tree.factstore import FactStore
from repo_sandbox.tree.index import Snapshot, TreeIndex, TreeIndexMode

_REMOTE_FILESYSTEMS: Final = frozenset(
    {0x6969, 0x517B, 0xFE534D42, 0xFF534D42, 0x01021997, 0x65735546, 0x00C36400, 0x5346414F, 0x73757245, 0x0BD00BD0}
)
"""statfs f_type of NFS, SMB, SMB2, CIFS, 9p, FUSE, Ceph, AFS, Coda, Lustre: inotify misses remote changes."""


def watchable(path: str) -> bool:
    """Whether inotify sees every change of the file system holding `path` (not a network or FUSE one)."""
    buffer = ctypes.create_string_buffer(256)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.statfs(os.fsencode(path), buffer) != 0:
            return False
    except (OSError, AttributeError):
        return False
    f_type = int.from_bytes(buffer.raw[: ctypes.sizeof(ctypes.c_long)], "little", signed=True) & 0xFFFFFFFF
    return f_type not in _REMOTE_FILESYSTEMS


class TreeIndexes:
    """A workspace's indexes, one per walk option set in use (at most `MAX_INDEXES`, least recently used
    dropped), sharing one inotify instance."""

    MAX_INDEXES: Final = 2

    def __init__(self, jail: Jail, mode: TreeIndexMode, store: FactStore | None = None) -> None:
        """`store`: where file facts are kept between runs (`tree.factstore`), read by the first index built."""
        self.jail = jail
        self.mode = mode
        self.store = None if mode == "off" else store
        self._seeds_taken = False
        self._seeded_directories = 0
        self.hub = WatchHub.open() if mode == "watch" and watchable(jail.root) else None
        self._indexes: dict[tuple[bool, bool], TreeIndex] = {}
        self._lock = threading.Lock()
        self._closed = False

    def snapshot(self, options: WalkOptions) -> Snapshot | None:
        if self.mode == "off":
            return None
        key = (options.include_hidden, options.include_ignored)
        with self._lock:
            if self._closed:
                return None
            index = self._indexes.pop(key, None)
            if index is None:
                seeds = None
                if self.store is not None and not self._seeds_taken:
                    self._seeds_taken = True
                    seeds = self.store.load()
                    self._seeded_directories = len(seeds)
                index = TreeIndex(self.jail, options, self.hub, seeds)
                if len(self._indexes) >= self.MAX_INDEXES:
                    self._indexes.pop(next(iter(self._indexes))).close()
            self._indexes[key] = index
        return index.snapshot()

    def watch_mark(self, options: WalkOptions, *, wait: bool = True) -> WatchMark | None:
        """The mark of the index for these options (see `TreeIndex.watch_mark`); None when there is none yet."""
        with self._lock:
            index = self._indexes.get((options.include_hidden, options.include_ignored))
        return None if index is None else index.watch_mark(wait=wait)

    def building(self, options: WalkOptions) -> bool:
        """Whether the index for these options is being built or brought up to date right now."""
        with self._lock:
            index = self._indexes.get((options.include_hidden, options.include_ignored))
        return index is not None and index.busy

    def indexes(self) -> list[TreeIndex]:
        with self._lock:
            return list(self._indexes.values())

    def describe(self) -> dict[str, Any]:
        """The "tree_index" entry of the status resource: the configured mode, whether inotify is used, each
        index (one per hidden/ignored option set in use), and the facts cache (its file's name in the cache
        directory, no host path, and how many directories' facts this run took from it)."""
        store = self.store
        return {
            "mode": self.mode,
            "inotify": self.hub is not None,
            "indexes": [index.describe() for index in self.indexes()],
            "facts_cache": None
            if store is None
            else {"file": store.path.name, "directories_loaded": self._seeded_directories},
        }

    def close(self) -> None:
        """Keep what the indexes learnt of the files (the store), then close them."""
        with self._lock:
            self._closed = True
            if self.store is not None:
                learnt: dict[str, tuple[str, str, bytearray]] = {}
                for index in reversed(self._indexes.values()):  # the most recently used index wins
                    learnt.update((entry[0], entry) for entry in index.learnt())
                self.store.save(learnt.values())
            for index in self._indexes.values():
                index.close()
            self._indexes.clear()
            if self.hub is not None:
                self.hub.close()
