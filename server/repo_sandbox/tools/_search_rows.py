"""The rows of one page of a search_text run: matching lines ("content") or files, within the output cap."""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import Field

from repo_sandbox.engine.request import FileHits, LineHit, OutputMode
from repo_sandbox.fs.textfile import cut_text
from repo_sandbox.meter import OutputMeter
from repo_sandbox.tools._results import ResultModel
from repo_sandbox.tools._search_runs import SearchRun


class TextMatch(ResultModel):
    path: str
    line: int = Field(description="1-based line number.")
    text: str = Field(description="The matching line (in multiline mode, the lines of the match).")
    before: list[str] = Field(description="Context lines before the match.")
    after: list[str] = Field(description="Context lines after the match.")


class FileCount(ResultModel):
    path: str
    count: int = Field(
        description="Matching lines in this file (multiline, with a pattern that can match a line break: matches, "
        "as `rg -U --count`)."
    )


_MATCH_FIXED_BYTES = len('{"path": , "line": , "text": , "before": [], "after": []}') + 2
"""A `TextMatch` row as `json.dumps` writes it, without its values, and the list separator after it."""


def match_cost(path_cost: int, line: int, text: str, before: list[str], after: list[str]) -> int:
    """Exactly `OutputMeter.item_cost` of the row, without building and dumping it."""
    cost = _MATCH_FIXED_BYTES + path_cost + len(str(line)) + OutputMeter.cost(text)
    for lines in (before, after):
        if lines:
            cost += sum(OutputMeter.cost(t) for t in lines) + 2 * (len(lines) - 1)
    return cost


def _match_row(path: str, hit: LineHit, max_chars: int, meter: OutputMeter, path_cost: int) -> TextMatch | None:
    """The row for one hit if it fits in what is left of the page (`path_cost`: `OutputMeter.cost(path)`).

    A row too large for even an empty page (long lines with long context, or control characters that
    JSON escapes six-fold) is shrunk, so paging always advances: its context is dropped and its line cut.
    """
    text = cut_text(hit.text, max_chars)
    before = [cut_text(t, max_chars) for t in hit.before]
    after = [cut_text(t, max_chars) for t in hit.after]
    cost = match_cost(path_cost, hit.line, text, before, after)
    if cost > meter.limit:
        room = max(meter.limit - match_cost(path_cost, hit.line, "", [], []) - 64, 0) // 6
        text, before, after = cut_text(hit.text, room), [], []
        cost = match_cost(path_cost, hit.line, text, before, after)
    if not meter.try_add(cost):
        return None
    return TextMatch(path=path, line=hit.line, text=text, before=before, after=after)


@dataclass
class PageRows:
    matches: list[TextMatch] = field(default_factory=list[TextMatch])
    files: list[str] = field(default_factory=list[str])
    counts: list[FileCount] = field(default_factory=list[FileCount])
    consumed: int = 0
    """Rows of this page returned, or skipped because no page could hold them."""
    more: bool = False
    total_matches: int = 0
    """Matching lines in the files read, as far as this page went."""


def read_page(run: SearchRun, mode: OutputMode, offset: int, end: int, meter: OutputMeter, max_chars: int) -> PageRows:
    """Rows [offset, end) of `run` that fit the meter; the run stops before the first file the page did not
    wholly show (it is held for the next page)."""
    rows = PageRows(total_matches=run.total)
    for file_hits, first_hit in run.files_with_first_hits():
        index, total = run.row, run.total
        if index >= end:
            run.hold(file_hits, index, first_hit, total)
            rows.more = True
            break
        rows.total_matches = total + file_hits.count
        if mode == "content":
            shown = _add_lines(rows, file_hits, first_hit, (offset, end), meter, max_chars)
            shown = shown and index + file_hits.count <= end
        else:
            shown = index < offset or _add_file(rows, file_hits, mode, meter)
        if not shown:
            run.hold(file_hits, index, first_hit, total)
            rows.more = True
            break
        run.advance(file_hits.count if mode == "content" else 1, file_hits.count)
    return rows


def _add_lines(
    rows: PageRows, file_hits: FileHits, first_hit: int, page: tuple[int, int], meter: OutputMeter, max_chars: int
) -> bool:
    """Add the file's hits inside `page` ([offset, end) rows); False when the meter filled first."""
    offset, end = page
    path = file_hits.rel_path
    path_cost = OutputMeter.cost(path) if file_hits.hits else 0
    for number, hit in enumerate(file_hits.hits, start=first_hit):
        if number >= end:
            break
        if number < offset:
            continue
        match = _match_row(path, hit, max_chars, meter, path_cost)
        if match is None:
            return False
        rows.matches.append(match)
        rows.consumed += 1
    return True


def _add_file(rows: PageRows, file_hits: FileHits, mode: OutputMode, meter: OutputMeter) -> bool:
    """Add the file's row; False when the meter filled first. A row larger than a whole page is skipped (and
    counted as consumed), so paging always advances."""
    path = file_hits.rel_path
    item = path if mode == "files_with_matches" else FileCount(path=path, count=file_hits.count)
    cost = OutputMeter.item_cost(item)
    if cost <= meter.limit:
        if not meter.try_add(cost):
            return False
        if isinstance(item, str):
            rows.files.append(item)
        else:
            rows.counts.append(item)
    rows.consumed += 1
    return True
