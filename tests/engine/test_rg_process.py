"""The rg process: the argv the server builds, its environment, Landlock, early stop and cancellation."""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from repo_sandbox.config.loader import load_settings
from repo_sandbox.engine import rgprocess, rgsearch, rgstate, ripgrep, select
from repo_sandbox.engine.request import SearchCancelled, SearchRequest, SearchStats
from repo_sandbox.engine.rgprocess import RgOptions, build_argv
from repo_sandbox.tools.search_text import SearchTextArgs, SearchTextContentResult, search_text
from repo_sandbox.tree.index import TreeIndex
from repo_sandbox.workspace import Workspace
from rg_spy import StartedRg

RG = ripgrep.locate()


def _content(result: Any) -> SearchTextContentResult:
    assert isinstance(result, SearchTextContentResult)
    return result


@pytest.fixture
def rg() -> ripgrep.Ripgrep:
    if RG is None:
        pytest.fail("no rg found: the ripgrep wheel is a dependency of this project on Linux")
    return RG


def _ws(root: Path, **limits: Any) -> Workspace:
    overrides: dict[tuple[str, str], Any] = {("workspace", "root"): str(root), ("search", "engine"): "ripgrep"}
    overrides.update({("limits", k): v for k, v in limits.items()})
    return Workspace(load_settings(None, env={}, overrides=overrides))


def test_argv_reads_no_config_follows_no_link_and_keeps_pattern_and_path_from_being_flags(rg: ripgrep.Ripgrep) -> None:
    request = SearchRequest(pattern="--pre=sh", glob="*.py")
    options = RgOptions(
        count_only=False,
        sorted_output=False,
        use_ignore_files=True,
        include_hidden=False,
        max_file_bytes=1000,
        deny_globs=(".env*",),
        glob="*.py",
    )
    argv = build_argv(rg, request, options)
    assert argv[1] == "--no-config"
    assert argv[argv.index("--engine") + 1] == "default"
    assert not {"-L", "--follow", "--pcre2", "-P", "--pre", "--search-zip", "-z"} & set(argv)
    assert argv[argv.index("--regexp") + 1] == "--pre=sh"
    assert argv[-2:] == ["--", "."]
    assert argv[argv.index("--max-filesize") + 1] == "1000"
    iglobs = [argv[i + 1] for i, flag in enumerate(argv) if flag == "--iglob"]
    assert iglobs == ["!*\n*", "!.env*"]  # names with a line break, then the deny-list
    assert "--no-ignore-parent" in argv and "--no-ignore-global" in argv and "--no-require-git" in argv


def test_the_grouped_deny_globs_exclude_exactly_what_one_glob_per_rule_does(
    rg: ripgrep.Ripgrep, tmp_path: Path
) -> None:
    root = tmp_path / "repo"
    ws = _ws(root.parent)
    rules = tuple(ws.settings.workspace.effective_deny)
    ws.close()
    names = [".env", ".ENV.local", "a.pem", "b.PEM", "id_rsa", "ID_RSA.pub", "secrets.yaml", "Secrets.YML", "x.key"]
    names += ["keys.txt", "pem", "env", "a.pem.txt", "credentials.json", "config.json", "notes.tfstate.md"]
    for directory in ("", "sub/", ".git/", ".ssh/", ".docker/", "deep/.docker/", "deep/.aws/", "a,b/"):
        for name in names:
            path = root / f"{directory}{name}"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("x\n")

    def listed(globs: list[str]) -> set[str]:
        argv = [rg.path, "--no-config", "--files", "--hidden", "--no-ignore"]
        for glob in globs:
            argv += ["--iglob", "!" + glob]
        done = subprocess.run([*argv, "--", "."], cwd=root, capture_output=True, text=True, timeout=30, check=False)
        assert done.returncode == 0, done.stderr
        return set(done.stdout.splitlines())

    grouped = rgprocess.deny_iglobs(rules)
    assert len(grouped) < len(rules)
    assert listed(grouped) == listed(list(rules))
    assert listed(rgprocess.deny_iglobs((*rules, "a,b"))) == listed([*rules, "a,b"])  # a ',' stays on its own


def test_rg_runs_with_an_environment_built_from_scratch(
    rg: ripgrep.Ripgrep, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "rgrc"
    config.write_text("--follow\n--pre=/bin/false\n")
    monkeypatch.setenv("RIPGREP_CONFIG_PATH", str(config))
    assert set(ripgrep.clean_env()) == {"LC_ALL"}
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "a.txt").write_text("hello\n")
    ws = _ws(tmp_path / "repo")
    try:
        assert [m.path for m in _content(search_text(ws, SearchTextArgs(pattern="hello"))).matches] == ["a.txt"]
    finally:
        ws.close()


def test_rg_cannot_read_outside_the_root_even_through_a_symlink_it_follows(rg: ripgrep.Ripgrep, tmp_path: Path) -> None:
    """Landlock: started inside a directory that is a symlink to the outside, rg still reads nothing there."""
    from repo_sandbox.engine.confine import launcher

    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("TOP SECRET\n")
    root = tmp_path / "repo"
    root.mkdir()
    (root / "link").symlink_to(tmp_path / "outside")
    ws = _ws(root)
    confined = launcher(ws.jail.root_fd, rg.path)
    assert confined is not None
    try:
        process = rgprocess.RgProcess(
            [rg.path, "--no-config", "--follow", "-n", "SECRET", "--", "link/secret.txt", "link"],
            ws.jail.root_fd,
            confined,
            count_only=False,
        )
        try:
            assert list(process.files()) == []
            assert process.finish() == 2  # permission denied, not found
        finally:
            process.close()
    finally:
        confined.close()
        ws.close()


def _many(root: Path, lines: int) -> None:
    root.mkdir(exist_ok=True)
    for i in range(20):
        (root / f"f{i:02}.txt").write_text("needle\n" * lines)


def test_a_full_first_page_stops_rg_early_and_kills_it(
    rg: ripgrep.Ripgrep, tmp_path: Path, started_rg: StartedRg
) -> None:
    _many(tmp_path / "repo", 5000)
    started = started_rg.processes
    ws = _ws(tmp_path / "repo")
    try:
        result = search_text(ws, SearchTextArgs(pattern="needle", limit=10))
    finally:
        ws.close()
    assert (len(_content(result).matches), result.truncated, result.next_offset) == (10, True, 10)
    assert 10 < result.total_matches < 20 * 5000  # a lower bound: the search stopped early
    assert len(started) == 2  # the unsorted run gave way to a sorted stream
    full_output = 20 * 5000 * len(b"f00.txt\x001:needle\n")
    assert all(p.proc.returncode is not None for p in started)  # both ended (killed, not left running)
    assert started[1].bytes_read < full_output / 4


def test_the_next_page_of_a_many_hit_search_starts_with_the_sorted_stream(
    rg: ripgrep.Ripgrep, tmp_path: Path, started_rg: StartedRg
) -> None:
    root = tmp_path / "repo"
    _many(root, 5000)

    def page(ws: Workspace, offset: int) -> list[tuple[str, int]]:
        started_rg.clear()
        return [
            (m.path, m.line)
            for m in _content(search_text(ws, SearchTextArgs(pattern="needle", limit=10, offset=offset))).matches
        ]

    ws = _ws(root)
    try:
        assert page(ws, 0) == [("f00.txt", n) for n in range(1, 11)]
        assert [("--sort" in a) for a in started_rg.argvs] == [False, True]  # unsorted, stopped, then the stream
        assert page(ws, 10) == [("f00.txt", n) for n in range(11, 21)]
        assert started_rg.argvs == []  # the next page goes on with the kept stream
        assert page(ws, 15) == [("f00.txt", n) for n in range(16, 26)]
        assert [("--sort" in a) for a in started_rg.argvs] == [True]  # any other page goes straight to a stream
        for i in range(1, 20):
            (root / f"f{i:02}.txt").unlink()
        (root / "f00.txt").write_text("needle\n" * 15)  # the tree changed: few hits now
        assert page(ws, 10) == [("f00.txt", n) for n in range(11, 16)]  # a stale hint: same results
        assert page(ws, 10) == [("f00.txt", n) for n in range(11, 16)]
        assert [("--sort" in a) for a in started_rg.argvs] == [False]  # and the hint is gone
    finally:
        ws.close()


@pytest.mark.parametrize("start", ["src", "."])
def test_rg_is_told_the_size_limit_once_a_census_met_a_larger_file(
    rg: ripgrep.Ripgrep, tmp_path: Path, started_rg: StartedRg, start: str
) -> None:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.txt").write_text("needle small\n")
    (root / "src" / "b.txt").write_text("nothing\n")

    def search(ws: Workspace, path: str = ".") -> tuple[list[str], int]:
        started_rg.clear()
        result = _content(search_text(ws, SearchTextArgs(pattern="needle", path=path)))
        return sorted(m.path for m in result.matches), result.skipped_too_large

    ws = _ws(root, max_file_bytes=4096)
    try:
        assert search(ws) == (["src/a.txt"], 0)
        assert started_rg.argvs and all(
            "--max-filesize" not in argv for argv in started_rg.argvs
        )  # no stat of every file for rg
        (root / "src" / "big.txt").write_text("needle big\n" * 1000)  # over the limit
        assert search(ws, start) == (["src/a.txt"], 1)  # rg read the large file; the census kept it out
        assert all("--max-filesize" not in argv for argv in started_rg.argvs)
        assert search(ws, "src") == (["src/a.txt"], 1)  # from now on rg is told, whatever the start
        assert started_rg.argvs and all(argv[argv.index("--max-filesize") + 1] == "4096" for argv in started_rg.argvs)
    finally:
        ws.close()


def test_once_a_census_finds_ignore_files_rg_reads_otherwise_rg_starts_without_them(
    rg: ripgrep.Ripgrep, tmp_path: Path, started_rg: StartedRg
) -> None:
    """Inside a nested repository rg, told `--no-require-git`, goes on applying the outer `.gitignore`: the
    first search runs rg again with `--no-ignore`; the next ones start so instead of running rg twice."""
    root = tmp_path / "repo"
    (root / "vendor" / "lib" / ".git").mkdir(parents=True)
    (root / ".gitignore").write_text("*.c\n")
    (root / "vendor" / "lib" / "x.c").write_text("needle\n")
    (root / "top.c").write_text("needle\n")

    def search(ws: Workspace) -> list[str]:
        started_rg.clear()
        return sorted(m.path for m in _content(search_text(ws, SearchTextArgs(pattern="needle"))).matches)

    ws = _ws(root)
    try:
        assert search(ws) == ["vendor/lib/x.c"]
        assert [("--no-ignore" in argv) for argv in started_rg.argvs] == [False, True]
        assert search(ws) == ["vendor/lib/x.c"]
        assert [("--no-ignore" in argv) for argv in started_rg.argvs] == [True]
        (root / "vendor" / "lib" / ".git").rmdir()  # no nested repository any more
        assert search(ws) == []  # a stale hint: the same results
        assert search(ws) == []
        assert [("--no-ignore" in argv) for argv in started_rg.argvs] == [False]  # and the hint is gone
    finally:
        ws.close()


def test_cancelling_a_search_kills_its_rg(rg: ripgrep.Ripgrep, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _many(tmp_path / "repo", 5000)
    cancel = threading.Event()
    started: list[rgprocess.RgProcess] = []
    real_files = rgprocess.RgProcess.files

    def cancel_on_first_file(self: rgprocess.RgProcess) -> Any:
        started.append(self)
        for output in real_files(self):
            cancel.set()
            yield output

    monkeypatch.setattr(rgprocess.RgProcess, "files", cancel_on_first_file)
    ws = _ws(tmp_path / "repo")
    try:
        with pytest.raises(SearchCancelled):
            search_text(ws, SearchTextArgs(pattern="needle", limit=10), cancel=cancel)
    finally:
        ws.close()
    assert started and all(p.proc.returncode is not None for p in started)


def test_a_pattern_rg_refuses_is_answered_by_the_python_engine(rg: ripgrep.Ripgrep, tmp_path: Path) -> None:
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "a.txt").write_text("x\n")
    ws = _ws(tmp_path / "repo")
    try:
        # \p{Greek_And_Coptic_Unknown} is no Unicode class: rg refuses it, and so does the Python engine.
        with pytest.raises(Exception, match="compile|dialect|pattern"):
            list(rgsearch.iter_file_hits(ws, rg, SearchRequest(pattern=r"\p{NoSuchClass}"), SearchStats()))
    finally:
        ws.close()


@pytest.mark.parametrize(
    "script",
    [
        "exit 126",  # what a child that could not confine itself reports
        "echo 'rg: something broke' >&2; exit 2",
        "echo 'f.txt'; sleep 0; exit 3",
    ],
)
def test_an_rg_that_fails_leaves_the_answer_to_the_python_engine(tmp_path: Path, script: str) -> None:
    fake = tmp_path / "bin" / "rg"
    fake.parent.mkdir()
    fake.write_text(f'#!/bin/sh\nif [ "$1" = --version ]; then echo "ripgrep 14.1.0"; exit 0; fi\n{script}\n')
    fake.chmod(0o755)
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "f.txt").write_text("hello\n")
    ripgrep.forget()
    overrides: dict[tuple[str, str], Any] = {("workspace", "root"): str(tmp_path / "repo")}
    ws = Workspace(load_settings(None, env={}, overrides={**overrides, ("search", "ripgrep_path"): str(fake)}))
    try:
        assert select.report(ws)["ripgrep"]["source"] == "configured"  # the failing rg is the one in use
        assert str(tmp_path) not in str(select.report(ws))  # the status resource shows no host path
        result = _content(search_text(ws, SearchTextArgs(pattern="hello")))
        assert [(m.path, m.line) for m in result.matches] == [("f.txt", 1)]
        assert (result.files_searched, result.total_matches) == (1, 1)
    finally:
        ws.close()
        ripgrep.forget()


@pytest.mark.parametrize(
    ("on_path", "expected"),
    [
        ("13.0.0", "wheel"),  # an older system rg: the wheel's is newer and wins
        ("99.0.0", "path"),  # a newer one on PATH wins over the wheel's
    ],
)
def test_the_newest_rg_found_is_used_and_status_names_its_version(
    rg: ripgrep.Ripgrep, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, on_path: str, expected: str
) -> None:
    system = tmp_path / "bin" / "rg"
    system.parent.mkdir()
    system.write_text(f'#!/bin/sh\nif [ "$1" = --version ]; then echo "ripgrep {on_path}"; exit 0; fi\nexit 2\n')
    system.chmod(0o755)
    wheel = ripgrep.locate()
    assert wheel is not None and wheel.source == "wheel", "this test needs the project's ripgrep wheel"
    monkeypatch.setenv("PATH", f"{system.parent}:/usr/bin:/bin")
    ripgrep.forget()
    try:
        found = ripgrep.locate()
        assert found is not None and found.source == expected
        assert found.describe()["version"] == (on_path if expected == "path" else ".".join(map(str, wheel.version)))
    finally:
        ripgrep.forget()


def test_a_search_while_the_tree_index_is_built_starts_rg_at_once_and_reads_what_it_reports_again(
    rg: ripgrep.Ripgrep, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, started_rg: StartedRg
) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    for name, text in (("a.txt", "needle a\n"), ("b.txt", "needle b\n"), ("c.txt", "nothing\n")):
        (root / name).write_text(text)
    building, release = threading.Event(), threading.Event()
    real_rebuild = TreeIndex._rebuild  # pyright: ignore[reportPrivateUsage]

    def slow_rebuild(self: TreeIndex, *args: Any, **kwargs: Any) -> None:
        building.set()
        release.wait(30)
        real_rebuild(self, *args, **kwargs)

    monkeypatch.setattr(TreeIndex, "_rebuild", slow_rebuild)
    ws = _ws(root)
    results: list[Any] = []
    try:
        options = ws.walk_options(include_hidden=None, include_ignored=False)
        builder = threading.Thread(target=ws.trees.snapshot, args=(options,))
        builder.start()
        assert building.wait(10)
        searcher = threading.Thread(target=lambda: results.append(search_text(ws, SearchTextArgs(pattern="needle"))))
        searcher.start()
        assert started_rg.any.wait(10)  # rg runs while the index is still being built
        assert builder.is_alive() and searcher.is_alive()  # the census waits for the index
        spare = max(1, len(os.sched_getaffinity(0)) - 1)  # rg leaves a core to the build and the census
        first = started_rg.argvs[0]
        assert first[first.index("--threads") + 1] == str(spare)
        release.set()
        builder.join(30)
        searcher.join(30)
        assert [(m.path, m.text) for m in _content(results[0]).matches] == [
            ("a.txt", "needle a"),
            ("b.txt", "needle b"),
        ]
        counts = rgstate.counts(ws)
        assert counts["rg_output"] == {"files_unread": 0, "files_read_again": 2}  # no mark preceded rg: all read
        started_rg.clear()
        again = _content(search_text(ws, SearchTextArgs(pattern="needle")))
        assert [m.path for m in again.matches] == ["a.txt", "b.txt"]
        assert started_rg.argvs and all("--threads" not in argv for argv in started_rg.argvs)  # rg's own choice again
        counts = rgstate.counts(ws)
        # the first census kept a memo all the same
        assert counts["census"] == {"taken": 2, "from_memo": 1, "taken_ahead": 0}
        assert counts["rg_output"] == {"files_unread": 2, "files_read_again": 2}  # and rg is believed again
    finally:
        release.set()
        ws.close()


@pytest.mark.parametrize("mode", ["stat", "off"])
def test_rg_keeps_its_own_thread_count_where_no_watch_mark_can_be_had(
    rg: ripgrep.Ripgrep, tmp_path: Path, started_rg: StartedRg, mode: str
) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "a.txt").write_text("needle\n")
    overrides: dict[tuple[str, str], Any] = {
        ("workspace", "root"): str(root),
        ("search", "engine"): "ripgrep",
        ("workspace", "tree_index"): mode,
    }
    ws = Workspace(load_settings(None, env={}, overrides=overrides))
    try:
        for _ in range(2):
            assert [m.path for m in _content(search_text(ws, SearchTextArgs(pattern="needle"))).matches] == ["a.txt"]
    finally:
        ws.close()
    assert started_rg.argvs and all("--threads" not in argv for argv in started_rg.argvs)


TRICKY_OUTPUT: dict[str, bytes] = {
    "a-1:2.txt": b"x 12:TODO here\nTODO\r\nplain\n",
    "b 3-4.txt": b'TODO: binary file matches (found "\\0" byte around offset 7)\n',
    "c.txt": b"one\nTODO a\ntwo\n--\nthree\nfour\nTODO b\nfive\n",
    "d.txt": b"TODO first\n" + (b"z" * 99 + b"\n") * 800 + b"TODO\x00after\n",  # the NUL is past rg's first buffer
    "e.txt": b"\x7f TODO \t\x0b\x0c\n1:2:TODO\n-3-TODO\n",
}
"""Files whose lines, as rg prints them, look like other kinds of line: a path with ':' and digits, a match
that reads as a binary notice, a real notice (a NUL after a match), a `--` line inside the text."""


@pytest.mark.parametrize(
    "arguments",
    [
        {},
        {"context": 1},
        {"context": 2, "limit": 3},
        {"output_mode": "count"},
        {"output_mode": "files_with_matches"},
    ],
    ids=["content", "context 1", "context 2, paged", "count", "files"],
)
def test_rg_output_is_read_line_for_line_as_the_python_engine_reads_the_files(
    rg: ripgrep.Ripgrep, tmp_path: Path, arguments: dict[str, Any]
) -> None:
    for name, data in TRICKY_OUTPUT.items():
        (tmp_path / name).write_bytes(data)
    results: dict[str, list[Any]] = {}
    for engine in ("ripgrep", "python"):
        overrides: dict[tuple[str, str], Any] = {("workspace", "root"): str(tmp_path), ("search", "engine"): engine}
        ws = Workspace(load_settings(None, env={}, overrides=overrides))
        try:
            search_text(ws, SearchTextArgs(pattern="TODO"))  # builds the tree index: rg's lines are trusted next
            read_again = select.report(ws).get("rg_output", {}).get("files_read_again")
            pages: list[Any] = []
            offset: int | None = 0
            while offset is not None:
                page = search_text(
                    ws, SearchTextArgs.model_validate({"pattern": "TODO", **arguments, "offset": offset})
                )
                pages.append(page.model_dump())
                offset = page.next_offset
            results[engine] = pages
            if engine == "ripgrep":  # rg's output itself made the pages, not a second read of the files
                assert select.report(ws)["rg_output"]["files_read_again"] == read_again
        finally:
            ws.close()
    assert results["ripgrep"] == results["python"]
    shown = str(results["ripgrep"])
    assert "a-1:2.txt" in shown and "b 3-4.txt" in shown and "e.txt" in shown
    assert "d.txt" not in shown  # its NUL comes after the census's sniff: rg's notice voids its match
