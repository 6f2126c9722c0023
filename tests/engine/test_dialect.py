"""The regex dialect: Rust-regex syntax accepted, everything else refused by name, compiled size bounded."""

from __future__ import annotations

import pytest
import regex

from repo_sandbox.engine.dialect import MAX_EXPANDED_SIZE, check_dialect, min_width, translate
from repo_sandbox.errors import InvalidRegexError


@pytest.mark.parametrize(
    "pattern",
    [
        "TODO",
        "\\d+\\s*\\w+",
        "fn\\s+main\\(\\)\\s*\\{",
        "[[:alpha:]]+",
        "[]a]",
        "[^]a]",
        "[\\]x]",
        "[a-z&&[^aeiou]]",
        "(?i)todo",
        "(?im-sx:a.b)",
        "(?P<name>a)",
        "(?<name>a)",
        "(?:a|b)+?",
        "a{3}",
        "a{2,}",
        "a{2,5}?",
        "\\p{Greek}+",
        "\\P{L}",
        "\\x41\\u00e9\\t\\n",
        "\\bword\\b\\B",
        "^start|end$",
        "\\Aonly\\z",
        "\\.\\*\\+\\?\\(\\)\\[\\]\\{\\}\\|\\^\\$\\\\",
        "(?:a{100}){100}",
        # the rest of the Rust escape table
        "\\x{e9}\\u{e9}\\U{1F600}\\x{10FFFF}\\u{0}",
        "[\\x{e0}-\\x{ff}\\u{400}]",
        "\\a\\f\\v\\r",
        "\\<word\\>",
        "\\b{start}w\\b{end}",
        "\\b{start-half}w\\b{end-half}",
        "\\b{2}",
        "\\#\\&\\~\\-\\ \\%\\'\\\"\\,\\/\\:\\;\\=\\@\\`\\_\\!",
        "\\pL\\PN\\p{Script=Greek}",
    ],
)
def test_rust_syntax_is_accepted_and_compiles(pattern: str) -> None:
    check_dialect(pattern)
    regex.compile(translate(pattern), regex.VERSION0 | regex.MULTILINE)


@pytest.mark.parametrize(
    ("pattern", "construct"),
    [
        # look-around
        ("a(?=b)", "look-around"),
        ("a(?!b)", "look-around"),
        ("(?<=a)b", "look-around"),
        ("(?<!a)b", "look-around"),
        # backreferences and octal escapes
        ("(a)\\1", "backreference"),
        ("\\0", "backreference"),
        ("[\\1]", "backreference"),
        ("(?P<x>a)\\k<x>", "escape \\k"),
        ("(?P<x>a)\\g<x>", "escape \\g"),
        ("(?P<x>a)(?P=x)", "group syntax"),
        # backtracking-engine features
        ("a++", "possessive"),
        ("a*+", "possessive"),
        ("a?+", "possessive"),
        ("a{2}+", "possessive"),
        ("(?>a)", "group syntax"),
        ("(?R)", "group syntax"),
        ("(a(?R)?b)", "group syntax"),
        ("(?1)", "group syntax"),
        ("(?|a|b)", "group syntax"),
        ("(?(1)a|b)", "group syntax"),
        ("(?#comment)", "group syntax"),
        # flags the Python engine does not share with Rust, or reads differently
        ("(?U)a+", "group syntax"),
        ("(?R)a", "group syntax"),
        ("(?r)a", "group syntax"),
        ("(?V1)a", "group syntax"),
        ("(?f)a", "group syntax"),
        ("(?b)a", "group syntax"),
        ("(?e)a", "group syntax"),
        ("(?a)a", "group syntax"),
        ("(?L)a", "group syntax"),
        ("(?p)a", "group syntax"),
        ("(?w)a", "group syntax"),
        # `regex`-module escapes
        ("\\Z", "escape \\Z"),
        ("\\G", "escape \\G"),
        ("\\m", "escape \\m"),
        ("\\M", "escape \\M"),
        ("\\K", "escape \\K"),
        ("\\X", "escape \\X"),
        ("\\N{SPACE}", "escape \\N"),
        ("\\L<words>", "escape \\L"),
        ("\\h", "escape \\h"),
        ("\\R", "escape \\R"),
        # braces that are not counted repetitions: fuzzy matching, Python-only forms, bare braces
        ("(?:foo){e<=1}", "counted repetition"),
        ("(?:foo){i<=1,d<=1}", "counted repetition"),
        ("a{,3}", "counted repetition"),
        ("fn main() {", "counted repetition"),
        ("{}", "counted repetition"),
        ("a{1 , 2}", "counted repetition"),
        # what Rust refuses among braced code points, boundaries and escapes
        ("\\x{D800}", "not a Unicode scalar value"),
        ("\\x{110000}", "not a Unicode scalar value"),
        ("\\u{}", "not a Unicode scalar value"),
        ("\\U{zz}", "not a Unicode scalar value"),
        ("\\b{foo}", "word boundary \\b{foo}"),
        ("[\\b]", "assertion \\b in a class"),
        ("[\\<]", "assertion \\< in a class"),
        ("\\é", "escape \\é"),
    ],
)
def test_constructs_outside_the_dialect_are_refused_by_name(pattern: str, construct: str) -> None:
    with pytest.raises(InvalidRegexError) as caught:
        check_dialect(pattern)
    assert construct in caught.value.message
    assert caught.value.details["pattern"] == pattern
    assert caught.value.hint


@pytest.mark.parametrize(
    ("pattern", "size"),
    [
        ("a{50000}", 50_000),
        ("(?:a{100}){500}", 50_000),
        ("(?:ab){25000}", 50_000),
        ("x(?:a|b){24999}y", 24_999 * 2 + 2),
    ],
)
def test_patterns_at_the_size_limit_are_accepted(pattern: str, size: int) -> None:
    assert size <= MAX_EXPANDED_SIZE
    check_dialect(pattern)


@pytest.mark.parametrize(
    "pattern",
    [
        "a{50001}",
        "(?:a{100}){501}",
        "((a{100}){100}){100}",
        "(?:(?:(?:(?:a{10}){10}){10}){10}){10}",
        "[a-z]{4294967295}",
        "(?:a|b|c){20000}",
        "\\w{1000}\\w{1000}(?:x{100}){481}",
    ],
)
def test_patterns_too_large_to_compile_cheaply_are_refused(pattern: str) -> None:
    with pytest.raises(InvalidRegexError) as caught:
        check_dialect(pattern)
    assert "too large" in caught.value.message


def test_overlong_patterns_are_refused() -> None:
    with pytest.raises(InvalidRegexError):
        check_dialect("a" * 10_001)


@pytest.mark.parametrize(
    ("pattern", "matches_newline"),
    [
        ("a\\nb", True),
        ("a\nb", True),
        ("(?:x|\\n)", True),
        ("[\\n]", False),
        ("[^\\n]+", False),
        ("\\s+", False),
        ("a\\\\nb", False),
        ("plain", False),
    ],
)
def test_the_scan_reports_a_literal_line_break_outside_classes(pattern: str, matches_newline: bool) -> None:
    assert check_dialect(pattern).matches_newline is matches_newline


@pytest.mark.parametrize(
    ("pattern", "class_sets"),
    [
        ("[a-z&&[^aeiou]]", True),
        ("[a-d--b]", True),
        ("[a~~b]", True),
        ("[a[bc]]", True),
        ("[[:alpha:]]+", False),
        ("[]a]", False),
        ("[^]a-]", False),
        ("[\\[\\]]", False),
        ("a&&b--c", False),
        ("[a-]x[-b]", False),
    ],
)
def test_the_scan_reports_nested_classes_and_class_set_operations(pattern: str, class_sets: bool) -> None:
    assert check_dialect(pattern).class_sets is class_sets


@pytest.mark.parametrize(
    ("pattern", "translated"),
    [
        ("\\x{e9}", "\\U000000E9"),
        ("\\u{1F600}x", "\\U0001F600x"),
        ("\\<a\\>", "\\ma\\M"),
        ("\\b{start}a\\b{end}", "\\ma\\M"),
        ("\\b{start-half}a\\b{end-half}", "(?<!\\w)a(?!\\w)"),
        ("\\\\<x", "\\\\<x"),  # an escaped backslash, then literal text
        ("[[:alpha:]]", "[A-Za-z]"),
        ("[[:^digit:]x]", "[[^0-9]x]"),
        ("\\[:alpha:]", "\\[:alpha:]"),
    ],
)
def test_translation_to_the_regex_modules_spelling(pattern: str, translated: str) -> None:
    check_dialect(pattern)
    assert translate(pattern) == translated


@pytest.mark.parametrize(
    ("pattern", "width"),
    [(".{300,}", 300), ("a|bc", 1), ("(ab|c){3}", 3), ("a*b+", 1), ("\\bfoo\\b", 3), ("(?i)ab", 2), ("^$", 0),
     ("(?:a{10}){10}", 100), ("a{0,3}b", 1), ("\\x{e9}{5}", 5), ("(a|)x", 1), ("(?x)a b c", 0)],
)  # fmt: skip
def test_the_fewest_characters_a_match_spans(pattern: str, width: int) -> None:
    assert min_width(pattern) == width


@pytest.mark.parametrize(
    ("pattern", "spans"),
    [("a", False), ("\\{\\n\\s*\\}", True), ("\\s", True), ("[^a]", True), ("a.b", False), ("(?s)a.b", True),
     ("\\x{a}", True), ("\\W", True), ("\\PL", True), ("\\pL", False), ("\\S", False), ("[^\\n]", False),
     ("[[:space:]]", True), ("\\w+", False)],
)  # fmt: skip
def test_the_scan_knows_which_patterns_can_match_a_line_break(pattern: str, spans: bool) -> None:
    assert check_dialect(pattern).may_span_lines is spans
