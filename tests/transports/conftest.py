"""Fixtures for the transport tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from harness import Subprocess, running_subprocess


@pytest.fixture(scope="module")
def served_repo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Subprocess]:
    """One real server process per test module, over a small repository."""
    base = tmp_path_factory.mktemp("served")
    root = base / "repo"
    (root / "src").mkdir(parents=True)
    (root / "README.md").write_text("# Demo\n\nTODO: write docs\n")
    (root / "src" / "main.py").write_text("def main():\n    print('hello')  # TODO\n")
    (root / ".env").write_text("API_KEY=sk-test-123\n")
    with running_subprocess(root, base / "server.log") as server:
        yield server
