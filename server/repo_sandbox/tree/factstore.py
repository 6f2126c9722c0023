"""File facts kept on disk between runs of the server on the same repository (`[workspace] facts_cache`).

A fresh server knows no file's kind: its first search sniffs every file and its first count_lines reads every
byte (1.5 s on a 100,000-file tree). The facts the last run learnt (`tree.facts`: kind and line count per
file, by stat identity) are written when the workspace closes and given to the next run's tree index, which
carries them over by path exactly as it carries them from one listing of a directory to the next. Nothing
else changes: a record is used only while the file's `lstat` shows the identity it was read at (device,
inode, size, modification and change time: any write, rename over or chmod changes one, and the change time
cannot be set back), and facts of a file changed within `RACY_NS` of being read were never remembered.

The store is one file per repository (its real path, device and inode), in a directory only this user can
enter (`$XDG_CACHE_HOME/repo-sandbox/facts`, or `~/.cache/...`), never inside the repository. A file that is
not ours, is open to others, is too large or does not parse is ignored; so is any error while writing: the
store is a cache, never a reason for a call to fail. At most `MAX_STORES` repositories are kept (the least
recently written go first).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import stat
import struct
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Final

from repo_sandbox.tree.facts import RECORD_BYTES

logger = logging.getLogger("repo_sandbox")

MAGIC: Final = b"repo-sandbox facts 1\n"
MAX_STORE_BYTES: Final = 32 * 1024 * 1024
MAX_STORES: Final = 16
_LENGTH: Final = struct.Struct("<I")

Seeds = Mapping[str, tuple[str, bytes]]
"""Directory (root-relative) -> (its files' names joined by '/', in slot order; their fact records)."""


def store_dir(environ: Mapping[str, str] | None = None) -> Path:
    environ = os.environ if environ is None else environ
    base = environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "repo-sandbox" / "facts"


class FactStore:
    """The store file of one repository root (open at `root_fd`, real path `root`)."""

    def __init__(self, root: str, root_fd: int, directory: Path | None = None) -> None:
        info = os.fstat(root_fd)
        self.root = os.path.realpath(root)
        self.directory = store_dir() if directory is None else directory
        key = f"{self.root}\0{info.st_dev}\0{info.st_ino}".encode("utf-8", "surrogateescape")
        self.path = self.directory / hashlib.sha256(key).hexdigest()[:32]

    def _safe_directory(self, *, create: bool) -> bool:
        """Whether the store's directory is ours alone and outside the repository (created if asked)."""
        real = os.path.realpath(self.directory)
        if real == self.root or real.startswith(self.root.rstrip("/") + "/"):
            return False
        if create:
            with contextlib.suppress(FileExistsError):
                os.makedirs(self.directory, mode=0o700)
        try:
            info = os.stat(self.directory, follow_symlinks=False)
        except OSError:
            return False
        return stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid() and not info.st_mode & 0o077

    def load(self) -> dict[str, tuple[str, bytes]]:
        """The facts the last run kept, or nothing (no store, or one this run cannot trust)."""
        try:
            if not self._safe_directory(create=False):
                return {}
            fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
        except OSError:
            return {}
        try:
            info = os.fstat(fd)
            if (
                not stat.S_ISREG(info.st_mode)
                or info.st_uid != os.geteuid()
                or info.st_mode & 0o077
                or info.st_size > MAX_STORE_BYTES
            ):
                return {}
            data = os.read(fd, MAX_STORE_BYTES + 1)
        except OSError:
            return {}
        finally:
            os.close(fd)
        try:
            return _parse(data, self.root)
        except (ValueError, struct.error, UnicodeDecodeError):
            logger.info("facts store %s does not parse; ignored", self.path)
            return {}

    def save(self, directories: Iterable[tuple[str, str, bytearray]]) -> None:
        """Keep (directory, its files joined by '/', their fact records) for the next run; errors are logged."""
        data = _serialise(self.root, directories)
        if data is None or len(data) > MAX_STORE_BYTES:
            return
        try:
            if not self._safe_directory(create=True):
                return
            temporary = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            try:
                with os.fdopen(fd, "wb") as out:
                    out.write(data)
                os.replace(temporary, self.path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temporary)
                raise
            self._prune()
        except OSError as exc:
            logger.info("facts store %s not written: %s", self.path, exc)

    def _prune(self) -> None:
        stores: list[tuple[float, Path]] = []
        for entry in os.scandir(self.directory):
            if entry.is_file(follow_symlinks=False) and len(entry.name) == 32:
                with contextlib.suppress(OSError):
                    stores.append((entry.stat(follow_symlinks=False).st_mtime, Path(entry.path)))
        stores.sort(reverse=True)
        for _, path in stores[MAX_STORES:]:
            with contextlib.suppress(OSError):
                path.unlink()


def _blob(data: bytes) -> bytes:
    return _LENGTH.pack(len(data)) + data


def _serialise(root: str, directories: Iterable[tuple[str, str, bytearray]]) -> bytes | None:
    """The store's bytes: the magic line, the root, then per directory its path, names and records; None when
    no record is known (nothing worth keeping)."""
    parts = [MAGIC, _blob(os.fsencode(root))]
    known = False
    for rel, files, records in directories:
        if not any(records):
            continue
        known = True
        parts += [_blob(os.fsencode(rel)), _blob(os.fsencode(files)), _blob(bytes(records))]
    return b"".join(parts) if known else None


def _parse(data: bytes, root: str) -> dict[str, tuple[str, bytes]]:
    if not data.startswith(MAGIC):
        raise ValueError("not a facts store")
    view = memoryview(data)
    offset = len(MAGIC)

    def blob() -> bytes:
        nonlocal offset
        (length,) = _LENGTH.unpack_from(view, offset)
        start, offset = offset + _LENGTH.size, offset + _LENGTH.size + length
        if offset > len(data):
            raise ValueError("truncated")
        return bytes(view[start:offset])

    if os.fsdecode(blob()) != root:
        raise ValueError("another root")
    seeds: dict[str, tuple[str, bytes]] = {}
    while offset < len(data):
        rel, files, records = os.fsdecode(blob()), os.fsdecode(blob()), blob()
        count = files.count("/") + 1 if files else 0
        if len(records) != count * RECORD_BYTES:
            raise ValueError("records do not match the names")
        seeds[rel] = (files, records)
    return seeds
