"""Resolve a path strictly beneath a directory fd, following symlinks at open time (no check-then-use race).

Two resolvers with one contract, both returning an `O_PATH` descriptor (nothing is opened for reading, so a
FIFO cannot block and a device is never opened) and the *real* root-relative path it names:
- `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)` where the kernel has it (Linux >= 5.6, not filtered by
  seccomp): one syscall for the common case of a path without symlinks, whose real path is the path itself;
- a component walk with `O_NOFOLLOW` from the root fd, for paths that go through symlinks (or where openat2 is
  missing): relative symlinks are spliced in and followed by hand (at most 40 hops), absolute symlinks and any
  `..` above the root are refused, and the real path is tracked component by component.

Both raise `OSError` with errno EXDEV for an escape and ELOOP for a loop.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import stat
from typing import Final

RESOLVE_NO_MAGICLINKS: Final = 0x02
RESOLVE_NO_SYMLINKS: Final = 0x04
RESOLVE_BENEATH: Final = 0x08

MAX_SYMLINK_HOPS: Final = 40
"""Same bound as the kernel's: more hops than this is treated as a loop."""

_SYSCALL_NUMBERS: Final = {"x86_64": 437, "aarch64": 437, "arm64": 437, "riscv64": 437, "ppc64le": 437, "s390x": 437}

O_PATH: Final[int] = getattr(os, "O_PATH", 0)
PATH_FLAGS: Final = (O_PATH or os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY) | os.O_CLOEXEC
"""Flags of a descriptor that only names an inode (without O_PATH, a non-blocking read-only open)."""


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


def openat2_beneath(dir_fd: int, rel_path: str, flags: int, *, no_symlinks: bool = False) -> int:
    """Open with openat2 confined beneath `dir_fd` (magic links refused; with `no_symlinks`, every symlink).

    Raises:
        OSError: ENOSYS when openat2 is unavailable; EXDEV on escape; ELOOP; any open error.
    """
    if _SYSCALL is None:
        raise OSError(errno.ENOSYS, "openat2 is not available")
    resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | (RESOLVE_NO_SYMLINKS if no_symlinks else 0)
    how = _OpenHow(flags=flags, mode=0, resolve=resolve)
    fd = _SYSCALL(437, dir_fd, os.fsencode(rel_path), ctypes.byref(how), ctypes.sizeof(how))
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return int(fd)


def _split(path: str) -> list[str]:
    return [part for part in path.split("/") if part not in ("", ".")]


def _open_component(dir_fd: int, name: str) -> tuple[int | None, bool, str | None]:
    """(fd, is_dir, None) for a non-symlink, (None, False, target) for a symlink; never follows the link."""
    try:
        fd = os.open(name, PATH_FLAGS | os.O_NOFOLLOW, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno not in (errno.ELOOP, errno.EMLINK):  # what O_NOFOLLOW gives without O_PATH
            raise
        return None, False, _readlink_or_vanished(dir_fd, name)
    try:
        mode = os.fstat(fd).st_mode
    except BaseException:
        os.close(fd)
        raise
    if not stat.S_ISLNK(mode):
        return fd, stat.S_ISDIR(mode), None
    os.close(fd)
    return None, False, _readlink_or_vanished(dir_fd, name)


def _readlink_or_vanished(dir_fd: int, name: str) -> str:
    try:
        return os.readlink(name, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.EINVAL:  # replaced by a non-link since we looked: the caller may retry
            raise OSError(errno.EAGAIN, "path changed while it was resolved") from None
        raise


def walk_beneath(root_fd: int, rel_path: str) -> tuple[int, str]:
    """Resolve `rel_path` component by component under `root_fd` with O_NOFOLLOW.

    Returns:
        An `O_PATH` fd (see `PATH_FLAGS`) and the real root-relative path it names ('.' for the root).

    Raises:
        OSError: EXDEV on escape (absolute symlink or `..` above the root); ELOOP after too many hops;
            ENOTDIR when a non-directory is used as one; EAGAIN when a link changed mid-resolution.
    """
    pending = _split(rel_path)
    pending.reverse()  # a stack: next component at the end
    fds: list[int] = [os.open(".", PATH_FLAGS | os.O_DIRECTORY, dir_fd=root_fd)]
    names: list[str] = []
    hops = 0
    try:
        while pending:
            name = pending.pop()
            if name == "..":
                if not names:
                    raise OSError(errno.EXDEV, "path escapes the root")
                os.close(fds.pop())
                names.pop()
                continue
            fd, is_dir, target = _open_component(fds[-1], name)
            if fd is not None:
                fds.append(fd)
                names.append(name)
                if pending and not is_dir:  # like the kernel: 'file/x' and 'file/..' are ENOTDIR
                    raise OSError(errno.ENOTDIR, "not a directory")
                continue
            assert target is not None
            hops += 1
            if hops > MAX_SYMLINK_HOPS:
                raise OSError(errno.ELOOP, "too many levels of symbolic links")
            if target.startswith("/"):
                raise OSError(errno.EXDEV, "absolute symlink leaves the root")
            if not target:
                raise OSError(errno.ENOENT, "empty symlink")
            pending.extend(reversed(_split(target)))
        result = fds.pop()
        return result, "/".join(names) or "."
    finally:
        for fd in fds:
            os.close(fd)


def probe_openat2(root_fd: int) -> bool:
    """True when openat2 works here (kernel >= 5.6 and not filtered by seccomp)."""
    try:
        fd = openat2_beneath(root_fd, ".", PATH_FLAGS, no_symlinks=True)
    except OSError:
        return False
    os.close(fd)
    return True


def fd_path(fd: int) -> str | None:
    """The kernel's current absolute path of an open fd, or None where /proc cannot be asked."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None


def reopen_via_proc(fd: int, flags: int) -> int:
    """Open the very inode `fd` names with new flags (the /proc magic link; no path is resolved again).

    Raises:
        OSError: when /proc is unavailable or the inode cannot be opened with `flags`.
    """
    return os.open(f"/proc/self/fd/{fd}", flags)


_FILE_FLAGS: Final = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC | os.O_NOFOLLOW
_DIR_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def open_without_links(root_fd: int, rel_path: str, *, openat2: bool) -> int:
    """`rel_path` opened for reading beneath `root_fd`, refusing a symlink anywhere on the way (openat2, or a
    component walk with `O_NOFOLLOW`). Raises: OSError."""
    if openat2:
        return openat2_beneath(root_fd, rel_path, _FILE_FLAGS, no_symlinks=True)
    *parents, name = rel_path.split("/")
    dir_fd = root_fd
    try:
        for part in parents:
            if part in ("", ".", ".."):
                raise OSError(errno.EXDEV, "not a plain relative path")
            next_fd = os.open(part, _DIR_FLAGS, dir_fd=dir_fd)
            if dir_fd != root_fd:
                os.close(dir_fd)
            dir_fd = next_fd
        return os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
    finally:
        if dir_fd != root_fd:
            os.close(dir_fd)


_NODE_FLAGS: Final = (O_PATH or os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY) | os.O_CLOEXEC | os.O_NOFOLLOW


def open_node_without_links(root_fd: int, rel_path: str, *, openat2: bool) -> int:
    """An `O_PATH | O_NOFOLLOW` descriptor of `rel_path` beneath `root_fd`, refusing a symlink on the way; a
    symlink at the end is opened itself, not followed (the caller `fstat`s the result). Raises: OSError."""
    if openat2:
        return openat2_beneath(root_fd, rel_path, _NODE_FLAGS, no_symlinks=True)
    parts = _split(rel_path)
    dir_fd = root_fd
    try:
        for part in parts[:-1]:
            if part == "..":
                raise OSError(errno.EXDEV, "not a plain relative path")
            next_fd = os.open(part, _DIR_FLAGS, dir_fd=dir_fd)
            if dir_fd != root_fd:
                os.close(dir_fd)
            dir_fd = next_fd
        if parts and parts[-1] == "..":
            raise OSError(errno.EXDEV, "not a plain relative path")
        return os.open(parts[-1] if parts else ".", _NODE_FLAGS, dir_fd=dir_fd)
    finally:
        if dir_fd != root_fd:
            os.close(dir_fd)
