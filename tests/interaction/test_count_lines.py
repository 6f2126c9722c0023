"""count_lines end to end through the SDK client (both eras): every parameter, line semantics, caps."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from e2e_tree import DEFAULT_VISIBLE, ERAS, HIDDEN, IGNORED, MANY_FILES, call_error, call_ok, connect, json_size, write
from mcp import Client

pytestmark = pytest.mark.anyio


def editor_lines(data: bytes) -> int:
    """What an editor shows: newlines, plus one when a non-empty file does not end with a newline."""
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def extension(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    stem, dot, ext = name.rpartition(".")
    return f".{ext}" if dot and stem else ""


def expected_counts(root: Path, paths: list[str]) -> dict[str, Any]:
    """The whole count_lines result for these files, computed independently of the server."""
    binary = 0
    counted: dict[str, int] = {}
    size = 0
    for path in paths:
        data = (root / path).read_bytes()
        head = data[:8192]
        if b"\x00" in head or head.decode("utf-8", "replace").count("\ufffd") > 0.3 * len(head):
            binary += 1
            continue
        counted[path] = editor_lines(data)
        size += len(data)
    by_ext: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for path, lines in counted.items():
        by_ext[extension(path)][0] += 1
        by_ext[extension(path)][1] += lines
    return {
        "total_lines": sum(counted.values()),
        "files": len(counted),
        "bytes": size,
        "by_extension": [
            {"extension": e, "files": f, "lines": n}
            for e, (f, n) in sorted(by_ext.items(), key=lambda kv: (-kv[1][1], kv[0]))
        ],
        "largest": [{"path": p, "lines": n} for p, n in sorted(counted.items(), key=lambda kv: (-kv[1], kv[0]))[:10]],
        "skipped_binary": binary,
        "skipped_too_large": 0,
        "truncated": False,
    }


async def test_count_lines_defaults_count_every_visible_text_file(client: Client, tree: Path) -> None:
    assert await call_ok(client, "count_lines", {}) == expected_counts(tree, DEFAULT_VISIBLE)


async def test_count_lines_include_hidden_and_ignored_widen_the_count(client: Client, tree: Path) -> None:
    hidden = await call_ok(client, "count_lines", {"include_hidden": True})
    assert hidden == expected_counts(tree, [*DEFAULT_VISIBLE, *HIDDEN])
    ignored = await call_ok(client, "count_lines", {"include_ignored": True})
    assert ignored == expected_counts(tree, [*DEFAULT_VISIBLE, *IGNORED])
    both = await call_ok(client, "count_lines", {"include_hidden": True, "include_ignored": True})
    assert both == expected_counts(tree, [*DEFAULT_VISIBLE, *HIDDEN, *IGNORED])  # never .env or .git/


@pytest.mark.parametrize(
    ("path", "lines", "size"),
    [
        ("data/nonl.txt", 2, 7),  # no trailing newline: newline count + 1
        ("data/empty.txt", 0, 0),
        ("data/crlf.txt", 2, 13),
        ("data/bom.txt", 2, 21),
        ("data/latin1.txt", 1, 16),
        ("README.md", 3, 25),
    ],
)
async def test_count_lines_of_one_file_counts_lines_as_an_editor_shows_them(
    client: Client, path: str, lines: int, size: int
) -> None:
    result = await call_ok(client, "count_lines", {"path": path})
    assert result == {
        "total_lines": lines,
        "files": 1,
        "bytes": size,
        "by_extension": [{"extension": extension(path), "files": 1, "lines": lines}],
        "largest": [{"path": path, "lines": lines}],
        "skipped_binary": 0,
        "skipped_too_large": 0,
        "truncated": False,
    }


@pytest.mark.parametrize("path", ["data/blob.bin", "data/image.png", "data/noise.dat"])
async def test_count_lines_skips_and_counts_a_binary_file(client: Client, path: str) -> None:
    result = await call_ok(client, "count_lines", {"path": path})
    assert (result["files"], result["total_lines"], result["skipped_binary"], result["largest"]) == (0, 0, 1, [])


async def test_count_lines_pattern_filters_files_and_orders_ties_by_path(client: Client, tree: Path) -> None:
    result = await call_ok(client, "count_lines", {"pattern": "*.go"})
    assert result == {
        "total_lines": 11,
        "files": 3,
        "bytes": sum((tree / "src" / name).stat().st_size for name in ("main.go", "util.go", "util_test.go")),
        "by_extension": [{"extension": ".go", "files": 3, "lines": 11}],
        "largest": [
            {"path": "src/main.go", "lines": 5},
            {"path": "src/util.go", "lines": 3},
            {"path": "src/util_test.go", "lines": 3},
        ],
        "skipped_binary": 0,
        "skipped_too_large": 0,
        "truncated": False,
    }


async def test_count_lines_pattern_with_a_slash_matches_below_path(client: Client, tree: Path) -> None:
    result = await call_ok(client, "count_lines", {"path": "src", "pattern": "lib/*.{py,pyi}"})
    assert result == expected_counts(tree, ["src/lib/a.py", "src/lib/b.pyi"])


async def test_count_lines_largest_keeps_the_first_ten_paths_among_equal_counts(client: Client) -> None:
    result = await call_ok(client, "count_lines", {"path": "many"})
    assert result["largest"] == [{"path": f"many/f{i:03d}.txt", "lines": 3} for i in range(10)]
    assert (result["files"], result["total_lines"]) == (MANY_FILES, 3 * MANY_FILES)


async def test_count_lines_names_files_with_unicode_names(client: Client, tree: Path) -> None:
    result = await call_ok(client, "count_lines", {"path": "docs"})
    assert result == expected_counts(tree, ["docs/café.md", "docs/emoji_🎉.txt", "docs/guide.md", "docs/日本語.txt"])


async def test_count_lines_of_a_named_file_ignores_the_pattern(client: Client) -> None:
    result = await call_ok(client, "count_lines", {"path": "README.md", "pattern": "*.go"})
    assert (result["files"], result["total_lines"]) == (1, 3)


@pytest.mark.parametrize(
    ("path", "code"),
    [("nowhere", "not_found"), ("../", "path_outside_root"), (".env", "path_denied"), (".git", "path_denied")],
)
async def test_count_lines_bad_path_is_graded(client: Client, path: str, code: str) -> None:
    assert (await call_error(client, "count_lines", {"path": path}))["code"] == code


async def test_count_lines_invalid_glob_is_invalid_glob(client: Client) -> None:
    assert (await call_error(client, "count_lines", {"pattern": "[a-"}))["code"] == "invalid_glob"


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"path": 1}, "path"),
        ({"pattern": "x" * 1001}, "pattern"),
        ({"pattern": 5}, "pattern"),
        ({"include_hidden": "all"}, "include_hidden"),
        ({"include_ignored": "all"}, "include_ignored"),
        ({"recursive": True}, "recursive"),
    ],
)
async def test_count_lines_bad_arguments_are_invalid_arguments_naming_the_field(
    client: Client, arguments: dict[str, Any], field: str
) -> None:
    error = await call_error(client, "count_lines", arguments)
    assert (error["code"], error["details"]["field"]) == ("invalid_arguments", field)


@pytest.mark.parametrize("mode", ERAS)
async def test_count_lines_skips_and_counts_files_over_max_file_bytes(tree: Path, mode: str) -> None:
    async with connect(tree, mode, limits={"max_file_bytes": 2000}) as client:
        result = await call_ok(client, "count_lines", {"path": "data"})
    small = ["data/latin1.txt", "data/empty.txt", "data/nonl.txt", "data/crlf.txt", "data/bom.txt"]
    expected = expected_counts(tree, [*small, "data/blob.bin", "data/image.png", "data/noise.dat"])
    assert result == {**expected, "skipped_too_large": 2}  # needles.txt and long_line.txt


@pytest.mark.parametrize("mode", ERAS)
async def test_count_lines_lists_are_cut_to_max_output_bytes_and_say_so(tmp_path: Path, mode: str) -> None:
    for i in range(600):
        write(tmp_path / f"{'d' * 40}/{'n' * 150}{i}.ext{i}", "line\n")
    async with connect(tmp_path, mode, limits={"max_output_bytes": 4096}) as client:
        result = await call_ok(client, "count_lines", {})
    assert json_size(result) <= 4096
    assert (result["files"], result["total_lines"], result["truncated"]) == (600, 600, True)
    assert 0 < len(result["by_extension"]) < 600
