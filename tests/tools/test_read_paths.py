"""read_file's three ways to a page give the same result: a small file read at once and cut as one ASCII page,
the same file cut line by line in memory, and a large file streamed in chunks."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from repo_sandbox.config.model import Settings
from repo_sandbox.fs.textfile import after_newlines
from repo_sandbox.tools import read_file as read_file_module
from repo_sandbox.tools.read_file import ReadFileArgs, read_file
from repo_sandbox.workspace import Workspace

FILES: dict[str, bytes] = {
    "plain.py": b"".join(b"line %d of plain ascii text\n" % n for n in range(1, 301)),
    "no_final_newline.txt": b"first\nsecond\nthird",
    "crlf.txt": b"one\r\ntwo\r\n\r\nfour\r\n",
    "blank_lines.txt": b"\n\n\nx\n\n",
    "utf8.md": "naïve café\n日本語の行\nemoji 🎉 line\n".encode() * 20,
    "bom.txt": b"\xef\xbb\xbfwith a byte-order mark\nsecond\n",
    "invalid_utf8.txt": b"ok\nbad \xff\xfe byte\ncut \xe2\x82\nend\n",
    "long_lines.txt": b"short\n" + b"x" * 500 + b"\n" + "é".encode() * 300 + b"\nshort again\n",
    "one_line.txt": b"a single line without newline",
    "empty.txt": b"",
    "control.txt": b"tab\there\x0bvertical\x0cfeed\x1cseparator\x85next\n",
}

PAGES: list[tuple[int, int, bool]] = [
    (1, 2000, True),
    (1, 1, True),
    (2, 2, True),
    (3, 5000, False),
    (150, 60, True),
    (299, 10, True),
]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    for name, data in FILES.items():
        (root / name).write_bytes(data)
    return root


WorkspaceFactory = Callable[..., Workspace]


@pytest.fixture
def make_workspace(tree: Path, make_settings: Callable[..., Settings]) -> Iterator[WorkspaceFactory]:
    opened: list[Workspace] = []

    def factory(**limits: Any) -> Workspace:
        opened.append(Workspace(make_settings(tree, limits={"max_line_chars": 100, **limits})))
        return opened[-1]

    yield factory
    for ws in opened:
        ws.close()


def outcome(ws: Workspace, args: ReadFileArgs) -> dict[str, Any]:
    try:
        return read_file(ws, args).model_dump()
    except Exception as exc:  # noqa: BLE001  # the refusal itself is compared
        return {"error": type(exc).__name__, "message": str(exc)}


def all_outcomes(ws: Workspace) -> dict[tuple[str, int, int, bool], dict[str, Any]]:
    return {
        (name, offset, limit, numbers): outcome(
            ws, ReadFileArgs(path=name, offset=offset, limit=limit, line_numbers=numbers)
        )
        for name in FILES
        for offset, limit, numbers in PAGES
    }


@pytest.mark.parametrize("max_output_bytes", [128 * 1024, 4096])
def test_in_memory_pages_equal_streamed_pages(
    make_workspace: WorkspaceFactory, monkeypatch: pytest.MonkeyPatch, max_output_bytes: int
) -> None:
    ws = make_workspace(max_output_bytes=max_output_bytes)
    in_memory = all_outcomes(ws)
    monkeypatch.setattr(read_file_module, "WHOLE_FILE_BYTES", 0)  # every file is now streamed
    streamed = all_outcomes(ws)
    assert in_memory == streamed
    assert sum("content" in result for result in in_memory.values()) > len(FILES) * 3  # pages, not just refusals


def test_line_by_line_pages_equal_whole_ascii_pages(
    make_workspace: WorkspaceFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = make_workspace()
    whole = all_outcomes(ws)
    monkeypatch.setattr(read_file_module, "_plain_page", lambda *args: None)  # pyright: ignore[reportUnknownLambdaType]
    by_line = all_outcomes(ws)
    assert whole == by_line


def test_a_page_cut_by_the_output_limit_says_where_to_go_on(make_workspace: WorkspaceFactory) -> None:
    page = read_file(make_workspace(max_output_bytes=4096), ReadFileArgs(path="plain.py"))
    assert page.truncated and page.next_offset == page.end_line + 1 < 300
    assert page.content.endswith(f"{page.end_line:>6}\tline {page.end_line} of plain ascii text\n")


@pytest.mark.parametrize(
    ("data", "start", "count", "expected"),
    [
        (b"a\nb\nc\n", 0, 0, 0),
        (b"a\nb\nc\n", 0, 1, 2),
        (b"a\nb\nc\n", 0, 3, 6),
        (b"a\nb\nc\n", 0, 9, 6),
        (b"a\nb\nc", 2, 1, 4),
        (b"a\nb\nc", 2, 5, 5),
        (b"\n" * 20000, 0, 12345, 12345),  # across counting blocks
        (b"x" * 9000 + b"\n" + b"y\n" * 3, 0, 2, 9003),
    ],
)
def test_after_newlines_finds_the_start_of_a_line(data: bytes, start: int, count: int, expected: int) -> None:
    assert after_newlines(data, start, count) == expected
