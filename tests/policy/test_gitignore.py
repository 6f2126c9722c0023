"""Gitignore rules: a table of git's semantics, and a differential test against git itself."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from repo_sandbox.config.loader import load_settings
from repo_sandbox.policy.git.ignore import IgnoreRules
from repo_sandbox.workspace import Workspace

IGNORED, KEPT, NO_RULE = True, False, None


def rule(lines: str, path: str, expected: bool | None, *, is_dir: bool = False) -> object:
    return pytest.param(lines, path, is_dir, expected, id=f"{lines!r}-{path}{'/' if is_dir else ''}")


RULES = [
    # names at any depth, anchored paths
    rule("*.log", "a/b/c.log", IGNORED),
    rule("*.log", "a.log.txt", NO_RULE),
    rule("/top.txt", "top.txt", IGNORED),
    rule("/top.txt", "sub/top.txt", NO_RULE),
    rule("sub/top.txt", "sub/top.txt", IGNORED),
    rule("sub/top.txt", "x/sub/top.txt", NO_RULE),  # a middle '/' anchors
    rule("**/sub/top.txt", "x/y/sub/top.txt", IGNORED),
    rule("a/**/b", "a/b", IGNORED),
    rule("a/**/b", "a/x/y/b", IGNORED),
    rule("a/**", "a/x/y", IGNORED),
    rule("a/**", "a", NO_RULE, is_dir=True),
    # directory-only rules
    rule("out/", "out", IGNORED, is_dir=True),
    rule("out/", "out", NO_RULE),
    rule("out/", "src/out", IGNORED, is_dir=True),
    # negation: the last matching rule wins
    rule("*.log\n!keep.log", "keep.log", KEPT),
    rule("!keep.log\n*.log", "keep.log", IGNORED),
    rule("*\n!*/", "sub", KEPT, is_dir=True),
    rule("*\n!*/", "sub/file", IGNORED),
    # wildcards never cross '/'
    rule("a*b", "a/b", NO_RULE),
    rule("a?b", "a/b", NO_RULE),
    rule("a/[/]b", "a//b", NO_RULE),
    rule("a/[!x]b", "a//b", NO_RULE),
    rule("[ab].txt", "b.txt", IGNORED),
    rule("[!ab].txt", "b.txt", NO_RULE),
    rule("[a-c].txt", "c.txt", IGNORED),
    rule("[[:digit:]].txt", "7.txt", IGNORED),
    rule("[unclosed", "[unclosed", IGNORED),
    # escapes, comments, spaces
    rule("\\#notes", "#notes", IGNORED),
    rule("#notes", "#notes", NO_RULE),
    rule("\\!bang", "!bang", IGNORED),
    rule("trailing   ", "trailing", IGNORED),
    rule("space\\ ", "space ", IGNORED),
    rule("\\*", "*", IGNORED),
    rule("\\*", "x", NO_RULE),
    rule("name\n", "dir/name", IGNORED, is_dir=True),
    # more than two wildcards: compiled by `regex` (a hostile repository's rule must not backtrack for hours)
    rule("*a*b*c", "xaybzc", IGNORED),
    rule("*a*b*c", "xaybzcd", NO_RULE),
    rule("src/**/test_*.py\n!src/**/test_keep*.py", "src/a/b/test_keep1.py", KEPT),
    rule("src/**/test_*.py", "src/a/b/test_x.py", IGNORED),
    rule("*a" * 25 + "b", "a" * 250, NO_RULE),
    rule("**/a/" * 20 + "b", "a/" * 100 + "c", NO_RULE),
]


@pytest.mark.parametrize(("lines", "path", "is_dir", "expected"), RULES)
def test_rules_follow_git_semantics(lines: str, path: str, is_dir: bool, expected: bool | None) -> None:
    include, _ = IgnoreRules(lines.splitlines()).check(path, is_dir=is_dir)
    assert include is expected


# -- differential test against git -------------------------------------------------------------------

TREE = [
    "x.txt", "y.log", "a.md", "sub/x.txt", "sub/y.log", "a/x.txt", "a/b/y.log", "a/b/c.md",
    "a/sub/x.txt", "b/a.md", "b/sub/deep/x.txt", "out/x.txt", "src/out",
]  # fmt: skip
SEGMENTS = ["*", "**", "x.txt", "*.log", "a", "b", "sub", "?.md", "[ab]", "[!a]*", "out", "deep", "c.*"]

segment_paths = st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=3).map("/".join)
lines = st.builds(
    lambda bang, lead, body, trail: f"{bang}{lead}{body}{trail}",
    st.sampled_from(["", "", "!"]),
    st.sampled_from(["", "", "/"]),
    segment_paths,
    st.sampled_from(["", "", "/"]),
)
ignore_files = st.fixed_dictionaries(
    {".gitignore": st.lists(lines, max_size=4)},
    optional={"a/.gitignore": st.lists(lines, max_size=3), "sub/.gitignore": st.lists(lines, max_size=3)},
)


def git_untracked(root: Path) -> list[str]:
    out = subprocess.run(
        ["git", "-c", "core.excludesFile=/dev/null", "ls-files", "--others", "--exclude-standard", "-z"],
        cwd=root,
        capture_output=True,
        check=True,
        timeout=30,
    ).stdout
    return sorted(p for p in out.decode().split("\0") if p)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("git") is None, reason="the differential test needs git")
@settings(
    max_examples=120,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(files=ignore_files)
def test_walker_lists_exactly_what_git_leaves_untracked(
    files: dict[str, list[str]], tmp_path_factory: pytest.TempPathFactory
) -> None:
    root = tmp_path_factory.mktemp("git")
    subprocess.run(["git", "init", "-q", str(root)], check=True, timeout=30)
    for rel in TREE:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("x\n")
    for rel, content in files.items():
        (root / rel).write_text("\n".join(content) + "\n")
    ws = Workspace(
        load_settings(None, env={}, overrides={("workspace", "root"): str(root), ("workspace", "deny"): [".git/"]})
    )
    try:
        with ws.walk(".", include_hidden=True, include_ignored=False) as walk:
            ours = sorted(entry.rel_path for entry in walk)
    finally:
        ws.close()
    assert ours == git_untracked(root), files


# -- the one-scan prefilter never misses an entry that a rule decides ----------------------------------

NAMES = ["x.txt", "y.log", "a", "b", "sub", "a.md", "out", "deep", "c.x", "ab", "ba", ".env", "config.json"]
directories = st.sampled_from(["", "a/", "sub/", "a/b/", "b/sub/deep/", ".docker/", "x/.docker/", "out/sub/"])


@settings(max_examples=400, deadline=None, derandomize=True, database=None)
@given(
    rule_lines=st.lists(
        st.one_of(lines, st.sampled_from(["**/.docker/config.json", "a/**", "/out", "sub/*.log", "**/b"])),
        max_size=5,
    ),
    prefix=directories,
    names=st.lists(st.sampled_from(NAMES), min_size=1, max_size=8, unique=True),
)
def test_candidates_hold_every_entry_a_rule_decides(rule_lines: list[str], prefix: str, names: list[str]) -> None:
    rules = IgnoreRules(rule_lines)
    decided = {
        i
        for i, name in enumerate(names)
        if any(rules.check(prefix + name, is_dir=is_dir) != (None, None) for is_dir in (False, True))
    }
    found = rules.candidates(prefix, names)
    assert decided <= set(found), (rule_lines, prefix, names)
    assert found == sorted(set(found)) and all(0 <= i < len(names) for i in found)
