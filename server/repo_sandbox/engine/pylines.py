"""Finding the matching lines of one decoded file: whole-buffer matching, line numbers only on hits.

Without `multiline`, a match never spans lines (as in ripgrep): a candidate that crosses a newline is
re-checked within its own line. A line is a hit exactly when the pattern matches within the line's bounds,
so with a literal every match must contain, only the lines holding that literal are searched. With
`multiline`, as `rg -U`: a pattern that can match a line break counts its matches (the next one is looked for
where the previous ended, so two may share a line); any other counts lines.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

from repo_sandbox.engine.pysearch import Query
from repo_sandbox.engine.request import Deadline, LineHit

LONG_LINE_CHARS: Final = 32
"""A line-mode pattern whose every match spans at least this many characters (`.{300,}`) is only tried on
lines that long: each is found by probing windows of that width for a line break, so short lines cost one
`rfind` per window instead of a regex attempt at every position."""


def long_lines(text: str | bytes | bytearray, start: int, end: int, width: int) -> Iterator[tuple[int, int]]:
    """(start, end) of each line of `text[start:end]` (which starts a line) holding at least `width` items."""
    newline: Any = "\n" if isinstance(text, str) else b"\n"
    position = start
    while position + width <= end:
        previous = text.rfind(newline, position, position + width)
        if previous >= 0:
            position = previous + 1
            continue
        line_end = text.find(newline, position + width, end)
        if line_end < 0:
            line_end = end
        yield position, line_end
        position = line_end + 1


def _context_before(text: str, line_start: int, count: int) -> list[str]:
    lines: list[str] = []
    end = line_start - 1  # the '\n' that ends the previous line
    while count > 0 and end >= 0:
        start = text.rfind("\n", 0, end) + 1
        lines.append(text[start:end])
        end = start - 1
        count -= 1
    lines.reverse()
    return lines


def _context_after(text: str, line_end: int, count: int) -> list[str]:
    lines: list[str] = []
    start = line_end + 1
    n = len(text)
    while count > 0 and start < n:
        end = text.find("\n", start)
        if end < 0:
            end = n
        lines.append(text[start:end])
        start = end + 1
        count -= 1
    return lines


def search_text_buffer(
    query: Query, text: str, *, context: int, deadline: Deadline, keep: tuple[int, int] = (0, 0)
) -> tuple[int, list[LineHit]]:
    """Count the matching lines of one decoded file; materialise those whose index is in [keep[0], keep[1]).

    Line numbers (and context) are computed only for materialised hits.
    """
    if query.required_text and not query.multiline and not query.fixed_strings:
        return _search_literal_lines(query, query.required_text, text, context=context, deadline=deadline, keep=keep)
    if query.min_chars >= LONG_LINE_CHARS:
        return _search_long_lines(query, text, context=context, deadline=deadline, keep=keep)
    find = query.finder(deadline)
    hits: list[LineHit] = []
    count = 0
    n = len(text)
    pos = 0
    line_no = 1
    counted_to = 0
    while pos <= n:
        found = find(text, pos, n)
        if found is None:
            break
        m_start, m_end = found
        line_start = text.rfind("\n", 0, m_start) + 1
        line_end = text.find("\n", m_start)
        if line_end < 0:
            line_end = n
        if m_start == n and (n == 0 or text[n - 1] == "\n"):
            break  # an empty match after the final newline (or in an empty file) is not a line
        if not query.multiline and m_end > line_end:
            found = find(text, line_start, line_end)
            if found is None:
                pos = line_end + 1
                continue
            m_end = found[1]
        last_end = line_end
        if query.multiline and m_end > line_end:
            last_end = text.find("\n", max(m_end - 1, m_start))
            if last_end < 0:
                last_end = n
        if keep[0] <= count < keep[1]:
            line_no += text.count("\n", counted_to, line_start)
            counted_to = line_start
            hits.append(_hit(text, line_start, last_end, line_no, context))
        count += 1
        # Spanning lines, the next match may start on the line this one ends on.
        pos = (m_end if m_end > m_start else m_start + 1) if query.spans_lines else last_end + 1
    return count, hits


def _hit(text: str, start: int, end: int, line: int, context: int) -> LineHit:
    """The hit for the line(s) `text[start:end]`, numbered `line`, with `context` lines around it."""
    hit = LineHit(line=line, text=text[start:end])
    if context:
        hit.before = _context_before(text, start, context)
        hit.after = _context_after(text, end, context)
    return hit


def _search_literal_lines(
    query: Query, literal: str, text: str, *, context: int, deadline: Deadline, keep: tuple[int, int]
) -> tuple[int, list[LineHit]]:
    """`search_text_buffer` for a pattern all of whose matches contain `literal`: each line holding the
    literal is searched within its own bounds, the rest of the text only by `str.find`."""
    find = query.finder(deadline)
    hits: list[LineHit] = []
    count = 0
    n = len(text)
    line_no = 1
    counted_to = 0
    position = text.find(literal)
    while position >= 0:
        line_start = text.rfind("\n", 0, position) + 1
        line_end = text.find("\n", position)
        if line_end < 0:
            line_end = n
        if find(text, line_start, line_end) is not None:
            if keep[0] <= count < keep[1]:
                line_no += text.count("\n", counted_to, line_start)
                counted_to = line_start
                hits.append(_hit(text, line_start, line_end, line_no, context))
            count += 1
        position = text.find(literal, line_end + 1)
    return count, hits


def _search_long_lines(
    query: Query, text: str, *, context: int, deadline: Deadline, keep: tuple[int, int]
) -> tuple[int, list[LineHit]]:
    """`search_text_buffer` for a line-mode pattern that needs `query.min_chars` characters: only the lines
    at least that long are searched, each within its own bounds."""
    find = query.finder(deadline)
    hits: list[LineHit] = []
    count = 0
    line_no = 1
    counted_to = 0
    for line_start, line_end in long_lines(text, 0, len(text), query.min_chars):
        if find(text, line_start, line_end) is not None:
            if keep[0] <= count < keep[1]:
                line_no += text.count("\n", counted_to, line_start)
                counted_to = line_start
                hits.append(_hit(text, line_start, line_end, line_no, context))
            count += 1
    return count, hits
