"""mask_text: its guarantees (lines kept, never longer, idempotent), labels, private-key blocks, code left alone."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from repo_sandbox.audit.keys import mask_key_line
from repo_sandbox.audit.known import KnownSecrets
from repo_sandbox.audit.masking import mask_text
from repo_sandbox.audit.patterns import mask_for

GHP = "ghp_" + "Ab1" * 12
KEY_LINE = "MIIEowIBAAKCAQEAx4Ub2k9PxFv8bO5dX0uIvaDy5mJ3DjqoTQyK8Nd3KmZ1wq7fLpRs"

FRAGMENTS = [
    GHP,
    "password=hunter2-x9",
    "Authorization: Bearer abcdefghijklmnop0123",
    "postgres://u:pw-12345@db/x",
    "-----BEGIN RSA PRIVATE KEY-----",
    "-----END RSA PRIVATE KEY-----",
    KEY_LINE,
    "AKIA" + "Q" * 16,
    "sk-" + "a1" * 24,
    "token_count = 5",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJl",
    "Cookie: sid=abcdef123456; x=1",
    '"',
    "=",
    ":",
    " ",
    "\n",
    "\t",
]


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=12)), max_size=30))
def test_masking_keeps_lines_never_grows_and_is_idempotent(parts: list[str]) -> None:
    text = "".join(parts)
    masked = mask_text(text)
    assert masked.count("\n") == text.count("\n")
    assert len(masked) <= len(text)
    assert mask_text(masked) == masked


# Labels say what was masked, when they fit ---------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"token {GHP}", "token [REDACTED:github_token]"),
        ('api_key = "sk_live_0123456789abcdefABCDEF"', 'api_key = "[REDACTED:stripe_key]"'),
        ("password=hunter2-x9", "password=[REDACTED]"),
        ("pwd: abcd", "pwd: ***"),
        ("https://user:pw@host/x", "https://***@host/x"),
        ("Authorization: Bearer abcdefghijklmnop0123", "Authorization: Bearer [REDACTED]"),
    ],
)
def test_mask_names_the_kind_when_the_label_fits(text: str, expected: str) -> None:
    assert mask_text(text) == expected


def test_mask_is_never_longer_than_the_secret() -> None:
    assert mask_for("github_token", "x" * 40) == "[REDACTED:github_token]"
    assert mask_for("github_token", "x" * 12) == "[REDACTED]"
    assert mask_for("password", "abcd") == "***"
    assert mask_for("password", "ab") == "**"


def test_counts_and_found_report_each_secret() -> None:
    counts: Counter[str] = Counter()
    found: set[str] = set()
    mask_text(f"a={GHP}\nb={GHP}\npassword=hunter2-x9", counts, found)
    assert counts == Counter({"github_token": 2, "password": 1})
    assert found == {GHP, "hunter2-x9"}


# Private keys --------------------------------------------------------------------------------------


def test_key_without_end_marker_is_masked_to_the_end_of_the_text() -> None:
    text = f"-----BEGIN PRIVATE KEY-----\n{KEY_LINE}\n{KEY_LINE[:30]}"
    assert mask_text(text) == "-----BEGIN PRIVATE KEY-----\n[REDACTED:private_key]\n[REDACTED:private_key]"


def test_key_lines_keep_their_indentation() -> None:
    text = f"key: |\n  -----BEGIN EC PRIVATE KEY-----\n  {KEY_LINE}\n  -----END EC PRIVATE KEY-----\nnext: 1"
    masked = mask_text(text)
    assert masked.splitlines()[2] == "  [REDACTED:private_key]"
    assert masked.splitlines()[4] == "next: 1"


def test_key_line_cut_by_the_line_limit_is_masked_and_keeps_the_marker() -> None:
    line = KEY_LINE + "... [line cut: 5000 bytes in all]"
    assert mask_key_line(line, min_chars=1) == "[REDACTED:private_key]... [line cut: 5000 bytes in all]"


def test_code_between_distant_markers_is_not_masked() -> None:
    text = (
        'BEGIN = "-----BEGIN RSA PRIVATE KEY-----"\n'
        "def parse(blob: bytes) -> Key:\n"
        "    return load_der_private_key(blob, password=None)\n"
        'END = "-----END RSA PRIVATE KEY-----"\n'
    )
    assert mask_text(text) == text


# Code is not a secret (more look-alikes in test_secret_table) -------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "password = getpass.getpass()",
        "token = None",
        "secret: bool = False",
        "password=password",
        "token = github_token",
        "PASSWORD_MIN_LENGTH = 8",
        "if token == expected_token:",
        "authorization = request.headers.get('Authorization')",
        "cookie: string;",
        "credentials = service_account.Credentials.from_service_account_file(path)",
        "api_key = settings.OPENAI_API_KEY",
        "x = {'password': '{{ vault_password }}'}",
        "sk-learn",
        "ask-for-help-0123456789-abcdefghij",
        "AKIA-style ids look like AKIA followed by 16 characters",
        "bearer = token_type == 'bearer'",
    ],
)
def test_code_and_prose_are_left_alone(text: str) -> None:
    assert mask_text(text) == text


def test_known_secrets_mask_bare_occurrences_longest_first() -> None:
    known = KnownSecrets()
    known.add(["abcd", "s3cr3t-value-0123456789", "s3cr3t-value-0123456789-and-more"])  # "abcd" is too short
    counts: Counter[str] = Counter()
    assert known.mask("x s3cr3t-value-0123456789-and-more y abcd", counts) == "x [REDACTED:known_secret] y abcd"
    assert counts == Counter({"known_secret": 1})
    assert len(known) == 2
