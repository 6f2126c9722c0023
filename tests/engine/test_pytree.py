"""The Python engine's batches: files read back to back, matched in a worker, given back in path order."""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from repo_sandbox.config.loader import load_settings
from repo_sandbox.engine import pymatch, pytree
from repo_sandbox.engine.pymatch import MatchState
from repo_sandbox.engine.pysearch import Query
from repo_sandbox.engine.request import Deadline, HitWindow, SearchCancelled, SearchRequest, SearchStats
from repo_sandbox.tools.search_text import SearchTextArgs, SearchTextContentResult, search_text
from repo_sandbox.workspace import Workspace


def _ws(root: Path, **limits: Any) -> Workspace:
    overrides: dict[tuple[str, str], Any] = {("workspace", "root"): str(root), ("search", "engine"): "python"}
    overrides.update({("limits", key): value for key, value in limits.items()})
    return Workspace(load_settings(None, env={}, overrides=overrides))


def _search(root: Path, **args: Any) -> SearchTextContentResult:
    ws = _ws(root)
    try:
        result = search_text(ws, SearchTextArgs(**args))
    finally:
        ws.close()
    assert isinstance(result, SearchTextContentResult)
    return result


def _write(root: Path, files: Mapping[str, str | bytes]) -> Path:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return root


@pytest.mark.parametrize(
    ("files", "pattern", "expected"),
    [
        # the literal runs from one file's end into the next file's start: a match of neither
        ({"a.txt": "xa", "b.txt": "bx"}, "ab", []),
        ({"a.txt": "xa", "b.txt": "bxab\n"}, "ab", [("b.txt", 1, "bxab")]),
        ({"a.txt": "xa", "b.txt": "", "c.txt": "b ab\n"}, "ab", [("c.txt", 1, "b ab")]),
        ({"a.txt": "ab", "b.txt": "ab"}, "a[b]", [("a.txt", 1, "ab"), ("b.txt", 1, "ab")]),
        ({"a.txt": "no", "b.txt": "nul\x00 here ab\n", "c.txt": "ab\n"}, "ab", [("c.txt", 1, "ab")]),
    ],
)
def test_files_read_back_to_back_match_only_within_themselves(
    tmp_path: Path, files: dict[str, str], pattern: str, expected: list[tuple[str, int, str]]
) -> None:
    result = _search(_write(tmp_path / "repo", files), pattern=pattern)
    assert [(m.path, m.line, m.text) for m in result.matches] == expected


def test_large_small_and_binary_files_keep_path_order_and_counts(tmp_path: Path) -> None:
    big = ("filler line\n" * (pymatch.BUFFER_BYTES // 12 + 10) + "needle big\n").encode()
    files: dict[str, str | bytes] = {
        "a.txt": "needle a\n",
        "b.txt": big,  # larger than a batch buffer: a batch of its own
        "c.bin": b"needle\x00\x01",
        "d.txt": "needle d\n",
        **{f"e/{i:03}.txt": f"needle {i}\n" for i in range(300)},
    }
    result = _search(_write(tmp_path / "repo", files), pattern="needle", limit=1000)
    paths = [m.path for m in result.matches]
    assert paths == ["a.txt", "b.txt", "d.txt", *(f"e/{i:03}.txt" for i in range(300))]
    assert (result.files_searched, result.skipped_binary, result.total_matches) == (303, 1, 303)


def test_a_file_that_grew_since_it_was_listed_is_read_whole(tmp_path: Path) -> None:
    root = _write(tmp_path / "repo", {"grown.txt": "x\n" * 50 + "needle\n"})
    ws = _ws(root)
    state = MatchState()
    request = SearchRequest(pattern="needle", keep_hits=HitWindow(0, 10))
    matcher = pymatch.BatchMatcher(Query.compile("needle", **_plain()), request, Deadline(5), state)
    search = pytree._TreeSearch(request, SearchStats(), matcher, ws.limits.max_file_bytes)
    fd = os.open(root / "grown.txt", os.O_RDONLY)
    try:
        search.add(fd, "grown.txt", 4)  # the size seen by fstat before the file grew
        found = list(search.finish())
    finally:
        os.close(fd)
        search.close()
        ws.close()
    assert [(f.rel_path, [(h.line, h.text) for h in f.hits]) for f in found] == [("grown.txt", [(51, "needle")])]


def _plain() -> dict[str, bool]:
    return {"fixed_strings": False, "case_sensitive": True, "multiline": False}


def test_a_full_first_page_stops_reading_the_tree(tmp_path: Path) -> None:
    root = _write(tmp_path / "repo", {f"f{i:04}.txt": "needle\n" * 20 for i in range(2000)})
    result = _search(root, pattern="needle", limit=10)
    assert (len(result.matches), result.truncated, result.next_offset) == (10, True, 10)
    assert result.files_searched < 200  # the walk stopped soon after the page was full
    assert 10 < result.total_matches < 20 * 2000


def test_pages_deep_in_a_result_hold_exactly_their_window(tmp_path: Path) -> None:
    root = _write(tmp_path / "repo", {f"f{i:03}.txt": "".join(f"hit {i}.{j}\n" for j in range(7)) for i in range(100)})
    seen: list[str] = []
    offset: int | None = 0
    while offset is not None:
        page = _search(root, pattern="hit", limit=33, offset=offset)
        seen.extend(m.text for m in page.matches)
        offset = page.next_offset
    assert seen == [f"hit {i}.{j}" for i in range(100) for j in range(7)]


def test_cancelling_stops_the_search_and_closes_everything(tmp_path: Path) -> None:
    root = _write(tmp_path / "repo", {f"f{i:04}.txt": "needle\n" for i in range(3000)})
    cancel = threading.Event()
    ws = _ws(root)
    stats = SearchStats()
    try:
        hits = pytree.iter_file_hits(
            ws, SearchRequest(pattern="needle", cancel=cancel, keep_hits=HitWindow(0, 5)), stats
        )
        next(hits)
        cancel.set()
        with pytest.raises(SearchCancelled):
            list(hits)
    finally:
        ws.close()
    assert stats.files_searched < 3000
