"""A pathological glob cannot hang the server: every glob-taking tool answers within a bound.

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

import pytest

CHILD_TIMEOUT_S = 60.0
"""Generous for four calls plus start-up on a loaded CI machine; a backtracking glob takes hours."""

CHILD = """
import json, sys
import anyio
from repo_sandbox.config.loader import load_settings
from repo_sandbox.runtime.assembly import build_pipeline
from repo_sandbox.workspace import Workspace

root, glob = sys.argv[1], sys.argv[2]
ws = Workspace(load_settings(None, env={}, overrides={("workspace", "root"): root}))
try:
    pipeline = build_pipeline(ws)
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


@pytest.mark.parametrize("glob", PATHOLOGICAL_GLOBS)
def test_a_pathological_glob_is_answered_in_bounded_time(glob: str, tmp_path: Path) -> None:
    _tree(tmp_path)
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path), glob],
        capture_output=True,
        text=True,
        timeout=CHILD_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    payloads = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(payloads) == 4
    for payload in payloads:
        if "error" in payload:
            assert payload["error"]["code"] == "invalid_glob", payload  # too complex: a graded refusal
        else:
            matched = payload.get("total", payload.get("total_matches", payload.get("files")))
            assert matched == 0, payload  # no file of the tree matches any of these globs
