"""Globs as ripgrep/gitignore write them, matched against paths relative to the searched directory."""

from __future__ import annotations

import re

import pytest

from repo_sandbox.errors import InvalidGlobError
from repo_sandbox.fs.globs import compile_glob


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        # no '/': the file name at any depth (*.go == **/*.go)
        ("*.go", "main.go", True),
        ("*.go", "a/b/main.go", True),
        ("**/*.go", "a/b/main.go", True),
        ("**/*.go", "main.go", True),
        ("*.go", "main.go.bak", False),
        # '*' and '?' never cross '/'
        ("src/*.go", "src/a.go", True),
        ("src/*.go", "src/x/a.go", False),
        ("s?c/a.go", "src/a.go", True),
        ("s?c/a.go", "s/c/a.go", False),
        ("a*b", "a/b", False),
        # '**' as a whole component spans zero or more directories; elsewhere it is '*'
        ("src/**/a.go", "src/a.go", True),
        ("src/**/a.go", "src/x/y/a.go", True),
        ("src/**", "src/x/y/a.go", True),
        ("src/**", "srcx/a.go", False),
        ("a**b", "axxb", True),
        ("a**b", "a/b", False),
        # classes: ranges, negation with '!' or '^', never '/'
        ("f[0-9].txt", "f1.txt", True),
        ("f[0-9].txt", "fx.txt", False),
        ("f[!0-9].txt", "fx.txt", True),
        ("f[^0-9].txt", "f1.txt", False),
        ("a[+-0]b", "a-b", True),
        ("a[+-0]b", "a/b", False),
        ("a[!x]b", "a/b", False),
        ("[]]", "]", True),
        ("x[\\]]", "x]", True),
        # alternatives, nested, with classes inside
        ("*.{js,jsx}", "a/b.jsx", True),
        ("*.{js,jsx}", "a/b.ts", False),
        ("{a,b{c,d}}.txt", "bd.txt", True),
        ("{a,b{c,d}}.txt", "b.txt", False),
        ("{[ab],c}.txt", "b.txt", True),
        ("*.{}", "x.", True),
        # anchoring: a leading '/' matches from the searched directory only; './' is the same directory
        ("/a.go", "a.go", True),
        ("/a.go", "x/a.go", False),
        ("./a.go", "a.go", True),
        ("/src/*.go", "src/a.go", True),
        # escapes and case
        ("\\*.go", "*.go", True),
        ("\\*.go", "a.go", False),
        ("README.md", "readme.md", False),
        # negation inverts the whole match
        ("!*.md", "a.go", True),
        ("!*.md", "docs/a.md", False),
        # regex metacharacters are literal
        ("a+b(c).txt", "a+b(c).txt", True),
        ("a.b", "axb", False),
        ("$x^", "$x^", True),
        # unicode
        ("café*", "docs/café.md", True),
        ("日本語.txt", "日本語.txt", True),
        ("?.txt", "é.txt", True),
        # more than two wildcards or groups: matched by the time-limited `regex` engine, same meaning
        ("src/**/test_*.{py,pyi}", "src/a/b/test_x.pyi", True),
        ("src/**/test_*.{py,pyi}", "src/a/b/test_x.pyc", False),
        ("*a*b*c", "xaybzc", True),
        ("*a*b*c", "xaybz/c", False),
        ("**/d/**/x.{c,h}", "d/e/x.h", True),
    ],
)
def test_glob_matching(pattern: str, path: str, matches: bool) -> None:
    assert compile_glob(pattern).matches(path) is matches


@pytest.mark.parametrize("pattern", ["", "   ", "[abc", "*.{a,b", "x\\", "a\x00b", "x" * 1001])
def test_malformed_globs_are_invalid_glob(pattern: str) -> None:
    with pytest.raises(InvalidGlobError):
        compile_glob(pattern)


@pytest.mark.parametrize(
    ("glob", "plain"),
    [
        ("**/*.py", True),
        ("**/*.{py,pyi}", True),
        ("src/**/*.{ts,tsx}", True),
        ("**/test_*.py", True),
        ("**/a/**/*.py", True),
        ("*.{js,jsx}", True),
        ("*a*a*b", False),
        ("**/*a*{b,c}", False),
        ("**/**/**/x", False),
        ("{a,b}{c,d}{e,f}", False),
    ],
)
def test_everyday_globs_keep_the_fast_engine_and_backtracking_ones_get_the_guarded_one(glob: str, plain: bool) -> None:
    """`re` holds the GIL while it backtracks: only globs it matches in low polynomial time stay on it."""
    assert isinstance(compile_glob(glob).regex, re.Pattern) is plain
