"""Reading text files by streaming: binary sniffing, line iteration with bounded memory, line counting."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

SNIFF_BYTES: Final = 8192
"""Binary detection looks for a NUL byte in this many leading bytes (git looks at 8000, ripgrep at its first
buffer; a later NUL makes ripgrep drop the file, and the searches do the same)."""
CHUNK_BYTES: Final = 1024 * 1024
WHOLE_FILE_BYTES: Final = CHUNK_BYTES
"""Files up to this size are read into memory at once; larger ones are streamed in chunks."""
LINE_SEEK_BLOCKS: Final = (8192, 256)
NEWLINE: Final = ord("\n")
UTF8_BOM: Final = b"\xef\xbb\xbf"
"""The UTF-8 byte-order mark some editors write first; it is not part of the text."""


def looks_binary(head: bytes) -> bool:
    """A NUL byte in the head: git's and ripgrep's rule. Text in a legacy encoding (Latin-1, KOI8-R, EUC-JP)
    is text; its bytes that are not UTF-8 are shown as U+FFFD and match nothing but themselves."""
    return b"\x00" in head


def read_head(fd: int, size: int = SNIFF_BYTES) -> bytes:
    return os.pread(fd, size, 0)


@dataclass(slots=True)
class RawLine:
    """One line: its kept prefix (bytes), its full length in bytes and whether it ended with a newline."""

    data: bytes
    length: int
    newline: bool


def read_whole(fd: int) -> bytes | None:
    """The whole file in one read, or None when it holds more than `WHOLE_FILE_BYTES` (stream it instead)."""
    data = os.pread(fd, WHOLE_FILE_BYTES + 1, 0)
    return data if len(data) <= WHOLE_FILE_BYTES else None


def count_lines_in(data: bytes) -> int:
    """Newlines, plus one for a last line without its newline."""
    return data.count(b"\n") + (1 if data and data[-1] != NEWLINE else 0)


def after_newlines(data: bytes, start: int, count: int) -> int:
    """Offset just after the `count`th newline from `start` (len(data) when there are fewer): the start of
    line `count + 1` when `start` is 0, the end of `count` lines from `start`. Whole blocks are skipped by
    counting their newlines (large blocks, then small ones), only the last few lines one by one."""
    position, to_skip = start, count
    for block in LINE_SEEK_BLOCKS:
        while to_skip:
            block_end = min(position + block, len(data))
            in_block = data.count(b"\n", position, block_end)
            if in_block >= to_skip:
                break
            if block_end == len(data):
                return len(data)
            position, to_skip = block_end, to_skip - in_block
    for _ in range(to_skip):
        position = data.index(b"\n", position) + 1
    return position


def lines_in(data: bytes, start: int, *, keep_bytes: int) -> Iterator[RawLine]:
    """The lines of an in-memory file from offset `start`, as `iter_lines` yields them from a file."""
    position, size = start, len(data)
    while position < size:
        end = data.find(b"\n", position)
        if end < 0:
            yield RawLine(data[position : min(size, position + keep_bytes)], size - position, False)
            return
        yield RawLine(data[position : min(end, position + keep_bytes)], end - position, True)
        position = end + 1


def seek_line(fd: int, count: int) -> int:
    """Offset in the file just after its `count`th newline (the file's size when it has fewer): the start of
    line `count + 1`. Chunk by chunk, counting newlines, so that a page deep in a large file is reached at
    the speed of `bytes.count` rather than line by line."""
    position, to_skip = 0, count
    while to_skip:
        chunk = os.pread(fd, CHUNK_BYTES, position)
        if not chunk:
            break
        in_chunk = chunk.count(b"\n")
        if in_chunk >= to_skip:
            return position + after_newlines(chunk, 0, to_skip)
        position, to_skip = position + len(chunk), to_skip - in_chunk
    return position


def iter_lines(fd: int, *, keep_bytes: int, start: int = 0) -> Iterator[RawLine]:
    """Yield the file's lines from offset `start` (a line's start), keeping at most `keep_bytes` of each line
    in memory."""
    position = start
    partial: list[bytes] = []
    partial_kept = 0
    partial_len = 0
    while True:
        chunk = os.pread(fd, CHUNK_BYTES, position)
        if not chunk:
            break
        position += len(chunk)
        pieces = chunk.split(b"\n")
        for i, piece in enumerate(pieces):
            last = i == len(pieces) - 1
            if partial_kept < keep_bytes:
                take = piece[: keep_bytes - partial_kept]
                partial.append(take)
                partial_kept += len(take)
            partial_len += len(piece)
            if last:
                break
            yield RawLine(b"".join(partial), partial_len, True)
            partial, partial_kept, partial_len = [], 0, 0
    if partial_len:
        yield RawLine(b"".join(partial), partial_len, False)


def cut_text(text: str, max_chars: int) -> str:
    """Cut an over-long line, leaving a visible marker that says how much is missing."""
    if len(text) <= max_chars:
        return text
    return f"{text[:max_chars]}... [line cut: {len(text) - max_chars} more characters]"


def line_text(raw: RawLine, max_chars: int) -> str:
    """Decode a streamed line (invalid UTF-8 replaced), cutting it at `max_chars` with a visible marker."""
    text = raw.data.decode("utf-8", "replace")
    if len(text) <= max_chars and raw.length == len(raw.data):
        return text
    return f"{text[:max_chars]}... [line cut: {raw.length} bytes in all]"


def count_newlines_from(fd: int, position: int) -> tuple[int, bytes]:
    """Count b'\\n' from `position` to the end; also return the last byte read (b'' if none)."""
    count = 0
    last = b""
    while True:
        chunk = os.pread(fd, CHUNK_BYTES, position)
        if not chunk:
            return count, last
        count += chunk.count(b"\n")
        last = chunk[-1:]
        position += len(chunk)


def count_lines_fd(fd: int, first: bytes | None = None, *, first_ended: bool = False) -> tuple[int, int]:
    """(lines, bytes) of a whole file: newline count, plus one if non-empty and not newline-terminated.

    `first`, when given, is what the caller already read from the start of the file; reading continues
    after it unless `first_ended` says that read already reached the end.
    """
    newlines = 0
    size = 0
    last = b""
    chunk = first
    while True:
        if chunk is None:
            chunk = os.read(fd, CHUNK_BYTES)
        if not chunk:
            break
        newlines += chunk.count(b"\n")
        size += len(chunk)
        last = chunk[-1:]
        if chunk is first and first_ended:
            break
        chunk = None
    return newlines + (1 if size and last != b"\n" else 0), size
