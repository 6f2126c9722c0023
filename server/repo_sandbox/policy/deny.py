"""The operator's deny-list: gitignore-syntax globs that hide paths from every tool.

Matching is case-insensitive and Unicode-NFC-normalised, so `.ENV` or a decomposed `é` cannot slip past a
rule on a case-insensitive or normalising filesystem. Normalisation is used for matching only, never to
open a file.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable

from pathspec import GitIgnoreSpec


def _match_key(rel_path: str) -> str:
    return unicodedata.normalize("NFC", rel_path).casefold()


class DenyList:
    """Decides whether a root-relative path is hidden by policy."""

    __slots__ = ("_patterns", "_spec")

    def __init__(self, patterns: Iterable[str]) -> None:
        self._patterns = [p for p in patterns if p.strip() and not p.lstrip().startswith("#")]
        self._spec = GitIgnoreSpec.from_lines(_match_key(p) for p in self._patterns)

    def __len__(self) -> int:
        return len(self._patterns)

    def matching_rule(self, rel_path: str, *, is_dir: bool) -> str | None:
        """The deny rule that hides this one entry (ancestors not considered), or None."""
        if rel_path in ("", "."):
            return None
        key = _match_key(rel_path) + ("/" if is_dir else "")
        result = self._spec.check_file(key)
        if result.include and result.index is not None:
            return self._patterns[result.index]
        return None

    def entry_matcher(self) -> Callable[[str, bool], bool]:
        """A fast `is_entry_denied(rel_path, is_dir)` for bulk scans: one combined regex when no rule is a
        negation (then "any rule matches" is the whole answer), else the rule-by-rule check."""
        patterns = list(self._spec.patterns)
        regexes = [getattr(p, "regex", None) for p in patterns]
        if any(getattr(p, "include", True) is not True for p in patterns) or any(r is None for r in regexes):
            return lambda rel_path, is_dir: self.is_entry_denied(rel_path, is_dir=is_dir)
        try:
            combined = re.compile(
                "|".join(f"(?:{re.sub(r'[(][?]P<[A-Za-z_]+>', '(?:', r.pattern)})" for r in regexes if r) or "(?!)"
            )
        except re.error:
            return lambda rel_path, is_dir: self.is_entry_denied(rel_path, is_dir=is_dir)

        def matcher(rel_path: str, is_dir: bool) -> bool:
            return (
                rel_path not in ("", ".")
                and combined.search(_match_key(rel_path) + ("/" if is_dir else "")) is not None
            )

        return matcher

    def is_entry_denied(self, rel_path: str, *, is_dir: bool) -> bool:
        """True when this entry itself matches; a walker uses it because it never enters denied parents."""
        return self.matching_rule(rel_path, is_dir=is_dir) is not None

    def denying_rule(self, rel_path: str, *, is_dir: bool) -> str | None:
        """The rule that hides the path or any directory above it, or None."""
        parts = [p for p in rel_path.split("/") if p not in ("", ".")]
        for depth in range(1, len(parts) + 1):
            last = depth == len(parts)
            rule = self.matching_rule("/".join(parts[:depth]), is_dir=is_dir or not last)
            if rule is not None:
                return rule
        return None
