"""A file's lines are never shown under another file's name: names rg's line-by-line output could split.

rg prints one line per match, `path NUL line:text`. A name holding a line break splits that line in two,
and the second part reads as a match in a file named after the break. If that file exists, is a text file
and the tree is quiet, the census and the voucher vouch for it (its identity is the census's), so the lines
of the split file would be shown as its own. Each row below names a hostile file so that its second part
is an ordinary file of the tree; the hostile file holds what no result may show: the lines of a file outside
the root (through a hard link), or of a deny-listed file rg was not told about. Every search runs three
times (the first reads rg's files again; the next ones trust them), in every output mode, with few hits
(rg's output collected and sorted) and with many (rg's sorted stream), and must equal the Python engine's.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from attack_tree import call_bounded

from repo_sandbox.config.loader import load_settings
from repo_sandbox.engine import select
from repo_sandbox.workspace import Workspace

SECRET = "LEAKED-7c1e"
NOTICE = 'x: WARNING: stopped searching binary file after match (found "\\0" byte around offset 5)'
"""What rg prints after the matches of a file in which it meets a NUL byte, for a file named `./x`."""
NON_SIMPLE_DENY = ["*.sec[0-9]"]
"""An operator rule rg could read otherwise than the policy walker: rg is then told no deny rule at all."""


def _hard_link_out(root: Path, name: str) -> None:
    outside = root.parent / "outside.txt"
    if not outside.exists():
        outside.write_text(f"TOKEN {SECRET} outside\n")
    os.link(outside, root / name)


def _denied(root: Path, name: str) -> None:
    (root / name).write_text(f"TOKEN {SECRET} denied\n")


def _in_directory(root: Path, name: str) -> None:
    directory, _, base = name.rpartition("/")
    (root / directory).mkdir(parents=True, exist_ok=True)
    os.link(root.parent / "outside.txt", root / directory / base)


ROWS: list[tuple[str, Callable[[Path, str], None], str, list[str]]] = [
    ("hard link out, x<LF>b.txt", _hard_link_out, "x\nb.txt", []),
    ("hard link out, <LF>./b.txt", _in_directory, "x\n./b.txt", []),
    ("hard link out, separator line", _hard_link_out, "x\n--\nb.txt", []),
    ("hard link out, notice line", _hard_link_out, f"{NOTICE}\nb.txt", []),
    ("hard link out, notice then ./", _in_directory, f"{NOTICE}\n./b.txt", []),
    ("hard link out, two breaks", _hard_link_out, "a\nb\nx", []),
    ("denied name, rg told no deny rule", _denied, "id_rsa\nb.txt", NON_SIMPLE_DENY),
    ("denied dot name, rg told no deny rule", _denied, ".env\nb.txt", NON_SIMPLE_DENY),
    ("directory with a break, hard link out", _in_directory, "d\nsub/c.txt", []),
]


def _tree(root: Path, make: Callable[[Path, str], None], name: str, *, many: bool) -> None:
    (root / "sub").mkdir(parents=True)
    (root / "b.txt").write_text("TOKEN plain b\n")
    (root / "./sub/c.txt").write_text("TOKEN plain c\n")
    (root / "x").write_text("TOKEN plain x\n")
    if many:  # past rg's collected run: the search goes on with rg's sorted stream
        (root / "many.txt").write_text("TOKEN many\n" * 2100)
    (root.parent / "outside.txt").write_text(f"TOKEN {SECRET} outside\n")
    make(root, name)


def _searches(ws: Workspace, arguments: dict[str, Any]) -> list[str]:
    """Every page of the search, three times over, as the serialised results the client would get."""
    pages: list[str] = []
    for _ in range(3):
        offset: int | None = 0
        while offset is not None:
            outcome = call_bounded(ws, "search_text", {**arguments, "offset": offset})
            assert not outcome.is_error, outcome.payload
            pages.append(json.dumps(outcome.payload, sort_keys=True))
            offset = outcome.payload.get("next_offset")
    return pages


@pytest.mark.parametrize("many", [False, True], ids=["collected", "streamed"])
@pytest.mark.parametrize(("make", "name", "deny"), [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
def test_no_line_of_a_file_is_shown_under_another_files_name(
    tmp_path: Path, make: Callable[[Path, str], None], name: str, deny: list[str], many: bool
) -> None:
    root = tmp_path / "repo"
    _tree(root, make, name, many=many)
    results: dict[str, list[str]] = {}
    for engine in ("ripgrep", "python"):
        overrides: dict[tuple[str, str], Any] = {
            ("workspace", "root"): str(root),
            ("workspace", "extra_deny"): deny,
            ("search", "engine"): engine,
        }
        ws = Workspace(load_settings(None, env={}, overrides=overrides))
        try:
            assert select.report(ws)["engine"] == engine
            pages: list[str] = []
            for mode in ("content", "count", "files_with_matches"):
                arguments = {"pattern": "TOKEN", "output_mode": mode, "include_hidden": True, "limit": 1000}
                pages += _searches(ws, arguments)
            listing = call_bounded(ws, "search_files", {"pattern": "**", "include_hidden": True}).payload
            pages.append(json.dumps(listing))
            results[engine] = pages
        finally:
            ws.close()
        assert not [page for page in results[engine] if SECRET in page], engine
    assert results["ripgrep"] == results["python"]
    first = json.loads(results["ripgrep"][0])
    assert {"path": "b.txt", "line": 1, "text": "TOKEN plain b", "before": [], "after": []} in first["matches"]
    listed = json.loads(results["ripgrep"][-1])["files"]
    assert "b.txt" in listed and not [path for path in listed if "\n" in path]  # such names are never listed
