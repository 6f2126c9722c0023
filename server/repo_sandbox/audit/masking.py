"""`mask_text`: every recognised secret in a text masked, with counts by kind and the values found.

Guarantees, relied upon by output masking and checked by the tests:
- a mask never spans lines: the number of '\\n' in the text is unchanged (line numbers stay true);
- a mask is never longer than what it replaces (a capped result stays within its cap);
- masking is idempotent: masked text has nothing left to mask.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator

from repo_sandbox.audit.keys import mask_private_keys
from repo_sandbox.audit.labels import is_mask, mask_for
from repo_sandbox.audit.patterns import RULES, SecretRule
from repo_sandbox.audit.screen import SCREEN


def _parts_worth_remembering(kind: str, secret: str) -> list[str]:
    """The secret, and the parts of it that could show up on their own (a URL's password, cookie values)."""
    if kind == "url_credentials":
        return [secret, secret.partition(":")[2]]
    if kind == "cookie":
        return [secret, *(pair.partition("=")[2].strip() for pair in secret.split(";"))]
    return [secret]


def _replacement(secret_rule: SecretRule, match: re.Match[str], counts: Counter[str], found: set[str] | None) -> str:
    """The matched text with its secret masked (or unchanged when the rule keeps it)."""
    if secret_rule.keep is not None and secret_rule.keep(match):
        return match.group(0)
    start, end = secret_rule.secret_span(match)
    secret = match.string[start:end]
    if is_mask(secret):
        return match.group(0)
    counts[secret_rule.kind] += 1
    if found is not None:
        found.update(_parts_worth_remembering(secret_rule.kind, secret))
    offset = match.start()
    whole = match.group(0)
    return whole[: start - offset] + mask_for(secret_rule.kind, secret) + whole[end - offset :]


def _apply_rule(secret_rule: SecretRule, text: str, counts: Counter[str], found: set[str] | None) -> str:
    return secret_rule.pattern.sub(lambda match: _replacement(secret_rule, match, counts, found), text)


def _apply_rule_at(
    secret_rule: SecretRule, text: str, positions: Iterator[int], counts: Counter[str], found: set[str] | None
) -> str:
    """Match the rule exactly where its trigger fired (no scanning)."""
    parts: list[str] = []
    done = 0
    for position in positions:
        if position < done or (match := secret_rule.pattern.match(text, position)) is None:
            continue
        parts += [text[done:position], _replacement(secret_rule, match, counts, found)]
        done = match.end()
    parts.append(text[done:])
    return "".join(parts)


def _hint_positions(haystack: str, secret_rule: SecretRule) -> Iterator[int]:
    if secret_rule.trigger is not None:
        for match in secret_rule.trigger.finditer(haystack):
            yield match.start()
        return
    for hint in secret_rule.hints:
        position = haystack.find(hint)
        while position >= 0:
            yield position
            position = haystack.find(hint, position + len(hint))


def _lines_with_hints(haystack: str, secret_rule: SecretRule) -> list[tuple[int, int]]:
    """The (start, end) of every line that contains one of the rule's hints, in order, without duplicates."""
    starts: set[int] = set()
    for position in _hint_positions(haystack, secret_rule):
        starts.add(haystack.rfind("\n", 0, position) + 1)
    spans: list[tuple[int, int]] = []
    for line_start in sorted(starts):
        line_end = haystack.find("\n", line_start)
        spans.append((line_start, len(haystack) if line_end < 0 else line_end))
    return spans


def _apply_rule_to_lines(
    secret_rule: SecretRule, text: str, spans: list[tuple[int, int]], counts: Counter[str], found: set[str] | None
) -> str:
    parts: list[str] = []
    position = 0
    for start, end in spans:
        parts += [text[position:start], _apply_rule(secret_rule, text[start:end], counts, found)]
        position = end
    parts.append(text[position:])
    return "".join(parts)


def could_mask(text: str) -> bool:
    """False only when `mask_text` would return `text` unchanged, finding nothing (remembered secrets aside)."""
    return "PRIVATE KEY" in text or SCREEN.may_match(text, text.lower())


def mask_text(
    text: str, counts: Counter[str] | None = None, found: set[str] | None = None, *, private_keys: bool = True
) -> str:
    """`text` with every recognised secret masked; `counts` (if given) gains one per masked secret, by kind,
    and `found` (if given) the secret values themselves.

    No rule matches across a newline, and every match contains one of its rule's hints, so each rule runs
    only on the lines where a hint occurs (found with `str.find`, which is much faster than a regex scan);
    before any of that, `screen.SCREEN` proves in two scans that most texts contain no hint at all.
    `private_keys=False` leaves key blocks to the caller (`mask_private_keys`), e.g. when `text` joins
    unrelated pieces and a BEGIN in one must not reach into the next.
    """
    counts = Counter[str]() if counts is None else counts
    if private_keys:
        text = mask_private_keys(text, counts, found)
    folded: str | None = text.lower()
    hinted = SCREEN.hinted(text, folded)
    if hinted is not None and not hinted:
        return text  # no hint of any rule occurs: every rule would leave the text as it is
    return apply_rules(text, folded, counts, found, hinted)


def apply_rules(
    text: str, folded: str | None, counts: Counter[str], found: set[str] | None, hinted: frozenset[int] | None = None
) -> str:
    """Every rule in order, each where its hints occur in the text as the rules before it left it (no screen;
    `folded` is `text.lower()` when known). `hinted` (`Screen.hinted` of this text, when known) names the
    rules with a hint in it: the others are skipped while no rule has changed the text."""
    for index, secret_rule in enumerate(RULES):
        if hinted is not None and index not in hinted:
            continue
        if secret_rule.fold:
            folded = text.lower() if folded is None else folded
            haystack = folded if len(folded) == len(text) else None  # lower() may change lengths (rare scripts)
        else:
            haystack = text
        if haystack is None or not secret_rule.hints:
            before = text
            text = _apply_rule(secret_rule, text, counts, found)
        elif secret_rule.trigger is not None:
            before = text
            text = _apply_rule_at(secret_rule, text, _hint_positions(haystack, secret_rule), counts, found)
        else:
            spans = _lines_with_hints(haystack, secret_rule)
            if not spans:
                continue
            before = text
            text = _apply_rule_to_lines(secret_rule, text, spans, counts, found)
        if text is not before and text != before:
            folded = None
            hinted = None  # a mask may have removed or made a hint: every later rule looks for itself
    return text
