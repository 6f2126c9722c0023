"""A cheap proof that no secret rule can match a text: most pages of code contain none of the rules' hints.

`mask_text` runs a rule only where one of its hints occurs (every match contains one; a rule with a `trigger`
runs only where the trigger matches). So when no hint of any rule occurs in a text, and no trigger matches,
every rule leaves the text as it is, the first one and therefore (the text being unchanged) every later one.
`Screen.may_match` decides exactly that, in two regex scans (one over the text for the case-sensitive rules,
one over its lower-cased form for the folding ones) instead of a `str.find` per hint and a trigger scan per
rule. It is a necessary condition, never a replacement for the rules: when it says "may match", the rules run
as before.

Speed: each hint becomes one alternative anchored on its rarest character (`ghp_` -> `p(?<=ghp)_`), so the
scan stops only where that character occurs; the alternatives are grouped by anchor (one charset scan).

`Screen.hinted` says which rules have a hint in the text, from the same scans: a text that mentions `key` or
`token` (a list of file paths often does) then runs the few rules those hints belong to, not every rule.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from typing import Final, NamedTuple

from repo_sandbox.audit.patterns import RULES, SecretRule

CHARS_BY_FREQUENCY: Final = (
    " etsaronilfcd._()up',mhg\":b=xEy0Tw1#kI-NvALR2\\CSq][>ODFP3M*4U58BG6H9/zj7+W{}<V%XK;Y@`!Z|?Q^J$~&"
)
"""Printable ASCII, most frequent first in Python source (measured on the standard library); others are rarer."""


def _rareness(char: str) -> int:
    position = CHARS_BY_FREQUENCY.find(char)
    return len(CHARS_BY_FREQUENCY) if position < 0 else position


def _anchored(hint: str, follow: str | None) -> tuple[str, str]:
    """(anchor, rest): `anchor + rest` matches exactly where `hint` (followed by `follow`) occurs, the match
    starting at the hint's rarest character; the part of the hint before it is checked by a lookbehind."""
    index = max(range(len(hint)), key=lambda i: (_rareness(hint[i]), -i))
    before, anchor, after = hint[:index], hint[index], hint[index + 1 :]
    # The characters after the anchor first (plain comparisons), the lookbehind (a nested match) last.
    rest = re.escape(after) + (f"(?<={re.escape(hint)})" if before else "")
    return anchor, rest + (f"(?={follow})" if follow is not None else "")


MAX_HINTS_LOCATED: Final = 64
"""Hint occurrences `Screen.hinted` checks one by one before it gives up and names every rule."""


class _Hint(NamedTuple):
    offset: int
    """Where the anchor lies in the hint."""
    text: str
    follow: re.Pattern[str] | None
    rule: int
    """The rule's index in `RULES`."""


def _any_of(hints: Iterable[tuple[str, str | None]]) -> re.Pattern[str] | None:
    by_anchor: dict[str, set[str]] = defaultdict(set)
    for hint, follow in hints:
        anchor, rest = _anchored(hint, follow)
        by_anchor[anchor].add(rest)
    if not by_anchor:
        return None
    alternatives = []
    for anchor, rests in sorted(by_anchor.items()):
        tails = sorted(rests)
        alternatives.append(re.escape(anchor) + (tails[0] if len(tails) == 1 else "(?:" + "|".join(tails) + ")"))
    return re.compile("|".join(alternatives))


class Screen:
    """Whether any of `rules` could match a text (False: none can)."""

    def __init__(self, rules: Iterable[SecretRule]) -> None:
        plain: list[tuple[str, str | None]] = []
        folded: list[tuple[str, str | None]] = []
        self._located: tuple[dict[str, list[_Hint]], dict[str, list[_Hint]]] = (defaultdict(list), defaultdict(list))
        for index, secret_rule in enumerate(rules):
            if not secret_rule.hints:
                raise ValueError(f"rule {secret_rule.kind!r} has no hints: no text can be screened")
            (folded if secret_rule.fold else plain).extend((hint, secret_rule.follow) for hint in secret_rule.hints)
            follow = None if secret_rule.follow is None else re.compile(secret_rule.follow)
            for hint in secret_rule.hints:
                offset = max(range(len(hint)), key=lambda i, h=hint: (_rareness(h[i]), -i))
                by_anchor = self._located[1 if secret_rule.fold else 0]
                by_anchor[hint[offset]].append(_Hint(offset, hint, follow, index))
        self._plain = _any_of(plain)
        self._folded = _any_of(folded)

    def may_match(self, text: str, folded: str) -> bool:
        """`folded` is `text.lower()`; a lower-casing that changed the length (rare scripts) proves nothing."""
        if len(folded) != len(text):
            return True
        if self._plain is not None and self._plain.search(text) is not None:
            return True
        return self._folded is not None and self._folded.search(folded) is not None

    def hinted(self, text: str, folded: str) -> frozenset[int] | None:
        """The indices (in the rules given) of the rules one of whose hints occurs in the text, as `masking`
        looks for them: each rule's hints, followed by its `follow` pattern where it has one. None when that is
        not known: a lower-casing that changed the length, or more than `MAX_HINTS_LOCATED` occurrences."""
        if len(folded) != len(text):
            return None
        found: set[int] = set()
        located = 0
        for pattern, haystack, by_anchor in (
            (self._plain, text, self._located[0]),
            (self._folded, folded, self._located[1]),
        ):
            if pattern is None:
                continue
            position = 0
            while (match := pattern.search(haystack, position)) is not None:
                located += 1
                if located > MAX_HINTS_LOCATED:
                    return None
                at = match.start()
                for hint in by_anchor[haystack[at]]:
                    start = at - hint.offset
                    if (
                        start >= 0
                        and haystack.startswith(hint.text, start)
                        and (hint.follow is None or hint.follow.match(haystack, start + len(hint.text)))
                    ):
                        found.add(hint.rule)
                position = at + 1
        return frozenset(found)


SCREEN: Final = Screen(RULES)
