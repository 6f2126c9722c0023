"""The path jail used by every tool: caller paths in, open file descriptors (or graded errors) out.

Invariants:
- Containment is decided by the kernel at open time (`openat2(RESOLVE_BENEATH)` or an `O_NOFOLLOW`
  component walk), never by comparing strings, so there is no check-then-use race.
- A path is first resolved to an `O_PATH` descriptor, so nothing is opened for reading before its type is
  known: FIFOs, sockets and devices are refused after `fstat` without ever being opened (nothing blocks,
  no device side effect); files with more than one hard link are refused unless the operator allows them.
  The reading descriptor is then opened from that very inode (the /proc magic link) or, without /proc, by
  resolving the symlink-free real path again and checking that it is the same inode.
- The deny-list is applied to the caller's path as written AND to the real path the resolution reached
  (tracked component by component, and cross-checked with /proc when it is there), so an in-root symlink
  cannot reach a denied file or a file inside a denied directory.
- Error messages quote only the caller's own argument, never a host path the caller did not write.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from typing import Final

from repo_sandbox.errors import (
    InvalidArgumentsError,
    IOFailureError,
    NotADirError,
    NotAFileError,
    NotFoundError,
    PathDeniedError,
    PathOutsideRootError,
    SandboxError,
    SpecialFileError,
)
from repo_sandbox.fs import beneath
from repo_sandbox.policy.deny import DenyList
from repo_sandbox.policy.lexical import MAX_COMPONENT_BYTES, MAX_PATH_BYTES, lexical_path

__all__ = ["MAX_COMPONENT_BYTES", "MAX_PATH_BYTES", "Jail", "OpenedFile"]

_FILE_FLAGS: Final = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_DIR_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_DELETED_SUFFIX: Final = " (deleted)"


@dataclass(frozen=True, slots=True)
class OpenedFile:
    """A regular file opened inside the jail. The caller owns `fd`."""

    fd: int
    rel_path: str
    """The real root-relative path (after following in-root symlinks)."""
    size: int
    mtime: float


@dataclass(frozen=True, slots=True)
class _Resolved:
    """An `O_PATH` descriptor of an allowed path, its real root-relative path and its `fstat`."""

    fd: int
    rel_path: str
    info: os.stat_result


class Jail:
    """Confines every filesystem access to one root directory and applies the deny-list."""

    def __init__(self, root: str, deny: DenyList, *, allow_hard_links: bool = False) -> None:
        self.root = os.path.realpath(root)
        self.deny = deny
        self.allow_hard_links = allow_hard_links
        self._root_fd = os.open(self.root, _DIR_FLAGS)
        self.uses_openat2 = beneath.probe_openat2(self._root_fd)
        """Resolve with openat2 (else: the O_NOFOLLOW walk). Tests may switch it off to cover the walk."""
        self._root_proc_path = beneath.fd_path(self._root_fd)
        self.uses_proc = self._proc_works()
        """Cross-check real paths and reopen inodes through /proc/self/fd. Tests may switch it off."""

    @property
    def root_fd(self) -> int:
        """The root directory's descriptor (owned by the jail; do not close it)."""
        return self._root_fd

    def close(self) -> None:
        if self._root_fd >= 0:
            os.close(self._root_fd)
            self._root_fd = -1

    def _proc_works(self) -> bool:
        """/proc/self/fd must name our root and reopen the same inode (a foreign /proc must not be trusted)."""
        if self._root_proc_path is None:
            return False
        try:
            fd = beneath.reopen_via_proc(self._root_fd, _DIR_FLAGS)
        except OSError:
            return False
        try:
            return _same_inode(os.fstat(fd), os.fstat(self._root_fd))
        finally:
            os.close(fd)

    # -- normalisation -------------------------------------------------------------------------

    def normalize(self, user_path: str, *, field: str = "path") -> str:
        """The caller's path as a clean root-relative POSIX path ('.' for the root); see `lexical_path`.

        Raises:
            SandboxError: invalid_arguments, path_outside_root, or path_denied when the deny-list hides it.
        """
        clean = lexical_path(user_path, self.root, field=field)
        if self.is_denied(clean):
            raise PathDeniedError(f"'{user_path}' is protected by the server policy.", path=user_path)
        return clean

    def is_denied(self, rel_path: str) -> bool:
        """True when the deny-list hides this path or a directory above it (as a file or a directory)."""
        return self.deny.is_denied(rel_path)

    # -- resolving -----------------------------------------------------------------------------

    def _resolve_rel(self, rel_path: str) -> tuple[int, str]:
        """An O_PATH fd beneath the root and its real path. Raises: OSError."""
        if self.uses_openat2:
            try:
                return beneath.openat2_beneath(self._root_fd, rel_path, beneath.PATH_FLAGS, no_symlinks=True), rel_path
            except OSError as exc:
                if exc.errno != errno.ELOOP:
                    raise
            # A symlink on the way: resolve by hand, which also tells us where it really leads.
        return beneath.walk_beneath(self._root_fd, rel_path)

    def _resolve(self, user_path: str, field: str) -> _Resolved:
        rel_path = self.normalize(user_path, field=field)
        try:
            fd, real = self._resolve_rel(rel_path)
        except OSError as exc:
            raise _map_open_error(exc, user_path) from None
        try:
            info = os.fstat(fd)
            real = self._cross_check(fd, real, user_path)
            if real != rel_path and self.is_denied(real):
                raise PathDeniedError(f"'{user_path}' is protected by the server policy.", path=user_path)
        except BaseException:
            os.close(fd)
            raise
        return _Resolved(fd, real, info)

    def _cross_check(self, fd: int, real: str, user_path: str) -> str:
        """Ask the kernel where `fd` really is; it disagrees with `real` only after a concurrent rename.

        Returns the kernel's root-relative path (the caller deny-checks it).
        """
        if not self.uses_proc:
            return real
        kernel = beneath.fd_path(fd)
        root = self._root_proc_path
        if kernel is None or root is None:
            raise IOFailureError(f"Could not verify where '{user_path}' leads; try again.", path=user_path)
        if kernel == _join(root, real):
            return real
        if kernel.endswith(_DELETED_SUFFIX):
            raise NotFoundError(f"'{user_path}' was deleted while it was being opened.", path=user_path)
        self._root_proc_path = root = beneath.fd_path(self._root_fd) or root  # the root may have moved
        kernel_rel = _relative_to(kernel, root)
        if kernel_rel is None:
            raise PathOutsideRootError(f"'{user_path}' resolves outside the repository root.", path=user_path)
        if kernel_rel != real and self.is_denied(kernel_rel):
            raise PathDeniedError(f"'{user_path}' is protected by the server policy.", path=user_path)
        return kernel_rel

    def _reopen(self, resolved: _Resolved, flags: int, user_path: str) -> int:
        """Open the resolved inode for reading; refuse if it is no longer the inode that was checked."""
        try:
            if self.uses_proc:
                fd = beneath.reopen_via_proc(resolved.fd, flags)
            else:
                fd = self._open_real_path(resolved.rel_path, flags)
        except OSError as exc:
            if exc.errno in (errno.EACCES, errno.EPERM):
                raise _map_open_error(exc, user_path) from None
            # It resolved a moment ago: whatever fails now (gone, now a link) is a concurrent change.
            raise IOFailureError(
                f"'{user_path}' changed while it was being opened; try again.", path=user_path
            ) from None
        try:
            same = _same_inode(os.fstat(fd), resolved.info)
        except BaseException:
            os.close(fd)
            raise
        if not same:
            os.close(fd)
            raise IOFailureError(f"'{user_path}' changed while it was being opened; try again.", path=user_path)
        return fd

    def _open_real_path(self, real: str, flags: int) -> int:
        """Without /proc: open the (symlink-free) real path again, not following a link at its end."""
        if self.uses_openat2:
            return beneath.openat2_beneath(self._root_fd, real, flags, no_symlinks=True)
        parent, _, name = real.rpartition("/")
        parent_fd, _ = beneath.walk_beneath(self._root_fd, parent or ".")
        try:
            return os.open(name, flags | os.O_NOFOLLOW, dir_fd=parent_fd)
        finally:
            os.close(parent_fd)

    # -- opening -------------------------------------------------------------------------------

    def _check_file(self, resolved: _Resolved, user_path: str) -> None:
        mode = resolved.info.st_mode
        if stat.S_ISDIR(mode):
            raise NotAFileError(f"'{user_path}' is a directory, not a file.", path=user_path)
        if not stat.S_ISREG(mode):
            raise SpecialFileError(f"'{user_path}' is not a regular file (FIFO, socket or device).", path=user_path)
        if resolved.info.st_nlink > 1 and not self.allow_hard_links:
            raise SpecialFileError(
                f"'{user_path}' has {resolved.info.st_nlink} hard links; the policy refuses hard-linked files.",
                path=user_path,
            )

    def _opened_file(self, resolved: _Resolved, user_path: str) -> OpenedFile:
        self._check_file(resolved, user_path)
        fd = self._reopen(resolved, _FILE_FLAGS, user_path)
        return OpenedFile(fd=fd, rel_path=resolved.rel_path, size=resolved.info.st_size, mtime=resolved.info.st_mtime)

    def _opened_dir(self, resolved: _Resolved, user_path: str) -> int:
        if not stat.S_ISDIR(resolved.info.st_mode):
            if stat.S_ISREG(resolved.info.st_mode):
                raise NotADirError(f"'{user_path}' is a file, not a directory.", path=user_path)
            raise SpecialFileError(f"'{user_path}' is not a regular file or directory.", path=user_path)
        return self._reopen(resolved, _DIR_FLAGS, user_path)

    def open_file(self, user_path: str, *, field: str = "path") -> OpenedFile:
        """Open a regular file for reading.

        Raises:
            SandboxError: a graded error for every refusal (see `normalize`, plus not_found, not_a_file,
                special_file, io_error).
        """
        resolved = self._resolve(user_path, field)
        try:
            return self._opened_file(resolved, user_path)
        finally:
            os.close(resolved.fd)

    def open_dir(self, user_path: str, *, field: str = "path") -> tuple[int, str]:
        """Open a directory; returns (fd, real root-relative path). The caller owns the fd.

        Raises:
            SandboxError: a graded error for every refusal; not_a_directory for a file.
        """
        resolved = self._resolve(user_path, field)
        try:
            return self._opened_dir(resolved, user_path), resolved.rel_path
        finally:
            os.close(resolved.fd)

    def open_any(self, user_path: str, *, field: str = "path") -> tuple[OpenedFile | None, int | None, str]:
        """Open a path that may be a file or a directory: (file, None, rel) or (None, dir_fd, rel).

        The path is resolved once, so it cannot change kind between a file attempt and a directory attempt.
        """
        resolved = self._resolve(user_path, field)
        try:
            if stat.S_ISDIR(resolved.info.st_mode):
                return None, self._opened_dir(resolved, user_path), resolved.rel_path
            return self._opened_file(resolved, user_path), None, resolved.rel_path
        finally:
            os.close(resolved.fd)


def _same_inode(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _join(root: str, rel_path: str) -> str:
    if rel_path == ".":
        return root
    return f"{root.rstrip('/')}/{rel_path}"


def _relative_to(path: str, root: str) -> str | None:
    if path == root:
        return "."
    prefix = root.rstrip("/") + "/"
    return path[len(prefix) :] if path.startswith(prefix) else None


def _map_open_error(exc: OSError, user_path: str) -> SandboxError:
    code = exc.errno
    if code == errno.EXDEV:
        return PathOutsideRootError(
            f"'{user_path}' resolves outside the repository root (through '..' or a symlink).", path=user_path
        )
    if code in (errno.ENOENT, errno.ENOTDIR):
        return NotFoundError(f"'{user_path}' does not exist.", path=user_path)
    if code == errno.ELOOP:
        return SpecialFileError(
            f"'{user_path}' goes through a symlink loop or a link the sandbox does not follow.", path=user_path
        )
    if code in (errno.EACCES, errno.EPERM):
        return PathDeniedError(f"'{user_path}' is not readable by the server.", path=user_path)
    if code == errno.ENAMETOOLONG:
        return InvalidArgumentsError(f"'{user_path}' is too long.", path=user_path)
    if code in (errno.ENXIO, errno.ENODEV):
        return SpecialFileError(f"'{user_path}' is a socket or device.", path=user_path)
    if code == errno.EAGAIN:
        return IOFailureError(f"'{user_path}' changed while it was being opened; try again.", path=user_path)
    return IOFailureError(f"Could not open '{user_path}': {os.strerror(code or 0)}.", path=user_path)
