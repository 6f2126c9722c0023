"""No tool result ever exceeds `max_output_bytes`: a 50 MB file of very long lines and a 100k-match search.

Lines mix control characters, quotes, backslashes and non-ASCII text, so JSON escaping makes the
serialised result up to six times larger than the text: the cap must hold for what the client receives.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from e2e_tree import ERAS, connect, json_size, payload_of
from mcp import Client

from repo_sandbox.config.model import LimitsConfig

pytestmark = pytest.mark.anyio

DEFAULT_CAP = LimitsConfig().max_output_bytes
CAPS = (4096, DEFAULT_CAP)
BIG_LINES = 5000
BIG_LINE = ('ab\x01é"\\' * 1700)[:9999] + "\n"
"""9,999 characters and a newline; one character in six is a control character (six bytes once JSON-escaped)."""
MATCH_FILES = 2000
MATCHES_PER_FILE = 50


@pytest.fixture(scope="module")
def big_repo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("big")
    line = BIG_LINE.encode("utf-8")
    (root / "huge.txt").write_bytes(line * BIG_LINES)
    assert (root / "huge.txt").stat().st_size >= 50_000_000
    hits = root / "hits"
    hits.mkdir()
    body = "".join(f'match {i} "quoted" \\ é \x02 {"z" * 200}\n' for i in range(MATCHES_PER_FILE))
    for i in range(MATCH_FILES):
        (hits / f"file{i:04d}.txt").write_text(body, encoding="utf-8")
    yield root


@pytest.fixture(params=[(mode, cap) for mode in ERAS for cap in CAPS], ids=lambda p: f"{p[0]}-{p[1]}")
async def capped(request: pytest.FixtureRequest, big_repo: Path) -> AsyncIterator[tuple[Client, int]]:
    mode, cap = request.param
    async with connect(big_repo, mode, limits={"max_output_bytes": cap}) as client:
        yield client, cap


async def capped_call(client: Client, cap: int, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    with anyio.fail_after(60):
        result = await client.call_tool(tool, arguments)
    payload = payload_of(result)
    assert result.is_error is False, payload
    assert json_size(payload) <= cap
    text = result.content[0]
    assert text.type == "text" and len(text.text.encode("utf-8")) <= cap
    return payload


async def test_read_file_of_50_mb_of_long_lines_stays_under_the_cap(capped: tuple[Client, int]) -> None:
    client, cap = capped
    result = await capped_call(client, cap, "read_file", {"path": "huge.txt", "limit": 5000})
    assert (result["total_lines"], result["start_line"], result["truncated"]) == (BIG_LINES, 1, True)
    assert result["next_offset"] == result["end_line"] + 1
    line_bytes = len(BIG_LINE.encode("utf-8")) - 1
    marker = (
        f"... [line cut: {line_bytes} bytes in all]\n" if cap == DEFAULT_CAP else "... [cut to fit the output limit]"
    )
    assert marker in result["content"]
    after = await capped_call(client, cap, "read_file", {"path": "huge.txt", "offset": result["next_offset"]})
    assert after["start_line"] == result["next_offset"]


@pytest.mark.slow
async def test_search_text_over_50_mb_stays_under_the_cap(capped: tuple[Client, int]) -> None:
    client, cap = capped
    content = await capped_call(client, cap, "search_text", {"pattern": "ab", "limit": 1000, "context": 10})
    assert content["truncated"] is True and content["next_offset"] == len(content["matches"]) >= 1
    assert all(m["text"].endswith("more characters]") for m in content["matches"])
    counted = await capped_call(
        client, cap, "search_text", {"pattern": "ab", "path": "huge.txt", "output_mode": "count"}
    )
    assert counted["counts"] == [{"path": "huge.txt", "count": BIG_LINES}]
    assert (counted["total_matches"], counted["truncated"], counted["next_offset"]) == (BIG_LINES, False, None)


@pytest.mark.slow
async def test_count_lines_over_50_mb_stays_under_the_cap(capped: tuple[Client, int]) -> None:
    client, cap = capped
    result = await capped_call(client, cap, "count_lines", {})
    assert result["total_lines"] == BIG_LINES + MATCH_FILES * MATCHES_PER_FILE
    assert result["largest"][0] == {"path": "huge.txt", "lines": BIG_LINES}


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["content", "files_with_matches", "count"])
async def test_search_with_100k_matches_stays_under_the_cap_and_says_how_to_continue(
    capped: tuple[Client, int], mode: str
) -> None:
    client, cap = capped
    result = await capped_call(
        client, cap, "search_text", {"pattern": "match", "path": "hits", "output_mode": mode, "limit": 1000}
    )
    rows = result[{"content": "matches", "files_with_matches": "files", "count": "counts"}[mode]]
    assert result["truncated"] is True and result["next_offset"] == len(rows) >= 1
    assert len(rows) == 1000 or cap < DEFAULT_CAP or mode == "content"
    assert len(rows) <= result["total_matches"] < MATCH_FILES * MATCHES_PER_FILE
    following = await capped_call(
        client,
        cap,
        "search_text",
        {"pattern": "match", "path": "hits", "output_mode": mode, "limit": 1000, "offset": result["next_offset"]},
    )
    assert following[{"content": "matches", "files_with_matches": "files", "count": "counts"}[mode]] != rows


async def test_count_mode_pages_through_all_100k_matches(big_repo: Path) -> None:
    counts: list[dict[str, Any]] = []
    page: dict[str, Any] = {}
    async with connect(big_repo, "legacy") as client:
        offset: int | None = 0
        while offset is not None:
            page = await capped_call(
                client,
                DEFAULT_CAP,
                "search_text",
                {"pattern": "match", "path": "hits", "output_mode": "count", "offset": offset, "limit": 1000},
            )
            counts.extend(page["counts"])
            offset = page["next_offset"]
            assert len(counts) <= MATCH_FILES
    assert counts == [{"path": f"hits/file{i:04d}.txt", "count": MATCHES_PER_FILE} for i in range(MATCH_FILES)]
    assert sum(c["count"] for c in counts) == 100_000
    assert page["total_matches"] == 100_000 and page["truncated"] is False
