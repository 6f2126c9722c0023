"""The operator's deny-list: gitignore-syntax globs that hide paths from every tool.

Matching is case-insensitive and Unicode-NFC-normalised, so `.ENV` or a decomposed `é` cannot slip past a
rule on a case-insensitive or normalising filesystem. Normalisation is used for matching only, never to
open a file. Every check is fail-closed about the kind of entry: a path is hidden when it matches as a file
OR as a directory, so a *file* named `.git` (a worktree's pointer) is as hidden as the `.git/` directory.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

from repo_sandbox.policy.gitignore import IgnoreRules


def _match_key(rel_path: str) -> str:
    if rel_path.isascii():
        return rel_path.lower()  # the same as NFC + casefold for ASCII, several times faster
    return unicodedata.normalize("NFC", rel_path).casefold()


class DenyList:
    """Decides whether a root-relative path is hidden by policy."""

    __slots__ = ("_patterns", "_spec")

    def __init__(self, patterns: Iterable[str]) -> None:
        self._patterns = [p for p in patterns if p.strip() and not p.lstrip().startswith("#")]
        self._spec = IgnoreRules(_match_key(p) for p in self._patterns)

    def __len__(self) -> int:
        return len(self._patterns)

    def _rule(self, key: str, *, is_dir: bool) -> str | None:
        include, index = self._spec.check(key, is_dir=is_dir)
        return self._patterns[index] if include and index is not None else None

    def matching_rule(self, rel_path: str, *, is_dir: bool) -> str | None:
        """The deny rule that hides this one entry taken as a file (or as a directory), or None.

        Ancestors are not considered.
        """
        if rel_path in ("", "."):
            return None
        return self._rule(_match_key(rel_path), is_dir=is_dir)

    def entry_rule(self, rel_path: str) -> str | None:
        """The rule hiding this one entry as a file or as a directory (fail closed), ancestors not considered."""
        if rel_path in ("", "."):
            return None
        key = _match_key(rel_path)
        if not self._spec.may_match(key):
            return None
        return self._rule(key, is_dir=False) or self._rule(key, is_dir=True)

    def denied_names(self, dir_rel: str, names: list[str]) -> set[str]:
        """The entries of directory `dir_rel` that are themselves denied (each as `is_entry_denied` decides)."""
        prefix = "" if dir_rel in ("", ".") else _match_key(dir_rel) + "/"
        keys = [_match_key(name) for name in names]
        return {
            names[i]
            for i in self._spec.candidates(prefix, keys)
            if self._rule(prefix + keys[i], is_dir=False) or self._rule(prefix + keys[i], is_dir=True)
        }

    def is_entry_denied(self, rel_path: str) -> bool:
        """True when this entry itself is hidden; a walker uses it because it never enters denied parents."""
        return self.entry_rule(rel_path) is not None

    def denying_rule(self, rel_path: str) -> str | None:
        """The rule that hides the path or any directory above it, or None (fail closed, as `entry_rule`)."""
        parts = [p for p in rel_path.split("/") if p not in ("", ".")]
        for depth in range(1, len(parts) + 1):
            rule = self.entry_rule("/".join(parts[:depth]))
            if rule is not None:
                return rule
        return None

    def is_denied(self, rel_path: str) -> bool:
        return self.denying_rule(rel_path) is not None
