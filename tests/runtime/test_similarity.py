"""The guard's notion of "the same call": normalisation and the documented similarity measure."""

from __future__ import annotations

from typing import Any

import pytest

from repo_sandbox.runtime.similarity import canonical, normalise_arguments, similarity
from repo_sandbox.tools.registry import TOOLS_BY_NAME


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        # values equal to the tool's defaults are dropped
        ("read_file", {"path": "a.py", "offset": 1, "limit": 2000}, {"path": "a.py"}),
        ("read_file", {"path": "a.py", "offset": 2}, {"path": "a.py", "offset": 2}),
        ("search_text", {"pattern": "x", "output_mode": "content", "fixed_strings": False}, {"pattern": "x"}),
        # JSON keeps true and 1 apart: line_numbers=1 is not the default true
        ("read_file", {"path": "a.py", "line_numbers": 1}, {"path": "a.py", "line_numbers": 1}),
        # unknown tools and arguments are kept as sent
        ("nope", {"a": 1}, {"a": 1}),
        ("read_file", {"path": "a.py", "bogus": 1}, {"path": "a.py", "bogus": 1}),
        # not an object
        ("read_file", ["a.py"], {"(arguments)": ["a.py"]}),
        ("read_file", None, {}),
    ],
)
def test_normalise_arguments_drops_defaults(tool: str, arguments: Any, expected: dict[str, Any]) -> None:
    assert normalise_arguments(TOOLS_BY_NAME.get(tool), arguments) == expected


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        # the same call
        ({"path": "src/missing.py"}, {"path": "src/missing.py"}, 1.0),
        ({}, {}, 1.0),
        ({"path": "./src/missing.py"}, {"path": "src/missing.py"}, 0.71),
        ({"path": "src/missing.py"}, {"path": "src/missing.py", "line_numbers": False}, 0.83),
        ({"command": "git log --oneline -n 5"}, {"command": "git log --oneline -n 6"}, 0.78),
        ({"pattern": 'cron add (kind: "exec"'}, {"pattern": 'cron add (kind: "exec")'}, 0.89),
        # a new call: a fixed typo, an escaped regex, a changed approach, another file
        ({"path": "src/mian.py"}, {"path": "src/main.py"}, 0.67),
        ({"pattern": "foo("}, {"pattern": "foo\\("}, 0.67),
        ({"pattern": "foo("}, {"pattern": "foo(", "fixed_strings": True}, 0.67),
        ({"path": "src/a.py"}, {"path": "src/b.py"}, 0.67),
        ({"path": "src/missing.py"}, {"path": "docs/other.md"}, 0.25),
        ({"pattern": "x", "path": "src"}, {"pattern": "x", "path": "lib"}, 0.33),
        # the key matters, not only the value
        ({"path": "src"}, {"glob": "src"}, 0.0),
        # numbers and booleans are tokens too; JSON keeps true and 1 apart
        ({"offset": 10}, {"offset": 11}, 0.0),
        ({"flag": True}, {"flag": 1}, 0.0),
        # nested values
        ({"q": [{"question": "Which one?"}]}, {"q": [{"question": "Which one?"}]}, 1.0),
    ],
)
def test_similarity_of_argument_pairs(a: dict[str, Any], b: dict[str, Any], expected: float) -> None:
    assert similarity(a, b) == pytest.approx(expected, abs=0.01)
    assert similarity(b, a) == pytest.approx(expected, abs=0.01)


def test_similarity_of_huge_values_compares_a_bounded_prefix() -> None:
    a = {"command": "ls " * 10_000 + "a"}
    b = {"command": "ls " * 10_000 + "b"}
    assert similarity(a, b) == 1.0


def test_canonical_form_ignores_key_order() -> None:
    assert canonical({"a": 1, "b": [2, 3]}) == canonical({"b": [2, 3], "a": 1})
