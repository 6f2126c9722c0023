"""A deny-listed file never appears in any result, not even as a name: by glob, by content, by count, by walk.

Every call below asks for as much as it can (hidden and ignored files included) and must succeed with a
result that holds no denied name and no denied content. The counts are exact, so a denied file that slipped
into a tally would show.
"""

from __future__ import annotations

import json
import unicodedata
from typing import Any

import pytest
from attack_tree import DENIED_MARKER, DENIED_NAMES, AttackTree, call_bounded, leaked_secrets

from repo_sandbox.workspace import Workspace

EVERYTHING = {"include_hidden": True, "include_ignored": True}
NFC_RESUME = unicodedata.normalize("NFC", "résumé.txt")
NFD_RESUME = unicodedata.normalize("NFD", "résumé.txt")


def c(tool: str, **args: Any) -> Any:
    return pytest.param(tool, {**EVERYTHING, **args}, id=f"{tool}-{json.dumps(args, ensure_ascii=True)[:70]}")


CALLS = [
    # -- by glob -----------------------------------------------------------------------------------
    c("search_files", pattern="**"),
    c("search_files", pattern="*"),
    c("search_files", pattern=".env"),
    c("search_files", pattern=".ENV"),
    c("search_files", pattern=".env*"),
    c("search_files", pattern="*env*"),
    c("search_files", pattern="{.env,id_rsa,server.pem}"),
    c("search_files", pattern="**/.git/**"),
    c("search_files", pattern=".git/*"),
    c("search_files", pattern=".git"),
    c("search_files", pattern="*.pem"),
    c("search_files", pattern="id_*"),
    c("search_files", pattern="config/*"),
    c("search_files", pattern="**/prod.yaml"),
    c("search_files", pattern="private/**"),
    c("search_files", pattern="*sum*"),
    c("search_files", pattern=NFD_RESUME),
    c("search_files", pattern=NFC_RESUME),
    c("search_files", pattern="[.]*"),
    c("search_files", pattern="**", sort="modified"),
    c("search_files", pattern="*.pem*"),
    c("search_files", pattern="* "),
    c("search_files", pattern="*."),
    c("search_files", pattern="x.*"),
    c("search_files", pattern="*.\uff2b\uff25\uff39"),
    c("search_files", pattern="**/config.json"),
    c("search_files", pattern=".git.*/**"),
    c("search_files", pattern="sub/**"),
    # -- by walking the parent directory -----------------------------------------------------------
    c("search_files", pattern="*", path="config"),
    c("search_files", pattern="*", path="link_cfg"),
    c("search_files", pattern="*", path="."),
    c("search_files", pattern="**", path="src/.."),
    c("search_files", pattern="*", path="sub/.docker"),
    c("search_files", pattern="**", path="sub"),
    # -- by content --------------------------------------------------------------------------------
    c("search_text", pattern=DENIED_MARKER),
    c("search_text", pattern=DENIED_MARKER, fixed_strings=True),
    c("search_text", pattern=DENIED_MARKER.lower(), case_sensitive=False),
    c("search_text", pattern="SECRET"),
    c("search_text", pattern="."),
    c("search_text", pattern=".", context=10),
    c("search_text", pattern=".", output_mode="files_with_matches"),
    c("search_text", pattern=".", output_mode="count"),
    c("search_text", pattern="(?s).+", multiline=True),
    c("search_text", pattern=".", glob=".env"),
    c("search_text", pattern=".", glob="**/.git/**"),
    c("search_text", pattern=".", glob="*.pem"),
    c("search_text", pattern=".", path="config"),
    c("search_text", pattern=".", path="link_cfg"),
    c("search_text", pattern="prod", path="config", output_mode="files_with_matches"),
    c("search_text", pattern=".", glob="*.pem."),
    c("search_text", pattern=".", glob="*[. ]"),
    c("search_text", pattern=".", glob="**/.docker/*"),
    c("search_text", pattern=".", path="sub", output_mode="count"),
    c("search_text", pattern="(?i)secret", glob="x.*"),
    # -- by count ----------------------------------------------------------------------------------
    c("count_lines"),
    c("count_lines", path="."),
    c("count_lines", pattern=".env"),
    c("count_lines", pattern="*.pem"),
    c("count_lines", pattern="*.yaml", path="config"),
    c("count_lines", path="link_cfg"),
    c("count_lines", path="sub"),
    c("count_lines", pattern="**/*.json"),
    c("count_lines", pattern="*."),
]


def assert_no_denied_name_or_content(payload: dict[str, Any]) -> None:
    text = json.dumps(payload, ensure_ascii=False)
    assert leaked_secrets(text) == [], text
    names: list[str] = []
    for key in ("files", "matches", "counts", "largest"):
        items = payload.get(key, [])
        for item in items if isinstance(items, list) else []:
            names.append(item if isinstance(item, str) else item["path"])
    for name in names:
        key = unicodedata.normalize("NFKC", name).casefold()
        for denied in DENIED_NAMES:
            assert unicodedata.normalize("NFKC", denied).casefold() not in key, f"{denied!r} shows in {name!r}"


@pytest.mark.parametrize(("tool", "arguments"), CALLS)
def test_denied_files_never_appear_in_listings_searches_or_counts(
    tool: str, arguments: dict[str, Any], backend_ws: Workspace
) -> None:
    outcome = call_bounded(backend_ws, tool, arguments)
    assert not outcome.is_error, outcome.payload
    assert_no_denied_name_or_content(outcome.payload)


def test_count_over_the_root_counts_exactly_the_allowed_files(backend_ws: Workspace) -> None:
    outcome = call_bounded(backend_ws, "count_lines", {"path": ".", **EVERYTHING})
    assert not outcome.is_error, outcome.payload
    largest = sorted(item["path"] for item in outcome.payload["largest"])
    # one line each; symlinks are not followed, the hard link out is skipped, denied files are not there
    assert largest == ["%2e%2e/decoy.txt", "README.md", "config/dev.yaml", "src/main.py", "src/pkg/deep.py"]
    assert (outcome.payload["files"], outcome.payload["total_lines"]) == (5, 5)


def test_listing_the_root_shows_allowed_files_and_no_link_or_special_file(
    backend_ws: Workspace, attack_tree: AttackTree
) -> None:
    outcome = call_bounded(backend_ws, "search_files", {"pattern": "**", **EVERYTHING, "limit": 1000})
    assert not outcome.is_error, outcome.payload
    assert sorted(outcome.payload["files"]) == [
        "%2e%2e/decoy.txt",
        "README.md",
        "config/dev.yaml",
        "hardlink_out.txt",  # a name only: reading it is refused (special_file) unless hard links are allowed
        "src/main.py",
        "src/pkg/deep.py",
    ]
    assert str(attack_tree.base) not in json.dumps(outcome.payload)


@pytest.mark.parametrize(
    ("arguments", "searched"),
    [
        # the five allowed text files of the count test above; hard links, links and special files are not searched
        pytest.param({"pattern": "."}, 5, id="content"),
        pytest.param({"pattern": ".", "output_mode": "count"}, 5, id="count"),
        pytest.param({"pattern": ".", "glob": "{.env,id_rsa,*.pem,README.md}"}, 1, id="glob-naming-denied-files"),
        pytest.param({"pattern": ".", "glob": "**/.e*"}, 0, id="glob-prefix-of-denied-names"),
        pytest.param({"pattern": ".", "glob": "[.]env"}, 0, id="glob-class-spelling-a-denied-name"),
    ],
)
def test_search_statistics_do_not_count_denied_files(
    arguments: dict[str, Any], searched: int, backend_ws: Workspace
) -> None:
    """files_searched and the skipped tallies would be an existence oracle if a denied file added to them."""
    outcome = call_bounded(backend_ws, "search_text", {**EVERYTHING, **arguments})
    assert not outcome.is_error, outcome.payload
    payload = outcome.payload
    assert (payload["files_searched"], payload["skipped_binary"], payload["skipped_too_large"]) == (searched, 0, 0)
