"""What rg reports is believed only as far as the jail reads the same: one row per state a reported file can
be in by the time it is read again (the race test in tests/security drives the same code with real swaps)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from repo_sandbox.config.loader import load_settings
from repo_sandbox.engine.pymatch import BatchMatcher, MatchState
from repo_sandbox.engine.pysearch import Deadline, Query
from repo_sandbox.engine.request import SearchRequest
from repo_sandbox.engine.rgprocess import FileOutput
from repo_sandbox.engine.vouch import Voucher, jailed_bytes, lines_hold
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


REFUSED: list[Callable[[Path], str]] = [
    _symlink_to_denied,
    _directory_link_to_git,
    _hard_link,
    _fifo,
    _nul_past_head,
    _too_large,
    _gone,
]


@pytest.fixture(params=["openat2", "walk"])
def make(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[..., Workspace]]:
    opened: list[Workspace] = []

    def factory(**workspace: Any) -> Workspace:
        overrides: dict[tuple[str, str], Any] = {
            ("workspace", "root"): str(tmp_path),
            ("limits", "max_file_bytes"): 4096,
        }
        overrides.update({("workspace", key): value for key, value in workspace.items()})
        ws = Workspace(load_settings(None, env={}, overrides=overrides))
        opened.append(ws)
        if request.param == "openat2" and not ws.jail.uses_openat2:
            pytest.skip("openat2 is not available on this kernel")
        ws.jail.uses_openat2 = request.param == "openat2"
        return ws

    yield factory
    for ws in opened:
        ws.close()


def _voucher(ws: Workspace, *, mode: str = "content", context: int = 0) -> Voucher:
    request = SearchRequest(pattern="RACE", mode=mode, context=context)  # type: ignore[arg-type]
    query = Query.compile("RACE", fixed_strings=False, case_sensitive=True, multiline=False)
    return Voucher(ws, BatchMatcher(query, request, Deadline(5), MatchState()), lines=mode == "content")


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
    assert _voucher(ws, mode=mode).check(rel, reported, (0, 10)) is None


def test_a_hard_link_is_read_when_the_policy_allows_hard_links(tmp_path: Path, make: Callable[..., Workspace]) -> None:
    (tmp_path / "b.txt").write_text("RACE here\n")
    os.link(tmp_path / "b.txt", tmp_path / "a.txt")
    ws = make(allow_hard_links=True)
    reported = _reported("a.txt", (1, True, b"RACE here"))
    assert _voucher(ws).check("a.txt", reported, (0, 10)) is reported


def test_lines_that_hold_keep_rgs_output_itself(tmp_path: Path, make: Callable[..., Workspace]) -> None:
    rel = _plain(tmp_path)
    reported = _reported(rel, (1, False, b"one"), (2, True, b"RACE two"), (3, False, b"three"))
    assert _voucher(make(), context=1).check(rel, reported, (0, 10)) is reported


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
    found = _voucher(make()).check(rel, _reported(rel, *lines), (0, 10))
    assert isinstance(found, tuple)
    count, hits = found
    assert count == 1 and [(h.line, h.text) for h in hits] == [(2, "RACE two")]


def test_counts_are_never_taken_from_rg(tmp_path: Path, make: Callable[..., Workspace]) -> None:
    rel = _plain(tmp_path)
    found = _voucher(make(), mode="count").check(rel, FileOutput(rel.encode(), count=5), (0, 0))
    assert isinstance(found, tuple) and found[0] == 1


def test_a_file_that_no_longer_matches_gives_nothing(tmp_path: Path, make: Callable[..., Workspace]) -> None:
    (tmp_path / "a.txt").write_text("nothing to see\n")
    assert _voucher(make()).check("a.txt", _reported("a.txt", (1, True, b"RACE")), (0, 10)) is None
    assert _voucher(make(), mode="count").check("a.txt", FileOutput(b"a.txt", count=1), (0, 0)) is None


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
