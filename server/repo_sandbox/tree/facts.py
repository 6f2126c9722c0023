"""What a tree index remembers about each file: its kind (text or binary) and line count, by stat identity.

A fact is reused only while the file keeps its whole identity: device, inode, size, modification and change
time. Any write, truncation, rename over it, chmod or new hard link changes one of them, so a file whose
`lstat` still shows the remembered identity has the remembered content, except for a change made within the
same clock tick as the stat that was remembered: as in git's racy-clean rule, facts about a file changed
less than `RACY_NS` before it was read are not remembered at all.

Facts live in one `bytearray` per directory, a fixed-size record per file slot (40 bytes, no object per
file), so that the index of a large repository stays small. A record is written with one `pack_into` (a
single C call under the GIL: readers never see half a record); an all-zero record is unknown (no file has
inode 0).
"""

from __future__ import annotations

import os
import struct
import time
from typing import Final

from repo_sandbox.fs import watch

TEXT: Final = 0
BINARY: Final = 1
TOO_LARGE: Final = 2
UNKNOWN_LINES: Final = -1
RACY_NS = watch.RACY_NS
"""Facts of files changed less than this long ago (ns) are not remembered (`watch.is_settled`)."""


def identity(info: os.stat_result) -> tuple[int, int, int, int, int]:
    """A file's identity: any write, truncation, rename over it, chmod or new hard link changes one of these.
    What was learnt from a file's content holds while its `lstat` shows the identity it was read at, unless it
    was read within `RACY_NS` of its last change (`watch.is_settled`)."""
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


_RECORD: Final = struct.Struct("<QQqqII")
"""ino, size, mtime_ns, ctime_ns, dev, (lines + 1) << 2 | kind (lines + 1 == 0: not counted). Files whose
device number or line count does not fit 32 bits are not remembered."""
_MAX_PACKED: Final = 0xFFFFFFFF
RECORD_BYTES: Final = _RECORD.size


def new_facts(count: int) -> bytearray:
    return bytearray(RECORD_BYTES * count)


def record(facts: bytearray, slot: int) -> tuple[int, int, int, int, int, int] | None:
    """The slot's record (compare it with `recall_record`), or None when nothing is remembered for it."""
    found = _RECORD.unpack_from(facts, slot * RECORD_BYTES)
    return None if found[0] == 0 else found


def recall_record(found: tuple[int, int, int, int, int, int], info: os.stat_result) -> tuple[int, int] | None:
    """(kind, lines or UNKNOWN_LINES) of a `record` when the file's `lstat` still shows its identity, else
    None (the record's fields compared one by one: no tuple per file)."""
    ino, size, mtime, ctime, dev, packed = found
    if (
        ino != info.st_ino
        or mtime != info.st_mtime_ns
        or ctime != info.st_ctime_ns
        or size != info.st_size
        or dev != info.st_dev
    ):
        return None
    return packed & 3, (packed >> 2) - 1


def recall(facts: bytearray, slot: int, info: os.stat_result) -> tuple[int, int] | None:
    """(kind, lines or UNKNOWN_LINES) remembered for this file at this `identity`, else None."""
    found = record(facts, slot)
    return None if found is None else recall_record(found, info)


def remember(
    facts: bytearray,
    slot: int,
    info: os.stat_result,
    kind: int,
    lines: int = UNKNOWN_LINES,
    racy_ns: int | None = None,
) -> None:
    """Remember the kind (and line count) of a file read at identity `info` (its `fstat` before the read),
    unless it changed too recently for its identity to show the next change."""
    if not watch.is_settled(info, time.time_ns(), RACY_NS if racy_ns is None else racy_ns):
        return
    packed = (lines + 1) << 2 | kind
    if packed > _MAX_PACKED or info.st_dev > _MAX_PACKED:
        return
    _RECORD.pack_into(
        facts, slot * RECORD_BYTES, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_dev, packed
    )


def carried(old: bytes | bytearray, old_files: str, new_files: str) -> bytearray:
    """The facts of a re-listed directory, its files' names joined by '/' before (`old_files`, records `old`)
    and now: each name still there keeps its record (its identity still decides whether the record holds)."""
    if old_files == new_files:
        return bytearray(old)
    new_names = new_files.split("/") if new_files else []
    facts = new_facts(len(new_names))
    if not old_files or not any(old):
        return facts
    where = {name: slot for slot, name in enumerate(old_files.split("/"))}
    for slot, name in enumerate(new_names):
        previous = where.get(name)
        if previous is not None:
            start = previous * RECORD_BYTES
            facts[slot * RECORD_BYTES : (slot + 1) * RECORD_BYTES] = old[start : start + RECORD_BYTES]
    return facts
