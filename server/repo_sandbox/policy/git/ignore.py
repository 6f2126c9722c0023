"""Gitignore rules with git's own semantics, for the deny-list and the walker's ignore files.

A rule set answers one question about one entry: which rule, if any, decides it. As in git:
- the LAST rule that matches the entry itself decides (`!rule` re-includes);
- a rule ending in `/` matches directories only;
- a rule with a `/` at its start or middle is anchored to the directory of its file and matched against the
  whole relative path; any other rule is matched against the entry's name at any depth;
- `*` and `?` never match `/`, `[...]` is a class (`!` or `^` negates; it never matches `/`), `\\` escapes,
  `**/` is any number of leading directories, `/**` everything inside, `/**/` zero or more directories.
- Whether a directory's contents are hidden is not decided here: callers do not look inside a directory
  whose own entry is hidden (a walker skips it; the jail checks every ancestor).

pathspec's GitIgnoreSpec answers a different question (is a file hidden, ancestors included) and gets the
directory idiom `*` + `!*/` wrong when asked about a directory, so the walker uses this instead. Each rule set
also keeps one alternation of all its rules, so the common case (no rule matches) costs two regex calls.

Ignore files come from the repository, which may be hostile: a rule such as `*a*a*a*...*b` made Python's
`re` backtrack for hours against a long name while holding the GIL, freezing the whole server. Rules with
more than `MAX_PLAIN_WILDCARDS` wildcards (and every alternation holding one) are compiled by `regex`
instead, which prunes that search (milliseconds) and releases the GIL while it matches.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

import regex

MAX_PLAIN_WILDCARDS: Final = 2
"""Wildcards (`*`, `**`) a rule may hold and still be matched by `re` (at most quadratic backtracking)."""
_WILDCARDS: Final = re.compile(r"\\.|\*\*|\*", re.DOTALL)

Pattern = re.Pattern[str] | regex.Pattern[str]


def _is_complex(line: str) -> bool:
    return sum(not token.startswith("\\") for token in _WILDCARDS.findall(line)) > MAX_PLAIN_WILDCARDS


def _compile(source: str, *, complex_rule: bool) -> Pattern:
    return regex.compile(source, regex.DOTALL | regex.V0) if complex_rule else re.compile(source, re.DOTALL)


_POSIX_CLASSES = {
    "alnum": "a-zA-Z0-9",
    "alpha": "a-zA-Z",
    "blank": " \\t",
    "cntrl": "\\x00-\\x1f\\x7f",
    "digit": "0-9",
    "graph": "\\x21-\\x7e",
    "lower": "a-z",
    "print": "\\x20-\\x7e",
    "punct": "!-/:-@\\[-`{-~",
    "space": " \\t\\n\\r\\f\\v",
    "upper": "A-Z",
    "xdigit": "0-9A-Fa-f",
}


def _class(glob: str, start: int) -> tuple[str, int] | None:
    """Translate the bracket expression at glob[start] == '['; (regex, index after ']') or None if unclosed."""
    i = start + 1
    negate = i < len(glob) and glob[i] in "!^"
    if negate:
        i += 1
    items: list[str] = []
    first = True
    while i < len(glob):
        char = glob[i]
        if char == "]" and not first:
            body = "".join(items) or "(?!)"
            return (f"[^/{body}]" if negate else f"(?:(?!/)[{body}])"), i + 1
        first = False
        if char == "[" and glob.startswith("[:", i):
            end = glob.find(":]", i + 2)
            name = glob[i + 2 : end] if end >= 0 else ""
            if name in _POSIX_CLASSES:
                items.append(_POSIX_CLASSES[name])
                i = end + 2
                continue
        if char == "\\" and i + 1 < len(glob):
            i += 1
            char = glob[i]
        if i + 2 < len(glob) and glob[i + 1] == "-" and glob[i + 2] != "]":
            low, high = char, glob[i + 2]
            if high == "\\" and i + 3 < len(glob):
                high = glob[i + 3]
                i += 1
            items.append(f"{re.escape(low)}-{re.escape(high)}" if low <= high else "(?!)")
            i += 3
            continue
        items.append(re.escape(char))
        i += 1
    return None


def _segment(glob: str) -> str:
    """Translate one path segment (no '/') of a glob."""
    out: list[str] = []
    i = 0
    while i < len(glob):
        char = glob[i]
        if char == "*":
            while i < len(glob) and glob[i] == "*":
                i += 1
            out.append("[^/]*")
            continue
        if char == "?":
            out.append("[^/]")
        elif char == "[":
            translated = _class(glob, i)
            if translated is not None:
                out.append(translated[0])
                i = translated[1]
                continue
            out.append(re.escape(char))
        elif char == "\\" and i + 1 < len(glob):
            i += 1
            out.append(re.escape(glob[i]))
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


def _path_regex(glob: str) -> str:
    """Translate an anchored glob (segments joined by '/', `**` segments special)."""
    segments = [
        s for i, s in enumerate(glob.split("/")) if not (s == "**" and i > 0 and glob.split("/")[i - 1] == "**")
    ]
    parts: list[str] = []
    need_separator = False
    for index, segment in enumerate(segments):
        if segment == "**":
            if index == len(segments) - 1:
                parts.append("/.+" if parts else ".*")  # 'a/**': everything inside a; '/**': everything
            else:
                parts.append("/(?:.*/)?" if parts else "(?:.*/)?")  # zero or more directories
            need_separator = False
            continue
        if need_separator:
            parts.append("/")
        parts.append(_segment(segment))
        need_separator = True
    return "".join(parts)


@dataclass(frozen=True, slots=True)
class _Rule:
    index: int
    negate: bool
    dir_only: bool
    anchored: bool
    regex: Pattern
    parent: Pattern | None = None
    """For an anchored rule without `**`: the directories whose entries it can match (else None: any)."""
    complex_rule: bool = False
    tail: str | None = None
    """For an anchored rule: the regex source of its last segment, which an entry's name must match (None
    when that segment is `**`: any name)."""


def _strip_trailing_spaces(line: str) -> str:
    stripped = line.rstrip(" ")
    if stripped.endswith("\\") and len(stripped) < len(line):
        return stripped + " "  # an escaped space is kept
    return stripped


def _parse(line: str, index: int) -> _Rule | None:
    line = _strip_trailing_spaces(line.rstrip("\r\n"))
    if not line or line.startswith("#"):
        return None
    negate = line.startswith("!")
    if negate or line.startswith(("\\!", "\\#")):  # a backslash makes a leading '!' or '#' literal
        line = line[1:]
    dir_only = line.endswith("/")
    line = line.rstrip("/")
    if not line:
        return None
    anchored = "/" in line
    line = line.removeprefix("/")
    source = _path_regex(line) if anchored else _segment(line)
    parent = None
    complex_rule = _is_complex(line)
    if anchored and "**" not in line:
        parent = _compile(_path_regex(line.rpartition("/")[0]), complex_rule=complex_rule)
    last = line.rpartition("/")[2]
    tail = _segment(last) if anchored and last != "**" else None
    compiled = _compile(source, complex_rule=complex_rule)
    return _Rule(index, negate, dir_only, anchored, compiled, parent, complex_rule, tail)


def _either(rules: list[_Rule]) -> Pattern:
    if not rules:
        return re.compile(r"(?!)")
    source = "|".join(f"(?:{rule.regex.pattern})" for rule in rules)
    return _compile(source, complex_rule=any(rule.complex_rule for rule in rules))


def _scan(sources: list[str], rules: list[_Rule]) -> Pattern:
    """One regex finding, in a '/'-joined listing, the whole names one of `sources` matches (none matches
    '/', so a match cannot span two names)."""
    if not sources:
        return re.compile(r"(?!)")
    alternation = "|".join(f"(?:{source})" for source in sources)
    return _compile(f"(?<![^/])(?:{alternation})(?![^/])", complex_rule=any(r.complex_rule for r in rules))


class IgnoreRules:
    """Compiled gitignore lines. `check(path, is_dir=...)` names the rule that decides the entry, if any."""

    __slots__ = ("_anchored", "_anchored_any", "_name_any", "_name_scan", "_rules", "_tail_scan")

    def __init__(self, lines: Iterable[str]) -> None:
        self._rules = [rule for i, line in enumerate(lines) if (rule := _parse(line, i)) is not None]
        name_rules = [r for r in self._rules if not r.anchored]
        self._anchored = [r for r in self._rules if r.anchored]
        self._name_any = _either(name_rules)
        self._anchored_any = _either(self._anchored)
        # Whole '/'-separated names only: no translated rule matches '/', so a match cannot span two names.
        self._name_scan = _scan([r.regex.pattern for r in name_rules], name_rules)
        tails = [r.tail for r in self._anchored if r.tail is not None]
        self._tail_scan = _scan(tails, self._anchored) if len(tails) == len(self._anchored) else None
        """The anchored rules' last segments, when none is `**`: a name no one matches is no candidate."""

    def candidates(self, prefix: str, names: list[str]) -> list[int]:
        """Indices of the `names` (entries of the directory `prefix`, '' or ending in '/') that some rule
        may match; every other entry is decided (no rule matches it). One regex scan over the whole listing
        replaces a call per entry; callers still `check` each candidate."""
        if not self._rules or not names:
            return []
        joined = "/".join(names)
        starts = {m.start() for m in self._name_scan.finditer(joined)}
        directory = prefix[:-1]
        if any(r.parent is None or r.parent.fullmatch(directory) for r in self._anchored):
            anchored = self._anchored_any.fullmatch
            if self._tail_scan is None:
                offset = 0
                for name in names:
                    if anchored(prefix + name) is not None:
                        starts.add(offset)
                    offset += len(name) + 1
            else:
                for match in self._tail_scan.finditer(joined):
                    if anchored(prefix + match.group()) is not None:
                        starts.add(match.start())
        found: list[int] = []
        index = previous = 0
        for start in sorted(starts):  # each start's index: the separators before it, counted once over all
            index += joined.count("/", previous, start)
            previous = start
            found.append(index)
        return found

    def __bool__(self) -> bool:
        return bool(self._rules)

    def may_match(self, path: str) -> bool:
        """False when no rule can match the entry, whether it is a file or a directory (the common case)."""
        name = path.rsplit("/", 1)[-1]
        return self._name_any.fullmatch(name) is not None or self._anchored_any.fullmatch(path) is not None

    def check(self, path: str, *, is_dir: bool) -> tuple[bool | None, int | None]:
        """For a '/'-separated path relative to the rules' directory: (True, i) hidden by line i,
        (False, i) re-included by the negation on line i, (None, None) when no rule matches the entry."""
        name = path.rsplit("/", 1)[-1]
        if self._name_any.fullmatch(name) is None and self._anchored_any.fullmatch(path) is None:
            return None, None
        for rule in reversed(self._rules):
            if rule.dir_only and not is_dir:
                continue
            if rule.regex.fullmatch(path if rule.anchored else name) is not None:
                return not rule.negate, rule.index
        return None, None
