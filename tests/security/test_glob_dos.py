"""A pathological glob cannot hang the server: every glob-taking tool answers within a bound.

The same holds for a hostile repository's ignore files, whose rules are globs too.

Globs were translated to Python `re`, which backtracks while holding the GIL: `*a*a*...*b` or
`{a,a}{a,a}...b` against a long name froze the whole process (no thread, no event loop ran again). Each row
runs the four glob-taking calls in a child process, so that a regression fails on the time bound instead of
freezing the test run itself.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

CHILD_TIMEOUT_S = 60.0
"""Generous for four calls plus start-up on a loaded CI machine; a backtracking glob takes hours."""

CHILD = """
import json, sys
import anyio
from repo_sandbox.config.loader import load_settings
from repo_sandbox.runtime.assembly import build_pipeline
from repo_sandbox.workspace import Workspace
from repo_sandbox.tools.registry import TOOLS

root, glob = sys.argv[1], sys.argv[2]
ws = Workspace(load_settings(None, env={}, overrides={("workspace", "root"): root}))
try:
    pipeline = build_pipeline(ws, TOOLS)
    calls = [
        ("search_files", {"pattern": glob}),
        ("search_files", {"pattern": glob, "sort": "modified"}),
        ("count_lines", {"pattern": glob}),
        ("search_text", {"pattern": "x", "glob": glob}),
    ]
    for tool, arguments in calls:
        outcome = anyio.run(pipeline.call, tool, arguments)
        print(json.dumps(outcome.payload))
finally:
    ws.close()
"""

PATHOLOGICAL_GLOBS = [
    # -- polynomial: many stars against a long name -------------------------------------------------
    pytest.param("*" * 200 + "x", id="200-stars"),
    pytest.param("*a" * 30 + "b", id="star-a-x30"),
    # -- exponential: alternations that all match the same text --------------------------------------
    pytest.param("{a,a}" * 30 + "b", id="alternation-x30"),
    pytest.param("{a,aa}" * 25 + "b", id="overlapping-alternation-x25"),
    # -- across directories ------------------------------------------------------------------------
    pytest.param("**/" * 100 + "x", id="globstar-x100"),
    pytest.param("**/d/" * 40 + "x", id="globstar-d-x40"),
]


def _tree(root: Path) -> None:
    (root / ("a" * 200)).write_text("x\n")
    deep = root.joinpath(*["d"] * 60)
    deep.mkdir(parents=True)
    (deep / "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa").write_text("x\n")


def _run_child(root: Path, glob: str) -> list[dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(root), glob],
        capture_output=True,
        text=True,
        timeout=CHILD_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    payloads = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(payloads) == 4
    return payloads


@pytest.mark.parametrize("glob", PATHOLOGICAL_GLOBS)
def test_a_pathological_glob_is_answered_in_bounded_time(glob: str, tmp_path: Path) -> None:
    _tree(tmp_path)
    for payload in _run_child(tmp_path, glob):
        if "error" in payload:
            assert payload["error"]["code"] == "invalid_glob", payload  # too complex: a graded refusal
        else:
            matched = payload.get("total", payload.get("total_matches", payload.get("files")))
            assert matched == 0, payload  # no file of the tree matches any of these globs


HOSTILE_IGNORE_RULES = [
    pytest.param("*a" * 25 + "b", id="star-a-x25"),
    pytest.param("*[a]" * 25 + "b", id="star-class-x25"),
    pytest.param("?*" * 40 + "b", id="any-star-x40"),
    pytest.param("**/d/" * 30 + "b", id="globstar-d-x30"),
    pytest.param("/d/**/d/**/d/**/d/**/d/**/d/**/d/**/d/**/d/**/b", id="anchored-globstars"),
]


@pytest.mark.parametrize("rule", HOSTILE_IGNORE_RULES)
def test_a_hostile_ignore_rule_in_the_repository_is_answered_in_bounded_time(rule: str, tmp_path: Path) -> None:
    _tree(tmp_path)
    (tmp_path / ".gitignore").write_text(rule + "\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / ".ignore").write_text(rule + "\n")
    for payload in _run_child(tmp_path, "*"):
        assert "error" not in payload, payload
        listed = payload.get("total", payload.get("files"))
        if listed is not None:  # no rule matches a file of the tree: both are listed and counted
            assert listed == 2, payload
