"""search_files end to end through the SDK client (both eras): every parameter, globs, paging, ignore rules."""

from __future__ import annotations

from typing import Any

import pytest
from e2e_tree import DEFAULT_VISIBLE, HIDDEN, IGNORED, MANY_FILES, call_error, call_ok, path_order
from mcp import Client

pytestmark = pytest.mark.anyio


async def files_of(client: Client, **arguments: Any) -> list[str]:
    result = await call_ok(client, "search_files", {"limit": 1000, **arguments})
    assert result["truncated"] is False and result["next_offset"] is None
    assert result["total"] == len(result["files"])
    return result["files"]


async def test_search_files_defaults_list_visible_files_in_path_order(client: Client) -> None:
    result = await call_ok(client, "search_files", {"pattern": "*.go"})
    assert result == {
        "files": ["src/main.go", "src/util.go", "src/util_test.go"],
        "total": 3,
        "truncated": False,
        "next_offset": None,
    }


async def test_search_files_star_lists_every_visible_file_and_nothing_else(client: Client) -> None:
    assert await files_of(client, pattern="*") == DEFAULT_VISIBLE


async def test_search_files_default_limit_is_100_and_says_how_to_continue(client: Client) -> None:
    result = await call_ok(client, "search_files", {"pattern": "*"})
    assert result["files"] == DEFAULT_VISIBLE[:100]
    assert (result["total"], result["truncated"], result["next_offset"]) == (len(DEFAULT_VISIBLE), True, 100)


# -- glob semantics -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        # a pattern without '/' matches the file name at any depth: *.go == **/*.go
        ("*.go", ".", ["src/main.go", "src/util.go", "src/util_test.go"]),
        ("**/*.go", ".", ["src/main.go", "src/util.go", "src/util_test.go"]),
        ("util*.go", ".", ["src/util.go", "src/util_test.go"]),
        # '*' and '?' stay inside one component; a pattern with '/' matches the path below `path`
        ("src/*.go", ".", ["src/main.go", "src/util.go", "src/util_test.go"]),
        ("src/*.py", ".", []),
        ("src/**/*.py", ".", ["src/lib/a.py"]),
        ("lib/*.py", "src", ["src/lib/a.py"]),
        ("lib/?.py", "src", ["src/lib/a.py"]),
        ("src/lib/?.js", ".", ["src/lib/c.js"]),
        ("s?c/lib/a.py", ".", ["src/lib/a.py"]),
        # alternatives and classes
        ("*.{py,pyi}", ".", ["src/lib/a.py", "src/lib/b.pyi"]),
        ("*.{js,jsx,ts}", "src", ["src/lib/c.js", "src/lib/d.jsx", "src/lib/e.ts"]),
        ("{a,c}.*", "src/lib", ["src/lib/a.py", "src/lib/c.js"]),
        ("f[0-9].txt", ".", ["src/lib/f1.txt", "src/lib/f2.txt"]),
        ("f[!0-9].txt", ".", ["src/lib/fx.txt"]),
        ("f[^0-9].txt", ".", ["src/lib/fx.txt"]),
        ("f[12x].txt", "src/lib", ["src/lib/f1.txt", "src/lib/f2.txt", "src/lib/fx.txt"]),
        # a leading '/' anchors the pattern to the searched directory
        ("/README.md", ".", ["README.md"]),
        ("/a.py", ".", []),
        ("/a.py", "src/lib", ["src/lib/a.py"]),
        ("/src/*.go", ".", ["src/main.go", "src/util.go", "src/util_test.go"]),
        ("./README.md", ".", ["README.md"]),
        # '**' spans zero or more directories, also at the end
        ("src/**", "src/lib", []),
        (
            "lib/**",
            "src",
            path_order(
                [f"src/lib/{n}" for n in ("a.py", "b.pyi", "c.js", "d.jsx", "e.ts")]
                + ["src/lib/f1.txt", "src/lib/f2.txt", "src/lib/fx.txt"]
            ),
        ),
        ("**/deeper/*", ".", ["src/nested/deeper/important.tmp"]),
        # escapes make metacharacters literal; matching is case-sensitive
        ("\\*.go", ".", []),
        ("readme.md", ".", []),
        # unicode names
        ("*.md", "docs", ["docs/café.md", "docs/guide.md"]),
        ("café.md", ".", ["docs/café.md"]),
        ("日本語.*", ".", ["docs/日本語.txt"]),
        ("*🎉*", ".", ["docs/emoji_🎉.txt"]),
    ],
)
async def test_search_files_glob_semantics(client: Client, pattern: str, path: str, expected: list[str]) -> None:
    assert await files_of(client, pattern=pattern, path=path) == expected


@pytest.mark.parametrize("pattern", ["[abc", "*.{py,js", "src/\\"])
async def test_search_files_malformed_glob_is_invalid_glob(client: Client, pattern: str) -> None:
    error = await call_error(client, "search_files", {"pattern": pattern})
    assert (error["code"], error["category"]) == ("invalid_glob", "invalid_argument")


# -- path ---------------------------------------------------------------------------------------


async def test_search_files_path_limits_the_search_to_a_directory(client: Client) -> None:
    assert await files_of(client, pattern="*", path="docs") == [
        "docs/café.md",
        "docs/emoji_🎉.txt",
        "docs/guide.md",
        "docs/日本語.txt",
    ]
    assert await files_of(client, pattern="*", path="./src/lib/") == await files_of(client, pattern="*", path="src/lib")


@pytest.mark.parametrize(
    ("path", "code"),
    [
        ("README.md", "not_a_directory"),
        ("no/such/dir", "not_found"),
        ("../", "path_outside_root"),
        (".git", "path_denied"),
    ],
)
async def test_search_files_bad_path_is_graded(client: Client, path: str, code: str) -> None:
    error = await call_error(client, "search_files", {"pattern": "*", "path": path})
    assert error["code"] == code


# -- limit, offset: paging ----------------------------------------------------------------------


@pytest.mark.parametrize("limit", [1, 7, 100])
async def test_search_files_paging_to_the_end_returns_every_file_once(client: Client, limit: int) -> None:
    pages: list[list[str]] = []
    offset: int | None = 0
    while offset is not None:
        result = await call_ok(
            client, "search_files", {"pattern": "*.txt", "path": "many", "limit": limit, "offset": offset}
        )
        assert result["total"] == MANY_FILES
        assert len(result["files"]) <= limit
        assert result["truncated"] is (result["next_offset"] is not None)
        pages.append(result["files"])
        offset = result["next_offset"]
        assert len(pages) <= MANY_FILES
    union = [f for page in pages for f in page]
    assert union == [f"many/f{i:03d}.txt" for i in range(MANY_FILES)]
    assert len(pages) == -(-MANY_FILES // limit)


async def test_search_files_offset_past_the_end_is_an_empty_final_page(client: Client) -> None:
    result = await call_ok(client, "search_files", {"pattern": "*.txt", "path": "many", "offset": 10_000})
    assert result == {"files": [], "total": MANY_FILES, "truncated": False, "next_offset": None}


async def test_search_files_accepts_the_largest_limit(client: Client) -> None:
    result = await call_ok(client, "search_files", {"pattern": "*", "limit": 1000})
    assert result["files"] == DEFAULT_VISIBLE


# -- sort ---------------------------------------------------------------------------------------


async def test_search_files_sort_modified_lists_newest_first(client: Client) -> None:
    assert await files_of(client, pattern="*", path="mtime", sort="modified") == [
        "mtime/new.txt",
        "mtime/middle.txt",
        "mtime/old.txt",
    ]
    assert await files_of(client, pattern="*", path="mtime", sort="path") == [
        "mtime/middle.txt",
        "mtime/new.txt",
        "mtime/old.txt",
    ]


async def test_search_files_sort_modified_pages_consistently(client: Client) -> None:
    first = await call_ok(client, "search_files", {"pattern": "*", "path": "mtime", "sort": "modified", "limit": 2})
    rest = await call_ok(
        client, "search_files", {"pattern": "*", "path": "mtime", "sort": "modified", "offset": first["next_offset"]}
    )
    assert first["files"] + rest["files"] == ["mtime/new.txt", "mtime/middle.txt", "mtime/old.txt"]


# -- hidden and ignored files -------------------------------------------------------------------


async def test_search_files_include_hidden_adds_dot_files_but_never_denied_ones(client: Client) -> None:
    files = await files_of(client, pattern="*", include_hidden=True)
    assert sorted(set(files) - set(DEFAULT_VISIBLE)) == sorted(HIDDEN)
    assert not any(f == ".env" or f.startswith(".git/") for f in files)


async def test_search_files_include_ignored_adds_gitignored_and_dot_ignore_files(client: Client) -> None:
    files = await files_of(client, pattern="*", include_ignored=True)
    assert sorted(set(files) - set(DEFAULT_VISIBLE)) == sorted(IGNORED)


async def test_search_files_include_hidden_and_ignored_together(client: Client) -> None:
    files = await files_of(client, pattern="*", include_hidden=True, include_ignored=True)
    assert files == path_order([*DEFAULT_VISIBLE, *HIDDEN, *IGNORED])


async def test_search_files_nested_gitignore_rules_apply_below_their_directory(client: Client) -> None:
    assert await files_of(client, pattern="*.tmp") == ["src/nested/deeper/important.tmp"]
    assert await files_of(client, pattern="*.tmp", path="src/nested") == ["src/nested/deeper/important.tmp"]
    assert await files_of(client, pattern="*.log") == ["keep.log"]


# -- argument validation ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({}, "pattern"),
        ({"pattern": ""}, "pattern"),
        ({"pattern": "x" * 1001}, "pattern"),
        ({"pattern": "*", "limit": 0}, "limit"),
        ({"pattern": "*", "limit": 1001}, "limit"),
        ({"pattern": "*", "offset": -1}, "offset"),
        ({"pattern": "*", "sort": "size"}, "sort"),
        ({"pattern": "*", "include_hidden": "maybe"}, "include_hidden"),
        ({"pattern": "*", "include_ignored": [1]}, "include_ignored"),
        ({"pattern": "*", "path": 3}, "path"),
        ({"pattern": "*", "max_depth": 3}, "max_depth"),
    ],
)
async def test_search_files_bad_arguments_are_invalid_arguments_naming_the_field(
    client: Client, arguments: dict[str, Any], field: str
) -> None:
    error = await call_error(client, "search_files", arguments)
    assert (error["code"], error["category"], error["details"]["field"]) == (
        "invalid_arguments",
        "invalid_argument",
        field,
    )
    assert field in error["message"]
