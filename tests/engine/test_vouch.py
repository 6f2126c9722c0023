"""What rg reports is believed only as far as the jail reads the same: one row per state a reported file can
be in by the time it is read again (the race test in tests/security drives the same code with real swaps)."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from jail_backends import workspace_on
from repo_sandbox.config.loader import load_settings
from repo_sandbox.engine import select
from repo_sandbox.engine.census import Census
from repo_sandbox.engine.pymatch import BatchMatcher, MatchState
from repo_sandbox.engine.pysearch import Query
from repo_sandbox.engine.request import Deadline, SearchRequest
from repo_sandbox.engine.rgprocess import FileOutput
from repo_sandbox.engine.vouch import Voucher, jailed_bytes, lines_hold
from repo_sandbox.tools.search_text import SearchTextArgs, search_text
from repo_sandbox.workspace import Workspace

SECRET = "SECRET-VOUCH-7f1c"


def _plain(root: Path) -> str:
    (root / "a.txt").write_text("one\nRACE two\nthree\n")
    return "a.txt"


def _symlink_to_denied(root: Path) -> str:
    (root / ".env").write_text(f"{SECRET}\n")
    os.symlink(".env", root / "a.txt")
    return "a.txt"


def _directory_link_to_git(root: Path) -> str:
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text(f"{SECRET}\n")
    os.symlink(".git", root / "sub")
    return "sub/config"


def _hard_link(root: Path) -> str:
    (root / ".env").write_text(f"{SECRET}\n")
    os.link(root / ".env", root / "a.txt")
    return "a.txt"


def _fifo(root: Path) -> str:
    os.mkfifo(root / "a.txt")
    return "a.txt"


def _nul_past_head(root: Path) -> str:
    (root / "a.txt").write_bytes(b"RACE\n" + b"x" * 10_000 + b"\0\n")
    return "a.txt"


def _too_large(root: Path) -> str:
    (root / "a.txt").write_text("RACE\n" * 1000)
    return "a.txt"


def _gone(root: Path) -> str:
    return "a.txt"


def _escape(root: Path) -> str:
    (root.parent / f"outside-{root.name}.txt").write_text(f"{SECRET} RACE\n")
    return f"../outside-{root.name}.txt"


REFUSED: list[Callable[[Path], str]] = [
    _symlink_to_denied,
    _directory_link_to_git,
    _hard_link,
    _fifo,
    _nul_past_head,
    _too_large,
    _gone,
    _escape,
]


@pytest.fixture(params=["openat2", "walk"])
def make(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[..., Workspace]]:
    opened: list[Workspace] = []

    def factory(**workspace: Any) -> Workspace:
        settings: dict[tuple[str, str], Any] = {("limits", "max_file_bytes"): 4096}
        settings.update({("workspace", key): value for key, value in workspace.items()})
        ws = workspace_on(tmp_path, request.param, settings)
        opened.append(ws)
        return ws

    yield factory
    for ws in opened:
        ws.close()


def _matcher(mode: str, context: int = 0) -> tuple[SearchRequest, BatchMatcher]:
    request = SearchRequest(pattern="RACE", mode=mode, context=context)  # type: ignore[arg-type]
    query = Query.compile("RACE", fixed_strings=False, case_sensitive=True, multiline=False)
    return request, BatchMatcher(query, request, Deadline(5), MatchState())


def _voucher(ws: Workspace, *, mode: str = "content", context: int = 0) -> Voucher:
    """A voucher that trusts nothing (no watch mark): every file is read again."""
    request, matcher = _matcher(mode, context)
    return Voucher(ws, matcher, Census(ws, request, None), None, lines=mode == "content")


def _reported(path: str, *lines: tuple[int, bool, bytes]) -> FileOutput:
    return FileOutput(path.encode(), list(lines), count=sum(1 for _, is_match, _ in lines if is_match))


@pytest.mark.parametrize("state", REFUSED, ids=lambda f: f.__name__.strip("_"))
@pytest.mark.parametrize("mode", ["content", "count"])
def test_a_file_the_jail_would_not_read_gives_nothing(
    tmp_path: Path, make: Callable[..., Workspace], state: Callable[[Path], str], mode: str
) -> None:
    rel = state(tmp_path)
    ws = make()
    assert jailed_bytes(ws, rel) is None
    reported = _reported(rel, (1, True, f"{SECRET} RACE".encode()))
    assert _voucher(ws, mode=mode).check(rel, 0, reported, (0, 10)) is None


def test_a_hard_link_is_read_when_the_policy_allows_hard_links(tmp_path: Path, make: Callable[..., Workspace]) -> None:
    (tmp_path / "b.txt").write_text("RACE here\n")
    os.link(tmp_path / "b.txt", tmp_path / "a.txt")
    ws = make(allow_hard_links=True)
    reported = _reported("a.txt", (1, True, b"RACE here"))
    assert _voucher(ws).check("a.txt", 0, reported, (0, 10)) is reported


def test_lines_that_hold_keep_rgs_output_itself(tmp_path: Path, make: Callable[..., Workspace]) -> None:
    rel = _plain(tmp_path)
    reported = _reported(rel, (1, False, b"one"), (2, True, b"RACE two"), (3, False, b"three"))
    assert _voucher(make(), context=1).check(rel, 0, reported, (0, 10)) is reported


@pytest.mark.parametrize(
    "lines",
    [
        [(2, True, f"{SECRET} RACE".encode())],  # another file's line under this file's name
        [(1, False, SECRET.encode()), (2, True, b"RACE two")],  # a context line from elsewhere
        [(7, True, b"RACE two")],  # past the end of the file
        [(2, True, b"RACE two\r")],  # not byte for byte
    ],
    ids=["match", "context", "past-end", "bytes"],
)
def test_lines_that_do_not_hold_are_searched_again_from_the_jailed_bytes(
    tmp_path: Path, make: Callable[..., Workspace], lines: list[tuple[int, bool, bytes]]
) -> None:
    rel = _plain(tmp_path)
    found = _voucher(make()).check(rel, 0, _reported(rel, *lines), (0, 10))
    assert isinstance(found, tuple)
    count, hits = found
    assert count == 1 and [(h.line, h.text) for h in hits] == [(2, "RACE two")]


def test_counts_are_never_taken_from_rg(tmp_path: Path, make: Callable[..., Workspace]) -> None:
    rel = _plain(tmp_path)
    found = _voucher(make(), mode="count").check(rel, 0, FileOutput(rel.encode(), count=5), (0, 0))
    assert isinstance(found, tuple) and found[0] == 1


def test_a_file_that_no_longer_matches_gives_nothing(tmp_path: Path, make: Callable[..., Workspace]) -> None:
    (tmp_path / "a.txt").write_text("nothing to see\n")
    assert _voucher(make()).check("a.txt", 0, _reported("a.txt", (1, True, b"RACE")), (0, 10)) is None
    assert _voucher(make(), mode="count").check("a.txt", 0, FileOutput(b"a.txt", count=1), (0, 0)) is None


@pytest.mark.parametrize(
    ("data", "lines"),
    [
        (b"\xef\xbb\xbfRACE one\nx\n", [(1, True, b"RACE one")]),  # rg reads past a UTF-8 byte-order mark
        (b"a\r\nRACE\r\n", [(2, True, b"RACE\r")]),  # rg keeps the carriage return
        (b"a\nRACE", [(2, True, b"RACE")]),  # no newline at the end
    ],
    ids=["bom", "crlf", "no-final-newline"],
)
def test_lines_hold_as_rg_prints_them(data: bytes, lines: list[tuple[int, bool, bytes]]) -> None:
    assert lines_hold(data, _reported("a.txt", *lines))


def _fake(path: str) -> FileOutput:
    """Output rg never printed for the file: it stands only when the file is trusted without being read."""
    return _reported(path, (1, True, b"RACE as rg saw it"))


def _census(ws: Workspace) -> Census:
    census = Census(ws, SearchRequest(pattern="RACE"), None)
    census.run()
    assert census.error is None
    return census


def _watched_tree(root: Path, **workspace: Any) -> Workspace:
    (root / "sub" / "deep").mkdir(parents=True)
    (root / "a.txt").write_text("RACE one\n")
    (root / "b.txt").write_text("RACE two\n")
    (root / "sub" / "deep" / "c.txt").write_text("RACE three\n")
    overrides: dict[tuple[str, str], Any] = {("workspace", "root"): str(root)}
    overrides.update({("workspace", key): value for key, value in workspace.items()})
    ws = Workspace(load_settings(None, env={}, overrides=overrides))
    _census(ws)  # the first walk builds the tree index and its watches
    return ws


def _trusting(ws: Workspace, *, mode: str = "content") -> tuple[Voucher, Census]:
    _, matcher = _matcher(mode)
    mark = ws.trees.watch_mark(ws.walk_options(include_hidden=None, include_ignored=False))
    census = _census(ws)  # after the mark, as the ripgrep engine takes them
    return Voucher(ws, matcher, census, mark, lines=mode == "content"), census


@pytest.fixture
def watched(tmp_path: Path) -> Iterator[Workspace]:
    ws = _watched_tree(tmp_path)
    yield ws
    ws.close()


def _position(census: Census, rel_path: str) -> int:
    position = census.position.get(rel_path)
    assert position is not None
    return position


def _assert_read_again(voucher: Voucher, position: int) -> None:
    found = voucher.check("a.txt", position, _fake("a.txt"), (0, 10))
    assert isinstance(found, tuple) and [h.text for h in found[1]] == ["RACE one"]  # the jailed bytes, not rg's


def test_a_quiet_watched_tree_is_trusted_without_reading(watched: Workspace) -> None:
    voucher, census = _trusting(watched)
    assert voucher.mark is not None
    reported = _fake("a.txt")
    assert voucher.check("a.txt", _position(census, "a.txt"), reported, (0, 10)) is reported
    counter, census = _trusting(watched, mode="count")
    counted = FileOutput(b"a.txt", count=5)
    assert counter.check("a.txt", _position(census, "a.txt"), counted, (0, 0)) is counted


def _rename_beside(root: Path) -> None:
    (root / "b.txt").rename(root / "b2.txt")


def _swap_and_back(root: Path) -> None:
    os.symlink(".env", root / "spare")
    for _ in range(2):
        os.rename(root / "a.txt", root / "held")
        os.rename(root / "spare", root / "a.txt")
        os.rename(root / "held", root / "spare")


def _deep_create(root: Path) -> None:
    (root / "sub" / "deep" / "new.txt").write_text("x\n")


def _hard_link_made(root: Path) -> None:
    os.link(root / "b.txt", root / "sub" / "b-link")


@pytest.mark.parametrize("observed", [False, True], ids=["stat-at-trust", "observed-while-rg-ran"])
@pytest.mark.parametrize("change", [_rename_beside, _swap_and_back, _deep_create, _hard_link_made])
def test_any_change_of_an_entry_after_the_mark_means_reading_again(
    tmp_path: Path, watched: Workspace, change: Callable[[Path], None], *, observed: bool
) -> None:
    voucher, census = _trusting(watched)
    position = _position(census, "a.txt")
    if observed:
        voucher.observe("a.txt", position)  # the stat taken as rg printed the file: only the watch can tell
    change(tmp_path)  # a.txt is itself again afterwards, or untouched
    _assert_read_again(voucher, position)


def test_another_file_under_the_name_is_read_again_even_in_a_quiet_tree(watched: Workspace) -> None:
    voucher, census = _trusting(watched)
    _assert_read_again(voucher, _position(census, "b.txt"))  # the census saw another inode at this position


def test_a_closed_index_is_never_quiet(watched: Workspace) -> None:
    voucher, census = _trusting(watched)
    assert voucher.mark is not None
    watched.trees.close()  # e.g. the index was dropped for another option set
    _assert_read_again(voucher, _position(census, "a.txt"))


@pytest.mark.parametrize(
    "workspace", [{"tree_index": "stat"}, {"tree_index": "off"}, {"max_depth": 1}], ids=["stat", "off", "truncated"]
)
def test_without_watches_over_the_whole_tree_everything_is_read_again(
    tmp_path: Path, workspace: dict[str, Any]
) -> None:
    ws = _watched_tree(tmp_path, **workspace)
    try:
        voucher, census = _trusting(ws)
        assert voucher.mark is None
        _assert_read_again(voucher, _position(census, "a.txt"))
    finally:
        ws.close()


def _root_on_another_device(monkeypatch: pytest.MonkeyPatch, ws: Workspace) -> None:
    """Make the root's descriptor report another device, as if the tree held a mount (one whose remote
    changes inotify may miss)."""
    real_fstat = os.fstat

    def fstat(fd: int) -> os.stat_result:
        info = real_fstat(fd)
        if fd != ws.jail.root_fd:
            return info
        fields = list(info)
        fields[stat.ST_DEV] += 1
        return os.stat_result(fields)

    monkeypatch.setattr(os, "fstat", fstat)


def test_a_directory_on_another_file_system_gives_no_mark(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a.txt").write_text("RACE one\n")
    ws = Workspace(load_settings(None, env={}, overrides={("workspace", "root"): str(tmp_path)}))
    try:
        _root_on_another_device(monkeypatch, ws)
        _census(ws)  # builds the index: its directories are not on the (reported) root device
        voucher, census = _trusting(ws)
        assert voucher.mark is None
        _assert_read_again(voucher, _position(census, "a.txt"))
    finally:
        ws.close()


def test_a_file_on_another_file_system_is_read_again(watched: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    _root_on_another_device(monkeypatch, watched)  # the index's directories were listed before: still marked
    voucher, census = _trusting(watched)
    assert voucher.mark is not None
    _assert_read_again(voucher, _position(census, "a.txt"))


def test_the_status_counts_how_rg_output_was_taken(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("RACE one\n")
    ws = Workspace(
        load_settings(None, env={}, overrides={("workspace", "root"): str(tmp_path), ("search", "engine"): "ripgrep"})
    )
    try:
        assert select.report(ws)["rg_output"] == {"files_unread": 0, "files_read_again": 0}
        args = SearchTextArgs(pattern="RACE")
        search_text(ws, args)  # no index yet, so no watch mark: read again
        assert select.report(ws)["rg_output"] == {"files_unread": 0, "files_read_again": 1}
        search_text(ws, args)  # a quiet watched tree
        assert select.report(ws)["rg_output"] == {"files_unread": 1, "files_read_again": 1}
        (tmp_path / "b.txt").write_text("other\n")  # a change before the search began (and its mark) is no reason
        search_text(ws, args)
        assert select.report(ws)["rg_output"] == {"files_unread": 2, "files_read_again": 1}
    finally:
        ws.close()


def test_an_observed_file_that_is_not_the_censuss_is_read_again(watched: Workspace) -> None:
    voucher, census = _trusting(watched)
    position = _position(census, "b.txt")
    voucher.observe("a.txt", position)
    assert not voucher.trust([("a.txt", position)])
    _assert_read_again(voucher, position)


def test_trust_uses_the_observed_stat_once_and_forgets_on_a_new_run(
    watched: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    voucher, census = _trusting(watched)
    position = _position(census, "a.txt")
    stats: list[str] = []
    real_stat = os.stat

    def counting_stat(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        stats.append(str(path))
        return real_stat(path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", counting_stat)
    voucher.observe("a.txt", position)
    assert voucher.trust([("a.txt", position)])
    assert stats == ["a.txt"]  # the observation, not a second stat after rg ended
    voucher.observe("a.txt", position)
    voucher.forget_observed()
    assert voucher.trust([("a.txt", position)])
    assert stats == ["a.txt"] * 3
