"""read_file end to end through the SDK client (both eras): every parameter, paging, encodings, caps."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from e2e_tree import ERAS, NEEDLE_LINES, call_error, call_ok, connect, json_size
from mcp import Client

pytestmark = pytest.mark.anyio


def numbered(lines: list[str], start: int = 1) -> str:
    return "".join(f"{n:>6}\t{line}" for n, line in enumerate(lines, start=start))


async def test_read_file_defaults_return_the_whole_small_file_numbered(client: Client) -> None:
    assert await call_ok(client, "read_file", {"path": "README.md"}) == {
        "path": "README.md",
        "content": "     1\t# Demo\n     2\t\n     3\tTODO: write docs\n",
        "start_line": 1,
        "end_line": 3,
        "total_lines": 3,
        "truncated": False,
        "next_offset": None,
        "size_bytes": 25,
        "encoding": "utf-8",
        "redactions": 0,
    }


async def test_read_file_without_line_numbers_returns_the_raw_lines(client: Client, tree: Path) -> None:
    result = await call_ok(client, "read_file", {"path": "README.md", "line_numbers": False})
    assert result["content"] == (tree / "README.md").read_text()


async def test_read_file_offset_and_limit_select_a_line_range(client: Client) -> None:
    result = await call_ok(client, "read_file", {"path": "data/needles.txt", "offset": 10, "limit": 3})
    assert result == {
        "path": "data/needles.txt",
        "content": numbered(["line 10\n", "line 11\n", "line 12 needle\n"], start=10),
        "start_line": 10,
        "end_line": 12,
        "total_lines": NEEDLE_LINES,
        "truncated": True,
        "next_offset": 13,
        "size_bytes": result["size_bytes"],
        "encoding": "utf-8",
        "redactions": 0,
    }


async def test_read_file_page_that_reaches_the_last_line_is_not_truncated(client: Client) -> None:
    result = await call_ok(client, "read_file", {"path": "data/needles.txt", "offset": NEEDLE_LINES - 1, "limit": 5})
    assert result["content"] == numbered(
        [f"line {NEEDLE_LINES - 1}\n", f"line {NEEDLE_LINES} needle\n"], NEEDLE_LINES - 1
    )
    assert (result["end_line"], result["truncated"], result["next_offset"]) == (NEEDLE_LINES, False, None)


async def test_read_file_default_limit_is_2000_lines(client: Client) -> None:
    result = await call_ok(client, "read_file", {"path": "data/needles.txt"})
    assert (result["start_line"], result["end_line"], result["next_offset"], result["truncated"]) == (
        1,
        2000,
        2001,
        True,
    )


@pytest.mark.parametrize("limit", [700, 5000])
async def test_read_file_paging_to_the_end_returns_the_whole_file_once(client: Client, tree: Path, limit: int) -> None:
    chunks: list[str] = []
    offset: int | None = 1
    while offset is not None:
        result = await call_ok(
            client, "read_file", {"path": "data/needles.txt", "offset": offset, "limit": limit, "line_numbers": False}
        )
        assert result["start_line"] == offset
        assert result["end_line"] - result["start_line"] + 1 <= limit
        chunks.append(result["content"])
        offset = result["next_offset"]
        assert len(chunks) <= NEEDLE_LINES
    assert "".join(chunks) == (tree / "data/needles.txt").read_text()
    assert len(chunks) == -(-NEEDLE_LINES // limit)


async def test_read_file_offset_past_the_end_is_invalid_arguments_naming_offset(client: Client) -> None:
    error = await call_error(client, "read_file", {"path": "README.md", "offset": 4})
    assert (error["code"], error["details"]["field"], error["details"]["total_lines"]) == (
        "invalid_arguments",
        "offset",
        3,
    )
    assert "1 and 3" in error["hint"]


async def test_read_file_of_an_empty_file_returns_no_lines(client: Client) -> None:
    result = await call_ok(client, "read_file", {"path": "data/empty.txt"})
    assert result == {
        "path": "data/empty.txt",
        "content": "",
        "start_line": 1,
        "end_line": 0,
        "total_lines": 0,
        "truncated": False,
        "next_offset": None,
        "size_bytes": 0,
        "encoding": "utf-8",
        "redactions": 0,
    }
    error = await call_error(client, "read_file", {"path": "data/empty.txt", "offset": 2})
    assert error["details"]["field"] == "offset"


async def test_read_file_last_line_without_newline_counts_and_stays_unterminated(client: Client) -> None:
    result = await call_ok(client, "read_file", {"path": "data/nonl.txt"})
    assert (result["content"], result["total_lines"], result["end_line"]) == ("     1\tone\n     2\ttwo", 2, 2)
    last = await call_ok(client, "read_file", {"path": "data/nonl.txt", "offset": 2, "line_numbers": False})
    assert last["content"] == "two"


async def test_read_file_keeps_crlf_line_endings(client: Client) -> None:
    result = await call_ok(client, "read_file", {"path": "data/crlf.txt", "line_numbers": False})
    assert (result["content"], result["total_lines"]) == ("alpha\r\nbeta\r\n", 2)


async def test_read_file_strips_a_utf8_bom_and_reports_it(client: Client) -> None:
    result = await call_ok(client, "read_file", {"path": "data/bom.txt"})
    assert result["content"] == "     1\tfirst line\n     2\tsecond\n"
    assert (result["encoding"], result["size_bytes"], result["total_lines"]) == ("utf-8-sig", 21, 2)
    second = await call_ok(client, "read_file", {"path": "data/bom.txt", "offset": 2})
    assert second["content"] == "     2\tsecond\n"


async def test_read_file_replaces_invalid_utf8_instead_of_failing(client: Client) -> None:
    result = await call_ok(client, "read_file", {"path": "data/latin1.txt", "line_numbers": False})
    assert (result["content"], result["encoding"]) == ("caf\ufffd TODO na\ufffdve\n", "utf-8 (invalid bytes as U+FFFD)")


@pytest.mark.parametrize("path", ["data/blob.bin", "data/image.png", "data/noise.dat"])
async def test_read_file_refuses_binary_files(client: Client, tree: Path, path: str) -> None:
    error = await call_error(client, "read_file", {"path": path})
    assert (error["code"], error["category"]) == ("binary_file", "invalid_argument")
    assert error["details"] == {"path": path, "size_bytes": (tree / path).stat().st_size}


async def test_read_file_cuts_over_long_lines_with_a_visible_marker(client: Client) -> None:
    result = await call_ok(client, "read_file", {"path": "data/long_line.txt", "line_numbers": False})
    assert result["content"] == "x" * 2000 + "... [line cut: 5000 bytes in all]\nshort\n"
    assert (result["total_lines"], result["truncated"]) == (2, False)


async def test_read_file_reads_unicode_names_and_content(client: Client) -> None:
    result = await call_ok(client, "read_file", {"path": "docs/日本語.txt"})
    assert (result["path"], result["content"]) == ("docs/日本語.txt", "     1\tこんにちは TODO 世界\n")
    assert (await call_ok(client, "read_file", {"path": "docs/café.md"}))["path"] == "docs/café.md"


async def test_read_file_accepts_an_absolute_path_inside_the_root(client: Client, tree: Path) -> None:
    result = await call_ok(client, "read_file", {"path": str(tree / "src" / "util.go")})
    assert result["path"] == "src/util.go"


async def test_read_file_reads_hidden_and_ignored_files_named_explicitly(client: Client) -> None:
    assert (await call_ok(client, "read_file", {"path": ".dotfile"}))["content"] == "     1\tdot TODO\n"
    assert (await call_ok(client, "read_file", {"path": "app.log"}))["content"] == "     1\tignored log TODO\n"


@pytest.mark.parametrize(
    ("path", "code", "category"),
    [
        ("src", "not_a_file", "invalid_argument"),
        ("src/missing.go", "not_found", "not_found"),
        ("../outside.txt", "path_outside_root", "permission_denied"),
        (".env", "path_denied", "permission_denied"),
        (".git/config", "path_denied", "permission_denied"),
    ],
)
async def test_read_file_bad_paths_are_graded(client: Client, path: str, code: str, category: str) -> None:
    error = await call_error(client, "read_file", {"path": path})
    assert (error["code"], error["category"]) == (code, category)
    assert "sk-test" not in error["message"]


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({}, "path"),
        ({"path": 7}, "path"),
        ({"path": "README.md", "offset": 0}, "offset"),
        ({"path": "README.md", "offset": "first"}, "offset"),
        ({"path": "README.md", "limit": 0}, "limit"),
        ({"path": "README.md", "limit": 5001}, "limit"),
        ({"path": "README.md", "line_numbers": "yes please"}, "line_numbers"),
        ({"path": "README.md", "encoding": "latin-1"}, "encoding"),
    ],
)
async def test_read_file_bad_arguments_are_invalid_arguments_naming_the_field(
    client: Client, arguments: dict[str, Any], field: str
) -> None:
    error = await call_error(client, "read_file", arguments)
    assert (error["code"], error["details"]["field"]) == ("invalid_arguments", field)


async def test_read_file_accepts_the_bounds_of_limit(client: Client) -> None:
    one = await call_ok(client, "read_file", {"path": "data/needles.txt", "limit": 1})
    assert (one["end_line"], one["next_offset"]) == (1, 2)
    most = await call_ok(client, "read_file", {"path": "data/needles.txt", "limit": 5000, "line_numbers": False})
    assert (most["end_line"], most["truncated"]) == (NEEDLE_LINES, False)


@pytest.mark.parametrize("mode", ERAS)
@pytest.mark.parametrize(("offset", "limit"), [(1, 3), (NEEDLE_LINES - 1, 5), (500, 2)])
async def test_read_file_reads_a_line_range_of_a_file_over_max_file_bytes(
    tree: Path, mode: str, offset: int, limit: int
) -> None:
    """The cap is for whole-file work (search, count); a page of any file is read (issue 21: `limit: 3` was refused)."""
    lines = (tree / "data" / "needles.txt").read_text().splitlines()
    async with connect(tree, mode, limits={"max_file_bytes": 1000}) as client:
        page = await call_ok(client, "read_file", {"path": "data/needles.txt", "offset": offset, "limit": limit})
        search = await call_error(client, "search_text", {"pattern": "needle", "path": "data/needles.txt"})
    expected = lines[offset - 1 : offset - 1 + limit]
    assert [line.split("\t", 1)[1] for line in page["content"].splitlines()] == expected
    assert (page["start_line"], page["end_line"], page["total_lines"]) == (
        offset,
        offset + len(expected) - 1,
        NEEDLE_LINES,
    )
    assert (search["code"], search["details"]["max_file_bytes"]) == ("file_too_large", 1000)
    assert "read_file" in search["hint"] and "no tool" not in search["hint"]


@pytest.mark.slow
def test_read_file_streams_a_file_over_max_file_bytes_in_bounded_memory(tmp_path: Path, make_workspace: Any) -> None:
    """64 MiB of lines, a page from the middle: the peak of Python allocations stays a few chunks wide, and the
    page is found by counting newlines chunk by chunk (256 MiB, line 2,000,000: 0.15 s; line by line 3.2 s)."""
    import tracemalloc

    from repo_sandbox.tools.read_file import ReadFileArgs, read_file

    (tmp_path / "big.log").write_bytes(b"".join(b"%063d\n" % number for number in range(1, (1 << 20) + 1)))
    ws = make_workspace(tmp_path, limits={"max_file_bytes": 1 << 20})
    tracemalloc.start()
    try:
        result = read_file(ws, ReadFileArgs(path="big.log", offset=600_000, limit=3))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (result.start_line, result.end_line, result.total_lines) == (600_000, 600_002, 1 << 20)
    assert result.content == "".join(f"{number:>6}\t{number:063d}\n" for number in range(600_000, 600_003))
    assert peak < 8 * (1 << 20), peak


@pytest.mark.parametrize("mode", ERAS)
async def test_read_file_pages_stay_under_max_output_bytes_and_join_to_the_file(tree: Path, mode: str) -> None:
    cap = 4096
    chunks: list[str] = []
    async with connect(tree, mode, limits={"max_output_bytes": cap}) as client:
        offset: int | None = 1
        while offset is not None:
            result = await call_ok(
                client,
                "read_file",
                {"path": "data/needles.txt", "offset": offset, "limit": 5000, "line_numbers": False},
            )
            assert json_size(result) <= cap
            assert result["truncated"] is (result["next_offset"] is not None)
            chunks.append(result["content"])
            offset = result["next_offset"]
    assert len(chunks) > 10
    assert "".join(chunks) == (tree / "data/needles.txt").read_text()


LEGACY = {
    "koi8.txt": "Привет, мир: TODO\n".encode("koi8-r") * 40,
    "eucjp.txt": "日本語のテキスト TODO\n".encode("euc-jp") * 40,
    "latin1.txt": "àéîõü çà et là TODO\n".encode("latin-1") * 40,
}
"""Mostly undecodable as UTF-8 (each was `binary_file` before), but without a NUL byte: text to git and rg."""


@pytest.mark.parametrize("mode", ERAS)
@pytest.mark.parametrize("name", list(LEGACY))
async def test_read_file_shows_legacy_encodings_as_text_and_says_so(tmp_path: Path, mode: str, name: str) -> None:
    (tmp_path / name).write_bytes(LEGACY[name])
    (tmp_path / "plain.txt").write_text("plain TODO\n")
    async with connect(tmp_path, mode) as client:
        result = await call_ok(client, "read_file", {"path": name, "limit": 1, "line_numbers": False})
        expected = LEGACY[name].split(b"\n")[0].decode("utf-8", "replace") + "\n"
        assert (result["content"], result["total_lines"]) == (expected, 40)
        assert result["encoding"] == "utf-8 (invalid bytes as U+FFFD)"
        plain = await call_ok(client, "read_file", {"path": "plain.txt"})
        assert plain["encoding"] == "utf-8"
        found = await call_ok(client, "search_text", {"pattern": "TODO$", "output_mode": "count"})
        assert {c["path"]: c["count"] for c in found["counts"]} == {name: 40, "plain.txt": 1}
        assert found["skipped_binary"] == 0
        counted = await call_ok(client, "count_lines", {"path": "."})
        assert (counted["total_lines"], counted["skipped_binary"]) == (41, 0)
