"""search_text while the content index builds: the builder thread adds signatures while searches list them.

A thread switch inside `list(dict.items())` happens only when a garbage collection in that loop runs a
finalizer that lets the GIL go; the soak met it 4 times in 8,796 calls. Here finalizers that yield the GIL
and a low collection threshold make it happen within a fraction of a second.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from repo_sandbox.config.loader import load_settings
from repo_sandbox.engine.grams import Probe
from repo_sandbox.tools.search_text import SearchTextArgs, search_text
from repo_sandbox.workspace import Workspace
from tree_files import write

FILES = 3000


class YieldsOnCollection:
    """Cyclic garbage whose finalizer gives the GIL to another thread."""

    def __init__(self) -> None:
        self.me = self

    def __del__(self) -> None:
        time.sleep(0)


@pytest.fixture
def collections_that_switch_threads() -> Iterator[None]:
    threshold = gc.get_threshold()
    gc.set_threshold(50)
    yield
    gc.set_threshold(*threshold)
    gc.collect()


def test_listing_signatures_while_the_builder_adds_them(tmp_path: Path, collections_that_switch_threads: Any) -> None:
    root = tmp_path / "repo"
    for n in range(FILES):
        write(root / f"d{n // 200}" / f"f{n}.txt", f"line {n} hello world\n" * 5)
    ws = Workspace(load_settings(None, env={}, overrides={("workspace", "root"): str(root)}))
    try:
        ws.content.racy_ns = 0
        ws.content.min_files = 1
        probe = Probe.for_literal(b"hello")
        assert probe is not None
        search_text(ws, SearchTextArgs(pattern="offers every file to the builder"))
        listings = overlapping = 0
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not ws.content.idle():
            for _ in range(20):
                YieldsOnCollection()
            before = ws.content.files
            assert ws.content.admitted(probe, "", FILES + 1) is not None
            listings += 1
            overlapping += ws.content.files != before
        assert listings > 0 and overlapping > 0  # the listings did meet the builder adding signatures
    finally:
        ws.close()
