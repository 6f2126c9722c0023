"""The walker: ignore-file semantics, hidden files, symlinks never followed, caps, and a mid-walk swap."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from repo_sandbox.fs.walk import Walk
from repo_sandbox.workspace import Workspace
from tree_files import write

WorkspaceFactory = Callable[..., Workspace]


def walked(ws: Workspace, path: str = ".", *, hidden: bool = False, ignored: bool = False) -> list[str]:
    with ws.walk(path, include_hidden=hidden, include_ignored=ignored) as walk:
        return [entry.rel_path for entry in walk]


def walk_truncated(ws: Workspace, path: str = ".") -> tuple[list[str], bool]:
    with ws.walk(path, include_hidden=False, include_ignored=False) as walk:
        files = [entry.rel_path for entry in walk]
        return files, walk.truncated


# -- .gitignore / .ignore semantics ------------------------------------------------------------------


@pytest.fixture
def ignore_tree(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    write(root / ".gitignore", "*.log\n!keep.log\nout/\n/top_only.txt\nbuild\n")
    write(root / "a.log")
    write(root / "keep.log")
    write(root / "top_only.txt")
    write(root / "out" / "artifact.txt")
    write(root / "build" / "x.py")
    write(root / "src" / "out")  # a FILE named out: the directory-only rule 'out/' does not hide it
    write(root / "src" / "top_only.txt")  # '/top_only.txt' is anchored to the root
    write(root / "src" / "debug.log")
    write(root / "src" / ".gitignore", "!debug.log\nlocal_only.txt\n/anchored.py\n")
    write(root / "src" / "local_only.txt")
    write(root / "src" / "anchored.py")
    write(root / "src" / "deeper" / "anchored.py")  # 'src/.gitignore: /anchored.py' is anchored to src/
    write(root / "src" / "deeper" / "local_only.txt")  # unanchored rules apply at any depth below
    write(root / "tmp" / ".gitignore", "*.tmp\n")
    write(root / "tmp" / ".ignore", "!important.tmp\n")
    write(root / "tmp" / "junk.tmp")
    write(root / "tmp" / "important.tmp")
    write(root / "neg" / ".gitignore", "*\n!*/\n!*.keep\n")
    write(root / "neg" / "dropped.txt")
    write(root / "neg" / "sub" / "kept.keep")
    write(root / "neg" / "sub" / "dropped.txt")
    return root


def test_nested_ignore_files_apply_negation_anchors_directory_rules_and_depth(
    ignore_tree: Path, make_ws: WorkspaceFactory
) -> None:
    assert walked(make_ws(ignore_tree)) == [
        "keep.log",  # '!keep.log' re-includes it
        "neg/sub/kept.keep",  # '*' then '!*/' then '!*.keep'
        "src/debug.log",  # the deeper '!debug.log' overrides the root's '*.log'
        "src/deeper/anchored.py",  # '/anchored.py' in src/ only hides src/anchored.py
        "src/out",
        "src/top_only.txt",
        "tmp/important.tmp",  # .ignore's '!important.tmp' wins over .gitignore's '*.tmp' in one directory
    ]


def test_include_ignored_lists_everything_that_is_not_hidden(ignore_tree: Path, make_ws: WorkspaceFactory) -> None:
    files = walked(make_ws(ignore_tree), ignored=True)
    assert "a.log" in files and "out/artifact.txt" in files and "build/x.py" in files
    assert "src/local_only.txt" in files and "tmp/junk.tmp" in files
    assert ".gitignore" not in files  # hidden, and include_hidden is off


def test_walking_a_subdirectory_still_applies_the_ignore_files_above_it(
    ignore_tree: Path, make_ws: WorkspaceFactory
) -> None:
    ws = make_ws(ignore_tree)
    assert walked(ws, "src") == ["src/debug.log", "src/deeper/anchored.py", "src/out", "src/top_only.txt"]
    assert walked(ws, "src/deeper") == ["src/deeper/anchored.py"]


def test_respect_gitignore_off_ignores_every_ignore_file(ignore_tree: Path, make_ws: WorkspaceFactory) -> None:
    assert "a.log" in walked(make_ws(ignore_tree, respect_gitignore=False))


def test_a_deny_listed_ignore_file_is_not_read(tmp_path: Path, make_ws: WorkspaceFactory) -> None:
    root = tmp_path / "repo"
    write(root / "sub" / ".ignore", "hidden_by_rule.txt\n")
    write(root / "sub" / "hidden_by_rule.txt")
    ws = make_ws(root, extra_deny=["sub/.ignore"])
    assert walked(ws) == ["sub/hidden_by_rule.txt"]


def test_symlinked_ignore_files_are_not_followed(tmp_path: Path, make_ws: WorkspaceFactory) -> None:
    root = tmp_path / "repo"
    write(tmp_path / "rules", "*.txt\n")
    write(root / "a.txt")
    os.symlink(tmp_path / "rules", root / ".gitignore")
    assert walked(make_ws(root)) == ["a.txt"]


# -- hidden files and the deny-list ------------------------------------------------------------------


def test_hidden_files_and_directories_are_skipped_unless_asked(tmp_path: Path, make_ws: WorkspaceFactory) -> None:
    root = tmp_path / "repo"
    write(root / ".hidden" / "inner.txt")
    write(root / ".dotfile")
    write(root / "visible.txt")
    ws = make_ws(root)
    assert walked(ws) == ["visible.txt"]
    assert walked(ws, hidden=True) == [".dotfile", ".hidden/inner.txt", "visible.txt"]
    assert walked(ws, ".hidden") == [".hidden/inner.txt"]  # naming a hidden directory walks it


def test_denied_entries_are_skipped_whatever_their_kind_or_case(tmp_path: Path, make_ws: WorkspaceFactory) -> None:
    root = tmp_path / "repo"
    write(root / ".git", "gitdir: ../elsewhere\n")  # a worktree's .git FILE, hidden like the directory
    write(root / "sub" / ".GIT" / "config")
    write(root / "sub" / ".Env.local")
    write(root / "keys" / "server.PEM")
    write(root / "ok.txt")
    assert walked(make_ws(root), hidden=True, ignored=True) == ["ok.txt"]


# -- symlinks ----------------------------------------------------------------------------------------


def test_symlinks_are_never_followed_in_or_out(tmp_path: Path, make_ws: WorkspaceFactory) -> None:
    root = tmp_path / "repo"
    write(tmp_path / "outside" / "secret.txt")
    write(root / "src" / "main.py")
    os.symlink("src", root / "link_in")
    os.symlink(tmp_path / "outside", root / "link_out")
    os.symlink("src/main.py", root / "file_link")
    os.symlink(".", root / "src" / "loop")
    assert walked(make_ws(root), hidden=True, ignored=True) == ["src/main.py"]


def test_walking_a_linked_directory_reports_and_filters_by_its_real_path(
    tmp_path: Path, make_ws: WorkspaceFactory
) -> None:
    root = tmp_path / "repo"
    write(root / "config" / "dev.yaml")
    write(root / "config" / "prod.yaml")
    os.symlink("config", root / "cfg")
    ws = make_ws(root, extra_deny=["/config/prod.yaml"])
    assert walked(ws, "cfg") == ["config/dev.yaml"]


# -- caps --------------------------------------------------------------------------------------------


def test_depth_cap_stops_descending_and_marks_truncated(tmp_path: Path, make_ws: WorkspaceFactory) -> None:
    root = tmp_path / "repo"
    write(root / "top.txt")
    write(root / "a" / "one.txt")
    write(root / "a" / "b" / "two.txt")
    write(root / "a" / "b" / "c" / "three.txt")
    assert walk_truncated(make_ws(root, max_depth=2)) == (["a/one.txt", "top.txt"], True)
    assert walk_truncated(make_ws(root, max_depth=4)) == (
        ["a/b/c/three.txt", "a/b/two.txt", "a/one.txt", "top.txt"],
        False,
    )


def test_entry_cap_stops_the_walk_and_marks_truncated(tmp_path: Path, make_ws: WorkspaceFactory) -> None:
    root = tmp_path / "repo"
    for i in range(5):
        write(root / "a" / f"f{i}.txt")
    write(root / "b" / "late.txt")
    files, truncated = walk_truncated(make_ws(root, max_walk_entries=4))
    assert truncated is True
    assert files == []  # the root lists 2 entries, then 'a' holds more than the 2 left: the walk ends there
    files, truncated = walk_truncated(make_ws(root, max_walk_entries=8))
    assert (files, truncated) == ([*(f"a/f{i}.txt" for i in range(5)), "b/late.txt"], False)


def test_a_very_deep_tree_does_not_recurse_or_run_out_of_descriptors(tmp_path: Path, make_ws: WorkspaceFactory) -> None:
    root = tmp_path / "repo"
    deep = root
    for _ in range(300):
        deep = deep / "d"
    write(deep / "bottom.txt")
    files, truncated = walk_truncated(make_ws(root, max_depth=1024))
    assert files == ["/".join(["d"] * 300) + "/bottom.txt"]
    assert truncated is False


# -- a directory swapped for a symlink mid-walk ------------------------------------------------------


def test_a_directory_replaced_by_a_symlink_mid_walk_cannot_lead_outside(
    tmp_path: Path, make_ws: WorkspaceFactory
) -> None:
    root = tmp_path / "repo"
    write(tmp_path / "outside" / "secret.txt", "OUTSIDE\n")
    write(root / "a.txt")
    write(root / "b" / "inner.txt")
    write(root / "c" / "one.txt")
    write(root / "c" / "two.txt")
    ws = make_ws(root)
    seen: list[str] = []
    contents: list[bytes] = []
    with ws.walk(".", include_hidden=False, include_ignored=False) as walk:
        for entry in walk:
            seen.append(entry.rel_path)
            if entry.rel_path == "a.txt":  # 'b' was listed as a directory; now it becomes a link out
                os.rename(root / "b", tmp_path / "b_moved")
                os.symlink(tmp_path / "outside", root / "b")
            if entry.rel_path == "c/one.txt":  # 'c' is open; its name now points outside
                os.rename(root / "c", tmp_path / "c_moved")
                os.symlink(tmp_path / "outside", root / "c")
            fd = walk.open_file(entry)
            if fd is not None:
                contents.append(os.read(fd, 100))
                os.close(fd)
    assert seen == ["a.txt", "c/one.txt", "c/two.txt"]  # c/two.txt is read from the directory fd already open
    assert all(b"OUTSIDE" not in content for content in contents)


def test_a_file_replaced_by_a_symlink_after_listing_is_not_opened(tmp_path: Path, make_ws: WorkspaceFactory) -> None:
    root = tmp_path / "repo"
    write(tmp_path / "outside.txt", "OUTSIDE\n")
    write(root / "a.txt")
    write(root / "b.txt")
    ws = make_ws(root)
    with ws.walk(".", include_hidden=False, include_ignored=False) as walk:
        entries = iter(walk)
        first = next(entries)
        os.remove(root / "b.txt")
        os.symlink(tmp_path / "outside.txt", root / "b.txt")
        second = next(entries)
        assert (first.rel_path, second.rel_path) == ("a.txt", "b.txt")
        assert walk.open_file(second) is None
        assert isinstance(walk, Walk)
