"""git options that show more than their pathspecs, and follow renames out of a protected name: refused.

The deny-list reaches git as exclude pathspecs. Some options print past them: `log --full-diff` and
`--pickaxe-all` show the whole change set of a matching commit, `status -v` diffs the whole index, and
`blame` follows a file's renames and names the file each line came from (`.env` for a file once called so).
The repository here has protected files in history, a protected name renamed to a visible one, and a protected
file and a rename from a protected name staged. Every row runs through the real MCP SDK client under every
sandbox backend here and `none`: refused with a graded permission error, or it ran and shows nothing protected.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from exec_support import git, os_backends, write
from repo_sandbox.wiring.assembly import build_server
from repo_sandbox.workspace import Workspace
from security.test_git_deny_history import COMMIT
from security.test_git_objects import NO_BREAKER, RAN, REFUSED

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

SECRET = "PATHSPEC-SECRET-3a7d"
PROTECTED_NAMES = (".env", "deploy.pem", "secrets.yaml", "staged.pem")


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("pathspec") / "repo"
    write(root / "README.md", "# Demo\nhello\n")
    write(root / "src" / "main.py", "print('hello')\n")
    write(root / ".env", "plain line, visible as renamed.txt once renamed\n")
    write(root / "keys" / "deploy.pem", f"{SECRET} pem hello\n")
    write(root / "config" / "secrets.yaml", f"token: {SECRET} yaml\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-f", "-A")
    git(root, *COMMIT, "-m", "start")
    git(root, "mv", ".env", "renamed.txt")
    git(root, *COMMIT, "-m", "rename")
    write(root / "README.md", "# Demo\nhello again\n")
    git(root, *COMMIT, "-am", "readme")
    write(root / "staged.pem", f"{SECRET} staged\n")
    git(root, "add", "-f", "staged.pem")
    git(root, "mv", "config/secrets.yaml", "config/public.yaml")
    return root


ROWS: list[tuple[str, str]] = [
    # the whole change set past the exclusions
    ("git log -p --full-diff", REFUSED),
    ("git log --stat --full-diff -- README.md", REFUSED),
    ("git show --full-diff HEAD~2", REFUSED),
    ("git log -p -S hello --pickaxe-all", REFUSED),
    ("git log --stat -G hello --pickaxe-all", REFUSED),
    ("git diff HEAD~2 HEAD -S hello --pickaxe-all", REFUSED),
    # status -v diffs the whole index (a staged protected file, a staged rename from a protected name)
    ("git status -v", REFUSED),
    ("git status --verbose", REFUSED),
    ("git status -sv", REFUSED),
    ("git status -v -v", REFUSED),
    # blame follows renames and names where each line came from
    ("git blame renamed.txt", REFUSED),
    ("git blame --porcelain renamed.txt", REFUSED),
    ("git blame -s -C -C -C README.md", REFUSED),
    # also after another git stage of the same pipeline (its narrowed exclusions must not stand in for blame's)
    ("git log -1 --stat -- README.md | git blame --porcelain renamed.txt", REFUSED),
    ("git status | git blame renamed.txt", REFUSED),
    # run, filtered by the exclusions
    ("git log -p --stat -M", RAN),
    ("git log --name-status -M -C --find-copies-harder", RAN),
    ("git log -p -S hello", RAN),
    ("git log -p -G SECRET --all", RAN),
    ("git status", RAN),
    ("git status --porcelain=v2 -M", RAN),
    ("git diff --cached -M --stat", RAN),
    ("git diff --cached --name-status -C", RAN),
    ("git diff --staged --summary", RAN),
    ("git diff HEAD --raw", RAN),
    ("git show --stat -M HEAD~1", RAN),
    ("git diff HEAD~2 HEAD --stat --dirstat=files,0", RAN),
    ("git log --format=%s --skip-to=.env -p", RAN),
    ("git grep --untracked -e PATHSPEC", RAN),
    ("git grep --recurse-submodules --cached -e PATHSPEC", RAN),
    ("git ls-files -s", RAN),
]


@pytest.fixture(params=[*os_backends(), "none"])
async def client(request: pytest.FixtureRequest, repo: Path, make_settings: Any) -> AsyncIterator[Client]:
    workspace = Workspace(make_settings(repo, exec={"sandbox": request.param}, guard=NO_BREAKER))
    try:
        async with Client(build_server(workspace), mode="legacy") as connected:
            yield connected
    finally:
        workspace.close()


def leaks(text: str) -> list[str]:
    return [word for word in (*PROTECTED_NAMES, SECRET) if word in text]


async def test_options_that_print_past_the_exclusions_never_show_a_protected_file(client: Client) -> None:
    for command, expect in ROWS:
        with anyio.fail_after(30):
            result = await client.call_tool("execute_bash", {"command": command})
        content = result.structured_content
        assert content is not None
        if expect == REFUSED:
            assert result.is_error, (command, content)
            assert content["error"]["category"] == "permission_denied", (command, content)
            assert SECRET not in str(content), (command, content)
        else:
            assert not result.is_error, (command, content)
            assert leaks(content["stdout"] + content["stderr"]) == [], (command, content)


async def test_blame_runs_where_history_holds_nothing_protected(tmp_path: Path, make_settings: Any) -> None:
    root = tmp_path / "clean"
    write(root / "src" / "old.py", "x = 1\n")
    write(root / ".env", f"{SECRET}\n")  # in the working tree only: git's records never held it
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "src")
    git(root, *COMMIT, "-m", "start")
    git(root, "mv", "src/old.py", "src/new.py")
    git(root, *COMMIT, "-m", "rename")
    for backend in [*os_backends(), "none"]:
        workspace = Workspace(make_settings(root, exec={"sandbox": backend}))
        try:
            async with Client(build_server(workspace), mode="legacy") as client:
                with anyio.fail_after(30):
                    result = await client.call_tool("execute_bash", {"command": "git blame -f src/new.py"})
                content = result.structured_content
                assert content is not None and not result.is_error, (backend, content)
                assert "src/old.py" in content["stdout"] and "x = 1" in content["stdout"], (backend, content)
        finally:
            workspace.close()


async def test_blame_runs_until_a_commit_deletes_a_protected_path(tmp_path: Path, make_settings: Any) -> None:
    """A protected file that stays (`.env.example`) cannot be a rename's source; once a commit deletes one
    (here by renaming it), blame is refused, and `-C` is refused while any protected name is in history."""
    root = tmp_path / "kept"
    write(root / "app.py", "x = 1\n")
    write(root / ".env.example", "KEY=\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-f", "-A")
    git(root, *COMMIT, "-m", "start")
    workspace = Workspace(make_settings(root, exec={"sandbox": os_backends()[0]}, guard=NO_BREAKER))
    try:
        async with Client(build_server(workspace), mode="legacy") as client:

            async def blame(command: str) -> tuple[bool, dict[str, Any]]:
                with anyio.fail_after(30):
                    result = await client.call_tool("execute_bash", {"command": command})
                assert result.structured_content is not None
                return result.is_error, result.structured_content

            is_error, content = await blame("git blame app.py")
            assert not is_error and "x = 1" in content["stdout"], content
            for command in ("git blame -C app.py", "git blame --reverse HEAD -- app.py"):
                is_error, content = await blame(command)
                assert is_error and content["error"]["code"] == "argument_not_allowed", (command, content)
            git(root, "mv", ".env.example", "example.txt")
            is_error, content = await blame("git blame example.txt")  # staged: the index deletes .env.example
            assert is_error and content["error"]["code"] == "argument_not_allowed", content
            git(root, *COMMIT, "-m", "rename")
            for command in ("git blame example.txt", "git blame app.py", "git blame HEAD~1 -- app.py"):
                is_error, content = await blame(command)
                assert is_error and content["error"]["code"] == "argument_not_allowed", (command, content)
                assert ".env" not in str(content)
    finally:
        workspace.close()
