"""Patterns that need long lines (`.{300,}`): the Python engine tries only lines that long, and stays within
3x the rg binary the server ships on the same tree (it took 50x: every position of every line was tried)."""

from __future__ import annotations

import random
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from repo_sandbox.config.loader import load_settings
from repo_sandbox.engine import ripgrep
from repo_sandbox.engine.pylines import long_lines
from repo_sandbox.tools.search_text import SearchTextArgs, SearchTextCountResult, search_text
from repo_sandbox.workspace import Workspace
from tree_files import write


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("width", [1, 5, 32, 100])
def test_long_lines_are_exactly_the_lines_that_long(seed: int, width: int) -> None:
    rng = random.Random(seed)
    lines = ["x" * rng.choice([0, 1, 4, 5, 6, 31, 32, 33, 99, 100, 101, 250]) for _ in range(rng.randint(0, 40))]
    text = "\n".join(lines) + rng.choice(["", "\n"])
    expected: list[tuple[int, int]] = []
    start = 0
    for line in text.split("\n"):
        if len(line) >= width:
            expected.append((start, start + len(line)))
        start += len(line) + 1
    assert list(long_lines(text, 0, len(text), width)) == expected
    assert list(long_lines(text.encode(), 0, len(text), width)) == expected


def _best(run: Callable[[], Any], times: int = 3) -> float:
    best = float("inf")
    for _ in range(times):
        started = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - started)
    return best


@pytest.mark.slow
def test_the_python_engine_on_a_length_pattern_is_within_three_times_rg(tmp_path: Path) -> None:
    found = ripgrep.locate()
    if found is None:
        pytest.fail("no rg found: the ripgrep wheel is a dependency of this project on Linux")
    root = tmp_path / "repo"
    rng = random.Random(7)
    for index in range(40):  # 40 files, 6 MB of code-like short lines, a few long ones
        lines = [" ".join(rng.choice(["def", "x", "return", "self.value", "(a, b)", "# note"]) for _ in range(8))
                 for _ in range(2500)]  # fmt: skip
        if index % 10 == 0:
            lines[rng.randrange(len(lines))] = "y" * 400
        write(root / f"src/f{index}.py", "\n".join(lines) + "\n")
    overrides: dict[tuple[str, str], Any] = {("workspace", "root"): str(root), ("search", "engine"): "python"}
    ws = Workspace(load_settings(None, env={}, overrides=overrides))
    try:
        args = SearchTextArgs(pattern=".{300,}", output_mode="count")
        result = search_text(ws, args)
        assert isinstance(result, SearchTextCountResult)
        assert {c.path: c.count for c in result.counts} == {f"src/f{i}.py": 1 for i in (0, 10, 20, 30)}
        python_s = _best(lambda: search_text(ws, args))
    finally:
        ws.close()
    argv = [found.path, "--no-config", "--no-require-git", "--count", "--regexp", ".{300,}", "."]
    rg_s = _best(lambda: subprocess.run(argv, cwd=root, capture_output=True, check=True))
    assert python_s <= max(3 * rg_s, 0.2), (python_s, rg_s)
