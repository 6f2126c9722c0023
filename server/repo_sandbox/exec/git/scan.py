"""Reading a git repository's records with git (and loose objects by hand), for `exec.git.names`.

What is read (the index's paths, every tree object) goes to a `Findings` (`exec.git.records`): which needles
occur, and which names hold a byte outside ASCII. All git runs here read only, under the hardened environment
of `fs.gitenv`, and are killed after `fs.gitrun.GIT_TIMEOUT_S` (every exclusion is then passed).
"""

from __future__ import annotations

import os
import stat
import zlib
from collections.abc import Iterable
from typing import IO, Final

from repo_sandbox.exec.git.records import BatchTrees, Findings
from repo_sandbox.fs.gitrun import CHUNK, GitRun, ScanError

MAX_TREES: Final = 100_000
"""More tree objects than this in one scan (about 2 s here) and every exclusion is passed instead."""
MAX_OBJECTS: Final = 4 * MAX_TREES
"""More objects than this in the packs and loose objects of one scan: not scanned (every exclusion passed)."""
MAX_INDEX_BYTES: Final = 256 * 1024 * 1024
"""An index listing larger than this is not read (every exclusion passed)."""
MAX_LOOSE_BYTES: Final = 64 * 1024 * 1024
"""A loose object file larger than this is not read here (every exclusion passed)."""


def kind(path: str) -> int | None:
    """The file type bits of `path` (not followed), None when it does not exist."""
    try:
        return stat.S_IFMT(os.lstat(path).st_mode)
    except FileNotFoundError:
        return None


def index_key(path: str) -> tuple[int, ...] | bytes | None:
    """Stat data and trailing checksum of the index: None when there is none, b"" when they cannot be
    trusted to name the content (not a plain file, or written with `index.skipHash`)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError:
        return b""
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size < 32:
            return b""
        trailer = os.pread(fd, 20, info.st_size - 20)
    finally:
        os.close(fd)
    if trailer == bytes(20):
        return b""
    return (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns, *trailer)


def pack_object_count(idx_path: str) -> int:
    """The number of objects a pack index lists (the last fan-out entry, in version 1 or 2 layout)."""
    with open(idx_path, "rb") as idx:
        head = idx.read(8 + 1024)
    fanout = head[8:] if head.startswith(b"\xfftOc") else head
    if len(fanout) < 1024:
        raise ScanError(f"{idx_path} is not a pack index")
    return int.from_bytes(fanout[1020:1024], "big")


def loose_tree(path: str) -> bytes | None:
    """The raw content of a loose object when it is a tree, else None.

    Raises: OSError or zlib.error for an object that is not a plain readable file or not a git object.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_LOOSE_BYTES:
            raise OSError(f"{path} is not a plain file of a readable size")
        inflate = zlib.decompressobj()
        head = inflate.decompress(os.read(fd, 512), 64)
        object_type, _, _ = head.partition(b" ")
        if object_type in (b"blob", b"commit", b"tag"):
            return None
        end = head.find(b"\0")
        if object_type != b"tree" or end < 0:
            raise zlib.error(f"{path} is not a git object")
        rest = bytearray(inflate.unconsumed_tail)
        while chunk := os.read(fd, CHUNK):
            rest += chunk
        return head[end + 1 :] + inflate.decompress(bytes(rest)) + inflate.flush()
    finally:
        os.close(fd)


class GitReader(GitRun):
    """Reads a repository's records (index names, pack ids, tree objects) with read-only git runs."""

    def index_names(self, needles: Iterable[bytes]) -> Findings | None:
        """The needles and the non-ASCII names in the index's paths; None when the listing is too large."""
        listing = bytearray()

        def collect(chunk: bytes) -> bool:
            listing.extend(chunk)
            return len(listing) <= MAX_INDEX_BYTES

        self.run(["ls-files", "-z"], collect)
        if len(listing) > MAX_INDEX_BYTES:
            return None
        findings = Findings(needles)
        findings.paths(bytes(listing).split(b"\0"))
        return findings

    def pack_ids(self, idx_path: str, out: IO[bytes]) -> None:
        """Write the object ids of one pack to `out`, one a line, in pack order (cheaper to read in turn)."""
        listing = bytearray()

        def collect(chunk: bytes) -> bool:
            listing.extend(chunk)
            return True

        with open(idx_path, "rb") as idx:
            self.run(["show-index"], collect, stdin=idx)
        entries: list[tuple[int, bytes]] = []
        for line in bytes(listing).splitlines():
            offset, _, rest = line.partition(b" ")
            oid = rest.partition(b" ")[0]
            if not offset.isdigit() or not oid:
                raise ScanError(f"unexpected git show-index output for {idx_path}")
            entries.append((int(offset), oid))
        entries.sort()
        out.writelines(oid + b"\n" for _, oid in entries)

    def tree_names(self, findings: Findings, ids: IO[bytes], trees: IO[bytes]) -> bool:
        """Add what the trees among the objects listed in `ids` hold to `findings`; False beyond MAX_TREES trees.

        Raises: ScanError when git fails or prints something unexpected.
        """
        count = 0
        pending = b""

        def pick_trees(chunk: bytes) -> bool:
            nonlocal count, pending
            lines = (pending + chunk).split(b"\n")
            pending = lines.pop()
            for line in lines:
                if line.startswith(b"tree "):
                    trees.write(line[5:] + b"\n")
                    count += 1
            return count <= MAX_TREES

        ids.flush()
        ids.seek(0)
        self.run(["cat-file", "--batch-check=%(objecttype) %(objectname)"], pick_trees, stdin=ids)
        if count > MAX_TREES:
            return False
        trees.flush()
        trees.seek(0)
        batch = BatchTrees(findings.tree)

        def feed(chunk: bytes) -> bool:
            batch.feed(chunk)
            return not findings.done

        self.run(["cat-file", "--batch"], feed, stdin=trees)
        if not findings.done:
            batch.finish()
        return True
