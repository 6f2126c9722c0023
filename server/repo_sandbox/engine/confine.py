"""Landlock around rg: it may read the repository and the system libraries it loads, nothing else.

rg opens files by path. A directory swapped for a symlink to /etc between rg's directory listing and
its open would otherwise be followed (the race test in tests/security does exactly that). Under this
ruleset the kernel refuses every read outside the repository root, whatever path leads there. The
ruleset is built for each search in the server (a dozen syscalls); each rg child applies it between fork and exec (two
syscalls: no_new_privs, landlock_restrict_self). Without Landlock (kernel < 5.13 or disabled) the
ripgrep engine is not used: the Python engine reads through the jail's descriptors instead.
"""

from __future__ import annotations

import ctypes
import os
import platform
import struct
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


class Confinement:
    """A Landlock ruleset confining reads to one root; `preexec` applies it in a child. Close it after."""

    def __init__(self, ruleset: int, restrict: int) -> None:
        self.ruleset = ruleset
        self._restrict = restrict

    def preexec(self) -> None:
        ruleset, restrict = self.ruleset, self._restrict
        if _libc.prctl(_PR_SET_NO_NEW_PRIVS, ctypes.c_ulong(1), 0, 0, 0) != 0 or _syscall(restrict, ruleset, 0) != 0:
            os._exit(126)  # never run rg unconfined

    def close(self) -> None:
        if self.ruleset >= 0:
            os.close(self.ruleset)
            self.ruleset = -1


def confinement(root_fd: int, program: str) -> Confinement | None:
    """Confinement to reading the directory `root_fd`, the loader's files and `program` itself (exec reads
    it), or None without Landlock."""
    numbers = _numbers()
    ruleset = _build(root_fd, (os.path.realpath(program),))
    if ruleset is None or numbers is None:
        return None
    return Confinement(ruleset, numbers[2])
