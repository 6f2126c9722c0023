"""`DenyList.denied_names` (one call per listing) decides each entry as `is_entry_denied` does (one per path)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from repo_sandbox.policy.deny import DEFAULT_DENY, DenyList

DENY = DenyList([*DEFAULT_DENY, "private/", "/top-only.txt", "build/**/out.bin"])
NAMES = [
    ".env", ".ENV", ".env.local", "server.pem", "server.pem.", "server.pem ", "SERVER.PEM", "ｓｅｒｖｅｒ.ｐｅｍ",
    ".git", ".git.", "id_rsa", "id_rsa.pub", "a.txt", "config.json", "credentials.json", "secrets.yaml",
    "private", "top-only.txt", "out.bin", "café.txt", "naïve.key", "Ｋｅｙ", "x.KEY", "...", "README",
]  # fmt: skip
DIRECTORIES = [".", "a", "a/.docker", ".docker", "build", "build/x/y", "ÉTÉ", "dir.", "b/sub "]


@pytest.mark.parametrize("directory", DIRECTORIES)
def test_every_name_of_a_listing_is_decided_as_the_single_path_check_decides(directory: str) -> None:
    denied = DENY.denied_names(directory, NAMES)
    prefix = "" if directory == "." else directory + "/"
    assert denied == {name for name in NAMES if DENY.is_entry_denied(prefix + name)}


@pytest.mark.parametrize("rules", [DEFAULT_DENY, ["*"], ["*", "!keep"]])
def test_an_empty_listing_denies_nothing(rules: list[str]) -> None:
    assert DenyList(rules).denied_names("a", []) == set()  # even under a rule that matches an empty name


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(directory=st.sampled_from(DIRECTORIES), names=st.lists(st.sampled_from(NAMES), unique=True, max_size=10))
def test_any_mix_of_ascii_and_other_names_is_decided_alike(directory: str, names: list[str]) -> None:
    prefix = "" if directory == "." else directory + "/"
    assert DENY.denied_names(directory, names) == {name for name in names if DENY.is_entry_denied(prefix + name)}
