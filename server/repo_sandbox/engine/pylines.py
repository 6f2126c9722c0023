"""Finding the matching lines of one decoded file: whole-buffer matching, line numbers only on hits.

Without `multiline`, a match never spans lines (as in ripgrep): a candidate that crosses a newline is
re-checked within its own line. With it, as `rg -U`: a pattern that can match a line break counts its matches
(the next one looked for where the previous ended, so two may share a line); any other counts lines. A line is a hit exactly when the pattern matches within the line's bounds,
so with a literal every match must contain, only the lines holding that literal are searched.
"""

from __future__ import annotations

from repo_sandbox.engine.pysearch import Deadline, Query
from repo_sandbox.engine.request import LineHit


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
        if query.spans_lines:  # the next match may start on the line this one ends on
            pos = m_end if m_end > m_start else m_start + 1
        else:
            pos = last_end + 1
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
