"""A public table of known-safe and known-unsafe command lines (OpenAI Codex's command-safety tests, see
`codex_commands`): every unsafe line is refused, and the safe lines run except those refused for a reason
named here. `test_shares` prints the two shares (pytest -s)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest

from codex_commands import SAFE_PROGRAM_ROWS, SAFE_ROWS, UNSAFE_ROWS
from exec_support import git, tree_snapshot
from repo_sandbox.calls import CallContext
from repo_sandbox.runtime.assembly import build_pipeline
from repo_sandbox.tools.registry import TOOLS
from repo_sandbox.workspace import Workspace
from tree_files import write

pytestmark = pytest.mark.anyio

SAFE_BUT_REFUSED: dict[str, str] = {
    "git -C . branch --show-current": "argument_not_allowed",  # git takes no global options here
    'grep -R "Cargo.toml" -n': "argument_not_allowed",  # -R follows symlinks out of the repository
    'grep -R "Cargo.toml" -n || true': "argument_not_allowed",
    "id": "command_not_allowed",  # host identity, not repository content
    "uname -a": "command_not_allowed",
    "whoami": "command_not_allowed",
}
"""Safe lines that stay refused, with the code; `rg` lines also when ripgrep is not installed."""
UNSAFE_BUT_HARMLESS = {"sed -n xp file.txt"}
"""Codex does not auto-approve it (not a `sed -n Np` line), but `x` and `p` only print: it runs, contained."""


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("codex") / "repo"
    write(root / "file.txt", "line one\nline two\nline three\n")
    write(root / "Cargo.toml", '[package]\nname = "x"\n')
    write(root / "src" / "lib.rs", "fn main() {}\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "-c", "user.email=t@example.com", "-c", "user.name=T", "commit", "-q", "-m", "first")
    git(root, "branch", "feature")
    return root


async def outcomes(root: Path, make_settings: Any, rows: tuple[str, ...]) -> dict[str, str]:
    """Each row's outcome: "ran" or the error code."""
    workspace = Workspace(make_settings(root))
    found: dict[str, str] = {}
    try:
        for row in rows:
            with anyio.fail_after(60):
                outcome = await build_pipeline(workspace, TOOLS).call(
                    "execute_bash", {"command": row}, CallContext(session_id=uuid.uuid4().hex[:12])
                )
            found[row] = (outcome.error_code or "error") if outcome.is_error else "ran"
    finally:
        workspace.close()
    return found


def _rg_missing(found: dict[str, str]) -> set[str]:
    return {row for row, code in found.items() if row.startswith("rg ") and code == "command_not_allowed"}


async def test_every_unsafe_line_is_refused_and_nothing_is_written(repo: Path, make_settings: Any) -> None:
    before = tree_snapshot(repo.parent)
    found = await outcomes(repo, make_settings, UNSAFE_ROWS)
    assert {row for row, code in found.items() if code == "ran"} == UNSAFE_BUT_HARMLESS
    assert tree_snapshot(repo.parent) == before


async def test_safe_lines_run_except_the_named_ones(repo: Path, make_settings: Any) -> None:
    found = await outcomes(repo, make_settings, SAFE_ROWS + SAFE_PROGRAM_ROWS)
    refused = {row: code for row, code in found.items() if code != "ran" and row not in _rg_missing(found)}
    assert refused == SAFE_BUT_REFUSED


async def test_shares(repo: Path, make_settings: Any) -> None:
    safe = await outcomes(repo, make_settings, SAFE_ROWS + SAFE_PROGRAM_ROWS)
    unsafe = await outcomes(repo, make_settings, UNSAFE_ROWS)
    ran = sum(code == "ran" for code in safe.values())
    refused = sum(code != "ran" for code in unsafe.values())
    print(f"\nknown-safe lines that run: {ran}/{len(safe)}; known-unsafe lines refused: {refused}/{len(unsafe)}")
    assert ran + len(SAFE_BUT_REFUSED) + len(_rg_missing(safe)) == len(safe)
