"""Where audit lines go: a size-rotated file or a stream (stderr), fed by one background writer thread.

The writer is the only code that does I/O. Callers hand it events with `submit`, which never blocks: a
bounded queue, and an event that does not fit is dropped and counted. Any failure (full disk, unwritable
path, broken pipe) is counted and kept as `last_error` for the status report; it never reaches a tool call.
Because one thread writes whole lines, lines never interleave; a batch a full disk cuts short is taken back
(truncated to where it began), so the file holds whole lines only. One server process per audit file: rotation
is not coordinated between processes.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import threading
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TextIO

BATCH_LINES = 256
"""Most lines written in one go."""


class AuditSink(Protocol):
    """Writes whole lines; raises OSError on failure."""

    def write_lines(self, lines: Sequence[bytes]) -> None: ...

    def close(self) -> None: ...

    def stats(self) -> dict[str, Any]: ...


class StreamSink:
    """Lines to a text stream; `stream=None` means whatever `sys.stderr` is at the time of writing."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream

    def write_lines(self, lines: Sequence[bytes]) -> None:
        stream = self._stream or sys.stderr
        stream.write(b"".join(lines).decode("utf-8"))
        stream.flush()

    def close(self) -> None:
        """The stream belongs to the caller; it is left open."""

    def stats(self) -> dict[str, Any]:
        return {}


class RotatingFileSink:
    """Appends to `path`; before a line would take it past `max_bytes`, renames it to `path.1` (and `.1` to
    `.2`, ..., keeping `backup_count` old files). Created with mode 0600. Non-regular files (a FIFO,
    /dev/null) are written to but never rotated."""

    def __init__(self, path: str, *, max_bytes: int, backup_count: int) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self.backup_count = backup_count
        self.rotations = 0
        self._fd: int | None = None
        self._size = 0
        self._regular = True

    def _open(self) -> int:
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        info = os.fstat(fd)
        self._regular = stat.S_ISREG(info.st_mode)
        self._size = info.st_size
        self._fd = fd
        return fd

    def _rotate(self) -> None:
        self.close()
        if self.backup_count == 0:
            os.unlink(self.path)
        else:
            for index in range(self.backup_count - 1, 0, -1):
                source = f"{self.path}.{index}"
                if os.path.lexists(source):
                    os.replace(source, f"{self.path}.{index + 1}")
            os.replace(self.path, f"{self.path}.1")
        self.rotations += 1

    def _write_all(self, fd: int, data: bytes) -> None:
        """Whole lines or nothing: a write that fails part-way (a full disk writes what fits, then refuses)
        is taken back, so that the next line does not continue a torn one."""
        start = os.fstat(fd).st_size if self._regular else 0
        view = memoryview(data)
        try:
            while view:
                written = os.write(fd, view)
                view = view[written:]
                self._size += written
        except OSError:
            if self._regular and len(view) < len(data):
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, start)
                self._size = start
            raise

    def write_lines(self, lines: Sequence[bytes]) -> None:
        try:
            pending: list[bytes] = []
            pending_size = 0
            fd = self._fd if self._fd is not None else self._open()
            for line in lines:
                if self._regular and self._size + pending_size + len(line) > self.max_bytes:
                    if pending:
                        self._write_all(fd, b"".join(pending))
                        pending, pending_size = [], 0
                    if self._size > 0:
                        self._rotate()
                        fd = self._open()
                pending.append(line)
                pending_size += len(line)
            if pending:
                self._write_all(fd, b"".join(pending))
        except OSError:
            self.close()  # reopen on the next write: the directory may come back, the disk may free up
            raise

    def close(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)

    def stats(self) -> dict[str, Any]:
        return {"rotations": self.rotations, "file_bytes": self._size}


Prepare = Callable[[Any], bytes]
"""Turns a queued item into one line (with its newline); runs on the writer thread."""


class BackgroundWriter:
    """A bounded queue and one daemon thread that prepares and writes its items, in order."""

    def __init__(self, sink: AuditSink, prepare: Prepare, *, queue_size: int) -> None:
        self._sink = sink
        self._prepare = prepare
        self._queue_size = queue_size
        self._items: deque[Any] = deque()
        self._cond = threading.Condition()
        self._pending = 0
        self._closing = False
        self._thread: threading.Thread | None = None
        self.counters = {"submitted": 0, "written": 0, "dropped": 0, "failed": 0, "errors": 0}
        self.last_error: str | None = None
        self.failing = False
        """True from a failed write until the next successful one."""

    def submit(self, item: Any) -> bool:
        """Queue one item; False (and counted as dropped) when the queue is full or the writer is closed."""
        with self._cond:
            if self._closing or len(self._items) >= self._queue_size:
                self.counters["dropped"] += 1
                return False
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="repo-sandbox-audit", daemon=True)
                self._thread.start()
            self._items.append(item)
            self._pending += 1
            self.counters["submitted"] += 1
            self._cond.notify_all()
            return True

    def _take_batch(self) -> list[Any] | None:
        with self._cond:
            while not self._items and not self._closing:
                self._cond.wait()
            if not self._items:
                return None
            return [self._items.popleft() for _ in range(min(BATCH_LINES, len(self._items)))]

    def _run(self) -> None:
        while (batch := self._take_batch()) is not None:
            lines: list[bytes] = []
            for item in batch:
                try:
                    lines.append(self._prepare(item))
                except Exception as exc:  # noqa: BLE001  # a bad event is dropped, never written half-redacted
                    self._fail(1, f"cannot prepare event: {type(exc).__name__}")
            try:
                if lines:
                    self._sink.write_lines(lines)
                    self._done(len(lines))
            except Exception as exc:  # noqa: BLE001  # full disk, unwritable path, closed pipe: reported, not fatal
                detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
                self._fail(len(lines), f"cannot write audit events: {detail}")
            with self._cond:
                self._pending -= len(batch)
                self._cond.notify_all()

    def _done(self, count: int) -> None:
        with self._cond:
            self.counters["written"] += count
            self.failing = False

    def _fail(self, count: int, message: str) -> None:
        with self._cond:
            self.counters["failed"] += count
            self.counters["errors"] += 1
            self.last_error = message
            self.failing = True

    @property
    def queue_depth(self) -> int:
        return len(self._items)

    def flush(self, timeout: float) -> bool:
        """Wait until everything submitted so far is written (or failed); False on timeout."""
        with self._cond:
            return self._cond.wait_for(lambda: self._pending == 0, timeout)

    def close(self, timeout: float) -> bool:
        """Write what is queued (within `timeout`), stop the thread and close the sink; True if it finished."""
        with self._cond:
            self._closing = True
            self._cond.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join(timeout)
            if thread.is_alive():
                return False
        self._sink.close()
        return True
