"""The content index's builder: a child process that reads files and answers with their signatures.

It runs apart from the server so that reading and hashing a large tree (seconds of CPU) never holds the
server's interpreter; it runs at a lower priority, reads only beneath the root descriptor it inherits
(no symlink on the way: `_beneath.open_without_links`) and sends back, for each path asked, the identity
it read the file at and its `grams.Signature`, or nothing when the file is not one to index.

A signature is bound to the identity of the very descriptor read (device, inode, size, mtime, ctime by
`fstat` before and after the read, which must agree): a path swapped for another file while it was read
gets the other file's identity, which the census never sees under that path. As in git's racy-clean rule,
a file changed less than `racy_ns` before it was read is not indexed (a write in the same clock tick would
not change its identity).

Protocol: stdin carries NUL-terminated root-relative paths, read to its end before anything is answered;
then for each path stdout carries one `RECORD` (modulus 0: not indexed) and the filter's bytes, in order.
"""

from __future__ import annotations

import os
import stat
import struct
import sys
import time
from typing import Final

from repo_sandbox.engine.grams import Signature
from repo_sandbox.policy._beneath import open_without_links
from repo_sandbox.tools._textfile import SNIFF_BYTES, looks_binary
from repo_sandbox.tree.facts import identity
from repo_sandbox.tree.watch import is_settled

RECORD: Final = struct.Struct("<QQqqqII")
"""dev, ino, size, mtime_ns, ctime_ns (all 0: not seen), filter modulus (0: not indexed), filter bytes."""
NICENESS: Final = 10


def _read_whole(fd: int, size: int) -> bytes | None:
    data = os.read(fd, size + 1)
    while len(data) < size + 1:
        more = os.read(fd, size + 1 - len(data))
        if not more:
            break
        data += more
    return data if len(data) == size else None


_UNSEEN: Final = (0, 0, 0, 0, 0)


def signature_of(
    root_fd: int, rel_path: str, *, openat2: bool, max_bytes: int, racy_ns: int
) -> tuple[tuple[int, ...], Signature | None]:
    """The identity the file was read at and its signature. No signature for a file that is not to be
    indexed at that identity (binary, larger than `max_bytes`, not a regular file); no identity either
    (`_UNSEEN`) when it may be later (changed while read or too recently, not openable, unreadable)."""
    try:
        fd = open_without_links(root_fd, rel_path, openat2=openat2)
    except OSError:
        return _UNSEEN, None
    try:
        before = os.fstat(fd)
        seen = identity(before)
        if not stat.S_ISREG(before.st_mode) or before.st_size > max_bytes:
            return seen, None
        if not is_settled(before, time.time_ns(), racy_ns):
            return _UNSEEN, None
        data = _read_whole(fd, before.st_size)
        if data is None or identity(os.fstat(fd)) != seen:
            return _UNSEEN, None
        if looks_binary(data[:SNIFF_BYTES]):
            return seen, None
    except OSError:
        return _UNSEEN, None
    finally:
        os.close(fd)
    return seen, Signature.of(data)


def main(argv: list[str]) -> int:
    root_fd, max_bytes, racy_ns, openat2 = int(argv[0]), int(argv[1]), int(argv[2]), argv[3] == "openat2"
    os.nice(NICENESS)
    paths = sys.stdin.buffer.read().split(b"\0")[:-1]
    stdout = sys.stdout.buffer
    for raw in paths:
        ident, signature = signature_of(
            root_fd, os.fsdecode(raw), openat2=openat2, max_bytes=max_bytes, racy_ns=racy_ns
        )
        if signature is None:
            stdout.write(RECORD.pack(*ident, 0, 0))
            continue
        packed = signature.to_bytes()
        stdout.write(RECORD.pack(*ident, signature.modulus, len(packed)))
        stdout.write(packed)
    stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
