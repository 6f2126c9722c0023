"""search_text keeps the run behind a page for the next page (`tools._search_runs`): paging is linear, and
every page is the page a new search would give."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from repo_sandbox.config.loader import load_settings
from repo_sandbox.engine.request import SearchCancelled
from repo_sandbox.errors import TimeoutExceededError
from repo_sandbox.tools import _search_runs
from repo_sandbox.tools.search_text import SearchTextArgs, SearchTextContentResult, search_text
from repo_sandbox.workspace import Workspace
from rg_spy import StartedRg

ENGINES = ["ripgrep", "python"]


def _ws(root: Path, engine: str, keep_run_s: float = 60.0, **limits: Any) -> Workspace:
    overrides: dict[tuple[str, str], Any] = {
        ("workspace", "root"): str(root),
        ("search", "engine"): engine,
        ("search", "keep_run_s"): keep_run_s,
    }
    overrides.update({("limits", key): value for key, value in limits.items()})
    return Workspace(load_settings(None, env={}, overrides=overrides))


def _tree(root: Path) -> None:
    """Files with 0 to 40 hits, one with enough for many pages, hidden among files without any."""
    for index in range(60):
        directory = root / f"d{index % 4}"
        directory.mkdir(parents=True, exist_ok=True)
        hits = (index * 7) % 41
        lines = [f"line {n} needle {index}" if n % 3 == 0 else f"line {n} hay" for n in range(hits * 3)]
        (directory / f"f{index:02}.txt").write_text("\n".join(lines) + "\n")
    (root / "d0" / "big.txt").write_text("".join(f"needle {n} {'x' * (n % 50)}\n" for n in range(400)))


def _pages(ws: Workspace, arguments: dict[str, Any], *, kept: bool) -> list[dict[str, Any]]:
    pages: list[dict[str, Any]] = []
    offset: int | None = 0
    while offset is not None:
        if not kept:
            _search_runs.take = lambda *_: None  # type: ignore[assignment]  # restored by the caller
        try:
            result = search_text(ws, SearchTextArgs(**arguments, offset=offset)).model_dump()
        finally:
            _search_runs.take = TAKE  # type: ignore[assignment]
        pages.append(result)
        offset = result["next_offset"]
        assert len(pages) < 500
    return pages


TAKE = _search_runs.take


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    "arguments",
    [
        {"pattern": "needle", "limit": 7},
        {"pattern": "needle", "limit": 50},
        {"pattern": r"needle \d+", "limit": 13, "context": 1},
        {"pattern": "needle", "limit": 9, "output_mode": "files_with_matches"},
        {"pattern": "needle", "limit": 9, "output_mode": "count"},
    ],
    ids=["content-7", "content-50", "context-13", "files-9", "count-9"],
)
def test_every_page_of_a_kept_run_is_the_page_a_new_search_gives(tmp_path: Path, engine: str, arguments: Any) -> None:
    _tree(tmp_path / "repo")
    kept_ws, new_ws = _ws(tmp_path / "repo", engine), _ws(tmp_path / "repo", engine)
    try:
        kept = _pages(kept_ws, arguments, kept=True)
        assert kept == _pages(new_ws, arguments, kept=False)
        assert len(kept) > 3
    finally:
        kept_ws.close()
        new_ws.close()


@pytest.mark.parametrize("engine", ENGINES)
def test_pages_cut_by_the_output_cap_go_on_where_they_stopped(tmp_path: Path, engine: str) -> None:
    _tree(tmp_path / "repo")
    kept_ws = _ws(tmp_path / "repo", engine, max_output_bytes=4096)
    new_ws = _ws(tmp_path / "repo", engine, max_output_bytes=4096)
    try:
        arguments = {"pattern": "needle", "limit": 100}
        kept = _pages(kept_ws, arguments, kept=True)
        assert kept == _pages(new_ws, arguments, kept=False)
        assert any(len(page["matches"]) < 100 and page["next_offset"] for page in kept)  # the cap cut pages
    finally:
        kept_ws.close()
        new_ws.close()


def _many(root: Path, lines: int, width: int = 0) -> None:
    """20 files of `lines` matching lines (a file of more hits than two pages is read again by a new run)."""
    root.mkdir(parents=True, exist_ok=True)
    for index in range(20):
        (root / f"f{index:02}.txt").write_text(f"needle{'.' * width}\n" * lines)


def test_the_next_page_starts_no_search_and_other_arguments_start_their_own(
    tmp_path: Path, started_rg: StartedRg
) -> None:
    _many(tmp_path / "repo", 900)
    ws = _ws(tmp_path / "repo", "ripgrep")
    try:
        first = search_text(ws, SearchTextArgs(pattern="needle", limit=1000))
        assert first.next_offset == 1000 and _search_runs.kept_count(ws) == 1
        started_rg.clear()
        for offset in range(1000, 10_000, 1000):
            page = search_text(ws, SearchTextArgs(pattern="needle", limit=1000, offset=offset))
            assert isinstance(page, SearchTextContentResult)
            assert [(m.path, m.line) for m in page.matches][:1] == [(f"f{offset // 900:02}.txt", offset % 900 + 1)]
        assert started_rg.argvs == []  # nine pages, no new rg
        search_text(ws, SearchTextArgs(pattern="needle", limit=999, offset=10_000))  # another limit: a new run
        search_text(ws, SearchTextArgs(pattern="needle", limit=1000, offset=5000))  # an earlier page: a new run
        assert len(started_rg.argvs) == 2
        assert _search_runs.kept_count(ws) == _search_runs.MAX_KEPT  # the first run was replaced, not added
        running = [p for p in started_rg.processes if p.proc.returncode is None]
        assert running  # a kept run's rg waits on its pipe
    finally:
        ws.close()
    assert all(p.proc.wait(5) is not None for p in started_rg.processes)  # closing the workspace ended them


def test_a_kept_run_ends_unused_after_a_while_and_beyond_the_limit(tmp_path: Path, started_rg: StartedRg) -> None:
    _many(tmp_path / "repo", 60)
    ws = _ws(tmp_path / "repo", "ripgrep", keep_run_s=0.5)
    fds = len(os.listdir("/proc/self/fd"))
    try:
        for pattern in ("need", "needl", "needle"):
            search_text(ws, SearchTextArgs(pattern=pattern, limit=100))
        assert _search_runs.kept_count(ws) == _search_runs.MAX_KEPT
        deadline = time.monotonic() + 10
        while _search_runs.kept_count(ws) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _search_runs.kept_count(ws) == 0
        assert all(p.proc.wait(5) is not None for p in started_rg.processes)
        assert len(os.listdir("/proc/self/fd")) <= fds  # the directories the runs held are closed
        page = search_text(ws, SearchTextArgs(pattern="needle", limit=100, offset=100))  # expired: a new run
        assert isinstance(page, SearchTextContentResult)
        assert (page.matches[0].path, page.matches[0].line) == ("f01.txt", 41)
    finally:
        ws.close()


def test_a_resumed_page_has_its_own_cancel_and_time_budget(
    tmp_path: Path, started_rg: StartedRg, monkeypatch: pytest.MonkeyPatch
) -> None:
    _many(tmp_path / "repo", 120, 1000)  # more than one unsorted run collects: pages stream, and read as they go
    ws = _ws(tmp_path / "repo", "ripgrep", regex_timeout_s=2)
    try:
        first_cancel = threading.Event()
        search_text(ws, SearchTextArgs(pattern="needle", limit=100), cancel=first_cancel)
        first_cancel.set()  # the first call is over: its flag no longer speaks for the run
        time.sleep(2.2)  # longer than one call's budget
        page = search_text(ws, SearchTextArgs(pattern="needle", limit=100, offset=100), cancel=threading.Event())
        assert isinstance(page, SearchTextContentResult)
        assert (page.matches[0].path, page.matches[0].line) == ("f00.txt", 101)
        assert len(started_rg.argvs) in (1, 2)  # unsorted then sorted: no run for the second page

        cancel = threading.Event()
        cancel.set()
        with pytest.raises(SearchCancelled):
            search_text(ws, SearchTextArgs(pattern="needle", limit=100, offset=200), cancel=cancel)
        assert _search_runs.kept_count(ws) == 0  # a cancelled page ends its run
        assert all(p.proc.wait(5) is not None for p in started_rg.processes)

        search_text(ws, SearchTextArgs(pattern="needle", limit=100))
        monkeypatch.setattr(ws.settings.limits, "regex_timeout_s", 1e-6)
        with pytest.raises(TimeoutExceededError):
            search_text(ws, SearchTextArgs(pattern="needle", limit=100, offset=100))
        assert _search_runs.kept_count(ws) == 0
    finally:
        ws.close()


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("swap", ["symlink", "hard link", "directory symlink", "rewritten"])
def test_a_file_changed_between_pages_shows_nothing_the_jail_would_not(tmp_path: Path, engine: str, swap: str) -> None:
    """A kept run is a slow reader: each file it yields is vouched for as it is read, so a file swapped
    between pages for a link to a denied file shows none of that file."""
    root = tmp_path / "repo"
    for index in range(20):
        (root / f"d{index:02}").mkdir(parents=True)
        (root / f"d{index:02}" / "f.txt").write_text("needle plain\n" * 50)
    (root / ".env").write_text("needle SECRET=hunter2\n" * 50)
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "f.txt").write_text("needle outside-bytes\n" * 50)
    ws = _ws(root, engine)
    try:
        first = search_text(ws, SearchTextArgs(pattern="needle", limit=100))
        assert first.next_offset == 100 and _search_runs.kept_count(ws) == 1
        target = root / "d15" / "f.txt"
        if swap == "symlink":
            target.unlink()
            target.symlink_to(root / ".env")
        elif swap == "hard link":
            target.unlink()
            os.link(root / ".env", target)
        elif swap == "directory symlink":
            (root / "d15" / "f.txt").unlink()
            (root / "d15").rmdir()
            (root / "d15").symlink_to(tmp_path / "outside")
        else:
            target.write_text("needle rewritten\n" * 50)
        offset: int | None = 100
        resumed: list[dict[str, Any]] = []
        while offset is not None:  # the run that read page 1 before the change goes on
            resumed.append(search_text(ws, SearchTextArgs(pattern="needle", limit=100, offset=offset)).model_dump())
            offset = resumed[-1]["next_offset"]
        pages = _pages(ws, {"pattern": "needle", "limit": 100}, kept=False)  # and new runs, after it
        shown = " ".join(m["text"] for page in pages + resumed for m in page["matches"])
        assert "hunter2" not in shown and "outside-bytes" not in shown
        assert all(m["path"] != ".env" for page in pages + resumed for m in page["matches"])
    finally:
        ws.close()


def test_keep_run_s_zero_keeps_no_run(tmp_path: Path, started_rg: StartedRg) -> None:
    _many(tmp_path / "repo", 60)
    ws = _ws(tmp_path / "repo", "ripgrep", keep_run_s=0)
    try:
        search_text(ws, SearchTextArgs(pattern="needle", limit=100))
        assert _search_runs.kept_count(ws) == 0
        assert all(p.proc.wait(5) is not None for p in started_rg.processes)
        started_rg.clear()
        page = search_text(ws, SearchTextArgs(pattern="needle", limit=100, offset=100))
        assert isinstance(page, SearchTextContentResult) and started_rg.argvs  # a new run
    finally:
        ws.close()
