"""The path jail used by every tool: caller paths in, open file descriptors (or graded errors) out.

Invariants:
- Containment is decided by the kernel at open time (`openat2(RESOLVE_BENEATH)` or an `O_NOFOLLOW`
  component walk), never by comparing strings, so there is no check-then-use race.
- After opening, the fd's real path is re-checked against the root and the deny-list, so an in-root
  symlink cannot reach a denied file.
- FIFOs, sockets and devices are opened with O_NONBLOCK and refused after `fstat`; files with more than one
  hard link are refused unless the operator allows them.
"""

from __future__ import annotations

import errno
import os
import posixpath
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
from repo_sandbox.policy import _beneath
from repo_sandbox.policy.deny import DenyList

MAX_PATH_BYTES: Final = 4096
"""Longest path accepted (Linux PATH_MAX)."""
MAX_COMPONENT_BYTES: Final = 255
"""Longest single path component accepted (NAME_MAX)."""

_FILE_FLAGS: Final = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_DIR_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC


@dataclass(frozen=True, slots=True)
class OpenedFile:
    """A regular file opened inside the jail. The caller owns `fd`."""

    fd: int
    rel_path: str
    size: int
    mtime: float


class Jail:
    """Confines every filesystem access to one root directory and applies the deny-list."""

    def __init__(self, root: str, deny: DenyList, *, allow_hard_links: bool = False) -> None:
        self.root = os.path.realpath(root)
        self.deny = deny
        self.allow_hard_links = allow_hard_links
        self._root_fd = os.open(self.root, _DIR_FLAGS)
        self.uses_openat2 = _beneath.probe_openat2(self._root_fd)

    def close(self) -> None:
        if self._root_fd >= 0:
            os.close(self._root_fd)
            self._root_fd = -1

    # -- normalisation -------------------------------------------------------------------------

    def normalize(self, user_path: str, *, field: str = "path") -> str:
        """Turn a caller's path into a clean root-relative POSIX path ('.' for the root).

        Raises:
            InvalidArgumentsError: NUL bytes, backslashes, over-long paths.
            PathOutsideRootError: absolute paths outside the root, `~`, `..` above the root.
            PathDeniedError: the path (or a directory above it) is deny-listed.
        """
        if "\x00" in user_path:
            raise InvalidArgumentsError(f"'{field}' contains a NUL byte.", field=field)
        if "\\" in user_path:
            raise InvalidArgumentsError(
                f"'{field}' contains a backslash; paths use '/' as the separator.",
                hint="Write the path with forward slashes, e.g. 'src/main.py'.",
                field=field,
            )
        encoded = os.fsencode(user_path)
        if len(encoded) > MAX_PATH_BYTES or any(len(p) > MAX_COMPONENT_BYTES for p in encoded.split(b"/")):
            raise InvalidArgumentsError(f"'{field}' is too long.", field=field, max_bytes=MAX_PATH_BYTES)
        path = user_path.strip() or "."
        if path.startswith("~"):
            raise PathOutsideRootError(
                f"'{user_path}' refers to a home directory, which is outside the repository root.", path=user_path
            )
        if path.startswith("/"):
            path = self._strip_root(path, user_path)
        clean = posixpath.normpath(path)
        if clean == ".." or clean.startswith("../"):
            raise PathOutsideRootError(f"'{user_path}' resolves outside the repository root.", path=user_path)
        if self.is_denied(clean):
            raise PathDeniedError(f"'{user_path}' is protected by the server policy.", path=user_path)
        return clean

    def is_denied(self, rel_path: str) -> bool:
        """True when the deny-list hides this path, taken as a file or as a directory (fail closed)."""
        return (
            self.deny.denying_rule(rel_path, is_dir=False) is not None
            or self.deny.denying_rule(rel_path, is_dir=True) is not None
        )

    def _strip_root(self, path: str, user_path: str) -> str:
        clean = posixpath.normpath(path)
        for root in {self.root, posixpath.normpath(os.path.abspath(self.root))}:
            if clean == root:
                return "."
            prefix = root.rstrip("/") + "/"
            if clean.startswith(prefix):
                return clean[len(prefix) :]
        raise PathOutsideRootError(
            f"'{user_path}' is an absolute path outside the repository root.",
            hint="Use a path relative to the repository root, e.g. 'src/main.py'.",
            path=user_path,
        )

    # -- opening -------------------------------------------------------------------------------

    def _open_beneath(self, rel_path: str, flags: int, user_path: str) -> int:
        try:
            if self.uses_openat2:
                return _beneath.openat2_beneath(self._root_fd, rel_path, flags)
            return _beneath.walk_beneath(self._root_fd, rel_path, flags)
        except OSError as exc:
            raise _map_open_error(exc, user_path) from None

    def _recheck(self, fd: int, rel_path: str, user_path: str) -> None:
        real = _beneath.fd_path(fd)
        if real is None:
            return
        if real != self.root and not real.startswith(self.root.rstrip("/") + "/"):
            raise PathOutsideRootError(f"'{user_path}' resolves outside the repository root.", path=user_path)
        real_rel = "." if real == self.root else real[len(self.root.rstrip("/")) + 1 :]
        if real_rel != rel_path and self.is_denied(real_rel):
            raise PathDeniedError(f"'{user_path}' is protected by the server policy.", path=user_path)

    def open_file(self, user_path: str, *, field: str = "path") -> OpenedFile:
        """Open a regular file for reading.

        Raises:
            SandboxError: a graded error for every refusal (see `normalize`, plus not_found, not_a_file,
                special_file).
        """
        rel_path = self.normalize(user_path, field=field)
        fd = self._open_beneath(rel_path, _FILE_FLAGS, user_path)
        try:
            info = os.fstat(fd)
            if stat.S_ISDIR(info.st_mode):
                raise NotAFileError(f"'{user_path}' is a directory, not a file.", path=user_path)
            if not stat.S_ISREG(info.st_mode):
                raise SpecialFileError(f"'{user_path}' is not a regular file (FIFO, socket or device).", path=user_path)
            if info.st_nlink > 1 and not self.allow_hard_links:
                raise SpecialFileError(
                    f"'{user_path}' has {info.st_nlink} hard links; the policy refuses hard-linked files.",
                    path=user_path,
                )
            self._recheck(fd, rel_path, user_path)
        except BaseException:
            os.close(fd)
            raise
        return OpenedFile(fd=fd, rel_path=rel_path, size=info.st_size, mtime=info.st_mtime)

    def open_dir(self, user_path: str, *, field: str = "path") -> tuple[int, str]:
        """Open a directory; returns (fd, root-relative path). The caller owns the fd.

        Raises:
            SandboxError: a graded error for every refusal; not_a_directory for a file.
        """
        rel_path = self.normalize(user_path, field=field)
        fd = self._open_beneath(rel_path, _FILE_FLAGS, user_path)
        try:
            info = os.fstat(fd)
            if not stat.S_ISDIR(info.st_mode):
                if stat.S_ISREG(info.st_mode):
                    raise NotADirError(f"'{user_path}' is a file, not a directory.", path=user_path)
                raise SpecialFileError(f"'{user_path}' is not a regular file or directory.", path=user_path)
            self._recheck(fd, rel_path, user_path)
        except BaseException:
            os.close(fd)
            raise
        return fd, rel_path

    def open_any(self, user_path: str, *, field: str = "path") -> tuple[OpenedFile | None, int | None, str]:
        """Open a path that may be a file or a directory: (file, None, rel) or (None, dir_fd, rel)."""
        try:
            return self.open_file(user_path, field=field), None, self.normalize(user_path, field=field)
        except NotAFileError:
            fd, rel = self.open_dir(user_path, field=field)
            return None, fd, rel


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
    return IOFailureError(f"Could not open '{user_path}': {os.strerror(code or 0)}.", path=user_path)
