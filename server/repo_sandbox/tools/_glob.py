"""Globs as ripgrep/gitignore write them, compiled to one regular expression.

`*` and `?` stay inside one path component, `**` as a whole component spans any number of them, `[..]`
(`[!..]` or `[^..]` to negate) and `{a,b}` (nestable) work as in ripgrep. A pattern with no `/` matches the
file name at any depth (`*.go` == `**/*.go`); a leading `/` anchors it to the search directory. A leading
`!` inverts the match. Matching is case-sensitive.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from repo_sandbox.errors import InvalidGlobError

MAX_GLOB_CHARS = 1000


@dataclass(frozen=True, slots=True)
class Glob:
    """A compiled glob; `matches` takes a path relative to the directory being searched."""

    pattern: str
    regex: re.Pattern[str]
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


def _translate(pattern: str) -> str:
    out: list[str] = []
    depth = 0  # nesting of {..}
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
    try:
        regex = re.compile(_translate(body), re.DOTALL)
    except re.error as exc:
        raise InvalidGlobError(f"Glob '{pattern}' cannot be compiled: {exc.msg}.", glob=pattern) from exc
    return Glob(pattern=pattern, regex=regex, basename_only=basename_only, negated=negated)
