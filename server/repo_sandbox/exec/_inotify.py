"""A minimal inotify watch over many directories: "did anything change since I last asked?" in O(1).

The repository view must notice a new denied file before the next command runs. Re-stat'ing every
directory costs milliseconds on a large tree (a virtualenv alone has thousands); one non-blocking read of an
inotify descriptor costs microseconds. Linux only; `DirWatch.open()` returns None when inotify is missing or
its limits are reached, and the caller falls back to re-stat'ing.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
from typing import Final

IN_ATTRIB: Final = 0x00000004
IN_MOVED_FROM: Final = 0x00000040
IN_MOVED_TO: Final = 0x00000080
IN_CREATE: Final = 0x00000100
IN_DELETE: Final = 0x00000200
IN_DELETE_SELF: Final = 0x00000400
IN_MOVE_SELF: Final = 0x00000800
IN_ONLYDIR: Final = 0x01000000
IN_DONT_FOLLOW: Final = 0x02000000
IN_NONBLOCK: Final = 0o4000
IN_CLOEXEC: Final = 0o2000000
WATCH_MASK: Final = (
    IN_ATTRIB | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF
    | IN_ONLYDIR | IN_DONT_FOLLOW
)  # fmt: skip
"""Entries appearing, disappearing or changing metadata (a new hard link changes the link count)."""


class DirWatch:
    """Watches a set of directories; `changed()` says whether any event arrived since the last call."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._libc = ctypes.CDLL(None, use_errno=True)

    @classmethod
    def open(cls) -> DirWatch | None:
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            fd = libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        except (OSError, AttributeError):
            return None
        return cls(fd) if fd >= 0 else None

    def add(self, path: str) -> bool:
        """False when the directory cannot be watched (e.g. the per-user watch limit is reached)."""
        return self._libc.inotify_add_watch(self._fd, os.fsencode(path), WATCH_MASK) >= 0

    def changed(self) -> bool:
        """True when events (or an overflow) arrived; drains them."""
        seen = False
        while True:
            try:
                data = os.read(self._fd, 65536)
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
