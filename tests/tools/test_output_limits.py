"""Tool bodies under a small max_output_bytes: every page fits, and paging always advances, even over rows
that could never fit a page (long lines of control characters that JSON escapes six-fold, very long paths)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from repo_sandbox.config.model import Settings
from repo_sandbox.meter import OutputMeter
from repo_sandbox.tools._search_rows import TextMatch, match_cost
from repo_sandbox.tools.count_lines import CountLinesArgs, count_lines
from repo_sandbox.tools.read_file import ReadFileArgs, read_file
from repo_sandbox.tools.search_files import SearchFilesArgs, search_files
from repo_sandbox.tools.search_text import SearchTextArgs, search_text
from repo_sandbox.workspace import Workspace

CAP = 4096
CONTROL_LINE = "\x01" * 2000 + " HIT"


def size(result: BaseModel) -> int:
    return len(json.dumps(result.model_dump(mode="json"), ensure_ascii=False).encode("utf-8"))


@pytest.fixture
def small_cap(tmp_path: Path, make_settings: Callable[..., Settings]) -> Iterator[Workspace]:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "ctrl.txt").write_text("\n".join([CONTROL_LINE] * 30) + "\n", encoding="utf-8")
    deep = root.joinpath(*(["d" * 250] * 13))
    deep.mkdir(parents=True)
    (deep / "x.txt").write_text("HIT\n", encoding="utf-8")
    for name in ("a.txt", "b.txt", "c.txt"):
        (root / name).write_text("HIT\n", encoding="utf-8")
    ws = Workspace(make_settings(root, limits={"max_output_bytes": CAP}))
    yield ws
    ws.close()


def page_through(call: Callable[[int], Any], rows: Callable[[Any], list[Any]], first: int = 0) -> list[Any]:
    collected: list[Any] = []
    offset = first
    for _ in range(1000):
        result = call(offset)
        assert size(result) <= CAP
        collected.extend(rows(result))
        assert result.truncated is (result.next_offset is not None)
        if result.next_offset is None:
            return collected
        assert result.next_offset > offset  # always advances
        offset = result.next_offset
    raise AssertionError("paging never ended")


def test_read_file_cuts_a_line_that_no_page_can_hold_and_moves_on(small_cap: Workspace) -> None:
    first = read_file(small_cap, ReadFileArgs(path="ctrl.txt"))
    assert size(first) <= CAP
    assert first.content.endswith("... [cut to fit the output limit]")
    assert (first.end_line, first.next_offset, first.truncated) == (1, 2, True)
    pages = page_through(lambda o: read_file(small_cap, ReadFileArgs(path="ctrl.txt", offset=o)), lambda r: [r], 1)
    assert len(pages) == 30


def test_search_text_shrinks_a_row_that_no_page_can_hold(small_cap: Workspace) -> None:
    def call(offset: int) -> Any:
        return search_text(small_cap, SearchTextArgs(pattern="HIT", path="ctrl.txt", context=10, offset=offset))

    first = call(0)
    assert len(first.matches) == 1 and first.matches[0].before == [] and first.matches[0].after == []
    assert first.matches[0].text.endswith("more characters]")
    lines = [m.line for m in page_through(call, lambda r: r.matches)]
    assert lines == list(range(1, 31))


def test_search_files_skips_a_path_longer_than_a_page_and_keeps_paging(small_cap: Workspace) -> None:
    files = page_through(
        lambda o: search_files(small_cap, SearchFilesArgs(pattern="*.txt", limit=1, offset=o)), lambda r: r.files
    )
    assert files == ["a.txt", "b.txt", "c.txt", "ctrl.txt"]


def test_search_text_per_file_modes_skip_rows_longer_than_a_page(small_cap: Workspace) -> None:
    for mode in ("files_with_matches", "count"):
        rows = page_through(
            lambda o, m=mode: search_text(small_cap, SearchTextArgs(pattern="HIT", output_mode=m, limit=2, offset=o)),
            lambda r: r.files if hasattr(r, "files") else [c.path for c in r.counts],
        )
        assert rows == ["a.txt", "b.txt", "c.txt", "ctrl.txt"]


def test_count_lines_keeps_the_first_ten_paths_among_equal_counts(
    tmp_path: Path, make_settings: Callable[..., Settings]
) -> None:
    for i in range(12):
        (tmp_path / f"f{11 - i:02d}.txt").write_text("one\ntwo\n", encoding="utf-8")
    (tmp_path / "big.md").write_text("x\n" * 5, encoding="utf-8")
    ws = Workspace(make_settings(tmp_path))
    try:
        result = count_lines(ws, CountLinesArgs())
    finally:
        ws.close()
    assert [(f.path, f.lines) for f in result.largest] == [("big.md", 5)] + [(f"f{i:02d}.txt", 2) for i in range(9)]
    assert [(e.extension, e.files, e.lines) for e in result.by_extension] == [(".txt", 12, 24), (".md", 1, 5)]


_TEXT = st.text(alphabet=st.sampled_from(["a", '"', "\\", "\n", "\t", "\x01", "é", "😀", "\udc80", " "]), max_size=12)


@given(
    path=_TEXT,
    line=st.integers(min_value=1, max_value=10**9),
    text=_TEXT,
    before=st.lists(_TEXT, max_size=3),
    after=st.lists(_TEXT, max_size=3),
)
def test_a_match_row_costs_exactly_what_the_meter_measures_of_its_json(
    path: str, line: int, text: str, before: list[str], after: list[str]
) -> None:
    row = TextMatch(path=path, line=line, text=text, before=before, after=after)
    assert match_cost(OutputMeter.cost(path), line, text, before, after) == OutputMeter.item_cost(row)
