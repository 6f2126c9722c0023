"""Listings agree with git: `search_files "**"` (hidden files included) and every engine's search_text list
what `git ls-files --cached --others --exclude-standard` lists, minus the documented differences
(docs/search.md): symlinks are never listed, a submodule entry is not a file, deny-listed paths never show.

Each row is a repository generated from scratch and checked against the git binary itself; the last row
holds every rule at once, and the rows after it check what tracking must never do (show a denied file) and
what a crafted `.git` must not gain.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from repo_sandbox.config.loader import load_settings
from repo_sandbox.engine import select
from repo_sandbox.tools.search_files import SearchFilesArgs, search_files
from repo_sandbox.tools.search_text import SearchTextArgs, search_text
from repo_sandbox.workspace import Workspace
from tree_files import write, write_tree

GIT = shutil.which("git")
TOKEN = "PARITY"
ENGINES = ("python", "ripgrep")

Row = dict[str, Any]
"""files: path -> content (None: the token); ignores: path -> ignore file bytes; exclude: info/exclude
bytes; tracked: paths added with `git add -f`; symlinks: path -> target; gitlink: a submodule entry."""

ROWS: dict[str, Row] = {
    "negation": {"ignores": {".gitignore": b"*.log\n!keep.log\n"}, "files": ["a.log", "keep.log", "b.txt"]},
    "double star": {
        "ignores": {".gitignore": b"**/gen/**\nlogs/**/*.out\n"},
        "files": ["gen/a.txt", "src/gen/b.txt", "src/genx/c.txt", "logs/x.out", "logs/d/e/y.out", "logs/z.txt"],
    },
    "anchoring": {
        "ignores": {".gitignore": b"/top.txt\nsub/mid.txt\n", "sub/.gitignore": b"/here.txt\n"},
        "files": ["top.txt", "sub/top.txt", "sub/mid.txt", "sub/here.txt", "sub/deep/here.txt", "x/sub/mid.txt"],
    },
    "directory only": {
        "ignores": {".gitignore": b"out/\nbuild\n"},
        "files": ["out/a.txt", "src/out", "build/b.txt", "src/build", "keep.txt"],
    },
    "crlf": {"ignores": {".gitignore": b"*.tmp\r\n!k.tmp\r\ndir/\r\n"}, "files": ["a.tmp", "k.tmp", "dir/x", "y"]},
    "trailing spaces": {
        "ignores": {".gitignore": b"spaced.txt   \nescaped\\ \n"},
        "files": ["spaced.txt", "escaped ", "escaped", "other.txt"],
    },
    "posix class": {
        "ignores": {".gitignore": b"file[[:digit:]].txt\n[[:upper:]]*.md\n"},
        "files": ["file1.txt", "filex.txt", "README.md", "notes.md"],
    },
    "byte-order mark": {
        "ignores": {".gitignore": b"\xef\xbb\xbf*.bak\n!keep.bak\n"},
        "files": ["a.bak", "keep.bak", "b.txt"],
    },
    "info/exclude": {
        "ignores": {".gitignore": b"!local.keep\n"},
        "exclude": b"# local rules\n*.local\nscratch/\n*.keep\n",
        "files": ["a.local", "scratch/s.txt", "b.txt", "local.keep", "other.keep"],
    },
    "tracked but ignored": {
        "ignores": {".gitignore": b"build/\n*.log\n"},
        "files": [
            "build/config.json",
            "build/other.json",
            "build/deep/t.txt",
            "build/deep/u.txt",
            "fixture.log",
            "run.log",
            "src/a.py",
        ],
        "tracked": ["build/config.json", "build/deep/t.txt", "fixture.log"],
    },
    "everything": {
        "ignores": {
            ".gitignore": b"\xef\xbb\xbf*.o\r\n!keep.o\nbuild/\n/root.txt  \n**/cache/**\nfile[[:digit:]]\n",
            "pkg/.gitignore": b"/local.txt\n*.gen\n!important.gen\n",
        },
        "exclude": b"*.swp\nnotes/\n",
        "files": [
            "a.o",
            "keep.o",
            "build/x.txt",
            "build/tracked.txt",
            "root.txt",
            "pkg/root.txt",
            "pkg/local.txt",
            "pkg/sub/local.txt",
            "pkg/a.gen",
            "pkg/important.gen",
            "a/cache/b/c.txt",
            "file1",
            "fileA",
            ".hidden/h.txt",
            ".swp",
            "x.swp",
            "notes/n.txt",
            "committed.o",
            "src/main.c",
        ],
        "tracked": ["build/tracked.txt", "committed.o", "src/main.c"],
        "symlinks": {"link.txt": "src/main.c", "build/link": "../src"},
        "gitlink": "vendor/lib",
        "denied": [".env", "build/.env", "secrets/id_rsa"],
    },
}


def _git(root: Path, *args: str) -> bytes:
    assert GIT is not None
    env = {"PATH": "/usr/bin:/bin", "HOME": str(root.parent), "GIT_CONFIG_NOSYSTEM": "1", "LANG": "C.UTF-8"}
    return subprocess.run([GIT, *args], cwd=root, env=env, check=True, capture_output=True).stdout


def make_repo(root: Path, row: Row) -> Path:
    root.mkdir(parents=True)
    _git(root, "init", "-q", ".")
    for path, content in row["ignores"].items():
        write(root / path, content)
    if "exclude" in row:
        write(root / ".git" / "info" / "exclude", row["exclude"])
    for path in [*row["files"], *row.get("denied", [])]:
        write(root / path, f"{TOKEN} {path}\n")
    for path, target in row.get("symlinks", {}).items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).symlink_to(target)
    if "gitlink" in row:
        (root / row["gitlink"]).mkdir(parents=True)  # a submodule that was never checked out: an empty directory
        _git(root, "update-index", "--add", "--cacheinfo", f"160000,{'1' * 40},{row['gitlink']}")
    if row.get("tracked") or row.get("denied"):
        _git(root, "add", "-f", "--", *row.get("tracked", []), *row.get("denied", []))
    return root


def git_listing(root: Path) -> set[str]:
    out = _git(root, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    return {os.fsdecode(name) for name in out.split(b"\0") if name}


def documented_differences(ws: Workspace, root: Path, row: Row, listed: set[str]) -> set[str]:
    """What git lists and the server, by design, does not (docs/search.md)."""
    symlinks = {p for p in listed if (root / p).is_symlink()}
    gitlinks = {row["gitlink"]} if "gitlink" in row else set()
    denied = {p for p in listed if ws.jail.is_denied(p)}
    return symlinks | gitlinks | denied


def workspace(root: Path, engine: str = "python") -> Workspace:
    overrides: dict[tuple[str, str], Any] = {("workspace", "root"): str(root), ("search", "engine"): engine}
    return Workspace(load_settings(None, env={}, overrides=overrides))


def listed_files(ws: Workspace) -> set[str]:
    result = search_files(ws, SearchFilesArgs(pattern="**", include_hidden=True, limit=1000))
    assert not result.truncated
    return set(result.files)


@pytest.mark.skipif(GIT is None, reason="git is not installed")
@pytest.mark.parametrize("name", list(ROWS))
def test_search_files_lists_what_git_lists(tmp_path: Path, name: str) -> None:
    row = ROWS[name]
    root = make_repo(tmp_path / "repo", row)
    expected = git_listing(root)
    ws = workspace(root)
    try:
        expected -= documented_differences(ws, root, row, expected)
        assert listed_files(ws) == expected
    finally:
        ws.close()


@pytest.mark.slow
@pytest.mark.skipif(GIT is None, reason="git is not installed")
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", ["byte-order mark", "info/exclude", "tracked but ignored", "everything"])
def test_search_text_searches_what_git_lists(tmp_path: Path, name: str, engine: str) -> None:
    row = ROWS[name]
    root = make_repo(tmp_path / "repo", row)
    expected = git_listing(root)
    ws = workspace(root, engine)
    try:
        assert select.report(ws)["engine"] == engine
        expected -= documented_differences(ws, root, row, expected)
        expected = {p for p in expected if TOKEN in (root / p).read_text(encoding="utf-8")}
        args = SearchTextArgs(pattern=TOKEN, include_hidden=True, output_mode="files_with_matches", limit=1000)
        result: Any = search_text(ws, args)
        assert set(result.files) == expected
        assert {p for p in listed_files(ws) if p in expected} == expected  # the tree index agrees as well
    finally:
        ws.close()


@pytest.mark.skipif(GIT is None, reason="git is not installed")
def test_a_change_to_the_index_or_exclude_file_shows_in_the_next_listing(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo", {"ignores": {".gitignore": b"*.log\n"}, "files": ["a.log", "b.txt"]})
    ws = workspace(root)
    try:
        assert listed_files(ws) == {".gitignore", "b.txt"}
        _git(root, "add", "-f", "a.log")
        assert listed_files(ws) == {".gitignore", "a.log", "b.txt"}
        write(root / ".git" / "info" / "exclude", "b.txt\n")
        assert listed_files(ws) == {".gitignore", "a.log"}
        _git(root, "rm", "-q", "--cached", "a.log")
        assert listed_files(ws) == {".gitignore"}
    finally:
        ws.close()


@pytest.mark.skipif(GIT is None, reason="git is not installed")
def test_outside_a_repository_nothing_changes(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "plain", {".gitignore": "*.log\n", "a.log": "x\n", "b.txt": "x\n"})
    (root / "git").mkdir()
    ws = workspace(root)
    try:
        assert listed_files(ws) == {".gitignore", "b.txt"}
    finally:
        ws.close()


CRAFTED: list[tuple[str, Any]] = [
    # (what is crafted, how): each leaves the ignored, denied and outside files hidden
    ("index is a symlink to another repository's index", "symlink-index"),
    ("exclude is a symlink to a file outside", "symlink-exclude"),
    (".git is a gitdir file pointing elsewhere", "gitdir-file"),
    ("core.fsmonitor names a program", "fsmonitor"),
    ("index lists a denied file", "denied"),
    ("index is garbage", "garbage-index"),
    ("index is a FIFO", "fifo-index"),
    ("exclude is a FIFO", "fifo-exclude"),
    ("info is a symlink to a directory outside", "symlink-info"),
    ("index lists a file beneath a symlinked directory", "beneath-symlink"),
]


@pytest.mark.slow
@pytest.mark.skipif(GIT is None, reason="git is not installed")
@pytest.mark.parametrize(("what", "how"), CRAFTED, ids=[c[0] for c in CRAFTED])
def test_a_crafted_git_directory_cannot_show_more(tmp_path: Path, what: str, how: str) -> None:
    other = make_repo(tmp_path / "other", {"ignores": {}, "files": ["a.log"], "tracked": ["a.log"]})
    root = make_repo(tmp_path / "repo", {"ignores": {".gitignore": b"*.log\n"}, "files": ["a.log", "b.txt"]})
    write(root / ".env", "SECRET=1\n")
    marker = tmp_path / "ran"
    git_dir = root / ".git"
    outside = tmp_path / "outside-rules"
    write(outside, "b.txt\n")
    if how == "symlink-index":
        (git_dir / "index").unlink(missing_ok=True)
        (git_dir / "index").symlink_to(other / ".git" / "index")
    elif how == "symlink-exclude":
        (git_dir / "info" / "exclude").unlink(missing_ok=True)
        (git_dir / "info" / "exclude").symlink_to(outside)
    elif how == "gitdir-file":
        shutil.rmtree(git_dir)
        write(root / ".git", f"gitdir: {other / '.git'}\n")
    elif how == "fsmonitor":
        hook = write(tmp_path / "hook.sh", f"#!/bin/sh\ntouch {marker}\n")
        hook.chmod(0o755)
        _git(root, "add", "-f", "a.log")
        _git(root, "config", "core.fsmonitor", str(hook))
    elif how == "denied":
        _git(root, "add", "-f", ".env")
    elif how == "garbage-index":
        write(git_dir / "index", b"DIRC" + os.urandom(200))
    elif how == "fifo-index":
        (git_dir / "index").unlink(missing_ok=True)
        os.mkfifo(git_dir / "index")
    elif how == "fifo-exclude":
        (git_dir / "info" / "exclude").unlink(missing_ok=True)
        os.mkfifo(git_dir / "info" / "exclude")
    elif how == "symlink-info":
        shutil.rmtree(git_dir / "info", ignore_errors=True)
        (git_dir / "info").symlink_to(outside.parent)
        (outside.parent / "exclude").write_text("b.txt\n")
    elif how == "beneath-symlink":
        write(tmp_path / "elsewhere" / "secret.txt", "outside\n")
        (root / "ext").symlink_to(tmp_path / "elsewhere")
        _git(root, "update-index", "--add", "--cacheinfo", f"100644,{'3' * 40},ext/secret.txt")
    ws = workspace(root)
    try:
        files = listed_files(ws)
        assert ".env" not in files
        assert not any(p.startswith("ext") for p in files)
        assert "b.txt" in files  # an outside exclude file is not read
        assert ("a.log" in files) == (how == "fsmonitor")  # tracked there, and only there
        assert not marker.exists()
    finally:
        ws.close()


def _nested_repositories(root: Path) -> dict[str, Path]:
    """An outer repository whose ignore rules would hide files of the repositories nested in it: one cloned in
    place (`vendor/lib`, a `.git` directory) and one whose `.git` is a `gitdir:` file, as a submodule's is."""
    make_repo(root, {"ignores": {".gitignore": b"*.c\nbuild/\n", ".ignore": b"skip.txt\n"}, "files": ["a.c", "b.txt"]})
    write(root / ".git" / "info" / "exclude", b"*.tmp\n")
    nested = {"vendor/lib": root / "vendor" / "lib", "ext/mod": root / "ext" / "mod"}
    for name, path in nested.items():
        path.mkdir(parents=True)
        if name == "ext/mod":
            _git(path, "init", "-q", f"--separate-git-dir={root.parent / 'mod.git'}", ".")
        else:
            _git(path, "init", "-q", ".")
        write(path / ".gitignore", b"*.o\n")
        for file in ("x.c", "y.o", "build/out.txt", "z.tmp", "src/deep.c", "skip.txt", "keep.txt"):
            write(path / file, f"{TOKEN} {file}\n")
        _git(path, "add", "-f", "y.o")  # tracked by the nested repository, ignored by its rules
    return nested


@pytest.mark.skipif(GIT is None, reason="git is not installed")
@pytest.mark.parametrize("engine", ENGINES)
def test_a_nested_repository_has_its_own_ignore_rules(tmp_path: Path, engine: str) -> None:
    """git and ripgrep apply a directory's own repository's rules inside it: the outer `.gitignore` files,
    `info/exclude` and index stop at a directory holding `.git` (`.ignore` files go on, as in ripgrep). Its
    own index is not read: a file it tracks but ignores is hidden there (documented)."""
    root = tmp_path / "repo"
    nested = _nested_repositories(root)
    expected = {p for p in git_listing(root) if not p.endswith("/")}  # git lists a nested repository as `dir/`
    for name, path in nested.items():
        expected |= {f"{name}/{p}" for p in git_listing(path) if p != "y.o"}
    expected = {p for p in expected if not p.endswith("skip.txt")}  # the outer .ignore
    ws = workspace(root, engine)
    try:
        listed = listed_files(ws)
        assert listed == expected
        assert "vendor/lib/x.c" in listed and "ext/mod/build/out.txt" in listed and "a.c" not in listed
        args = SearchTextArgs(pattern=TOKEN, include_hidden=True, output_mode="files_with_matches", limit=1000)
        result: Any = search_text(ws, args)
        assert set(result.files) == {p for p in expected if TOKEN in (root / p).read_text(encoding="utf-8")}
        below = search_files(ws, SearchFilesArgs(pattern="**", path="vendor/lib/src", limit=1000))
        assert below.files == ["vendor/lib/src/deep.c"]  # a walk that starts inside sees the same rules
    finally:
        ws.close()
