"""The pure-Python search engine's patterns: the compiled query, its required literal, the time budget,
and decoding (the line search itself is `engine.pylines`).

Every regex call carries the remaining time budget (`regex` timeouts), so no pattern can hang the server.
`regex` counts its timeout in the calling thread's CPU time, which runs slower than the clock on a busy machine
(a 10 s limit took 20 s; 1 s took 4 s on two shared cores). So a call first runs in place with a short CPU
slice (`CPU_SLICE_S`: nearly every call ends within it); one that needs more runs again on a thread of its
own, without the GIL, and the search waits for it only until the wall-clock deadline. A call given up on
stops by itself when its CPU timeout (at most the time that was left) runs out.
"""

from __future__ import annotations

import string
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import regex

from repo_sandbox.engine.dialect import PatternInfo, bytes_safe, check_dialect, min_width, translate
from repo_sandbox.engine.request import Deadline
from repo_sandbox.errors import InvalidRegexError, TimeoutExceededError

CPU_SLICE_S: Final = 0.01
"""CPU time a regex call may take in place before it is run again on a thread the clock can give up on."""


def _too_slow() -> TimeoutExceededError:
    return TimeoutExceededError(
        "The pattern took too long to match (catastrophic backtracking?).",
        hint="Simplify the pattern (avoid nested quantifiers like '(a+)+'), or use fixed_strings.",
    )


def _search_on_the_clock(
    compiled: regex.Pattern[str], text: str, start: int, end: int, deadline: Deadline
) -> regex.Match[str] | None:
    """`compiled.search` on a thread of its own, waited for until the deadline by the clock.

    Raises: TimeoutExceededError when the deadline passes first (the thread ends at its own CPU timeout).
    """
    answer: list[regex.Match[str] | None | BaseException] = []
    done = threading.Event()
    budget = deadline.remaining()

    def work() -> None:
        try:
            answer.append(compiled.search(text, start, end, concurrent=True, timeout=budget))
        except BaseException as exc:  # noqa: BLE001 -- handed to the waiting thread, which raises it
            answer.append(exc)
        finally:
            done.set()

    threading.Thread(target=work, name="regex-on-the-clock", daemon=True).start()
    if not done.wait(deadline.left()):
        raise _too_slow()
    result = answer[0]
    if isinstance(result, TimeoutError):
        raise _too_slow() from result
    if isinstance(result, BaseException):
        raise result
    return result


def line_anchors(pattern: str) -> str:
    """`\\A` and `\\z` as ripgrep reads them in line mode, where every line is a text of its own: the start
    and the end of a line (`^` and `$` under MULTILINE)."""
    if "\\" not in pattern:
        return pattern
    out: list[str] = []
    in_class = False
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            pair = pattern[i : i + 2]
            out.append({"\\A": "^", "\\z": "$"}.get(pair, pair) if not in_class else pair)
            i += 2
            continue
        if ch == "[" and not in_class:
            in_class = True
            if pattern.startswith(("[^]", "[]"), i):
                out.append(pattern[i : i + (3 if pattern[i + 1] == "^" else 2)])
                i += len(out[-1])
                continue
        elif ch == "]" and in_class:
            in_class = False
        out.append(ch)
        i += 1
    return "".join(out)


_META = frozenset(".^$*+?{}[]()|\\")


_HEX_DIGITS: Final = {"x": 2, "u": 4, "U": 8}
"""Escapes of a code point by its number: `\\x41`, `\\u00e9`, `\\U0001F389`."""


def _after_escape(pattern: str, i: int) -> int:
    """The index after the escape at `i` (a backslash). `\\x41`, `\\u00e9`, `\\pL` and `\\p{Greek}` span more
    than two characters, none of which is text of the match."""
    letter = pattern[i + 1 : i + 2]
    if letter and letter in "xuUpP" and pattern.startswith("{", i + 2):
        close = pattern.find("}", i + 2)
        return len(pattern) if close < 0 else close + 1
    if letter in ("p", "P"):
        return i + 3
    end, last = i + 2, min(len(pattern), i + 2 + _HEX_DIGITS.get(letter, 0))
    while end < last and pattern[end] in string.hexdigits:
        end += 1
    return end


def required_literal(pattern: str) -> str | None:
    """A piece of text every match must contain, for a cheap byte-level prefilter; None when unsure.

    Only simple patterns qualify (no alternation, groups, classes or flags): the longest run of literal
    characters, a character followed by `*`, `?` or `{` dropped (it may be absent) and a run ended by `+`.
    """
    if any(ch in pattern for ch in "|()[]"):
        return None
    best = ""
    run: list[str] = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        nxt = pattern[i + 1] if i + 1 < len(pattern) else ""
        if ch == "\\" or ch in _META:
            best = max(best, "".join(run), key=len)
            run = []
            if ch == "{":  # a counted repetition: its digits are no text
                close = pattern.find("}", i)
                i = len(pattern) if close < 0 else close + 1
            else:
                i = _after_escape(pattern, i) if ch == "\\" else i + 1
            continue
        if nxt in ("*", "?", "{"):
            best = max(best, "".join(run), key=len)
            run = []
        elif nxt == "+":
            run.append(ch)
            best = max(best, "".join(run), key=len)
            run = []
        else:
            run.append(ch)
        i += 1
    best = max(best, "".join(run), key=len)
    return best if len(best) >= 2 else None


@dataclass(slots=True)
class Query:
    """A compiled search pattern."""

    pattern: str
    fixed_strings: bool
    case_sensitive: bool
    multiline: bool
    compiled: Any  # regex.Pattern[str]; the regex stubs are incomplete
    required: bytes | None = None
    """UTF-8 bytes every matching file contains (case-sensitive patterns only): files without them are
    skipped before they are decoded."""
    required_text: str | None = None
    """The same literal as text: every match contains it, so only the lines holding it are searched."""
    flags: int = 0
    source: str = ""
    min_chars: int = 0
    """In line mode, the fewest characters a match spans (0: not known, or multiline)."""
    spans_lines: bool = False
    """Multiline, and the pattern can match a line break: as in ripgrep, each match counts (two may share
    a line) and the next match is looked for where the previous one ended."""
    _for_bytes: Query | None = None

    def for_invalid_utf8(self) -> Query:
        """The query to run over text decoded with 'surrogateescape' (a file that is not valid UTF-8): its
        undecodable bytes match nothing but themselves, as in ripgrep (see `dialect.bytes_safe`)."""
        if self.fixed_strings:
            return self
        if self._for_bytes is None:
            compiled = regex.compile(bytes_safe(self.source), self.flags)
            self._for_bytes = Query(
                self.pattern,
                False,
                self.case_sensitive,
                self.multiline,
                compiled,
                self.required,
                self.required_text,
                self.flags,
                min_chars=self.min_chars,
                spans_lines=self.spans_lines,
            )
        return self._for_bytes

    @classmethod
    def compile(cls, pattern: str, *, fixed_strings: bool, case_sensitive: bool, multiline: bool) -> Query:
        """Raises: InvalidRegexError for syntax outside the dialect, too large, or that does not compile."""
        info = PatternInfo(matches_newline="\n" in pattern) if fixed_strings else check_dialect(pattern)
        if info.matches_newline and not multiline:
            raise InvalidRegexError(
                "The pattern contains a line break, which cannot match within one line.",
                hint="Set multiline=true to let matches span lines.",
                pattern=pattern[:200],
            )
        source = translate(pattern) if multiline else line_anchors(translate(pattern))
        if fixed_strings:
            source = regex.escape(pattern)
        flags = regex.MULTILINE | regex.VERSION0
        if info.class_sets:  # VERSION1 reads them as Rust does; `(?-f)`: its full case folding stays off
            flags = regex.MULTILINE | regex.VERSION1
            source = "(?-f)" + source
        if not case_sensitive:
            flags |= regex.IGNORECASE  # simple case folding, as ripgrep (no 'ß' == 'SS')
        try:
            compiled = regex.compile(source, flags)
        except (regex.error, OverflowError, RecursionError) as exc:
            raise InvalidRegexError(
                f"The pattern does not compile: {getattr(exc, 'msg', str(exc))}.", pattern=pattern[:200]
            ) from exc
        literal = pattern if fixed_strings else required_literal(pattern)
        required = literal.encode("utf-8") if literal and case_sensitive else None
        return cls(
            pattern,
            fixed_strings,
            case_sensitive,
            multiline,
            compiled,
            required,
            required_text=literal if required is not None else None,
            flags=flags,
            source=source,
            min_chars=0 if multiline or fixed_strings else min_width(pattern),
            spans_lines=multiline and (info.may_span_lines or info.matches_newline),
        )

    def finder(self, deadline: Deadline) -> Callable[[str, int, int], tuple[int, int] | None]:
        """A function (text, start, end) -> (match_start, match_end) or None."""
        if self.fixed_strings and self.case_sensitive and "\n" not in self.pattern:
            needle = self.pattern
            if not needle:
                return lambda text, start, end: (start, start) if start <= end else None

            def find_literal(text: str, start: int, end: int) -> tuple[int, int] | None:
                pos = text.find(needle, start, end)
                return None if pos < 0 else (pos, pos + len(needle))

            return find_literal
        compiled = self.compiled

        def find_regex(text: str, start: int, end: int) -> tuple[int, int] | None:
            left = deadline.remaining()
            try:
                m = compiled.search(text, start, end, timeout=min(left, CPU_SLICE_S))
            except TimeoutError as exc:
                if left <= CPU_SLICE_S:
                    raise _too_slow() from exc
                m = _search_on_the_clock(compiled, text, start, end, deadline)
            return None if m is None else m.span()

        return find_regex


def decode_for_search(data: bytes | memoryview) -> tuple[str, bool]:
    """(text, valid): the file as text without a UTF-8 byte-order mark; when it is not valid UTF-8 its
    undecodable bytes become lone surrogates (shown as U+FFFD by `displayed`)."""
    try:
        return str(data, "utf-8-sig"), True
    except UnicodeDecodeError:
        return str(data, "utf-8-sig", "surrogateescape"), False


def displayed(text: str) -> str:
    """Text decoded by `decode_for_search` as shown to a client: each undecodable byte as U+FFFD."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def decode_buffer(data: bytes) -> str:
    """Invalid UTF-8 is replaced, never an error; a UTF-8 byte-order mark is not part of the text."""
    return data.decode("utf-8-sig", "replace")
