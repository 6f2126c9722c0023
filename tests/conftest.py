"""Shared fixtures: a small repository tree with the cases every tool must handle, and settings factories."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from repo_sandbox.config.loader import load_settings
from repo_sandbox.config.model import Settings
from repo_sandbox.workspace import Workspace
from tree_files import write

pytest_plugins = ["rg_spy"]  # the `started_rg` fixture

_TEST_CACHE = "RSMCP_TEST_CACHE"
_made_cache: list[str] = []
_user_cache: list[tuple[Path, set[str]]] = []
"""The user's facts directory and its stores when the run began (only in the process that made the test cache)."""


def _user_facts_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "repo-sandbox" / "facts"


def _stores(directory: Path) -> set[str]:
    return {entry.name for entry in directory.iterdir()} if directory.is_dir() else set()


def pytest_configure(config: pytest.Config) -> None:
    """Servers started by the tests keep their file facts (`[workspace] facts_cache`) in a directory of this
    test run, never in the user's cache; subprocess servers and xdist workers inherit it."""
    if _TEST_CACHE not in os.environ:
        _user_cache.append((_user_facts_dir(), _stores(_user_facts_dir())))
        cache = tempfile.mkdtemp(prefix="repo-sandbox-test-cache-")
        _made_cache.append(cache)
        os.environ[_TEST_CACHE] = os.environ["XDG_CACHE_HOME"] = cache


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """A server that a test started with the user's cache (a client passing on only a default environment)
    fails the run: a store for a repository under the temporary directory appeared there."""
    if not _user_cache:
        return
    user_dir, before = _user_cache[0]
    marker = os.fsencode(tempfile.gettempdir().rstrip("/") + "/")
    leaked = [name for name in _stores(user_dir) - before if marker in (user_dir / name).read_bytes()[:8192]]
    if leaked:
        print(f"\ntests wrote file facts of their temporary repositories to the user's cache {user_dir}: {leaked}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_unconfigure(config: pytest.Config) -> None:
    for cache in _made_cache:
        shutil.rmtree(cache, ignore_errors=True)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository root with source files, ignore rules, hidden and denied files, next to an outside secret."""
    root = tmp_path / "repo"
    write(root / "README.md", "# Demo\n\nTODO: write docs\n")
    write(root / "src" / "main.py", "import os\n\n\ndef main():\n    print('hello')  # TODO\n")
    write(root / "src" / "util.py", "def helper(x):\n    return x * 2\n")
    write(root / "src" / "pkg" / "deep.py", "VALUE = 42\n")
    write(root / ".gitignore", "build/\n*.log\n")
    write(root / "build" / "out.py", "print('built')\n")
    write(root / "debug.log", "log line TODO\n")
    write(root / ".hidden" / "secret_notes.txt", "hidden TODO\n")
    write(root / ".env", "API_KEY=sk-test-123\n")
    write(root / "id_rsa", "-----BEGIN OPENSSH PRIVATE KEY-----\n")
    write(root / ".git" / "config", "[core]\n")
    write(tmp_path / "outside" / "secret.txt", "TOP SECRET\n")
    write(tmp_path / "repo-evil" / "secret.txt", "SIBLING SECRET\n")
    return root


SettingsFactory = Callable[..., Settings]


@pytest.fixture
def make_settings() -> SettingsFactory:
    def factory(root: Path | str, **sections: dict[str, Any]) -> Settings:
        overrides = {(section, key): value for section, values in sections.items() for key, value in values.items()}
        overrides[("workspace", "root")] = str(root)
        return load_settings(None, env={}, overrides=overrides)

    return factory


WorkspaceFactory = Callable[..., Workspace]


@pytest.fixture
def make_workspace(make_settings: SettingsFactory) -> Iterator[WorkspaceFactory]:
    """Workspaces over any root (settings sections as keyword dicts), all closed after the test."""
    made: list[Workspace] = []

    def factory(root: Path | str, **sections: dict[str, Any]) -> Workspace:
        made.append(Workspace(make_settings(root, **sections)))
        return made[-1]

    yield factory
    for ws in made:
        ws.close()


@pytest.fixture
def make_ws(tmp_path: Path, make_workspace: WorkspaceFactory) -> WorkspaceFactory:
    """Workspaces over `root` (default: tmp_path/repo) with `[workspace]` keys as keyword arguments."""

    def factory(root: Path | None = None, **workspace_keys: Any) -> Workspace:
        return make_workspace(root or tmp_path / "repo", workspace=workspace_keys)

    return factory


@pytest.fixture
def workspace(repo: Path, make_workspace: WorkspaceFactory) -> Workspace:
    return make_workspace(repo)


def _described(fds: set[str]) -> list[str]:
    described: list[str] = []
    for fd in sorted(fds, key=int):
        try:
            described.append(f"{fd} -> {os.readlink(f'/proc/self/fd/{fd}')}")
        except OSError:
            described.append(fd)
    return described


@pytest.fixture(autouse=True)
def _no_fd_leaks() -> Iterator[None]:
    """Every test must close what it opens (the jail and walker manage raw fds)."""
    before = set(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else set()
    yield
    if before:
        after = set(os.listdir("/proc/self/fd"))
        leaked = {fd for fd in after - before if os.path.exists(f"/proc/self/fd/{fd}")}
        assert not leaked, f"leaked file descriptors: {_described(leaked)}"
