"""Open a path strictly beneath a directory fd, resolving symlinks at open time (no check-then-use race).

Two implementations with one contract:
- `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)` where the kernel has it (Linux >= 5.6, not blocked by seccomp);
- otherwise a component walk with `O_NOFOLLOW` from the root fd: relative symlinks are spliced in and
  followed by hand (at most 40), absolute symlinks and any `..` above the root are refused.

Both raise `OSError` with errno EXDEV for an escape and ELOOP for a loop or magic link.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
from typing import Final

RESOLVE_NO_MAGICLINKS: Final = 0x02
RESOLVE_NO_SYMLINKS: Final = 0x04
RESOLVE_BENEATH: Final = 0x08

MAX_SYMLINK_HOPS: Final = 40
"""Same bound as the kernel's: more hops than this is treated as a loop."""

_SYSCALL_NUMBERS: Final = {"x86_64": 437, "aarch64": 437, "arm64": 437, "riscv64": 437, "ppc64le": 437, "s390x": 437}

_O_PATH: Final = getattr(os, "O_PATH", 0)


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


def _load_openat2() -> ctypes._FuncPointer | None:  # pyright: ignore[reportPrivateUsage]
    number = _SYSCALL_NUMBERS.get(platform.machine())
    if number is None or platform.system() != "Linux":
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
    func = libc.syscall
    func.restype = ctypes.c_long
    func.argtypes = [ctypes.c_long, ctypes.c_int, ctypes.c_char_p, ctypes.POINTER(_OpenHow), ctypes.c_size_t]
    return func


_SYSCALL = _load_openat2()


def openat2_beneath(dir_fd: int, rel_path: str, flags: int) -> int:
    """Open with openat2 confined beneath `dir_fd`.

    Raises:
        OSError: ENOSYS/EPERM when openat2 is unavailable; EXDEV on escape; ELOOP; any open error.
    """
    if _SYSCALL is None:
        raise OSError(errno.ENOSYS, "openat2 is not available")
    how = _OpenHow(flags=flags, mode=0, resolve=RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)
    fd = _SYSCALL(437, dir_fd, os.fsencode(rel_path), ctypes.byref(how), ctypes.sizeof(how))
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), rel_path)
    return int(fd)


def _is_symlink_at(dir_fd: int, name: str) -> str | None:
    try:
        return os.readlink(name, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.EINVAL, errno.ENOENT):
            return None
        raise


def walk_beneath(root_fd: int, rel_path: str, flags: int) -> int:
    """Portable fallback: resolve `rel_path` component by component under `root_fd` with O_NOFOLLOW.

    Raises:
        OSError: EXDEV on escape (absolute symlink or `..` above the root); ELOOP after too many hops.
    """
    pending = [p for p in rel_path.split("/") if p not in ("", ".")]
    pending.reverse()  # a stack: next component at the end
    stack: list[int] = [os.dup(root_fd)]
    hops = 0
    try:
        while pending:
            name = pending.pop()
            if name == "..":
                if len(stack) == 1:
                    raise OSError(errno.EXDEV, "path escapes the root", rel_path)
                os.close(stack.pop())
                continue
            last = not pending
            open_flags = (flags if last else (_O_PATH or os.O_RDONLY) | os.O_DIRECTORY) | os.O_NOFOLLOW | os.O_CLOEXEC
            try:
                fd = os.open(name, open_flags, dir_fd=stack[-1])
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
                    raise
                target = _is_symlink_at(stack[-1], name)
                if target is None:
                    raise
                hops += 1
                if hops > MAX_SYMLINK_HOPS:
                    raise OSError(errno.ELOOP, "too many levels of symbolic links", rel_path) from exc
                if target.startswith("/"):
                    raise OSError(errno.EXDEV, "absolute symlink leaves the root", rel_path) from exc
                pending.extend(reversed([p for p in target.split("/") if p not in ("", ".")]))
                continue
            if last:
                return fd
            stack.append(fd)
        # The path named the root itself (or resolved back to it).
        return os.open(".", flags | os.O_CLOEXEC, dir_fd=stack[-1])
    finally:
        for fd in stack:
            os.close(fd)


def probe_openat2(root_fd: int) -> bool:
    """True when openat2 works here (kernel >= 5.6 and not filtered by seccomp)."""
    try:
        fd = openat2_beneath(root_fd, ".", (_O_PATH or os.O_RDONLY) | os.O_CLOEXEC)
    except OSError:
        return False
    os.close(fd)
    return True


def fd_path(fd: int) -> str | None:
    """The kernel's current absolute path of an open fd, or None where it cannot be asked."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None
