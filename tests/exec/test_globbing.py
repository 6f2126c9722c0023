"""Glob expansion inside the jail: bash's results on ordinary trees, and nothing the policy hides."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from repo_sandbox.errors import InvalidArgumentsError, PathDeniedError, PathOutsideRootError
from repo_sandbox.exec import globbing
from repo_sandbox.exec.globbing import GlobExpander
from repo_sandbox.shell.parse import parse_command
from repo_sandbox.workspace import Workspace


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    for rel in ("a.md", "b.md", "C.md", "x.py", "src/m.py", "src/n.py", "src/pkg/deep.py", "docs/a.md", ".hid.md"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(rel)
    (root / "sp ace.md").write_text("s")
    (root / "-rf").write_text("dash")
    return root


@pytest.fixture
def ws(tree: Path, make_workspace: Any) -> Workspace:
    return make_workspace(tree)


def expand(ws: Workspace, command: str, cwd: str = ".") -> list[str]:
    expander = GlobExpander(ws.jail, cwd)
    (pipeline,) = parse_command(command).pipelines
    (stage,) = pipeline.stages
    return [text for word in stage.args for text in expander.expand(word)]


PATTERNS = [
    "*.md",
    "*",
    "src/*.py",
    "*/*.py",
    "*/",
    "[ab].md",
    "[!a].md",
    "?.md",
    ".*.md",
    "src/*/*.py",
    "*.zz",
    "[[:upper:]]*",
]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_expansion_matches_bash(ws: Workspace, tree: Path, pattern: str) -> None:
    real = subprocess.run(
        ["bash", "-c", f"printf '%s\\0' {pattern}"], cwd=tree, env={"LC_ALL": "C"}, capture_output=True, check=True
    ).stdout.decode()
    expected = [f"./{m}" if m.startswith("-") else m for m in real.split("\0")[:-1]]
    assert expand(ws, f"ls {pattern}") == expected


def test_quoted_parts_do_not_glob(ws: Workspace) -> None:
    assert expand(ws, "ls '*.md' \"*\".md \\*.md") == ["*.md", "*.md", "*.md"]
    assert expand(ws, 'ls "src/"*.py') == ["src/m.py", "src/n.py"]


def test_matches_starting_with_a_dash_cannot_become_options(ws: Workspace) -> None:
    assert expand(ws, "ls -*") == ["./-rf"]


def test_relative_to_cwd_and_absolute_inside_root(ws: Workspace, tree: Path) -> None:
    assert expand(ws, "ls *.py", cwd="src") == ["m.py", "n.py"]
    assert expand(ws, "ls ../*.py", cwd="src") == ["../x.py"]
    assert expand(ws, f"ls {tree}/src/*.py") == [f"{tree}/src/m.py", f"{tree}/src/n.py"]


@pytest.fixture
def hostile(tree: Path) -> Path:
    outside = tree.parent / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("secret")
    (tree / ".env.md").write_text("denied by .env*")
    (tree / "key.pem").write_text("denied")
    os.symlink(outside / "secret.md", tree / "escape.md")
    os.symlink(outside, tree / "escape_dir")
    os.symlink("a.md", tree / "inside_link.md")
    os.mkfifo(tree / "fifo.md")
    os.link(outside / "secret.md", tree / "hard.md")
    return tree


def test_hidden_entries_never_appear(ws: Workspace, hostile: Path) -> None:
    assert expand(ws, "ls *.md") == ["C.md", "a.md", "b.md", "inside_link.md", "sp ace.md"]
    assert expand(ws, "ls .*.md") == [".hid.md"]
    assert expand(ws, "ls *.pem") == ["*.pem"]
    assert expand(ws, "ls */secret.md") == ["*/secret.md"]
    with pytest.raises(PathOutsideRootError):
        expand(ws, "ls escape_dir/*")


@pytest.mark.parametrize(
    ("command", "error"),
    [("ls /etc/*", PathOutsideRootError), ("ls ../*", PathOutsideRootError), ("ls .git/*", PathDeniedError)],
)
def test_patterns_rooted_outside_or_in_denied_dirs_are_refused(
    ws: Workspace, tree: Path, command: str, error: type[Exception]
) -> None:
    (tree / ".git").mkdir()
    (tree / ".git" / "config").write_text("x")
    with pytest.raises(error):
        expand(ws, command)


def test_glob_bombs_are_capped(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(globbing, "MAX_GLOB_MATCHES", 3)
    with pytest.raises(InvalidArgumentsError, match="match more than 3"):
        expand(ws, "ls * *")
    monkeypatch.setattr(globbing, "MAX_GLOB_SCANNED", 5)
    with pytest.raises(InvalidArgumentsError, match="directory entries"):
        expand(ws, "ls */*/*")


def test_expanded_argv_size_is_capped() -> None:
    with pytest.raises(InvalidArgumentsError, match="bytes long"):
        globbing.check_argv_size(["x" * 1024] * 600)
