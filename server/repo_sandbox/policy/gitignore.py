"""Gitignore-syntax matching with a one-regex fast path, for the deny-list and the walker's ignore files.

`pathspec.GitIgnoreSpec.check_file` tries every pattern in turn (about half a microsecond each), and a walk
asks it once per entry and per ignore file in force. Nearly every path matches no pattern at all, so the
patterns are also joined into one regex that matches a superset of what any of them matches: when it does
not match, no pattern can, and the answer is "no rule" without the loop. When it matches, pathspec decides (last match wins, negation, directory rules).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from pathspec import GitIgnoreSpec
from pathspec.pattern import RegexPattern
from pathspec.util import normalize_file

_NAMED_GROUP = re.compile(r"\(\?P<[A-Za-z_][A-Za-z0-9_]*>")
_ANY_DEPTH = "^(?:.+/)?"
"""How pathspec starts the regex of a pattern that matches at any depth (no '/' inside it)."""


def _prefilter(spec: GitIgnoreSpec) -> re.Pattern[str] | None:
    """One regex matching whatever any pattern of `spec` matches; None if that cannot be built safely."""
    anywhere: list[str] = []
    anchored: list[str] = []
    flags: set[int] = set()
    for pattern in spec.patterns:
        if pattern.include is None:
            continue  # comments and blank lines match nothing
        if not isinstance(pattern, RegexPattern) or pattern.regex is None:
            return None
        regex: re.Pattern[str] = pattern.regex  # pyright: ignore[reportUnknownMemberType]
        if not isinstance(regex.pattern, str):
            return None
        flags.add(regex.flags)
        # Named groups would clash in an alternation; as plain groups they match exactly the same strings.
        source = _NAMED_GROUP.sub("(?:", regex.pattern)
        if source.startswith(_ANY_DEPTH):
            anywhere.append(source[len(_ANY_DEPTH) :])
        else:
            anchored.append(source)
    if len(flags) > 1:
        return None
    # `(?:^|/)X` matches wherever `^(?:.+/)?X` does (a superset is enough for a prefilter), and lets the
    # regex engine try the patterns only at component starts instead of backtracking over `.+/` for each.
    alternatives = [f"(?:{s})" for s in anchored]
    if anywhere:
        alternatives.append("(?:^|/)(?:" + "|".join(f"(?:{s})" for s in anywhere) + ")")
    if not alternatives:
        return re.compile(r"(?!)")
    try:
        return re.compile("|".join(alternatives), flags.pop() if flags else 0)
    except re.error:
        return None


class FastGitIgnore:
    """A compiled gitignore spec: `check(path)` gives (include, pattern index) like `check_file`."""

    __slots__ = ("_prefilter", "_spec")

    def __init__(self, lines: Iterable[str]) -> None:
        self._spec = GitIgnoreSpec.from_lines(lines)
        self._prefilter = _prefilter(self._spec)

    def check(self, path: str) -> tuple[bool | None, int | None]:
        """(True, i) ignored by pattern i, (False, i) re-included by negation i, (None, None) no rule.

        A directory is checked as 'path/' (gitignore's directory-only rules then apply).
        """
        norm = normalize_file(path)
        if self._prefilter is not None and self._prefilter.search(norm) is None:
            return None, None
        result = self._spec.check_file(norm)
        return result.include, result.index
