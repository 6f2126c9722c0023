"""The one regex dialect search_text accepts: Rust-regex (ripgrep) syntax.

Python's `regex` module accepts much more (backreferences, look-around, atomic groups, possessive
quantifiers, recursion `(?R)`, fuzzy matching `{e<=1}`, `\\m`, `\\N{..}`, reverse and POSIX flags).
Patterns using those are refused with `invalid_regex`, so both engines answer the same question and no
pattern depends on backtracking features. The scan also bounds the compiled size: `regex` expands counted
repetitions, so `((a{100}){100}){100}` would take seconds and hundreds of MiB to compile (Rust refuses it
with its size limit; so do we).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Final

import regex

from repo_sandbox.errors import InvalidRegexError

MAX_PATTERN_CHARS: Final = 10_000
MAX_EXPANDED_SIZE: Final = 50_000
"""Largest pattern size with counted repetitions expanded (`a{50000}`, `(?:a{100}){500}`); about 15 MiB
of compiled program in the `regex` module."""

_ESCAPE_LETTERS: Final = frozenset("dDwWsSbBApPxuUntrfvaz")
"""Letter escapes of Rust's regex syntax (`translate` rewrites the forms Python's `regex` spells otherwise).
Any other ASCII character but a letter or a digit may be escaped, and means itself; `\\<`, `\\>` are word
boundaries."""
_ASSERTIONS: Final = frozenset("bBAz<>")
_SPECIAL_BOUNDARY = re.compile(r"\\b\{([A-Za-z-]+)\}")
_BOUNDARIES: Final = {"start": r"\m", "end": r"\M", "start-half": r"(?<!\w)", "end-half": r"(?!\w)"}
"""Rust's `\\b{start}`, `\\b{end}` and half boundaries in `regex`'s spelling (`\\<`, `\\>` are the first two)."""
MAX_CODE_POINT: Final = 0x10FFFF
_COUNTED = re.compile(r"\{(\d+)(,(\d*))?\}")
_FLAG_GROUP = re.compile(r"\(\?([imsx]*)(?:-([imsx]*))?([:)])")
_NAMED_GROUP = re.compile(r"\(\?P?<[A-Za-z_][A-Za-z0-9_]*>")


@dataclass(frozen=True, slots=True)
class PatternInfo:
    """What the scan learned about a valid pattern."""

    matches_newline: bool
    """A literal line break (`\\n` or the character itself) outside a character class."""
    may_span_lines: bool = False
    """Some atom can match a line break (`\\n`, `\\s`, `[^a]`, `.` under the `s` flag...): ripgrep's multiline
    mode then counts matches, not lines, and a match may start on the line the previous one ended on."""
    class_sets: bool = False
    """A class nested in a class or a class set operation (`[a-z&&[^aeiou]]`, `--`, `~~`): Rust's syntax, which
    the `regex` module reads the same way only in its VERSION1 mode (VERSION0 takes them as literal text)."""


def _refuse(pattern: str, construct: str, position: int, hint: str | None = None) -> InvalidRegexError:
    return InvalidRegexError(
        f"The pattern uses {construct}, which the supported regex dialect (Rust/ripgrep syntax) does not have.",
        hint=hint,
        pattern=pattern[:200],
        construct=construct,
        position=position,
    )


def _code_point(pattern: str, i: int, digits: str) -> int:
    """The Unicode scalar value of a braced escape (`\\x{e9}`, `\\u{e9}`, `\\U{1F600}`) whose digits are `digits`."""
    value = (
        int(digits, 16) if digits and len(digits) <= 8 and all(c in "0123456789abcdefABCDEF" for c in digits) else -1
    )
    if not 0 <= value <= MAX_CODE_POINT or 0xD800 <= value <= 0xDFFF:
        raise _refuse(pattern, f"the escape {pattern[i : i + 3 + len(digits) + 1]} (not a Unicode scalar value)", i)
    return value


@functools.lru_cache(maxsize=512)
def _atom_matches_newline(atom: str, *, version1: bool) -> bool:
    """Whether one escape or class of an accepted pattern can match a line break."""
    try:
        compiled = regex.compile(translate(atom), regex.VERSION1 if version1 else regex.VERSION0)
    except regex.error:
        return True  # not decided here: assume it can
    return compiled.fullmatch("\n") is not None


class _Frame:
    """Sizes inside one group: the whole so far and the last atom (what a quantifier multiplies)."""

    __slots__ = ("last", "total")

    def __init__(self) -> None:
        self.total = 0
        self.last = 0

    def atom(self, size: int) -> None:
        self.total += size
        self.last = size

    def repeat(self, times: int) -> None:
        self.total += self.last * (times - 1)
        self.last *= times


class _Scanner:
    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self.frames = [_Frame()]
        self.matches_newline = False
        self.class_sets = False
        self.may_span_lines = False
        self.dot_all = False

    def escape(self, i: int, *, in_class: bool) -> int:
        """Check the escape at `i` (the backslash); returns the index after it."""
        p = self.pattern
        nxt = p[i + 1] if i + 1 < len(p) else ""
        if nxt.isdigit():
            raise _refuse(p, f"a backreference or octal escape (\\{nxt})", i)
        if (nxt.isalpha() and nxt not in _ESCAPE_LETTERS) or (nxt and not nxt.isascii()):
            hint = "Use \\z for the end of the text." if nxt == "Z" else None
            raise _refuse(p, f"the escape \\{nxt}", i, hint)
        if in_class and nxt in _ASSERTIONS:
            raise _refuse(p, f"the assertion \\{nxt} in a class", i)
        if nxt == "n" and not in_class:
            self.matches_newline = True
        if nxt in "xuU" and p.startswith("{", i + 2):
            end = p.find("}", i + 3)
            _code_point(p, i, p[i + 3 : end] if end >= 0 else "")
            return end + 1
        if nxt in "pP":  # `\\pL` or `\\p{Greek}`
            end = p.find("}", i + 3) if p.startswith("{", i + 2) else i + 2
            return len(p) if end < 0 else min(end + 1, len(p))
        if nxt == "b" and (boundary := _SPECIAL_BOUNDARY.match(p, i)):
            if boundary.group(1) not in _BOUNDARIES:
                raise _refuse(p, f"the word boundary \\b{{{boundary.group(1)}}}", i)
            return boundary.end()
        return i + 2

    def char_class(self, i: int) -> int:
        """Skip the class starting at `i` (the '['), and the classes nested in it; returns the index after
        its ']'. Notes nesting and set operations (`class_sets`)."""
        p = self.pattern
        n = len(p)
        i = self._class_start(i)
        depth = 1
        while i < n:
            ch = p[i]
            if ch == "\\":
                i = self.escape(i, in_class=True)
            elif ch == "[" and p.startswith("[:", i) and (end := p.find(":]", i + 2)) != -1:
                self.class_sets |= p.startswith("[:^", i)  # translated to a nested class (`translate`)
                i = end + 2
            elif ch == "[":
                self.class_sets = True
                depth += 1
                i = self._class_start(i)
            elif ch == "]":
                depth -= 1
                i += 1
                if depth == 0:
                    return i
            else:
                if p.startswith(("&&", "--", "~~"), i):
                    self.class_sets = True
                i += 1
        return n

    def _class_start(self, i: int) -> int:
        """The index after the '[' at `i`, its '^' and a leading ']' (which is literal)."""
        p = self.pattern
        i += 1
        if i < len(p) and p[i] == "^":
            i += 1
        if i < len(p) and p[i] == "]":
            i += 1
        return i

    def group(self, i: int) -> int:
        """Check the group opening at `i`; returns the index after its opening syntax."""
        p = self.pattern
        if not p.startswith("(?", i):
            self.frames.append(_Frame())
            return i + 1
        rest = p[i + 2 :]
        if rest.startswith(("=", "!", "<=", "<!")):
            raise _refuse(p, "look-around", i)
        if named := _NAMED_GROUP.match(p, i):
            self.frames.append(_Frame())
            return named.end()
        flags = _FLAG_GROUP.match(p, i)
        if flags is None:
            raise _refuse(p, f"the group syntax '(?{rest[:2]}'", i, "Flags may be i, m, s and x, e.g. '(?i)todo'.")
        if flags.group(3) == ":":
            self.frames.append(_Frame())
        return flags.end()

    def quantifier_end(self, i: int) -> int:
        """After a quantifier ending before `i`: refuse a possessive '+', skip a lazy '?'."""
        p = self.pattern
        if i < len(p) and p[i] == "+":
            raise _refuse(p, "a possessive quantifier", i)
        return i + 1 if i < len(p) and p[i] == "?" else i

    def scan(self) -> PatternInfo:
        p = self.pattern
        n = len(p)
        i = 0
        while i < n:
            ch = p[i]
            frame = self.frames[-1]
            if ch == "\\":
                end = self.escape(i, in_class=False)
                self.may_span_lines |= _atom_matches_newline(p[i:end], version1=False)
                i = end
                frame.atom(1)
            elif ch == "[":
                end = self.char_class(i)
                self.may_span_lines |= _atom_matches_newline(p[i:end], version1=self.class_sets)
                i = end
                frame.atom(1)
            elif ch == ".":
                self.may_span_lines |= self.dot_all
                frame.atom(1)
                i += 1
            elif ch == "(":
                self.dot_all |= "s" in (m.group(1) if (m := _FLAG_GROUP.match(p, i)) else "")
                i = self.group(i)
            elif ch == ")":
                if len(self.frames) > 1:
                    size = self.frames.pop().total
                    self.frames[-1].atom(size)
                i += 1
            elif ch == "|":
                frame.last = 0
                i += 1
            elif ch in "*+?":
                i = self.quantifier_end(i + 1)
            elif ch == "{":
                counted = _COUNTED.match(p, i)
                if counted is None:
                    raise _refuse(
                        p,
                        "a '{' that is not a counted repetition ({n}, {n,} or {n,m})",
                        i,
                        "Escape a literal brace as '\\{', or set fixed_strings=true.",
                    )
                low, high = int(counted.group(1)), counted.group(3)
                frame.repeat(max(low, int(high) if high else low, 1))
                i = self.quantifier_end(counted.end())
            else:
                if ch == "\n":
                    self.matches_newline = True
                frame.atom(1)
                i += 1
        size = sum(frame.total for frame in self.frames)
        if size > MAX_EXPANDED_SIZE:
            raise InvalidRegexError(
                f"The pattern is too large once its counted repetitions are expanded (about {size} items; "
                f"the limit is {MAX_EXPANDED_SIZE}).",
                hint="Use smaller repetition counts, e.g. '\\w+' instead of '\\w{100000}'.",
                pattern=p[:200],
            )
        return PatternInfo(
            matches_newline=self.matches_newline,
            may_span_lines=self.may_span_lines or self.matches_newline,
            class_sets=self.class_sets,
        )


def check_dialect(pattern: str) -> PatternInfo:
    """Refuse constructs outside Rust-regex syntax and patterns too large to compile cheaply.

    Raises:
        InvalidRegexError: naming the construct and its position.
    """
    if len(pattern) > MAX_PATTERN_CHARS:
        raise InvalidRegexError(f"The pattern is longer than {MAX_PATTERN_CHARS} characters.", pattern=pattern[:200])
    return _Scanner(pattern).scan()


_ZERO_WIDTH_ESCAPES: Final = frozenset("bBAz<>")


def min_width(pattern: str) -> int:
    """The fewest characters any match of an accepted pattern spans (0 when unsure: verbose mode)."""
    if "x" in "".join(m.group(1) for m in _FLAG_GROUP.finditer(pattern)):
        return 0
    scanner = _Scanner(pattern)
    frames: list[list[int]] = [[-1, 0, 0]]  # per group: [shortest alternative so far (-1: none), this one, last atom]
    i = 0
    n = len(pattern)
    while i < n:
        ch = pattern[i]
        frame = frames[-1]
        width = -1
        if ch == "\\":
            end = scanner.escape(i, in_class=False)
            width = 0 if pattern[i + 1 : i + 2] in _ZERO_WIDTH_ESCAPES else 1
            i = end
        elif ch == "[":
            i = scanner.char_class(i)
            width = 1
        elif ch == "(":
            flags = _FLAG_GROUP.match(pattern, i)
            i = scanner.group(i)
            if flags is None or flags.group(3) == ":":
                frames.append([-1, 0, 0])
        elif ch == ")":
            done = frames.pop() if len(frames) > 1 else None
            i += 1
            if done is not None:
                width = done[1] if done[0] < 0 else min(done[0], done[1])
        elif ch == "|":
            frame[0] = frame[1] if frame[0] < 0 else min(frame[0], frame[1])
            frame[1] = frame[2] = 0
            i += 1
        elif ch in "*?":
            frame[1] -= frame[2]
            frame[2] = 0
            i = scanner.quantifier_end(i + 1)
        elif ch == "+":
            i = scanner.quantifier_end(i + 1)
        elif ch == "{" and (counted := _COUNTED.match(pattern, i)):
            times = int(counted.group(1))
            frame[1] += frame[2] * (times - 1)
            frame[2] *= times
            i = scanner.quantifier_end(counted.end())
        else:
            width = 0 if ch in "^$" else 1
            i += 1
        if width >= 0:
            frame = frames[-1]
            frame[1] += width
            frame[2] = width
    root = frames[0]
    return max(0, root[1] if root[0] < 0 else min(root[0], root[1]))


_POSIX_CLASSES: Final = {
    "alnum": "0-9A-Za-z",
    "alpha": "A-Za-z",
    "ascii": "\\x00-\\x7F",
    "blank": "\\t ",
    "cntrl": "\\x00-\\x1F\\x7F",
    "digit": "0-9",
    "graph": "!-~",
    "lower": "a-z",
    "print": " -~",
    "punct": "!-/:-@\\[-`{-~",
    "space": "\\t\\n\\x0B\\f\\r ",
    "upper": "A-Z",
    "word": "0-9A-Za-z_",
    "xdigit": "0-9A-Fa-f",
}
"""Rust's POSIX classes, ASCII only (the `regex` module's are Unicode-aware: `[[:alpha:]]` matched 'é')."""
_POSIX_ITEM = re.compile(r"(?<!\\)\[:(\^?)([a-z]+):\]")


def _posix(item: re.Match[str]) -> str:
    ranges = _POSIX_CLASSES.get(item.group(2))
    if ranges is None:
        return item.group(0)
    return f"[^{ranges}]" if item.group(1) else ranges  # a nested class: the pattern is compiled as VERSION1


def translate(pattern: str) -> str:
    """A pattern `check_dialect` accepted, in the `regex` module's spelling: braced code points (`\\x{e9}`,
    `\\u{e9}`, `\\U{1F600}`) as `\\U0001F600`, word-boundary halves and `\\<`, `\\>`, `\\b{start}`... as
    `\\m`, `\\M` or the look-around they stand for. Everything else is the same in both."""
    if "\\" not in pattern and "[:" not in pattern:
        return pattern
    scanner = _Scanner(pattern)
    out: list[str] = []
    i = 0
    n = len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "[":
            end = scanner.char_class(i)
            body = pattern[i:end]
            out.append(_POSIX_ITEM.sub(_posix, translate(body[1:-1]) if "\\" in body else body[1:-1]).join("[]"))
            i = end
            continue
        if ch != "\\" or i + 1 >= n:
            out.append(ch)
            i += 1
            continue
        nxt = pattern[i + 1]
        if nxt in "xuU" and pattern.startswith("{", i + 2):
            end = pattern.index("}", i + 3)
            out.append(f"\\U{_code_point(pattern, i, pattern[i + 3 : end]):08X}")
            i = end + 1
        elif nxt in "<>":
            out.append("\\m" if nxt == "<" else "\\M")
            i += 2
        elif nxt == "b" and (boundary := _SPECIAL_BOUNDARY.match(pattern, i)):
            out.append(_BOUNDARIES[boundary.group(1)])
            i = boundary.end()
        else:
            out.append(pattern[i : i + 2])
            i += 2
    return "".join(out)


_NOT_A_BYTE: Final = "(?![\udc80-\udcff])"
"""Refuses a lone surrogate: how an undecodable byte appears in text decoded with 'surrogateescape'."""


def bytes_safe(pattern: str) -> str:
    """The pattern with every atom that could match an undecodable byte guarded, as ripgrep matches them:
    `.`, classes and the `\\W \\S \\D \\p \\P` escapes never match an invalid UTF-8 byte there (the text is
    decoded with 'surrogateescape', so such a byte is a lone surrogate). Verbose-mode patterns (`x` flag)
    are returned as they are. Call only with a pattern `check_dialect` accepted."""
    if "x" in "".join(m.group(1) + (m.group(2) or "") for m in _FLAG_GROUP.finditer(pattern)):
        return pattern
    scanner = _Scanner(pattern)
    out: list[str] = []
    i = 0
    n = len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "\\" and i + 1 < n:
            nxt = pattern[i + 1]
            end = i + 2
            if nxt in "pP":
                end = pattern.find("}", i) + 1 if pattern.startswith("{", i + 2) else i + 3
            if nxt in "WSDpP":
                out.append(f"(?:{_NOT_A_BYTE}{pattern[i:end]})")
            else:
                out.append(pattern[i:end])
            i = end
        elif ch == "[":
            end = scanner.char_class(i)
            out.append(f"(?:{_NOT_A_BYTE}{pattern[i:end]})")
            i = end
        elif ch == ".":
            out.append(f"(?:{_NOT_A_BYTE}.)")
            i += 1
        else:
            out.append(ch)
            i += 1
    return "".join(out)
