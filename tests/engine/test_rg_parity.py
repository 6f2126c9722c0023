"""Both engines against the rg binary the server uses, pattern by pattern: the same (path, line) set as
`rg -n` and the same per-file counts as `rg -c` (`-U` for multiline rows) on a generated tree.

The rows cover every escape of the Rust regex syntax (the escape table of the `regex` crate's documentation:
literal escapes of every ASCII punctuation character, `\\a \\f \\t \\n \\r \\v`, `\\x7F \\x{10FFFF} \\u007F
\\u{7F} \\U0000007F \\U{7F}`, `\\A \\z \\b \\B \\< \\> \\b{start} \\b{end} \\b{start-half} \\b{end-half}`, the
Perl and Unicode classes), multiline matches that start where the previous one ended, text in legacy
encodings (Latin-1, KOI8-R, EUC-JP: text, not binary) and patterns that need long lines.
"""

from __future__ import annotations

import os
import string
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from repo_sandbox.config.loader import load_settings
from repo_sandbox.engine import ripgrep, select
from repo_sandbox.tools.search_text import (
    SearchTextArgs,
    SearchTextContentResult,
    SearchTextCountResult,
    search_text,
)
from repo_sandbox.workspace import Workspace
from tree_files import write_tree

ENGINES = ("python", "ripgrep")
PUNCTUATION = string.punctuation.replace("<", "").replace(">", "") + " "
"""Every ASCII character but a letter or digit may be escaped and means itself; `\\<` and `\\>` are word
boundaries (their own rows)."""

BRACES = "fn a() {\n}{\n  }{\n}\nlet b = {\n};\n{\n}\n{\n}\n"
"""Blocks that start on the line where the previous one ends (as in git's git-gui.sh)."""


def _tree(root: Path) -> Path:
    files: dict[str, str | bytes] = {
        "escapes.txt": (
            "café déjà vu\nsmile 😀 here\ntab\there\nbell\x07ring\nform\x0cfeed\nvertical\x0btab\n"
            "crlf line\r\nword boundary wordy reword\nfoo food foo.\nbar\n"
            + "".join(f"punct {ch} mark{ch}\n" for ch in PUNCTUATION)
        ),
        "unicode.txt": "αβγ greek Ωmega\nкириллица text\n漢字 han\ndigits ٣٤ 12 ³\nnbsp\u00a0em\u2003nel\x85end\n",
        "braces.rs": BRACES,
        "git-gui.sh": "proc a {} {\n}\nproc b {} {\n\t}{\n}{\n}\nset x {\n}\n",
        "legacy/latin1.txt": "àéîõü çà et la TODO\nplain ascii line\nnaïve café TODO\n".encode("latin-1"),
        "legacy/koi8.txt": "Привет мир TODO\nвторая строка ok\n".encode("koi8-r") * 3,
        "legacy/eucjp.txt": "日本語のテキスト TODO\n二行目 ascii\n".encode("euc-jp") * 3,
        "long/lines.txt": "".join(f"{'x' * n}\n" for n in (10, 31, 32, 99, 100, 299, 300, 301, 1000)),
        "long/multibyte.txt": "é" * 150 + "\n" + "é" * 300 + "\n" + "日" * 120 + "\n",
        "long/latin1_long.txt": ("é" * 200 + "a" * 310 + "\n").encode("latin-1") + b"short\n",
        "long/words.txt": ("word " * 80).strip() + "\n" + "a" * 45 + "\n" + "Z" * 60 + "\n",
        "src/main.py": "def main():\n    return {'a': 1}  # TODO\n\n\nclass X:\n    pass\n",
    }
    return write_tree(root, files)


LINE_ROWS: list[str] = [
    # braced and fixed-width code points
    r"\u{e9}",
    r"\U{1F600}",
    r"\x{e9}",
    r"\x{1F600}",
    r"\u{E9}j",
    r"\x41|\x61",
    r"\u00e9",
    r"\U0001F600",
    r"[\x{e0}-\x{ff}]+",
    r"[\u{400}-\u{4ff}]+",
    # control escapes
    r"\t",
    r"\a",
    r"\f",
    r"\v",
    r"\r",
    # every ASCII punctuation character, escaped
    *[f"mark\\{ch}" for ch in PUNCTUATION],
    # assertions
    r"\Afoo",
    r"bar\z",
    r"\bfoo\b",
    r"\Bor\B",
    r"\<word",
    r"word\>",
    r"\b{start}wor",
    r"ord\b{end}",
    r"\b{start-half}foo",
    r"foo\b{end-half}",
    r"\b{2}foo",
    # Perl and Unicode classes
    r"\d+",
    r"\D{4}\d",
    r"\s\S",
    r"\w+ \w+",
    r"\W\W",
    r"\pL{3}",
    r"\PL{4}",
    r"\p{Greek}+",
    r"\P{Greek}\p{Greek}",
    r"\p{Han}",
    r"\p{Cyrillic}+",
    r"\pN",
    r"[[:digit:]]+",
    r"[[:^alpha:][:space:]]{3}",
    r"[[:alpha:]]+ [[:upper:][:punct:]]",
    r"(?i)[[:upper:]]{5}",
    # legacy encodings: ASCII-compatible text matches, undecodable bytes match nothing but themselves
    "TODO",
    "[a-z]+ TODO",
    r"\W+TODO",
    "^.{3}",
    "[^a-z ]{2}",
    "ok$",
    # patterns that need long lines
    ".{300,}",
    ".{100}",
    "^.{299}$",
    r"\w{50,}",
    "(?i)[a-z]{40}",
    "(?:word ){10,}",
    ".{32}",
]
MULTILINE_ROWS: list[str] = [
    r"\{\n\s*\}",
    r"\{\n\}",
    r"\}\{\n",
    r"\{\n\t?\}",
    r"\}\n?",
    r"\n\n",
    r"(?s)\{.\}",
    r"\s+\}",
    r"\{$\n^\}",
    r"TODO\n",
]
ROWS: list[tuple[str, bool]] = [(p, False) for p in LINE_ROWS] + [(p, True) for p in MULTILINE_ROWS]


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _tree(tmp_path_factory.mktemp("parity") / "repo")


@pytest.fixture(scope="module")
def rg_path() -> str:
    found = ripgrep.locate()
    if found is None:
        pytest.fail("no rg found: the ripgrep wheel is a dependency of this project on Linux")
    return found.path


@pytest.fixture(scope="module", params=ENGINES)
def engine_ws(request: pytest.FixtureRequest, tree: Path) -> Iterator[Workspace]:
    overrides: dict[tuple[str, str], Any] = {("workspace", "root"): str(tree), ("search", "engine"): request.param}
    ws = Workspace(load_settings(None, env={}, overrides=overrides))
    assert select.report(ws)["engine"] == request.param
    yield ws
    ws.close()


def _rg(rg: str, root: Path, pattern: str, *flags: str) -> bytes:
    argv = [rg, "--no-config", "--no-require-git", "--no-heading", "--with-filename", "--null", *flags]
    done = subprocess.run([*argv, "--regexp", pattern, "--", "."], cwd=root, capture_output=True, check=False)
    assert done.returncode in (0, 1), done.stderr
    return done.stdout


def rg_lines(rg: str, root: Path, pattern: str, *, multiline: bool) -> set[tuple[str, int]]:
    out = _rg(rg, root, pattern, "--line-number", *(["--multiline"] if multiline else []))
    found: set[tuple[str, int]] = set()
    for record in out.split(b"\n"):
        if record:
            path, _, rest = record.partition(b"\0")
            found.add((os.fsdecode(path).removeprefix("./"), int(rest.split(b":", 1)[0])))
    return found


def rg_counts(rg: str, root: Path, pattern: str, *, multiline: bool) -> dict[str, int]:
    out = _rg(rg, root, pattern, "--count", *(["--multiline"] if multiline else []))
    counts: dict[str, int] = {}
    for record in out.split(b"\n"):
        if record:
            path, _, count = record.partition(b"\0")
            counts[os.fsdecode(path).removeprefix("./")] = int(count)
    return counts


@pytest.mark.slow
@pytest.mark.parametrize(("pattern", "multiline"), ROWS, ids=[f"{'U ' if m else ''}{p}" for p, m in ROWS])
def test_both_engines_find_what_rg_finds(
    engine_ws: Workspace, tree: Path, rg_path: str, pattern: str, multiline: bool
) -> None:
    args: dict[str, Any] = {"pattern": pattern, "multiline": multiline, "limit": 1000}
    content = search_text(engine_ws, SearchTextArgs.model_validate(args))
    assert isinstance(content, SearchTextContentResult)
    assert not content.truncated
    lines = {(m.path, m.line + k) for m in content.matches for k in range(m.text.count("\n") + 1)}
    assert lines == rg_lines(rg_path, tree, pattern, multiline=multiline)
    count = search_text(engine_ws, SearchTextArgs.model_validate({**args, "output_mode": "count"}))
    assert isinstance(count, SearchTextCountResult)
    assert {c.path: c.count for c in count.counts} == rg_counts(rg_path, tree, pattern, multiline=multiline)


def test_the_table_is_large_and_every_row_finds_something(tree: Path, rg_path: str) -> None:
    assert len(ROWS) >= 60
    empty = [p for p, m in ROWS if not rg_counts(rg_path, tree, p, multiline=m)]
    assert empty == []
    assert rg_counts(rg_path, tree, r"\{\n\s*\}", multiline=True)["git-gui.sh"] == 5
