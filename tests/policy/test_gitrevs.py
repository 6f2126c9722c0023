"""How revisions are split and what their objects must be (`policy.git.revs`); the end-to-end table that proves
nothing protected shows is tests/security/test_git_objects.py."""

from __future__ import annotations

import pytest

from repo_sandbox.policy._argv import Refused
from repo_sandbox.policy.git.revs import BLOB, BLOB_OR_TREE, COMMIT, NOTHING, object_checks, split_revision
from repo_sandbox.policy.programs import ObjectCheck


@pytest.mark.parametrize(
    ("operand", "expected"),
    [
        ("HEAD", None),
        ("HEAD:src/a.py", ("HEAD", "src/a.py")),
        ("HEAD:", ("HEAD", "")),
        (":README.md", ("", "README.md")),
        (":2:README.md", ("", "README.md")),
        (":/fix: a bug", None),
        ("HEAD^{/fix: x}:.env", ("HEAD^{/fix: x}", ".env")),
        ("HEAD^{/a{b}:c}:d:e", ("HEAD^{/a{b}:c}", "d:e")),
        ("main@{2 days ago}:a", ("main@{2 days ago}", "a")),
        ("v1^{}", None),
    ],
)
def test_revisions_split_where_git_splits_them(operand: str, expected: tuple[str, str] | None) -> None:
    assert split_revision(operand) == expected


@pytest.mark.parametrize(
    ("operand", "subcommand", "expected"),
    [
        ("HEAD", "show", [("HEAD^{}", COMMIT)]),
        ("abc1234", "grep", [("abc1234^{}", COMMIT)]),
        ("HEAD:a.py", "show", [("HEAD^{}", COMMIT), ("HEAD:a.py", BLOB)]),
        ("HEAD:", "show", [("HEAD^{}", COMMIT), ("HEAD:", BLOB)]),
        ("HEAD:", "grep", [("HEAD^{}", COMMIT), ("HEAD:", BLOB_OR_TREE)]),
        ("HEAD:src", "diff", [("HEAD^{}", COMMIT), ("HEAD:src", BLOB)]),
        (":a.py", "cat-file", [(":a.py", BLOB)]),
        (":/fix it", "log", [(":/fix it", COMMIT)]),
        ("A..B", "log", [("A..B^{}", COMMIT), ("A^{}", COMMIT), ("B^{}", COMMIT)]),
        ("A...", "diff", [("A...^{}", COMMIT), ("A^{}", COMMIT)]),
        ("^A", "log", [("^A^{}", COMMIT), ("A^{}", COMMIT)]),
        ("A^!", "show", [("A^!^{}", COMMIT), ("A^{}", COMMIT)]),
        ("A^-2", "log", [("A^-2^{}", COMMIT), ("A^{}", COMMIT)]),
        ("HEAD:a..B", "diff", [("HEAD^{}", COMMIT), ("HEAD:a..B", BLOB), ("HEAD:a", NOTHING), ("B^{}", COMMIT)]),
    ],
)
def test_every_way_git_may_read_an_operand_is_checked(
    operand: str, subcommand: str, expected: list[tuple[str, frozenset[str]]]
) -> None:
    assert object_checks(operand, subcommand) == tuple(ObjectCheck(name, allowed) for name, allowed in expected)


def test_a_revision_with_a_line_break_is_refused() -> None:
    with pytest.raises(Refused):
        object_checks("HEAD\nHEAD:.env", "show")
