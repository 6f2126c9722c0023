"""The jail's own invariants beyond the attack table: where the root lives, concurrent renames and deletes,
hard-link policy, and the real path it reports."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from repo_sandbox.errors import NotFoundError, PathDeniedError, PathOutsideRootError, SandboxError, SpecialFileError
from repo_sandbox.fs import beneath
from repo_sandbox.fs.jail import Jail
from repo_sandbox.policy.deny import DEFAULT_DENY, DenyList

MODES = ["openat2", "walk", "walk-noproc"]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "real-repo"
    (root / "a").mkdir(parents=True)
    (root / "a" / "x.txt").write_text("in a\n")
    (root / "README.md").write_text("readme\n")
    (root / "private").mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("secret\n")
    return root


def make_jail(root: Path | str, mode: str, **kwargs: bool) -> Jail:
    jail = Jail(str(root), DenyList([*DEFAULT_DENY, "private/"]), **kwargs)
    if mode == "openat2" and not jail.uses_openat2:
        jail.close()
        pytest.skip("openat2 is not available on this kernel")
    jail.uses_openat2 = mode == "openat2"
    jail.uses_proc = jail.uses_proc and not mode.endswith("noproc")
    return jail


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def jail(tree: Path, mode: str) -> Iterator[Jail]:
    j = make_jail(tree, mode)
    yield j
    j.close()


def read(jail: Jail, path: str) -> tuple[str, str]:
    opened = jail.open_file(path)
    try:
        return opened.rel_path, os.read(opened.fd, 100).decode()
    finally:
        os.close(opened.fd)


def test_a_root_configured_through_a_symlink_is_used_by_its_real_path(tree: Path, mode: str) -> None:
    link = tree.parent / "repo-link"
    os.symlink(tree, link)
    jail = make_jail(link, mode)
    try:
        assert jail.root == str(tree)
        assert read(jail, "a/x.txt") == ("a/x.txt", "in a\n")
        assert read(jail, f"{tree}/README.md") == ("README.md", "readme\n")
        with pytest.raises(PathOutsideRootError):
            jail.open_file(f"{tree.parent}/outside/secret.txt")
    finally:
        jail.close()


def test_a_root_moved_while_serving_keeps_working(tree: Path, mode: str) -> None:
    jail = make_jail(tree, mode)
    try:
        assert read(jail, "a/x.txt") == ("a/x.txt", "in a\n")
        tree.rename(tree.parent / "moved-repo")
        assert read(jail, "a/x.txt") == ("a/x.txt", "in a\n")
        with pytest.raises(PathDeniedError):
            jail.open_file("private/../.env")
    finally:
        jail.close()


def test_symlinks_report_the_real_path_they_reach(jail: Jail, tree: Path) -> None:
    os.symlink("a/x.txt", tree / "to_x")
    os.symlink("a", tree / "to_a")
    assert read(jail, "to_x") == ("a/x.txt", "in a\n")
    fd, rel = jail.open_dir("to_a")
    os.close(fd)
    assert rel == "a"


def test_open_any_resolves_once_and_returns_the_right_kind(jail: Jail) -> None:
    opened, dir_fd, rel = jail.open_any("a")
    assert (opened, rel) == (None, "a") and dir_fd is not None
    os.close(dir_fd)
    opened, dir_fd, rel = jail.open_any("a/x.txt")
    assert opened is not None and dir_fd is None and rel == "a/x.txt"
    os.close(opened.fd)


def test_hard_links_are_refused_unless_the_operator_allows_them(tree: Path, mode: str) -> None:
    os.link(tree.parent / "outside" / "secret.txt", tree / "hard.txt")
    strict = make_jail(tree, mode)
    allowing = make_jail(tree, mode, allow_hard_links=True)
    try:
        with pytest.raises(SpecialFileError):
            strict.open_file("hard.txt")
        assert read(allowing, "hard.txt") == ("hard.txt", "secret\n")
    finally:
        strict.close()
        allowing.close()


# -- the kernel's view disagrees with the resolution: a concurrent rename or delete ------------------


def resolve_path_fd(jail: Jail, rel: str) -> int:
    root_fd = os.open(jail.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        return beneath.walk_beneath(root_fd, rel)[0]
    finally:
        os.close(root_fd)


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="the cross-check needs /proc")
@pytest.mark.parametrize(
    ("change", "error"),
    [
        ("delete", NotFoundError),  # the kernel reports '... (deleted)': refused as gone, never matched by name
        ("rename_into_denied", PathDeniedError),  # 'a' became the denied 'private/a' after it was resolved
        ("rename_out_of_root", PathOutsideRootError),  # 'a' was moved out of the root after it was resolved
    ],
)
def test_a_change_between_resolving_and_checking_is_refused(tree: Path, change: str, error: type[SandboxError]) -> None:
    jail = make_jail(tree, "walk")
    assert jail.uses_proc
    fd = resolve_path_fd(jail, "a/x.txt")
    try:
        if change == "delete":
            (tree / "a" / "x.txt").unlink()
        elif change == "rename_into_denied":
            (tree / "a").rename(tree / "private" / "a")
        else:
            (tree / "a").rename(tree.parent / "outside" / "a")
        with pytest.raises(error):
            jail._cross_check(fd, "a/x.txt", "a/x.txt")  # pyright: ignore[reportPrivateUsage]
    finally:
        os.close(fd)
        jail.close()


def test_without_proc_the_tracked_real_path_still_applies_the_deny_list(tree: Path) -> None:
    os.symlink("private", tree / "innocent")
    (tree / "private" / "notes.txt").write_text("hidden\n")
    os.symlink(".env", tree / "env_link")
    (tree / ".env").write_text("KEY=1\n")
    jail = make_jail(tree, "walk-noproc")
    try:
        assert jail.uses_proc is False
        with pytest.raises(PathDeniedError):
            jail.open_file("innocent/notes.txt")
        with pytest.raises(PathDeniedError):
            jail.open_file("env_link")
    finally:
        jail.close()
