"""The confined launcher: one Landlock-restricted thread per workspace starts every rg, and only its
children are confined."""

from __future__ import annotations

import gc
import threading
from pathlib import Path
from typing import Any

import pytest

from repo_sandbox.config.loader import load_settings
from repo_sandbox.engine import confine, rgprocess, rgstate, ripgrep
from repo_sandbox.tools.search_text import SearchTextArgs, SearchTextContentResult, search_text
from repo_sandbox.workspace import Workspace

RG = ripgrep.locate()


@pytest.fixture
def rg() -> ripgrep.Ripgrep:
    if RG is None:
        pytest.fail("no rg found: the ripgrep wheel is a dependency of this project on Linux")
    if not confine.available():
        pytest.fail("Landlock is not available on this kernel: the ripgrep engine cannot be confined")
    return RG


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("TOP SECRET\n")
    root = tmp_path / "repo"
    root.mkdir()
    (root / "a.txt").write_text("SECRET inside\n")
    (root / "link").symlink_to(tmp_path / "outside")
    return root


def _ws(root: Path, engine: str = "ripgrep") -> Workspace:
    overrides: dict[tuple[str, str], Any] = {("workspace", "root"): str(root), ("search", "engine"): engine}
    return Workspace(load_settings(None, env={}, overrides=overrides))


def _run(launcher: confine.Launcher, ws: Workspace, argv: list[str]) -> tuple[bytes, int]:
    process = rgprocess.RgProcess(argv, ws.jail.root_fd, launcher, count_only=False)
    try:
        lines = [line for output in process.files() for _, _, line in output.lines]
        return b"".join(lines), process.finish()
    finally:
        process.close()


def test_children_of_the_launcher_read_the_root_and_nothing_outside_it(rg: ripgrep.Ripgrep, tree: Path) -> None:
    ws = _ws(tree)
    launcher = confine.launcher(ws.jail.root_fd, rg.path)
    assert launcher is not None
    try:
        inside, code = _run(launcher, ws, [rg.path, "--no-config", "--null", "-Hn", "SECRET", "--", "a.txt"])
        assert (inside, code) == (b"SECRET inside", 0)
        outside, code = _run(launcher, ws, [rg.path, "--no-config", "--follow", "-n", "SECRET", "--", "link"])
        assert (outside, code) == (b"", 2)  # permission denied, whatever path leads there
    finally:
        launcher.close()
        ws.close()


def test_the_rest_of_the_server_stays_unconfined(rg: ripgrep.Ripgrep, tree: Path) -> None:
    ws = _ws(tree)
    launcher = confine.launcher(ws.jail.root_fd, rg.path)
    assert launcher is not None
    try:
        seen: list[str] = []
        reader = threading.Thread(target=lambda: seen.append((tree.parent / "outside" / "secret.txt").read_text()))
        reader.start()
        reader.join(10)
        assert seen == ["TOP SECRET\n"]  # another thread, after the launcher confined itself
        assert (tree.parent / "outside" / "secret.txt").read_text() == "TOP SECRET\n"  # this thread
    finally:
        launcher.close()
        ws.close()


def test_a_program_outside_the_ruleset_cannot_even_be_started(rg: ripgrep.Ripgrep, tree: Path) -> None:
    ws = _ws(tree)
    launcher = confine.launcher(ws.jail.root_fd, rg.path)
    assert launcher is not None
    try:
        with pytest.raises(PermissionError):
            launcher.popen(["/bin/cat", "/etc/hostname"], cwd="/", env={})
    finally:
        launcher.close()
        ws.close()


def test_a_workspace_starts_one_launcher_and_closing_the_workspace_ends_it(rg: ripgrep.Ripgrep, tree: Path) -> None:
    ws = _ws(tree)
    try:
        for _ in range(3):
            result = search_text(ws, SearchTextArgs(pattern="SECRET"))
            assert isinstance(result, SearchTextContentResult)
            assert [m.path for m in result.matches] == ["a.txt"]
        launcher = rgstate.launcher_for(ws, rg)
        assert launcher is not None and launcher.confined
        names = [t.name for t in threading.enumerate()]
        assert names.count("repo-sandbox-rg-launcher") >= 1
    finally:
        ws.close()
    assert not launcher.confined  # its thread ended with the workspace
    with pytest.raises(OSError, match="not running"):
        launcher.popen([rg.path, "--version"], cwd="/", env={})


def test_without_a_confined_launcher_the_python_engine_answers(
    rg: ripgrep.Ripgrep, tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(confine, "_restrict_calling_thread", lambda ruleset, restrict: False)
    started: list[object] = []
    monkeypatch.setattr(rgprocess.RgProcess, "__init__", lambda *args, **kwargs: started.append(args))
    ws = _ws(tree)
    try:
        assert rgstate.launcher_for(ws, rg) is None
        result = search_text(ws, SearchTextArgs(pattern="SECRET"))
        assert isinstance(result, SearchTextContentResult)
        assert [(m.path, m.text) for m in result.matches] == [("a.txt", "SECRET inside")]
        assert started == []  # rg never ran
    finally:
        ws.close()


def test_no_garbage_collection_ever_runs_on_the_confined_thread(rg: ripgrep.Ripgrep, tree: Path) -> None:
    """A collection runs other code's finalizers on the thread that triggers it: never the launcher's."""
    ws = _ws(tree)
    thresholds = gc.get_threshold()
    collected_on: list[str] = []

    def record(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collected_on.append(threading.current_thread().name)

    gc.callbacks.append(record)
    gc.set_threshold(1, 1_000_000, 1_000_000)  # a young collection at nearly every allocation, on any thread
    try:
        launcher = confine.launcher(ws.jail.root_fd, rg.path)
        assert launcher is not None
        for _ in range(20):
            launcher.popen([rg.path, "--version"], cwd="/", env={}).communicate()
        launcher.close()
    finally:
        gc.set_threshold(*thresholds)
        gc.callbacks.remove(record)
        ws.close()
    assert collected_on  # collections did run meanwhile
    assert "repo-sandbox-rg-launcher" not in collected_on
