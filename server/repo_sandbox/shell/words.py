"""Quote removal for one bash word, as bash does it, refusing every expansion except pathname globbing.

The tree-sitter parse (`shell.parse`) decides the command's structure; this module decodes the source text of
each word it accepted: unquoted text with backslash escapes, '...' , "..." (where only `\\$`, `` \\` ``,
`\\"`, `\\\\` and `\\newline` are escapes), and $'...' (ANSI-C escapes). The result keeps, per character run,
whether it was quoted, because only unquoted `*`, `?` and `[` glob. Whatever could expand (parameters,
commands, arithmetic, tildes, braces, locale strings) is refused with the construct's name, never passed on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from repo_sandbox.errors import CommandNotAllowedError, CommandParseError

GLOB_CHARS: Final = frozenset("*?[")
_UNQUOTED_METACHARS: Final = frozenset(";&|<>()` \t\n")
_ASSIGNMENT_WORD: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_SIMPLE_ESCAPES: Final = {
    "a": "\a",
    "b": "\b",
    "e": "\x1b",
    "E": "\x1b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "?": "?",
}


@dataclass(frozen=True, slots=True)
class Segment:
    """A run of characters of one word, quoted or not."""

    text: str
    quoted: bool


@dataclass(frozen=True, slots=True)
class Word:
    """One word after quote removal; `segments` keep which characters were quoted."""

    segments: tuple[Segment, ...]

    @property
    def text(self) -> str:
        return "".join(s.text for s in self.segments)

    @property
    def has_glob(self) -> bool:
        """True when an unquoted `*`, `?` or `[` (with a closing `]`) makes this word a pathname pattern."""
        unquoted = [i for i, s in enumerate(self.segments) if not s.quoted and GLOB_CHARS & set(s.text)]
        if not unquoted:
            return False
        if any("*" in self.segments[i].text or "?" in self.segments[i].text for i in unquoted):
            return True
        return _has_closed_bracket(self.segments)

    @classmethod
    def literal(cls, text: str) -> Word:
        return cls((Segment(text, quoted=True),))


def _has_closed_bracket(segments: tuple[Segment, ...]) -> bool:
    opened = False
    for segment in segments:
        for char in segment.text:
            if char == "[" and not segment.quoted:
                opened = True
            elif char == "]" and opened:
                return True
    return False


class _Builder:
    def __init__(self) -> None:
        self.segments: list[Segment] = []
        self._chars: list[str] = []
        self._quoted = False

    def add(self, text: str, *, quoted: bool) -> None:
        if not text:
            return
        if self._chars and quoted != self._quoted:
            self.flush()
        self._quoted = quoted
        self._chars.append(text)

    def flush(self) -> None:
        if self._chars:
            self.segments.append(Segment("".join(self._chars), self._quoted))
            self._chars = []

    def word(self) -> Word:
        self.flush()
        if not self.segments:
            return Word((Segment("", quoted=True),))
        return Word(tuple(self.segments))


def decode_word(source: str) -> Word:
    """Quote removal for the source text of one word.

    Raises:
        CommandNotAllowedError: the word would expand (`$VAR`, `$(...)`, backticks, `~`, `{a,b}`, `$"..."`).
        CommandParseError: an unterminated quote, a NUL byte or an unquoted shell metacharacter.
    """
    builder = _Builder()
    i, n = 0, len(source)
    while i < n:
        char = source[i]
        if char == "\\":
            if i + 1 >= n:
                builder.add("\\", quoted=True)  # a trailing backslash is literal in bash
                i += 1
            elif source[i + 1] == "\n":
                i += 2  # line continuation
            else:
                builder.add(source[i + 1], quoted=True)
                i += 2
        elif char == "'":
            end = source.find("'", i + 1)
            if end < 0:
                raise CommandParseError("Unterminated single quote.", construct="unterminated quote")
            builder.add(source[i + 1 : end], quoted=True)
            i = end + 1
        elif char == '"':
            i = _double_quoted(source, i + 1, builder)
        elif char == "$":
            i = _dollar(source, i, builder)
        elif char == "`":
            raise CommandNotAllowedError(
                "Command substitution (backticks) is not allowed.", construct="command substitution"
            )
        elif char in _UNQUOTED_METACHARS:
            raise CommandParseError(f"Unexpected shell metacharacter {char!r} in a word.", construct="metacharacter")
        else:
            builder.add(char, quoted=False)
            i += 1
    word = builder.word()
    _refuse_tilde_and_braces(word)
    if "\x00" in word.text:
        raise CommandParseError("Arguments cannot contain NUL bytes.", construct="NUL byte")
    return word


def _double_quoted(source: str, i: int, builder: _Builder) -> int:
    n = len(source)
    chars: list[str] = []
    while i < n:
        char = source[i]
        if char == '"':
            builder.add("".join(chars), quoted=True)
            return i + 1
        if char == "\\" and i + 1 < n and source[i + 1] in '$`"\\\n':
            if source[i + 1] != "\n":
                chars.append(source[i + 1])
            i += 2
            continue
        if char == "`":
            raise CommandNotAllowedError(
                "Command substitution (backticks) is not allowed, even inside double quotes.",
                construct="command substitution",
            )
        if char == "$" and i + 1 < n and _starts_expansion(source[i + 1]):
            raise _expansion_error(source[i + 1])
        chars.append(char)
        i += 1
    raise CommandParseError("Unterminated double quote.", construct="unterminated quote")


def _starts_expansion(char: str) -> bool:
    return char.isalnum() or char in "_{(@*#?$!-"


def _expansion_error(next_char: str) -> CommandNotAllowedError:
    if next_char == "(":
        return CommandNotAllowedError(
            "Command substitution and arithmetic expansion ($(...), $((...))) are not allowed.",
            construct="command substitution",
        )
    return CommandNotAllowedError(
        "Parameter expansion ($VAR, ${...}) is not allowed: the server passes no shell variables.",
        hint="Write the value itself instead of a variable.",
        construct="parameter expansion",
    )


def _dollar(source: str, i: int, builder: _Builder) -> int:
    n = len(source)
    following = source[i + 1] if i + 1 < n else ""
    if following == "'":
        return _ansi_c(source, i + 2, builder)
    if following == '"':
        raise CommandNotAllowedError('Locale strings ($"...") are not allowed.', construct="locale string")
    if following and _starts_expansion(following):
        raise _expansion_error(following)
    builder.add("$", quoted=True)  # a lone '$' is literal, as in bash
    return i + 1


def _ansi_c(source: str, i: int, builder: _Builder) -> int:
    n = len(source)
    chars: list[str] = []
    while i < n:
        char = source[i]
        if char == "'":
            builder.add("".join(chars), quoted=True)
            return i + 1
        if char != "\\" or i + 1 >= n:
            chars.append(char)
            i += 1
            continue
        text, i = _ansi_escape(source, i + 1)
        chars.append(text)
    raise CommandParseError("Unterminated $'...' string.", construct="unterminated quote")


def _ansi_escape(source: str, i: int) -> tuple[str, int]:
    char = source[i]
    if char in _SIMPLE_ESCAPES:
        return _SIMPLE_ESCAPES[char], i + 1
    if char in "01234567":
        digits = re.match(r"[0-7]{1,3}", source[i:])
        assert digits is not None
        return chr(int(digits.group(), 8) & 0xFF), i + len(digits.group())
    for prefix, width in (("x", 2), ("u", 4), ("U", 8)):
        if char == prefix:
            digits = re.match(rf"[0-9A-Fa-f]{{1,{width}}}", source[i + 1 :])
            if digits is None:
                return "\\" + char, i + 1
            return chr(min(int(digits.group(), 16), 0x10FFFF)), i + 1 + len(digits.group())
    if char == "c" and i + 1 < len(source):
        return chr(ord(source[i + 1]) & 0x1F), i + 2
    return "\\" + char, i + 1


def _refuse_tilde_and_braces(word: Word) -> None:
    first = word.segments[0]
    if not first.quoted and first.text.startswith("~"):
        raise CommandNotAllowedError(
            "Tilde expansion (~) is not allowed: home directories are outside the repository.",
            hint="Use a path relative to the repository root.",
            construct="tilde expansion",
        )
    if not first.quoted and _ASSIGNMENT_WORD.match(first.text):
        rest = first.text[first.text.index("=") :]
        if "=~" in rest or ":~" in rest:
            raise CommandNotAllowedError(
                "Tilde expansion (~) is not allowed: home directories are outside the repository.",
                construct="tilde expansion",
            )
    if _has_brace_expansion(word):
        raise CommandNotAllowedError(
            "Brace expansion ({a,b} or {1..3}) is not supported.",
            hint="Write each word out, or quote the braces if they are meant literally.",
            construct="brace expansion",
        )


def _has_brace_expansion(word: Word) -> bool:
    """An unquoted `{` with a matching unquoted `}` and an unquoted `,` or `..` between them at its level."""
    chars = [(c, s.quoted) for s in word.segments for c in s.text]
    for start, (char, quoted) in enumerate(chars):
        if char != "{" or quoted:
            continue
        depth = 0
        separator = False
        for pos in range(start + 1, len(chars)):
            inner, inner_quoted = chars[pos]
            if inner_quoted:
                continue
            if inner == "{":
                depth += 1
            elif inner == "}":
                if depth == 0:
                    if separator:
                        return True
                    break
                depth -= 1
            elif depth == 0 and (
                inner == "," or (inner == "." and pos + 1 < len(chars) and chars[pos + 1] == (".", False))
            ):
                separator = True
    return False


def split_words(text: str) -> list[str]:
    """Split a simple command's source into words at unquoted blanks (quotes, escapes, line continuations)."""
    words: list[str] = []
    current: list[str] = []
    in_word = False
    i, n = 0, len(text)
    while i < n:
        char = text[i]
        if char in " \t\n":
            if in_word:
                words.append("".join(current))
                current, in_word = [], False
            i += 1
            continue
        if char == "\\":
            if i + 1 < n and text[i + 1] == "\n":
                i += 2
                continue
            current.append(text[i : i + 2])
            in_word, i = True, i + 2
            continue
        in_word = True
        if char in "'\"" or (char == "$" and i + 1 < n and text[i + 1] == "'"):
            start = i
            i += 2 if char == "$" else 1
            quote = "'" if char == "$" else char
            while i < n and text[i] != quote:
                i += 2 if (quote != "'" or char == "$") and text[i] == "\\" else 1
            current.append(text[start : i + 1])
            i += 1
            continue
        current.append(char)
        i += 1
    if in_word:
        words.append("".join(current))
    return words
