"""Property: any path string either resolves inside the root to an allowed entry, or fails with a graded error.

Paths are drawn from an alphabet heavy in separators, dots, `~`, backslashes, NUL, look-alike and decomposed
unicode, lone surrogates, and the names of real entries of the attack tree (in-root files, links out, links
to denied files, loops, special files). Runs derandomized so CI sees the same examples every time.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from attack_tree import AttackTree, leaked_secrets
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from repo_sandbox.errors import SandboxError
from repo_sandbox.workspace import Workspace

pytestmark = pytest.mark.slow

GRADED_PATH_CODES = {
    "invalid_arguments",
    "path_outside_root",
    "path_denied",
    "special_file",
    "not_found",
    "not_a_file",
    "not_a_directory",
    "io_error",
}

TOKENS = [
    *(".", "..", "/", "//", "./", "../", "~", "~root", "\\", "\x00", " ", "%2e", "%2f", "\uff0e", "\u2024"),
    *("\u2215", "e\u0301", "é", "\ud800", "\udcff", "\u0000"),
    *("src", "main.py", "pkg", "deep.py", "README.md", "config", "dev.yaml", "prod.yaml", "%2e%2e", "decoy.txt"),
    *(".env", ".ENV", ".Env", "id_rsa", ".git", ".Git", "private", "notes.txt", "server.pem", "résumé.txt"),
    *("link_out_dir_rel", "link_out_file_abs", "link_out_dir_abs", "link_sibling", "link_in_dir", "link_in_file"),
    *("link_env", "link_git", "link_cfg", "link_private", "chain_out_1", "chain_in_1", "loop_a", "loop_dir"),
    *("dangling", "dangling_out", "through_file", "proc_root", "proc_fd0", "dev_zero", "fifo", "sock", "devnode"),
    *("hardlink_out.txt", "outside", "secret.txt", "repo", "repo-evil", "etc", "passwd", "proc", "self", "root"),
    *("{root}", "{base}", "{root}-evil"),
]

PREFIXES = ["", "", "", "/", "//", "./", "../", "~/", "{root}/", "{base}/", "{root}-evil/", "{root}/../"]

components = st.one_of(
    st.sampled_from([t for t in TOKENS if "/" not in t]),
    st.sampled_from(["", ".", "..", "..", "src", "link_in_dir", "link_cfg", "config", "pkg"]),
    st.text(max_size=3),
)
structured_paths = st.builds(
    lambda prefix, parts: prefix + "/".join(parts), st.sampled_from(PREFIXES), st.lists(components, max_size=6)
)
"""Mostly well-formed paths that walk the real tree: most examples get past the syntax checks."""
KNOWN = [
    *("README.md", "src/main.py", "src/pkg/deep.py", "config/dev.yaml", "%2e%2e/decoy.txt", "link_in_file"),
    *("chain_in_1", "link_in_dir/main.py", "link_cfg/dev.yaml", "src/link_up_in", "src/pkg", "link_in_dir"),
    *(".env", "link_env", "link_cfg/prod.yaml", "hardlink_out.txt", "link_git/config", "src/link_up_out"),
]
known_paths = st.builds(
    lambda prefix, known, suffix: prefix + known + suffix,
    st.sampled_from(["", "", "./", "{root}/", "/{root}/", "src/../", "link_in_dir/../"]),
    st.sampled_from(KNOWN),
    st.sampled_from(["", "", "/", "/.", "//", "/..", "/../README.md", "\x00", " "]),
)
"""Real entries, spelled in the ways that should still reach them (or just fail to)."""
raw_paths = st.lists(st.one_of(st.sampled_from(TOKENS), st.text(max_size=3)), max_size=14).map("".join)
"""Any mix of the tokens: the syntax checks and the odd corners."""
paths = st.one_of(known_paths, structured_paths, raw_paths)


def expand(path: str, tree: AttackTree) -> str:
    return path.replace("{root}", str(tree.root)).replace("{base}", str(tree.base))


def real_path_of(fd: int) -> str:
    return os.readlink(f"/proc/self/fd/{fd}")  # the test's own view, independent of the jail's /proc use


def assert_allowed_inside(fd: int, rel_path: str, ws: Workspace, tree: AttackTree) -> None:
    real = Path(real_path_of(fd))
    assert real == tree.root or tree.root in real.parents, f"opened {real} outside {tree.root}"
    rel = "." if real == tree.root else real.relative_to(tree.root).as_posix()
    assert rel == rel_path
    assert not ws.jail.is_denied(rel), f"opened the denied {rel}"
    info = os.fstat(fd)
    if stat.S_ISREG(info.st_mode):
        assert info.st_nlink == 1
        assert leaked_secrets(os.pread(fd, 4096, 0).decode("utf-8", "replace")) == []
    else:
        assert stat.S_ISDIR(info.st_mode)


def assert_graded(exc: SandboxError, path: str, tree: AttackTree) -> None:
    assert exc.code in GRADED_PATH_CODES, exc.code
    message = str(exc.to_payload())
    if str(tree.base) not in path:
        assert str(tree.base) not in message, message


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="the property checks real paths through /proc")
@settings(
    max_examples=400,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(raw=paths)
def test_any_path_resolves_inside_the_root_or_fails_graded(
    raw: str, backend_ws: Workspace, attack_tree: AttackTree
) -> None:
    path = expand(raw, attack_tree)
    jail = backend_ws.jail
    try:
        opened, dir_fd, rel = jail.open_any(path)
    except SandboxError as exc:
        event(exc.code)
        assert_graded(exc, path, attack_tree)
        return
    event("opened a file" if opened is not None else "opened a directory")
    fd = opened.fd if opened is not None else dir_fd
    assert fd is not None
    try:
        assert_allowed_inside(fd, rel, backend_ws, attack_tree)
    finally:
        os.close(fd)
