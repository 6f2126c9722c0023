"""Landlock around rg: it may read the repository and the system libraries it loads, nothing else.

rg opens files by path. A directory swapped for a symlink to /etc between rg's directory listing and
its open would otherwise be followed (the race test in tests/security does exactly that). Under this
ruleset the kernel refuses every read outside the repository root, whatever path leads there.

The ruleset is applied once, to one thread of the server: the *launcher*. Landlock domains and
no_new_privs are per-thread credentials in Linux, and a child created by fork, vfork or clone copies the
credentials of the thread that created it; so every rg the launcher starts runs confined, and Python's
subprocess can start it with vfork (no preexec function, no copy of the server's page tables: about a
millisecond instead of three to five). The launcher thread runs nothing but `subprocess.Popen`: it cannot
open anything outside the root itself (it gets /dev/null as a descriptor from its caller), and no garbage
collection (no finalizer of the rest of the server) ever runs on it (see `Launcher`). Without
Landlock (kernel < 5.13 or disabled) the ripgrep engine is not used: the Python engine reads through the
jail's descriptors instead.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import os
import platform
import queue
import struct
import subprocess
import threading
from collections.abc import Iterator
from typing import Final

_SYSCALLS: Final = {"x86_64": (444, 445, 446), "aarch64": (444, 445, 446)}
_READ_FILE: Final = 1 << 2
_READ_DIR: Final = 1 << 3
_HANDLED: Final = _READ_FILE | _READ_DIR
_RULE_PATH_BENEATH: Final = 1
_PR_SET_NO_NEW_PRIVS: Final = 38
SYSTEM_READABLE: Final = ("/lib", "/lib64", "/usr/lib", "/usr/lib64", "/etc/ld.so.cache")
"""What the dynamic loader reads to start rg (both the Debian and the wheel binary are dynamically linked)."""

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def _syscall(number: int, *args: int | bytes) -> int:
    return _libc.syscall(
        ctypes.c_long(number), *(ctypes.c_char_p(a) if isinstance(a, bytes) else ctypes.c_long(a) for a in args)
    )


def _numbers() -> tuple[int, int, int] | None:
    return _SYSCALLS.get(platform.machine())


def available() -> bool:
    numbers = _numbers()
    return numbers is not None and _syscall(numbers[0], 0, 0, 1) >= 1


def _add(numbers: tuple[int, int, int], ruleset: int, path: str, access: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return
    try:
        if not os.path.isdir(f"/proc/self/fd/{fd}"):
            access &= _READ_FILE
        if _syscall(numbers[1], ruleset, _RULE_PATH_BENEATH, struct.pack("=Qi", access, fd), 0) != 0:
            raise OSError(ctypes.get_errno(), f"landlock_add_rule({path})")
    finally:
        os.close(fd)


def _build(root_fd: int, extra: tuple[str, ...]) -> int | None:
    numbers = _numbers()
    if numbers is None or not available():
        return None
    ruleset = _syscall(numbers[0], struct.pack("=Q", _HANDLED), 8, 0)
    if ruleset < 0:
        return None
    try:
        os.set_inheritable(ruleset, False)
        _add(numbers, ruleset, f"/proc/self/fd/{root_fd}", _HANDLED)
        for path in (*SYSTEM_READABLE, *extra):
            _add(numbers, ruleset, path, _HANDLED)
    except OSError:
        os.close(ruleset)
        return None
    return ruleset


def _restrict_calling_thread(ruleset: int, restrict: int) -> bool:
    """no_new_privs, then the ruleset, on the calling thread only (irreversible for it and its children)."""
    return _libc.prctl(_PR_SET_NO_NEW_PRIVS, ctypes.c_ulong(1), 0, 0, 0) == 0 and _syscall(restrict, ruleset, 0) == 0


_pause_lock = threading.Lock()
_pauses = 0
_resume = False


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """No automatic garbage collection while inside (in any thread: the collector is process-wide)."""
    global _pauses, _resume  # noqa: PLW0603  # one collector per process
    with _pause_lock:
        if _pauses == 0:
            _resume = gc.isenabled()
            gc.disable()
        _pauses += 1
    try:
        yield
    finally:
        with _pause_lock:
            _pauses -= 1
            if _pauses == 0 and _resume:
                gc.enable()


class _Spawn:
    """One `Popen` the launcher makes; the caller waits on `done`, a lock the launcher releases."""

    __slots__ = ("argv", "cwd", "done", "env", "error", "process", "stdin_fd")

    def __init__(self, argv: list[str], cwd: str, env: dict[str, str], stdin_fd: int) -> None:
        self.argv = argv
        self.cwd = cwd
        self.env = env
        self.stdin_fd = stdin_fd
        self.process: subprocess.Popen[bytes] | None = None
        self.error: BaseException | None = None
        self.done = threading.Lock()
        self.done.acquire()

    def run(self) -> None:
        try:
            self.process = subprocess.Popen(
                self.argv,
                stdin=self.stdin_fd,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=self.cwd,
                env=self.env,
                close_fds=True,
            )
        except BaseException as exc:  # noqa: BLE001  # handed to the caller's thread
            self.error = exc


class Launcher:
    """A thread confined to reading one directory tree (plus the loader's files and one program) that
    starts processes for other threads; `popen` blocks until the child exists. `close()` ends the thread.

    The thread runs Python only while a caller waits for it with the garbage collector paused (its start,
    each spawn), and hands back through plain locks, which allocate nothing: so no collection, and no
    finalizer of other code, ever runs on it. Build with `launcher()`, which returns None unless the
    thread confined itself.
    """

    def __init__(self, ruleset: int, restrict: int) -> None:
        self._jobs: queue.SimpleQueue[_Spawn | None] = queue.SimpleQueue()
        self._confined = False
        ready = threading.Lock()
        ready.acquire()
        self._thread = threading.Thread(
            target=self._serve, args=(ruleset, restrict, ready), name="repo-sandbox-rg-launcher", daemon=True
        )
        with _collector_paused():
            self._thread.start()
            ready.acquire()

    @property
    def confined(self) -> bool:
        return self._confined and self._thread.is_alive()

    def _serve(self, ruleset: int, restrict: int, ready: threading.Lock) -> None:
        self._confined = _restrict_calling_thread(ruleset, restrict)
        ready.release()
        if not self._confined:
            return  # never start anything unconfined: `popen` refuses from now on
        while (job := self._jobs.get()) is not None:
            job.run()
            done = job.done
            job = None  # the caller's reference is the last: the job is freed on its thread
            done.release()

    def popen(self, argv: list[str], *, cwd: str, env: dict[str, str]) -> subprocess.Popen[bytes]:
        """Start `argv` confined, stdin from /dev/null, stdout and stderr piped, every other fd closed.

        Raises:
            OSError: the program could not start (or the launcher is not confined, or closed).
        """
        if not self.confined:
            raise OSError("the confined launcher is not running")
        stdin_fd = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)  # the launcher itself may not open it
        try:
            job = _Spawn(argv, cwd, env, stdin_fd)
            with _collector_paused():
                self._jobs.put(job)
                job.done.acquire()
        finally:
            os.close(stdin_fd)
        if job.error is not None:
            raise job.error
        assert job.process is not None
        return job.process

    def close(self) -> None:
        if self._thread.is_alive():
            with _collector_paused():  # the thread's own end runs Python too
                self._jobs.put(None)
                self._thread.join()


def launcher(root_fd: int, program: str) -> Launcher | None:
    """A launcher confined to reading the directory `root_fd`, the loader's files and `program` itself
    (exec reads it), or None without Landlock (or when the thread could not confine itself)."""
    numbers = _numbers()
    ruleset = _build(root_fd, (os.path.realpath(program),))
    if ruleset is None or numbers is None:
        return None
    try:
        started = Launcher(ruleset, numbers[2])
    finally:
        os.close(ruleset)  # the thread's domain keeps what it needs; the fd itself is no longer used
    if not started.confined:
        with contextlib.suppress(Exception):
            started.close()
        return None
    return started
