"""The masking screen: it only skips the rules when none of them could match, so masking with it finds and
masks exactly what running every rule finds and masks (the secret table, look-alikes, generated texts, and
pages of real source code)."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_secret_table import LOOK_ALIKES, SECRETS

from repo_sandbox.audit.masking import apply_rules, could_mask, mask_text
from repo_sandbox.audit.patterns import RULES, SecretRule
from repo_sandbox.audit.screen import MAX_HINTS_LOCATED, SCREEN, Screen

HINTS = sorted({hint for secret_rule in RULES for hint in secret_rule.hints})


def assert_same_masking(text: str) -> None:
    screened_counts, screened_found = Counter[str](), set[str]()
    counts, found = Counter[str](), set[str]()
    screened = mask_text(text, screened_counts, screened_found, private_keys=False)
    assert screened == apply_rules(text, None, counts, found)
    assert (screened_counts, screened_found) == (counts, found)
    if not could_mask(text):
        assert screened == text and not counts


def rules_hinted(text: str) -> frozenset[int]:
    """The indices of the rules with a hint in the text, as `masking` looks for each rule's hints."""
    folded = text.lower()
    hinted: set[int] = set()
    for index, secret_rule in enumerate(RULES):
        haystack = folded if secret_rule.fold else text
        if secret_rule.trigger is not None:
            found = secret_rule.trigger.search(haystack) is not None
        else:
            found = any(hint in haystack for hint in secret_rule.hints)
        if found:
            hinted.add(index)
    return frozenset(hinted)


def hints_in(text: str) -> list[str]:
    """Every hint that occurs, as `masking` looks for it (lower-cased text for the folding rules)."""
    folded = text.lower()
    present: list[str] = []
    for secret_rule in RULES:
        haystack = folded if secret_rule.fold else text
        if secret_rule.trigger is not None:
            present += [match.group(0) for match in secret_rule.trigger.finditer(haystack)]
        else:
            present += [hint for hint in secret_rule.hints if hint in haystack]
    return present


@pytest.mark.parametrize("line", [item.line for item in SECRETS] + [text for _, text in LOOK_ALIKES])
def test_the_secret_table_and_its_look_alikes_are_masked_as_by_every_rule(line: str) -> None:
    assert_same_masking(f"before\n{line}\nafter")
    assert_same_masking(line)


def test_each_hint_alone_is_let_through_the_screen() -> None:
    for hint in HINTS:
        for text in (hint, f"x {hint} y", hint.upper(), f"{hint}=secretvalue1", f"{hint}: 'abcdefgh'"):
            assert SCREEN.may_match(text, text.lower()) == bool(hints_in(text)), text
            assert SCREEN.hinted(text, text.lower()) == rules_hinted(text), text


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from([*HINTS, "=", ":", '"', " ", "\n", "\t", "x", "Q", "é", "İ", "_", "-"]), max_size=12))
def test_the_screen_passes_a_text_exactly_when_a_rule_hint_occurs(parts: list[str]) -> None:
    text = "".join(parts)
    folded = text.lower()
    if len(folded) == len(text):
        assert SCREEN.may_match(text, folded) == bool(hints_in(text)), text
        hinted = SCREEN.hinted(text, folded)
        assert hinted is None or hinted == rules_hinted(text), text
    else:
        assert SCREEN.may_match(text, folded)  # a lower-casing that changes lengths proves nothing
        assert SCREEN.hinted(text, folded) is None
    assert_same_masking(text)


def test_pages_of_real_source_code_are_masked_as_by_every_rule() -> None:
    stdlib = Path(sys.modules["json"].__file__ or "").parent.parent
    files = sorted(stdlib.glob("*.py"))[:40] + sorted(stdlib.glob("email/*.py"))[:10]
    screened_out = 0
    for path in files:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True)
        for start in range(0, len(lines), 200):
            page = "".join(f"{n:>6}\t{line}" for n, line in enumerate(lines[start : start + 200], start + 1))
            assert_same_masking(page)
            screened_out += not could_mask(page)
    assert screened_out > 20  # most pages of code need no rule at all


def test_a_rule_without_hints_cannot_be_screened() -> None:
    bare = SecretRule("anything", RULES[0].pattern)
    with pytest.raises(ValueError, match="no hints"):
        Screen([bare])


@pytest.mark.parametrize(
    "text",
    [
        "Lib/test/test_secrets.py\nLib/http/cookiejar.py\nLib/keyword.py\nLib/tokenize.py",
        "overlapping: ghp_ghp_ sk_live_sk_live_ xoxb-xoxp-",
        "password=hunter2hunter2 and token: abcdefgh12345678",
        "\n".join(f"src/key_{n}.py" for n in range(200)),  # more occurrences than are located one by one
        "",
    ],
)
def test_hinted_names_the_rules_a_text_can_need(text: str) -> None:
    hinted = SCREEN.hinted(text, text.lower())
    assert hinted is None or hinted == rules_hinted(text)
    assert_same_masking(text)


def test_too_many_hints_name_every_rule() -> None:
    text = "\n".join(f"token_{n} secret_{n}" for n in range(MAX_HINTS_LOCATED + 1))
    assert SCREEN.hinted(text, text.lower()) is None
    assert_same_masking(text)


def test_a_list_of_paths_is_masked_as_by_every_rule() -> None:
    stdlib = Path(sys.modules["json"].__file__ or "").parent
    paths = "\n".join(str(path.relative_to(stdlib.parent)) for path in sorted(stdlib.parent.rglob("*.py"))[:3000])
    assert could_mask(paths)
    assert_same_masking(paths + "\nconfig/AKIAIOSFODNN7EXAMPLE.txt\nsecret_key=wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY")
