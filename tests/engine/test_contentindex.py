"""The content index: signatures never hide a file that holds the literal, and a search gives the same
results with the index as without it, whatever changed since the files were indexed."""

from __future__ import annotations

import os
import random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_semantics import CASES, _tree

from repo_sandbox.config.loader import load_settings
from repo_sandbox.engine import select
from repo_sandbox.engine.grams import GRAM_BYTES, Probe, Signature
from repo_sandbox.engine.indexer import signature_of
from repo_sandbox.tools.search_text import SearchTextArgs, SearchTextContentResult, search_text
from repo_sandbox.workspace import Workspace

ENGINES = ("ripgrep", "python")


def _workspace(root: Path, engine: str, **search: Any) -> Workspace:
    overrides: dict[tuple[str, str], Any] = {("workspace", "root"): str(root), ("search", "engine"): engine}
    overrides.update({("search", key): value for key, value in search.items()})
    ws = Workspace(load_settings(None, env={}, overrides=overrides))
    ws.content.racy_ns = 0  # files written by the test a moment ago may be indexed at once
    return ws


def _settled(ws: Workspace) -> None:
    """Wait until the builder has indexed what searches offered (its child and pipes are gone)."""
    deadline = time.monotonic() + 30
    while not ws.content.idle():
        assert time.monotonic() < deadline, "the index was not built within 30 s"
        time.sleep(0.02)


def _indexed(ws: Workspace) -> Workspace:
    """`ws` after a search has offered its files and the builder has indexed them."""
    search_text(ws, SearchTextArgs(pattern="warm up the index"))
    _settled(ws)
    assert ws.content.active
    return ws


# -- signatures -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(20))
def test_a_signature_admits_every_literal_the_file_holds(seed: int) -> None:
    rng = random.Random(seed)
    alphabet = b"abcdefgh \n_\xc3\xa9\x00\xff"
    data = bytes(rng.choice(alphabet) for _ in range(rng.choice([4, 50, 5000, 150_000])))
    signature = Signature.of(data)
    for _ in range(200):
        start = rng.randrange(len(data) - GRAM_BYTES + 1)
        literal = data[start : start + rng.randint(GRAM_BYTES, 12)]
        probe = Probe.for_literal(literal)
        assert probe is not None and probe.admits(signature), literal
    assert Signature.from_bytes(signature.modulus, signature.to_bytes()) == signature


def test_a_signature_rules_out_most_literals_the_file_lacks() -> None:
    signature = Signature.of(b"".join(f"line {i} of plain text\n".encode() for i in range(2000)))
    absent = [f"zq{i:04d}xw".encode() for i in range(500)]
    admitted = sum(probe.admits(signature) for literal in absent if (probe := Probe.for_literal(literal)))
    assert admitted < 50


@pytest.mark.parametrize("literal", [None, b"", b"abc", "é!".encode()])
def test_a_literal_shorter_than_a_window_gives_no_probe(literal: bytes | None) -> None:
    assert Probe.for_literal(literal) is None


def test_the_indexer_signs_only_regular_text_files_beneath_the_root_without_links(tmp_path: Path) -> None:
    (tmp_path / "text.txt").write_text("needle here\n")
    (tmp_path / "binary.dat").write_bytes(b"needle\x00\x01")
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "inner.txt").write_text("needle\n")
    (tmp_path / "link.txt").symlink_to("text.txt")
    (tmp_path / "dirlink").symlink_to("dir")
    root_fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:

        def signed(rel: str, openat2: bool) -> bool:
            return signature_of(root_fd, rel, openat2=openat2, max_bytes=1 << 20, racy_ns=0)[1] is not None

        for openat2 in (True, False):
            assert signed("text.txt", openat2) and signed("dir/inner.txt", openat2)
            for refused in ("binary.dat", "link.txt", "dirlink/inner.txt", "dir", "../x", "missing.txt"):
                assert not signed(refused, openat2), (refused, openat2)
        assert not signature_of(root_fd, "text.txt", openat2=False, max_bytes=5, racy_ns=0)[1]
        assert not signature_of(root_fd, "text.txt", openat2=False, max_bytes=1 << 20, racy_ns=10**18)[1]
    finally:
        os.close(root_fd)


# -- searches with an index --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _tree(tmp_path_factory.mktemp("indexed") / "repo")


@pytest.fixture(scope="module", params=ENGINES)
def indexed(request: pytest.FixtureRequest, tree: Path) -> Iterator[Workspace]:
    ws = _indexed(_workspace(tree, request.param, content_index_min_files=0))
    yield ws
    ws.close()


@pytest.fixture(scope="module")
def unindexed(tree: Path) -> Iterator[Workspace]:
    ws = _workspace(tree, "python", content_index=False)
    yield ws
    ws.close()


@pytest.mark.parametrize(("name", "arguments", "golden"), CASES, ids=[c[0] for c in CASES])
def test_the_shared_table_gives_the_same_results_with_an_index(
    indexed: Workspace, unindexed: Workspace, name: str, arguments: dict[str, Any], golden: Any
) -> None:
    args = SearchTextArgs.model_validate({"limit": 1000, **arguments})
    result = search_text(indexed, args)
    _settled(indexed)  # the search may have offered files no earlier one read (hidden, ignored ones)
    assert result == search_text(unindexed, args), name


def test_the_index_spares_files_and_the_status_says_so(indexed: Workspace) -> None:
    before = indexed.content.files_spared
    result = search_text(indexed, SearchTextArgs(pattern=r"flag\b"))
    assert isinstance(result, SearchTextContentResult)
    _settled(indexed)
    assert [(m.path, m.line) for m in result.matches] == [("meta.txt", 5)]
    assert indexed.content.files_spared > before
    report = select.report(indexed)["content_index"]
    assert report["files"] >= 20 and report["builds"] >= 1 and report["files_spared"] > before


def _changing_tree(root: Path) -> Path:
    for i in range(30):
        (root / f"f{i:02d}.txt").write_text(f"plain file {i}\n")
    (root / "sub").mkdir()
    (root / "sub" / "kept.txt").write_text("MARKER kept\n")
    return root


def _append(path: Path, text: str) -> None:
    with path.open("a") as file:
        file.write(text)


CHANGES = [
    ("appended", lambda root: _append(root / "f03.txt", "MARKER appended\n")),
    ("rewritten same size", lambda root: (root / "f04.txt").write_text("MARKER file4\n")),
    ("created", lambda root: (root / "sub" / "new.txt").write_text("MARKER new\n")),
    ("renamed over", lambda root: (root / "sub" / "kept.txt").replace(root / "f05.txt")),
    ("deleted", lambda root: (root / "sub" / "kept.txt").unlink()),
]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("change", "apply"), CHANGES, ids=[c[0] for c in CHANGES])
def test_a_change_after_indexing_is_seen_as_the_tree_is_now(
    tmp_path: Path, engine: str, change: str, apply: Any
) -> None:
    root = _changing_tree(tmp_path)
    ws = _indexed(_workspace(root, engine, content_index_min_files=0))
    reference = _workspace(root, "python", content_index=False)
    try:
        apply(root)
        for arguments in ({"pattern": "MARKER"}, {"pattern": "MARKER", "path": "sub"}, {"pattern": r"MARKER \w+"}):
            args = SearchTextArgs.model_validate(arguments)
            result = search_text(ws, args)
            _settled(ws)
            assert result == search_text(reference, args), (change, arguments)
    finally:
        ws.close()
        reference.close()


def test_a_tree_smaller_than_the_threshold_is_never_indexed(tmp_path: Path) -> None:
    ws = _workspace(_changing_tree(tmp_path), "ripgrep")
    try:
        search_text(ws, SearchTextArgs(pattern="MARKER"))
        assert ws.content.idle() and ws.content.report()["builds"] == 0 and not ws.content.active
    finally:
        ws.close()


def test_a_full_index_takes_no_more_files_and_never_builds_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Refused work is not done again: once the filters reach their bound, searches offer nothing more."""
    from repo_sandbox.engine import contentindex

    root = _changing_tree(tmp_path)
    monkeypatch.setattr(contentindex, "MAX_FILTER_BYTES", 200)  # room for a few of the 31 files' filters
    ws = _workspace(root, "ripgrep", content_index_min_files=0)
    reference = _workspace(root, "python", content_index=False)
    try:
        search_text(ws, SearchTextArgs(pattern="warm up the index"))
        _settled(ws)
        assert 0 < ws.content.files < 31
        for _ in range(3):
            args = SearchTextArgs(pattern="MARKER")
            assert search_text(ws, args) == search_text(reference, args)
            _settled(ws)
        report = ws.content.report()
        assert report["builds"] == 1 and report["pending"] == 0 and report.get("full") is True, report
    finally:
        ws.close()
        reference.close()
