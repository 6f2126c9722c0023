"""The Python engine on one buffer: line semantics, hit windows, multiline, context, decoding, timeouts."""

from __future__ import annotations

import dataclasses
import time

import pytest
import regex
from hypothesis import given
from hypothesis import strategies as st

from repo_sandbox.engine.pylines import search_text_buffer
from repo_sandbox.engine.pysearch import Query, decode_buffer
from repo_sandbox.engine.request import Deadline, LineHit
from repo_sandbox.errors import InvalidRegexError, TimeoutExceededError


def query(pattern: str, *, fixed: bool = False, case: bool = True, multiline: bool = False) -> Query:
    return Query.compile(pattern, fixed_strings=fixed, case_sensitive=case, multiline=multiline)


def search(
    pattern: str, text: str, *, keep: tuple[int, int] = (0, 1000), context: int = 0, **options: bool
) -> tuple[int, list[tuple[int, str]]]:
    count, hits = search_text_buffer(query(pattern, **options), text, context=context, deadline=Deadline(5), keep=keep)
    return count, [(hit.line, hit.text) for hit in hits]


@pytest.mark.parametrize(
    ("pattern", "text", "expected"),
    [
        ("b", "a\nb\nc\nb", [(2, "b"), (4, "b")]),
        ("b+", "bbb b\nxb", [(1, "bbb b"), (2, "xb")]),  # one hit per line, however many matches
        ("^", "x\ny\n", [(1, "x"), (2, "y")]),  # no phantom line after the final newline
        ("^", "", []),
        ("$", "x\n\ny", [(1, "x"), (2, ""), (3, "y")]),
        ("^$", "a\n\nb\n", [(2, "")]),
        ("x*", "a\nb", [(1, "a"), (2, "b")]),
        ("a\\s+b", "a\nb\na  b", [(3, "a  b")]),  # \s never crosses a line without multiline
        ("(?s)a.*b", "a\nb", []),
        ("end$", "the end\r\nend\n", [(2, "end")]),  # no CRLF mode: '$' is before '\n' only
        ("é", "café\nnaïve\ncafé", [(1, "café"), (3, "café")]),
    ],
)
def test_hits_are_whole_lines_numbered_from_one(pattern: str, text: str, expected: list[tuple[int, str]]) -> None:
    count, hits = search(pattern, text)
    assert (count, hits) == (len(expected), expected)


def test_only_the_kept_window_is_materialised_but_every_hit_is_counted() -> None:
    text = "".join(f"hit {i}\n" for i in range(1, 10_001))
    count, hits = search("hit", text, keep=(5000, 5003))
    assert count == 10_000
    assert hits == [(5001, "hit 5001"), (5002, "hit 5002"), (5003, "hit 5003")]
    assert search("hit", text, keep=(0, 0)) == (10_000, [])


@pytest.mark.parametrize(
    ("pattern", "text", "expected"),
    [
        ("a\\nb", "a\nb\na\nb\n", [(1, "a\nb"), (3, "a\nb")]),
        ("(?s)start.*?end", "start\nx\nend\nstart end\n", [(1, "start\nx\nend"), (4, "start end")]),
        ("b\\nc", "a b\nc d\n", [(1, "a b\nc d")]),
    ],
)
def test_multiline_hits_span_the_lines_of_the_match(pattern: str, text: str, expected: list[tuple[int, str]]) -> None:
    assert search(pattern, text, multiline=True) == (len(expected), expected)


@pytest.mark.parametrize(("pattern", "fixed"), [("a\\nb", False), ("a\nb", True), ("x|\\n", False)])
def test_a_line_break_without_multiline_is_refused(pattern: str, fixed: bool) -> None:
    with pytest.raises(InvalidRegexError) as caught:
        query(pattern, fixed=fixed)
    assert "multiline=true" in caught.value.hint


def test_context_lines_come_from_both_sides_and_stop_at_the_edges() -> None:
    text = "l1\nl2\nHIT\nl4\n"
    _, hits = search_text_buffer(query("HIT|l1"), text, context=2, deadline=Deadline(5), keep=(0, 10))
    assert hits == [LineHit(1, "l1", [], ["l2", "HIT"]), LineHit(3, "HIT", ["l1", "l2"], ["l4"])]


@pytest.mark.parametrize(
    ("pattern", "case", "fixed", "lines"),
    [
        ("ß", False, False, [1]),  # simple case folding, as ripgrep: 'ß' does not match 'SS'
        ("HELLO", False, True, [3]),
        ("a.b", True, True, [4]),
        ("a.b", True, False, [4, 5]),
    ],
)
def test_case_folding_and_literal_search(pattern: str, case: bool, fixed: bool, lines: list[int]) -> None:
    text = "straße\nSTRASSE\nhello\na.b\naxb\n"
    _, hits = search(pattern, text, case=case, fixed=fixed)
    assert [line for line, _ in hits] == lines


def test_decoding_drops_a_bom_and_replaces_invalid_bytes() -> None:
    assert decode_buffer(b"\xef\xbb\xbfimport os\n") == "import os\n"
    assert decode_buffer(b"caf\xe9\n\xff") == "caf\ufffd\n\ufffd"
    assert decode_buffer(b"a\xef\xbb\xbfb") == "a\ufeffb"  # only a leading mark is dropped


def test_a_catastrophic_pattern_hits_the_deadline_instead_of_hanging() -> None:
    started = time.monotonic()
    with pytest.raises(TimeoutExceededError) as caught:
        search_text_buffer(query("(a|aa)+$"), "a" * 5000 + "!", context=0, deadline=Deadline(0.3), keep=(0, 1))
    assert time.monotonic() - started < 5
    assert caught.value.code == "timeout"


def test_an_expired_deadline_stops_the_next_file_too() -> None:
    deadline = Deadline(0.0)
    with pytest.raises(TimeoutExceededError):
        search_text_buffer(query("a+"), "aaa", context=0, deadline=deadline, keep=(0, 1))


@pytest.mark.parametrize(
    ("pattern", "literal"),
    [
        (r"def \w+_cache", "_cache"),
        ("TODO", "TODO"),
        ("colou?r", "colo"),
        ("ab+c", "ab"),
        ("x{2,3}abc", "abc"),
        (r"\bimport os\b", "import os"),
        ("a.b", None),
        ("foo|bar", None),
        ("(?i)todo", None),
        ("[ab]cd", None),
        # escapes spelling a code point or a property: their digits and names are not text of the match
        (r"\x41BC", "BC"),
        (r"\u263A smile", " smile"),
        (r"caf\u00e9", "caf"),
        (r"\U0001F389party", "party"),
        (r"\p{Greek}abc", "abc"),
        (r"\pLab", "ab"),
        (r"\tab", "ab"),
    ],
)
def test_the_prefilter_literal_is_text_every_match_contains(pattern: str, literal: str | None) -> None:
    from repo_sandbox.engine.pysearch import required_literal

    assert required_literal(pattern) == literal


@given(
    st.text(alphabet="ab.*+?{}12,\\d ", max_size=8),
    st.text(alphabet="ab12 \n", max_size=30),
)
def test_a_text_without_the_prefilter_literal_never_matches(pattern: str, text: str) -> None:
    from repo_sandbox.engine.pysearch import required_literal

    try:
        compiled = regex.compile(pattern, regex.MULTILINE | regex.VERSION0)
    except (regex.error, OverflowError):
        return
    literal = required_literal(pattern)
    if literal is not None and compiled.search(text):
        assert literal in text


@given(
    st.text(alphabet="ab.*+?{}12,\\d^$ ", max_size=8),
    st.text(alphabet="ab12 \n", max_size=40),
    st.integers(min_value=0, max_value=2),
    st.integers(min_value=0, max_value=3),
)
def test_searching_only_the_lines_holding_the_literal_finds_the_same_lines(
    pattern: str, text: str, context: int, skip: int
) -> None:
    try:
        with_literal = query(pattern)
    except InvalidRegexError:
        return
    if with_literal.required_text is None:
        return
    everywhere = dataclasses.replace(with_literal, required_text=None)
    keep = (skip, skip + 5)
    expected = search_text_buffer(everywhere, text, context=context, deadline=Deadline(5), keep=keep)
    assert search_text_buffer(with_literal, text, context=context, deadline=Deadline(5), keep=keep) == expected
