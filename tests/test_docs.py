"""The README documents every stable error code, and nothing else in its code table."""

from __future__ import annotations

import re
from pathlib import Path

from repo_sandbox.errors import ALL_ERRORS

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_error_table_lists_exactly_the_error_codes_with_their_categories() -> None:
    text = README.read_text(encoding="utf-8")
    table = text.split("<!-- error-codes:begin -->")[1].split("<!-- error-codes:end -->")[0]
    rows = dict(re.findall(r"^\| `([a-z_]+)` \| ([a-z_]+) \|", table, flags=re.MULTILINE))
    assert rows == {error.code: str(error.category) for error in ALL_ERRORS}


def test_error_codes_are_unique() -> None:
    codes = [error.code for error in ALL_ERRORS]
    assert len(codes) == len(set(codes))
