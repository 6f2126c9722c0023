"""Globs as ripgrep/gitignore write them, compiled to one regular expression.

`*` and `?` stay inside one path component, `**` as a whole component spans any number of them, `[..]`
(`[!..]` or `[^..]` to negate) and `{a,b}` (nestable) work as in ripgrep. A pattern with no `/` matches the
file name at any depth (`*.go` == `**/*.go`); a leading `/` anchors it to the search directory. A leading
`!` inverts the match. Matching is case-sensitive.

Python's `re` backtracks: `*a*a*a*a*b` or `{a,a}{a,a}...` against a long name takes exponential time while
holding the GIL, which froze the whole server. A glob with more than `MAX_PLAIN_CHOICES` wildcards and
alternations inside names, or as many `**` components, is therefore compiled by `regex`, which releases the GIL, prunes most of that search, and
gives each name a time limit; a glob that exceeds it is refused as `invalid_glob`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Final, Protocol

import regex

from repo_sandbox.errors import InvalidGlobError

MAX_GLOB_CHARS = 1000
MAX_PLAIN_CHOICES: Final = 2
"""Wildcards inside names and `{..}` groups (together), and `**` components, a glob may hold and still be
matched by `re` (at most cubic)."""
MAX_BRACE_DEPTH: Final = 8
MAX_BRACE_GROUPS: Final = 64
"""`{..}` groups may nest this deep and number this many: ~400 bytes of nested `{` made the regex compilers
recurse past Python's limit (an internal error with a 3,000-line trace)."""
NAME_MATCH_TIMEOUT_S: Final = 0.25
"""Time one path may take to match a complex glob."""


class _Matcher(Protocol):
    def fullmatch(self, string: str, /) -> object | None: ...


class _GuardedRegex:
    """A `regex` pattern whose `fullmatch` is time-limited: too slow means the glob is refused."""

    __slots__ = ("_compiled", "_glob")

    def __init__(self, compiled: regex.Pattern[str], glob: str) -> None:
        self._compiled = compiled
        self._glob = glob

    def fullmatch(self, string: str, /) -> object | None:
        try:
            return self._compiled.fullmatch(string, timeout=NAME_MATCH_TIMEOUT_S)
        except TimeoutError:
            raise InvalidGlobError(
                f"Glob '{self._glob[:100]}' is too complex to match in time.", glob=self._glob[:100]
            ) from None


@dataclass(frozen=True, slots=True)
class Glob:
    """A compiled glob; `matches` takes a path relative to the directory being searched."""

    pattern: str
    regex: _Matcher
    basename_only: bool
    negated: bool

    def matches(self, rel_path: str) -> bool:
        subject = rel_path.rsplit("/", 1)[-1] if self.basename_only else rel_path
        return (self.regex.fullmatch(subject) is not None) != self.negated


def _translate_class(pattern: str, start: int) -> tuple[str, int]:
    """Translate `[...]` starting at `start` (the '['); returns (regex, index after ']')."""
    i = start + 1
    negate = i < len(pattern) and pattern[i] in "!^"
    if negate:
        i += 1
    body: list[str] = []
    first = True
    while i < len(pattern):
        ch = pattern[i]
        if ch == "]" and not first:
            inner = "".join(body)
            return (f"[^/{inner}]" if negate else f"(?!/)[{inner}]"), i + 1  # never matches a separator
        if ch == "\\" and i + 1 < len(pattern):
            body.append(re.escape(pattern[i + 1]))
            i += 2
        else:
            body.append("\\" + ch if ch in "\\^[]" else ch)
            i += 1
        first = False
    raise InvalidGlobError(f"Unclosed '[' in glob '{pattern}'.", glob=pattern)


def _plain(pattern: str) -> bool:
    """Whether `re` matches this glob in at most polynomial time of low degree: at most `MAX_PLAIN_CHOICES`
    wildcards inside names and `{..}` groups together, and at most `MAX_PLAIN_CHOICES` `**` components (each
    `**/` is one unambiguous loop over whole directories, but many of them nest). An over-count, e.g. of a
    `*` inside `[..]`, only sends the glob to the guarded engine."""
    inside = components = 0
    for match in _CHOICE_TOKENS.finditer(pattern):
        token, start, end = match.group(), match.start(), match.end()
        if token.startswith("\\"):
            continue
        whole = token == "**" and pattern[start - 1 : start] in ("", "/") and pattern[end : end + 1] in ("", "/")
        if whole:
            components += 1
        else:
            inside += 1
    return inside <= MAX_PLAIN_CHOICES and components <= MAX_PLAIN_CHOICES


_CHOICE_TOKENS: Final = re.compile(r"\\.|\*\*|\*|\{", re.DOTALL)


def _translate(pattern: str) -> str:
    out: list[str] = []
    depth = groups = 0  # nesting of {..}, and how many
    i = 0
    n = len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "*":
            if pattern.startswith("**", i):
                at_start = i == 0 or pattern[i - 1] == "/"
                after = i + 2
                if at_start and after < n and pattern[after] == "/":
                    out.append("(?:[^/]*/)*")  # '**/' : zero or more whole directories
                    i = after + 1
                    continue
                if at_start and after == n:
                    out.append(".*")  # trailing '**' (or the whole pattern): everything below
                    i = after
                    continue
                out.append("[^/]*")
                i = after
                continue
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[":
            translated, i = _translate_class(pattern, i)
            out.append(translated)
            continue
        elif ch == "{":
            depth += 1
            groups += 1
            if depth > MAX_BRACE_DEPTH or groups > MAX_BRACE_GROUPS:
                raise InvalidGlobError(
                    f"Glob '{pattern[:100]}' nests {{..}} deeper than {MAX_BRACE_DEPTH} levels or holds more than "
                    f"{MAX_BRACE_GROUPS} of them.",
                    hint="Split it into simpler globs, or use search_text with a regex for complex file names.",
                    glob=pattern[:100],
                )
            out.append("(?:")
        elif ch == "}" and depth > 0:
            depth -= 1
            out.append(")")
        elif ch == "," and depth > 0:
            out.append("|")
        elif ch == "\\":
            if i + 1 >= n:
                raise InvalidGlobError(f"Glob '{pattern}' ends with a lone backslash.", glob=pattern)
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        else:
            out.append(re.escape(ch))
        i += 1
    if depth:
        raise InvalidGlobError(f"Unclosed '{{' in glob '{pattern}'.", glob=pattern)
    return "".join(out)


@lru_cache(maxsize=256)
def compile_glob(pattern: str) -> Glob:
    """Compile a glob once (cached).

    Raises:
        InvalidGlobError: empty, too long, or with an unclosed '[' or '{'.
    """
    if not pattern or not pattern.strip():
        raise InvalidGlobError("The glob is empty.", glob=pattern)
    if len(pattern) > MAX_GLOB_CHARS or "\x00" in pattern:
        raise InvalidGlobError("The glob is too long or contains a NUL byte.", glob=pattern[:100])
    body = pattern
    negated = body.startswith("!")
    if negated:
        body = body[1:]
    body = body.removeprefix("./")
    anchored = body.startswith("/")
    body = body.lstrip("/").rstrip("/") or "**"
    basename_only = not anchored and "/" not in body
    translated = _translate(body)
    try:
        if _plain(body):
            compiled: _Matcher = re.compile(translated, re.DOTALL)
        else:
            compiled = _GuardedRegex(regex.compile(translated, regex.DOTALL | regex.V0), pattern)
    except (re.error, regex.error) as exc:
        raise InvalidGlobError(f"Glob '{pattern}' cannot be compiled: {exc}.", glob=pattern) from exc
    except RecursionError:  # a backstop: the bounds above keep every glob we know of far from the limit
        raise InvalidGlobError(f"Glob '{pattern[:100]}' is too deeply nested.", glob=pattern[:100]) from None
    return Glob(pattern=pattern, regex=compiled, basename_only=basename_only, negated=negated)
