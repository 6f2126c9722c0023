"""read_file's masking takes a short way when nothing can match; it masks exactly what the long way masks:
the `cat -n` prefixes taken off, key blocks found in the file, every line masked, the prefixes put back."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from repo_sandbox.audit.known import KnownSecrets
from repo_sandbox.audit.output import TextMasker, _may_show_key_material, mask_read_file, private_key_spans
from repo_sandbox.runtime.assembly import build_pipeline
from repo_sandbox.tools.registry import TOOLS
from repo_sandbox.workspace import Workspace

KEY_LIKE = "    'ArgumentDefaultsHelpFormatter',"
"""A line of code that looks like key material (a long base64-like word): such pages take the long way."""
GHP = "ghp_" + "Ab3" * 12
KEY_BODY = ["MIIEpAIBAAKCAQEA" + "k" * 48, "Zm9v" * 16, "YmFy" * 10 + "=="]

PAGES: dict[str, list[str]] = {
    "key_like_only": ["import os", KEY_LIKE, "x = 1"],
    "key_like_with_token": ["import os", KEY_LIKE, f'TOKEN = "{GHP}"'],
    "key_like_password_next_line": ["MY_API", "KEY=abcd1234xyz", KEY_LIKE],
    "key_like_url_credentials": [KEY_LIKE, "url = 'https://bob:hunter2hunter2@example.com'"],
    "key_block": ["PEM = '''-----BEGIN RSA PRIVATE KEY-----", *KEY_BODY, "-----END RSA PRIVATE KEY-----'''"],
    "plain": ["def f():", "    return 1"],
}


@pytest.fixture
def ws(tmp_path: Path, make_settings: Any) -> Iterator[Workspace]:
    root = tmp_path / "repo"
    root.mkdir()
    for name, lines in PAGES.items():
        (root / f"{name}.py").write_text("\n".join(lines) + "\n", encoding="utf-8")
    workspace = Workspace(make_settings(root))
    yield workspace
    workspace.close()


def the_long_way(ws: Workspace, payload: dict[str, Any], numbered: bool, mask: TextMasker) -> str:
    """How every page was masked before the short way existed (prefixes off, key spans, mask, prefixes on)."""
    prefixes: list[str] = []
    bodies: list[str] = []
    for line in payload["content"].split("\n"):
        match = re.fullmatch(r"( *\d+\t)?(.*)", line, re.DOTALL) if numbered else None
        prefix = (match.group(1) or "") if match else ""
        prefixes.append(prefix)
        bodies.append(line[len(prefix) :])
    spans = private_key_spans(ws, payload["path"])
    first = payload["start_line"]
    for start, end, terminated in spans:
        lo, hi = max(start, first), min(end, first + len(bodies) - 1)
        if lo <= hi:
            window = bodies[lo - first : hi - first + 1]
            masked = mask.key_lines(window, terminated=terminated)
            if masked != window:
                mask.counts["private_key"] += 1
                bodies[lo - first : hi - first + 1] = masked
    bodies = mask("\n".join(bodies)).split("\n")
    return "\n".join(prefix + body for prefix, body in zip(prefixes, bodies, strict=True))


@pytest.mark.parametrize("name", sorted(PAGES))
@pytest.mark.parametrize("numbered", [True, False])
@pytest.mark.parametrize("start", [1, 2])
def test_read_file_pages_are_masked_as_the_long_way_masks_them(
    ws: Workspace, name: str, numbered: bool, start: int
) -> None:
    lines = PAGES[name][start - 1 :]
    content = "".join(f"{n:>6}\t{line}\n" if numbered else f"{line}\n" for n, line in enumerate(lines, start))
    payload = {"path": f"{name}.py", "content": content, "start_line": start}
    short, long = TextMasker(KnownSecrets()), TextMasker(KnownSecrets())
    expected = the_long_way(ws, dict(payload), numbered, long)
    mask_read_file(ws, payload, {"line_numbers": numbered}, short)
    assert payload["content"] == expected
    assert (short.counts, short.found) == (long.counts, long.found)


def test_the_short_way_still_masks_remembered_secrets(ws: Workspace) -> None:
    known = KnownSecrets()
    known.add(["remembered-secret-value"])
    payload = {"path": "key_like_only.py", "content": f"     1\t{KEY_LIKE} remembered-secret-value\n", "start_line": 1}
    mask = TextMasker(known)
    mask_read_file(ws, payload, {}, mask)
    assert "remembered-secret-value" not in payload["content"]
    assert mask.counts == Counter({"known_secret": 1})


OLD_KEY_LIKE = re.compile(r"""^(?: *\d+\t)?[ \t"'`]*[A-Za-z0-9+/]{16,}={0,2}(?:\\n|[ \t"'`,;+)])*$""", re.MULTILINE)
"""The key-like line test as one multi-line regex (slower: it tries every position, not only line starts)."""


@pytest.mark.parametrize(
    "text",
    [
        KEY_LIKE,
        f"x\n{KEY_LIKE}\ny",
        "     7\tZm9vZm9vZm9vZm9vZm9v==",
        "     7\tZm9vZm9vZm9v",
        "short\nlines\nonly",
        '  "QUJDREVGR0hJSktMTU5PUA==\\n" +',
        "",
        "\n\n",
        "aaaaaaaaaaaaaaaaaaaa\n",
        "x = aaaaaaaaaaaaaaaaaaaa",
        *(line for lines in PAGES.values() for line in lines),
    ],
)
def test_key_like_lines_are_found_as_the_multi_line_regex_finds_them(text: str) -> None:
    assert _may_show_key_material(text) == (OLD_KEY_LIKE.search(text) is not None)


def test_key_spans_are_found_in_small_and_mapped_files(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    small = private_key_spans(ws, "key_block.py")
    monkeypatch.setattr("repo_sandbox.audit.output.READ_WHOLE_BYTES", 0)  # every file through a memory map
    assert private_key_spans(ws, "key_block.py") == small == [(2, 4, True)]


@pytest.mark.anyio
@pytest.mark.parametrize("offset", [1, 2])
async def test_a_key_whose_begin_line_is_cut_from_the_page_is_masked(
    tmp_path: Path, make_settings: Any, offset: int
) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    begin = "x = 1  # " + "padding " * 20 + "-----BEGIN RSA PRIVATE KEY-----"  # the marker is past the cut
    (root / "conf.py").write_text("\n".join([begin, *KEY_BODY, "-----END RSA PRIVATE KEY-----", ""]))
    ws = Workspace(make_settings(root, limits={"max_line_chars": 80}))
    try:
        outcome = await build_pipeline(ws, TOOLS).call("read_file", {"path": "conf.py", "offset": offset, "limit": 3})
    finally:
        ws.close()
    content = outcome.payload["content"]
    assert "PRIVATE KEY" not in content and "[line cut:" in content or offset > 1
    assert not any(body in content for body in KEY_BODY)
    assert content.count("[REDACTED:private_key]") == 3 - (offset == 1)
