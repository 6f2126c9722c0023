"""search_text end to end through the SDK client (both eras): every parameter, modes, dialect, paging, limits."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from e2e_tree import DEFAULT_VISIBLE, ERAS, MANY_FILES, NEEDLE_LINES, call_error, call_ok, connect, json_size, write
from mcp import Client

pytestmark = pytest.mark.anyio

BINARY_FILES = 3
"""data/blob.bin, data/image.png and data/noise.dat: skipped by every search of the whole tree."""

TODO_MATCHES = [
    ("README.md", 3, "TODO: write docs"),
    ("data/latin1.txt", 1, "caf\ufffd TODO na\ufffdve"),
    ("docs/café.md", 1, "Café au lait TODO"),
    ("docs/emoji_🎉.txt", 1, "party TODO"),
    ("docs/guide.md", 2, "see TODO below"),
    ("docs/日本語.txt", 1, "こんにちは TODO 世界"),
    ("keep.log", 1, "kept log TODO"),
    ("src/main.go", 4, '\tprintln("hi") // TODO'),
    ("src/nested/deeper/important.tmp", 1, "re-included TODO"),
]
"""Every 'TODO' line visible with default arguments (binary data/blob.bin holds one too, and is skipped)."""


def row(
    path: str, line: int, text: str, before: list[str] | None = None, after: list[str] | None = None
) -> dict[str, Any]:
    return {"path": path, "line": line, "text": text, "before": before or [], "after": after or []}


async def search(client: Client, **arguments: Any) -> dict[str, Any]:
    return await call_ok(client, "search_text", arguments)


async def lines_of(client: Client, **arguments: Any) -> list[tuple[str, int, str]]:
    result = await search(client, limit=1000, **arguments)
    assert result["truncated"] is False
    return [(m["path"], m["line"], m["text"]) for m in result["matches"]]


async def test_search_text_defaults_return_every_matching_line_in_path_order(client: Client) -> None:
    assert await search(client, pattern="TODO") == {
        "matches": [row(*m) for m in TODO_MATCHES],
        "files_searched": len(DEFAULT_VISIBLE) - BINARY_FILES,
        "skipped_binary": BINARY_FILES,
        "skipped_too_large": 0,
        "total_matches": len(TODO_MATCHES),
        "truncated": False,
        "next_offset": None,
        "redactions": 0,
    }


# -- output_mode --------------------------------------------------------------------------------


async def test_search_text_files_with_matches_lists_each_file_once(client: Client) -> None:
    result = await search(client, pattern="TODO", output_mode="files_with_matches")
    assert result == {
        "files": [path for path, _, _ in TODO_MATCHES],
        "files_searched": len(DEFAULT_VISIBLE) - BINARY_FILES,
        "skipped_binary": BINARY_FILES,
        "skipped_too_large": 0,
        "total_matches": len(TODO_MATCHES),
        "truncated": False,
        "next_offset": None,
        "redactions": 0,
    }


async def test_search_text_count_mode_counts_matching_lines_per_file(client: Client) -> None:
    result = await search(client, pattern="needle|marker", output_mode="count", path=".", glob="{needles,f00?}.txt")
    assert result["counts"] == [{"path": "data/needles.txt", "count": NEEDLE_LINES // 3}] + [
        {"path": f"many/f00{i}.txt", "count": 2} for i in range(10)
    ]
    assert result["total_matches"] == NEEDLE_LINES // 3 + 20
    assert (result["truncated"], result["next_offset"]) == (False, None)


# -- fixed_strings, case_sensitive, multiline, context --------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "fixed", "expected"),
    [
        ("a.b(c)", True, [("regex/meta.txt", 1, "a.b(c)")]),
        ("a.b(c)", False, []),
        ("a+b", True, [("regex/meta.txt", 2, "a+b")]),
        ("a+b", False, []),
        ("[x]", True, [("regex/meta.txt", 3, "[x]")]),
        ("fn main() {", True, [("regex/meta.txt", 4, "fn main() {")]),
        ("{e<=1}", True, [("regex/meta.txt", 5, "{e<=1}")]),
        ("a\\.b\\(c\\)", False, [("regex/meta.txt", 1, "a.b(c)")]),
        ("^\\[.\\]$", False, [("regex/meta.txt", 3, "[x]")]),
        ("\\{e<=1\\}", False, [("regex/meta.txt", 5, "{e<=1}")]),
    ],
)
async def test_search_text_fixed_strings_treat_metacharacters_literally(
    client: Client, pattern: str, fixed: bool, expected: list[tuple[str, int, str]]
) -> None:
    assert await lines_of(client, pattern=pattern, fixed_strings=fixed, path="regex") == expected


@pytest.mark.parametrize(
    ("pattern", "case_sensitive", "fixed", "lines"),
    [
        ("hello", True, False, [3]),
        ("hello", False, False, [1, 2, 3]),
        ("HELLO", False, True, [1, 2, 3]),
        ("(?i)hello", True, False, [1, 2, 3]),
        ("Hello", True, True, [1]),
    ],
)
async def test_search_text_case_sensitivity(
    client: Client, pattern: str, case_sensitive: bool, fixed: bool, lines: list[int]
) -> None:
    found = await lines_of(
        client, pattern=pattern, case_sensitive=case_sensitive, fixed_strings=fixed, path="regex/case.txt"
    )
    assert [line for _, line, _ in found] == lines


async def test_search_text_case_insensitive_folds_unicode(client: Client) -> None:
    assert await lines_of(client, pattern="CAFÉ", case_sensitive=False, path="docs") == [
        ("docs/café.md", 1, "Café au lait TODO")
    ]


async def test_search_text_multiline_matches_span_lines(client: Client) -> None:
    assert await lines_of(client, pattern="start\\nmiddle", multiline=True, path="regex") == [
        ("regex/multi.txt", 1, "start\nmiddle")
    ]
    assert await lines_of(client, pattern="(?s)start.*?end", multiline=True, path="regex/multi.txt") == [
        ("regex/multi.txt", 1, "start\nmiddle\nend"),
        ("regex/multi.txt", 4, "start\nend"),
    ]


async def test_search_text_without_multiline_never_spans_lines(client: Client) -> None:
    assert await lines_of(client, pattern="start\\s+\\w+", path="regex/multi.txt") == []
    assert await lines_of(client, pattern="(?s)start.*end", path="regex/multi.txt") == []
    assert await lines_of(client, pattern="^end$", path="regex/multi.txt") == [
        ("regex/multi.txt", 3, "end"),
        ("regex/multi.txt", 5, "end"),
    ]


@pytest.mark.parametrize(("pattern", "fixed"), [("start\\nmiddle", False), ("start\nmiddle", True), ("a\nb", False)])
async def test_search_text_line_break_without_multiline_is_invalid_regex_with_a_hint(
    client: Client, pattern: str, fixed: bool
) -> None:
    error = await call_error(client, "search_text", {"pattern": pattern, "fixed_strings": fixed})
    assert error["code"] == "invalid_regex"
    assert "multiline=true" in error["hint"]


async def test_search_text_context_lines_surround_each_match(client: Client) -> None:
    path = "regex/context.txt"
    none = await search(client, pattern="MATCH", path=path)
    assert none["matches"] == [row(path, 10, "c10 MATCH")]
    two = await search(client, pattern="MATCH", path=path, context=2)
    assert two["matches"] == [row(path, 10, "c10 MATCH", ["c8", "c9"], ["c11", "c12"])]
    most = await search(client, pattern="MATCH", path=path, context=10)
    assert most["matches"] == [
        row(path, 10, "c10 MATCH", [f"c{i}" for i in range(1, 10)], [f"c{i}" for i in range(11, 21)])
    ]


async def test_search_text_context_stops_at_the_file_edges(client: Client) -> None:
    result = await search(client, pattern="^c(1|20)$", path="regex/context.txt", context=1)
    assert result["matches"] == [
        row("regex/context.txt", 1, "c1", [], ["c2"]),
        row("regex/context.txt", 20, "c20", ["c19"], []),
    ]


# -- glob and path --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("glob", "files"),
    [
        ("*.md", ["README.md", "docs/café.md", "docs/guide.md"]),
        ("**/*.md", ["README.md", "docs/café.md", "docs/guide.md"]),
        ("*.{go,log}", ["keep.log", "src/main.go"]),
        ("src/**", ["src/main.go", "src/nested/deeper/important.tmp"]),
        ("docs/[cg]*", ["docs/café.md", "docs/guide.md"]),
        ("/keep.log", ["keep.log"]),
        (
            "!*.md",
            [
                "data/latin1.txt",
                "docs/emoji_🎉.txt",
                "docs/日本語.txt",
                "keep.log",
                "src/main.go",
                "src/nested/deeper/important.tmp",
            ],
        ),
    ],
)
async def test_search_text_glob_filters_files_with_the_search_files_rules(
    client: Client, glob: str, files: list[str]
) -> None:
    result = await search(client, pattern="TODO", glob=glob, output_mode="files_with_matches")
    assert result["files"] == files


async def test_search_text_path_narrows_to_a_directory(client: Client) -> None:
    assert [p for p, _, _ in await lines_of(client, pattern="TODO", path="docs")] == [
        "docs/café.md",
        "docs/emoji_🎉.txt",
        "docs/guide.md",
        "docs/日本語.txt",
    ]


async def test_search_text_over_a_single_file_searches_it_whatever_the_glob(client: Client) -> None:
    result = await search(client, pattern="TODO", path="src/main.go", glob="*.md")
    assert result == {
        "matches": [row("src/main.go", 4, '\tprintln("hi") // TODO')],
        "files_searched": 1,
        "skipped_binary": 0,
        "skipped_too_large": 0,
        "total_matches": 1,
        "truncated": False,
        "next_offset": None,
        "redactions": 0,
    }


async def test_search_text_over_a_single_binary_file_skips_and_counts_it(client: Client) -> None:
    result = await search(client, pattern="TODO", path="data/blob.bin")
    assert (result["matches"], result["files_searched"], result["skipped_binary"]) == ([], 0, 1)


@pytest.mark.parametrize(
    ("path", "code"),
    [("nowhere", "not_found"), ("../", "path_outside_root"), (".env", "path_denied"), (".git", "path_denied")],
)
async def test_search_text_bad_path_is_graded(client: Client, path: str, code: str) -> None:
    assert (await call_error(client, "search_text", {"pattern": "TODO", "path": path}))["code"] == code


# -- hidden and ignored files -------------------------------------------------------------------


async def test_search_text_include_hidden_searches_dot_files_but_never_denied_ones(client: Client) -> None:
    found = await lines_of(client, pattern="TODO", include_hidden=True)
    assert sorted(set(found) - {tuple(m) for m in TODO_MATCHES}) == [
        (".dotfile", 1, "dot TODO"),
        (".hidden/config.yml", 1, "hidden: TODO"),
    ]
    assert await lines_of(client, pattern="sk-test", include_hidden=True, include_ignored=True) == []


async def test_search_text_include_ignored_searches_ignored_files(client: Client) -> None:
    found = await lines_of(client, pattern="TODO", include_ignored=True)
    assert sorted({p for p, _, _ in found} - {m[0] for m in TODO_MATCHES}) == [
        "app.log",
        "build/out.js",
        "scratch/tmp.txt",
        "src/cache.tmp",
        "src/generated/gen.go",
    ]


# -- encodings, empty files, long lines -----------------------------------------------------------


async def test_search_text_ignores_a_utf8_bom(client: Client) -> None:
    assert await lines_of(client, pattern="^first", path="data") == [("data/bom.txt", 1, "first line")]


async def test_search_text_empty_matches_never_invent_lines(client: Client) -> None:
    assert await lines_of(client, pattern="^", path="data/empty.txt") == []
    assert await lines_of(client, pattern="$", path="data/nonl.txt") == [
        ("data/nonl.txt", 1, "one"),
        ("data/nonl.txt", 2, "two"),
    ]
    assert await lines_of(client, pattern="x*", path="README.md") == [
        ("README.md", 1, "# Demo"),
        ("README.md", 2, ""),
        ("README.md", 3, "TODO: write docs"),
    ]


async def test_search_text_cuts_long_matching_lines_with_a_visible_marker(client: Client) -> None:
    found = await lines_of(client, pattern="^x", path="data/long_line.txt")
    assert found == [("data/long_line.txt", 1, "x" * 2000 + "... [line cut: 3000 more characters]")]


# -- paging -------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("limit", [100, 333])
async def test_search_text_content_paging_to_the_end_returns_every_match_once(client: Client, limit: int) -> None:
    seen: list[int] = []
    offset: int | None = 0
    pages = 0
    result: dict[str, Any] = {}
    while offset is not None:
        result = await search(client, pattern="needle", path="data", limit=limit, offset=offset)
        assert len(result["matches"]) <= limit
        assert result["truncated"] is (result["next_offset"] is not None)
        assert result["total_matches"] >= offset + len(result["matches"])
        seen.extend(m["line"] for m in result["matches"])
        offset = result["next_offset"]
        pages += 1
        assert pages <= NEEDLE_LINES
    assert seen == list(range(3, NEEDLE_LINES + 1, 3))
    assert result["total_matches"] == NEEDLE_LINES // 3
    assert pages == -(-(NEEDLE_LINES // 3) // limit)


@pytest.mark.parametrize("mode", ["files_with_matches", "count"])
async def test_search_text_per_file_modes_page_to_the_end(client: Client, mode: str) -> None:
    rows: list[Any] = []
    offset: int | None = 0
    while offset is not None:
        result = await search(client, pattern="marker", path="many", output_mode=mode, limit=50, offset=offset)
        rows.extend(result["files"] if mode == "files_with_matches" else result["counts"])
        offset = result["next_offset"]
        assert len(rows) <= MANY_FILES
    expected = [f"many/f{i:03d}.txt" for i in range(MANY_FILES)]
    if mode == "count":
        expected = [{"path": p, "count": 2} for p in expected]
    assert rows == expected


async def test_search_text_stopped_search_reports_a_lower_bound_and_truncated(client: Client) -> None:
    result = await search(client, pattern="marker", path="many", output_mode="files_with_matches", limit=5)
    assert (len(result["files"]), result["truncated"], result["next_offset"]) == (5, True, 5)
    assert 10 <= result["total_matches"] < 2 * MANY_FILES
    assert result["files_searched"] < MANY_FILES


async def test_search_text_offset_past_the_end_is_an_empty_final_page(client: Client) -> None:
    result = await search(client, pattern="TODO", offset=500)
    assert (result["matches"], result["truncated"], result["next_offset"]) == ([], False, None)
    assert result["total_matches"] == len(TODO_MATCHES)


# -- dialect and argument validation ---------------------------------------------------------------


@pytest.mark.parametrize(
    "pattern",
    [
        # look-around and backreferences are outside the Rust dialect
        "foo(?=bar)",
        "foo(?!bar)",
        "(?<=a)b",
        "(?<!a)b",
        "(a)\\1",
        "(?P<x>a)(?P=x)",
        "(?P<x>a)\\k<x>",
        "(?P<x>a)\\g<x>",
        # backtracking-only and `regex`-module extensions
        "a++",
        "(?>a+)b",
        "(a(?R)?b)",
        "(?1)",
        "(?|a|b)",
        "(?(1)a|b)",
        "(?:foo){e<=1}",
        "a{,3}",
        "\\Z",
        "\\G",
        "\\m",
        "\\N{SPACE}",
        "\\X",
        "(?r)a",
        "(?V1)a",
        # Rust refuses a bare '{'; so do we (the hint says to escape it)
        "fn main() {",
        # malformed
        "(abc",
        "[abc",
        "*a",
        # too large once counted repetitions are expanded (compiling it would take seconds and GiBs)
        "((a{100}){100}){100}",
        "\\w{100000}",
    ],
)
async def test_search_text_pattern_outside_the_dialect_is_invalid_regex_with_a_hint(
    client: Client, pattern: str
) -> None:
    with anyio.fail_after(5):
        error = await call_error(client, "search_text", {"pattern": pattern})
    assert (error["code"], error["category"], error["retryable"]) == ("invalid_regex", "invalid_argument", False)
    assert error["details"]["pattern"] == pattern


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({}, "pattern"),
        ({"pattern": ""}, "pattern"),
        ({"pattern": "a" * 10_001}, "pattern"),
        ({"pattern": "a", "context": -1}, "context"),
        ({"pattern": "a", "context": 11}, "context"),
        ({"pattern": "a", "limit": 0}, "limit"),
        ({"pattern": "a", "limit": 1001}, "limit"),
        ({"pattern": "a", "offset": -5}, "offset"),
        ({"pattern": "a", "output_mode": "lines"}, "output_mode"),
        ({"pattern": "a", "glob": "x" * 1001}, "glob"),
        ({"pattern": "a", "fixed_strings": "sometimes"}, "fixed_strings"),
        ({"pattern": "a", "case_sensitive": {}}, "case_sensitive"),
        ({"pattern": "a", "multiline": []}, "multiline"),
        ({"pattern": "a", "include_hidden": "on weekends"}, "include_hidden"),
        ({"pattern": "a", "include_ignored": 2}, "include_ignored"),
        ({"pattern": "a", "regex": True}, "regex"),
    ],
)
async def test_search_text_bad_arguments_are_invalid_arguments_naming_the_field(
    client: Client, arguments: dict[str, Any], field: str
) -> None:
    error = await call_error(client, "search_text", arguments)
    assert (error["code"], error["details"]["field"]) == ("invalid_arguments", field)


async def test_search_text_accepts_the_bounds_of_limit_and_context(client: Client) -> None:
    one = await search(client, pattern="needle", path="data", limit=1, context=0)
    assert (len(one["matches"]), one["next_offset"]) == (1, 1)
    most = await search(client, pattern="needle", path="data", limit=1000)
    assert (len(most["matches"]), most["truncated"], most["next_offset"]) == (1000, False, None)
    widest = await search(client, pattern="needle", path="data", limit=1000, context=10)
    assert widest["matches"][0]["after"] == [f"line {i} needle" if i % 3 == 0 else f"line {i}" for i in range(4, 14)]
    # 1000 matches with 20 context lines each do not fit in max_output_bytes: the page stops early
    assert widest["truncated"] is True and widest["next_offset"] == len(widest["matches"]) < 1000
    assert json_size(widest) <= 128 * 1024


async def test_search_text_invalid_glob_is_invalid_glob(client: Client) -> None:
    assert (await call_error(client, "search_text", {"pattern": "a", "glob": "*.{py"}))["code"] == "invalid_glob"


@pytest.mark.parametrize("pattern", ["\\u263A smile", "\\x41BC", "caf\\u00e9", "\\U0001F389 party"])
@pytest.mark.parametrize("engine", ["ripgrep", "python"])
async def test_search_text_code_point_escapes_match_in_a_file_and_in_a_tree(
    tmp_path: Path, pattern: str, engine: str
) -> None:
    """A named file and a multiline search go to the Python engine whatever the settings: its prefilter
    once took the hex digits of `\\u263A` for text the line must contain, and found nothing."""
    write(tmp_path / "marks.txt", "\u263a smile\nABC\ncaf\u00e9\n\U0001f389 party\nnothing\n")
    async with connect(tmp_path, "legacy", search={"engine": engine}) as client:
        for arguments in ({}, {"path": "marks.txt"}, {"multiline": True}):
            result = await call_ok(client, "search_text", {"pattern": pattern, **arguments})
            assert result["total_matches"] == 1, arguments


# -- limits ---------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("mode", ERAS)
async def test_search_text_catastrophic_pattern_times_out_with_a_graded_error(tmp_path: Path, mode: str) -> None:
    write(tmp_path / "evil.txt", "a" * 5000 + "!\n")
    async with connect(tmp_path, mode, limits={"regex_timeout_s": 0.5}, search={"engine": "python"}) as client:
        with anyio.fail_after(10):
            error = await call_error(client, "search_text", {"pattern": "(a|aa)+$"})
        assert (error["code"], error["category"]) == ("timeout", "limit_exceeded")
        assert "Simplify the pattern" in error["hint"]
        with anyio.fail_after(5):
            assert (await call_ok(client, "search_text", {"pattern": "a!"}))["total_matches"] == 1


async def test_the_ripgrep_engine_answers_a_catastrophic_pattern_without_backtracking(tmp_path: Path) -> None:
    write(tmp_path / "evil.txt", "a" * 5000 + "!\n")
    write(tmp_path / "good.txt", "aaa\n")
    async with connect(tmp_path, "legacy", limits={"regex_timeout_s": 0.5}, search={"engine": "ripgrep"}) as client:
        with anyio.fail_after(10):
            result = await call_ok(client, "search_text", {"pattern": "(a|aa)+$"})
        assert [(m["path"], m["line"]) for m in result["matches"]] == [("good.txt", 1)]


@pytest.mark.parametrize("mode", ERAS)
async def test_search_text_skips_and_counts_files_over_max_file_bytes(tree: Path, mode: str) -> None:
    async with connect(tree, mode, limits={"max_file_bytes": 2000}) as client:
        result = await call_ok(client, "search_text", {"pattern": "needle|TODO|x", "path": "data"})
        assert (result["skipped_too_large"], result["skipped_binary"]) == (2, BINARY_FILES)  # needles, long_line
        assert [m["path"] for m in result["matches"]] == ["data/latin1.txt"]
