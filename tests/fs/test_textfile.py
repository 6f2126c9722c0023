"""Streaming text files: binary sniffing, bounded line iteration, line counting, visible cut markers."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from repo_sandbox.fs.textfile import (
    CHUNK_BYTES,
    RawLine,
    count_lines_fd,
    cut_text,
    iter_lines,
    line_text,
    looks_binary,
)

Opener = Callable[[bytes], int]


@pytest.fixture
def open_bytes(tmp_path: Path) -> Iterator[Opener]:
    fds: list[int] = []

    def opener(data: bytes) -> int:
        path = tmp_path / f"f{len(fds)}"
        path.write_bytes(data)
        fd = os.open(path, os.O_RDONLY)
        fds.append(fd)
        return fd

    yield opener
    for fd in fds:
        os.close(fd)


@pytest.mark.parametrize(
    ("head", "binary"),
    [
        (b"", False),
        (b"plain text\n", False),
        ("naïve café 日本語\n".encode(), False),
        (b"caf\xe9 latin-1 text with one odd byte\n", False),
        (b"text\x00with a NUL", True),
        (bytes(range(128, 256)), False),  # no NUL: text, as git and ripgrep decide
        ("Кириллица в KOI8-R\n".encode("koi8-r") * 50, False),
        ("日本語のテキスト\n".encode("euc-jp") * 50, False),
        ("àéîõü çà et là\n".encode("latin-1") * 50, False),
        (b"\xef\xbb\xbfBOM text", False),
        (b"x" * 8190 + "é".encode()[:1], False),  # a character cut by the sniff window
        (b"\x01\x02\x03 control characters are text", False),
    ],
)
def test_binary_sniffing(head: bytes, binary: bool) -> None:
    assert looks_binary(head) is binary


def test_lines_keep_at_most_keep_bytes_but_report_their_full_length(open_bytes: Opener) -> None:
    long = b"y" * (CHUNK_BYTES * 2 + 10)
    fd = open_bytes(b"short\n" + long + b"\nlast")
    lines = list(iter_lines(fd, keep_bytes=8))
    assert lines == [
        RawLine(b"short", 5, True),
        RawLine(b"y" * 8, len(long), True),
        RawLine(b"last", 4, False),
    ]


@pytest.mark.parametrize(
    ("data", "lines"),
    [
        (b"", 0),
        (b"\n", 1),
        (b"a", 1),
        (b"a\nb", 2),
        (b"a\nb\n", 2),
        (b"\n\n\n", 3),
        (b"a\r\nb\r\n", 2),
        (b"x\n" * (CHUNK_BYTES // 2 + 7), CHUNK_BYTES // 2 + 7),
    ],
)
def test_line_count_is_what_an_editor_shows(open_bytes: Opener, data: bytes, lines: int) -> None:
    assert count_lines_fd(open_bytes(data)) == (lines, len(data))


def test_cut_markers_say_how_much_is_missing() -> None:
    assert cut_text("abc", 3) == "abc"
    assert cut_text("abcdef", 2) == "ab... [line cut: 4 more characters]"
    assert line_text(RawLine(b"abcd", 4, True), 10) == "abcd"
    assert line_text(RawLine(b"abcd", 100, True), 10) == "abcd... [line cut: 100 bytes in all]"
    assert line_text(RawLine("é".encode() * 3, 6, True), 2) == "éé... [line cut: 6 bytes in all]"
