"""Which non-ASCII names git could show the deny-list refuses, and git's exclusions for exactly those names.

The deny-list matches names case-folded and NFKC-normalised (`secret.ｋｅｙ` is `secret.key` to it, so is a
decomposed or compatibility form); git's exclude pathspecs compare bytes and fold ASCII only. Every name where
the two can disagree holds a byte outside ASCII, and `exec.git.names` collects all of those from git's records.
Each is judged as a name at any depth, with the deny-list's own matching, by two lists:
- the deny-list itself (a name that is a whole path to it, as `a／b` is `a/b`);
- every name-sized piece of every rule (`secrets/*.key` gives `secrets` and `*.key`; a piece made only of `*`
  matches the same bytes in git and is left out): a rule hides a path only if each of the path's names
  matches its piece, so a non-ASCII name that matches no piece of any rule cannot be what hides a path.
A refused name is excluded wherever it occurs, as a file and as a directory with everything beneath
(`policy.git.rule.name_exclusions`): for a rule of several names that is wider than the rule, never narrower.
Negations are ignored (more hidden, never less), as for the ASCII exclusions.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Final

from repo_sandbox.policy.deny import DenyList
from repo_sandbox.policy.git.rule import name_exclusions

MAX_NAME_EXCLUSIONS: Final = 100
"""More refused non-ASCII names than this and every non-ASCII path is excluded instead (git's cost grows with
the number of pathspecs)."""
_MAX_REMEMBERED: Final = 1_000_000


def name_pieces(deny_patterns: Iterable[str]) -> list[str]:
    """The name-sized pieces of the rules that can match other bytes in git than names do in the deny-list."""
    pieces: list[str] = []
    for raw in deny_patterns:
        pattern = raw.strip()
        if not pattern or pattern.startswith(("#", "!")):
            continue
        for piece in pattern.split("/"):
            if piece.strip("*"):
                # '!' and '#' are literal inside a rule, special at the start of one: keep them literal
                pieces.append("\\" + piece if piece.startswith(("!", "#")) else piece)
    return pieces


class ForeignNames:
    """Judges non-ASCII names against one deny-list; remembers every verdict. Thread-safe (no shared iteration)."""

    def __init__(self, deny_patterns: Iterable[str]) -> None:
        patterns = list(deny_patterns)
        self._whole = DenyList(patterns)
        self._pieces = DenyList(name_pieces(patterns))
        self._verdicts: dict[bytes, bool] = {}
        self._sets: dict[frozenset[bytes], frozenset[bytes]] = {}

    def refused(self, names: frozenset[bytes]) -> frozenset[bytes]:
        """The `names` the deny-list refuses (as a name at any depth)."""
        known = self._sets.get(names)
        if known is None:
            known = frozenset(name for name in names if self._refuses(name))
            if len(self._sets) > 16:
                self._sets.clear()
            self._sets[names] = known
        return known

    def exclusions(self, *name_sets: frozenset[bytes]) -> tuple[str, ...] | None:
        """The exclusions hiding every refused name of these sets, sorted; None when there are too many."""
        refused = frozenset[bytes]().union(*(self.refused(names) for names in name_sets))
        if len(refused) > MAX_NAME_EXCLUSIONS:
            return None
        return tuple(spec for name in sorted(refused) for spec in name_exclusions(os.fsdecode(name)))

    def _refuses(self, name: bytes) -> bool:
        verdict = self._verdicts.get(name)
        if verdict is None:
            text = os.fsdecode(name)
            verdict = self._whole.entry_rule(text) is not None or self._pieces.entry_rule(text) is not None
            if len(self._verdicts) > _MAX_REMEMBERED:
                self._verdicts.clear()
            self._verdicts[name] = verdict
        return verdict
