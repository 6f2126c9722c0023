"""Ref-level indirection in git never shows a protected file's content under another name.

A protected file's blob stays in the object database after the file is deleted. Replace refs (`git replace
<README blob> <.env blob>`), notes (`git notes add -C <.env blob> HEAD`), grafts, the reflog of a notes ref and
alternates pointing into a protected directory each present such an object under a name the deny-list cannot
see (`README.md`, a note, a file named after a commit id in the notes tree). Every row runs through the real MCP
SDK client under every sandbox backend here and `none`: it is refused with a graded permission error, or it runs
and shows nothing protected. The repositories are built on the host, as someone with write access would.
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from exec_support import git, os_backends, write
from repo_sandbox.wiring.assembly import build_server
from repo_sandbox.workspace import Workspace
from security.test_git_deny_history import COMMIT, git_out

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

SECRET = "INDIRECT-SECRET-3b8d"
NO_BREAKER = {"failure_threshold": 1000, "repeat_threshold": 1000}
REFUSED = "refused"
RAN = "ran"


def base_repo(root: Path) -> dict[str, str]:
    """README.md and src/ live; `.env` and `vault/key.txt` committed, then deleted: history only."""
    write(root / "README.md", "# Demo\n")
    write(root / "src" / "main.py", "print('hi')\n")
    write(root / ".env", f"{SECRET} env\n")
    write(root / "vault" / "key.txt", f"{SECRET} key\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-f", "-A")
    git(root, *COMMIT, "-m", "start")
    git(root, "rm", "-q", "-r", ".env", "vault")
    git(root, *COMMIT, "-m", "drop the secrets")
    write(root / "README.md", "# Demo\n\nmore\n")
    git(root, *COMMIT, "-a", "-m", "docs")
    return {
        "ENVBLOB": git_out(root, "rev-parse", "HEAD~2:.env"),
        "README": git_out(root, "rev-parse", "HEAD:README.md"),
        "HEAD_ID": git_out(root, "rev-parse", "HEAD"),
    }


def secret_commit(root: Path, blob: str) -> str:
    """A commit (parent HEAD) whose tree holds `blob` as README.md: the .env content under an innocent name."""
    tree = git_out(root, "mktree", data=f"100644 blob {blob}\tREADME.md\n".encode())
    return git_out(root, "commit-tree", tree, "-p", "HEAD", "-m", "innocent")


@pytest.fixture(scope="module")
def repos(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("indirection")
    made: dict[str, Path] = {}
    kinds = (
        "replace-blob",
        "replace-commit",
        "notes",
        "grafts",
        "reflog",
        "alternates",
        "alternates-relative",
        "stash",
    )
    for kind in kinds:
        root = base / kind / "repo"
        ids = base_repo(root)
        if kind == "replace-blob":
            git_out(root, "replace", ids["README"], ids["ENVBLOB"])
        elif kind == "replace-commit":
            git_out(root, "replace", ids["HEAD_ID"], secret_commit(root, ids["ENVBLOB"]))
        elif kind == "notes":
            git_out(root, "notes", "add", "-C", ids["ENVBLOB"], "HEAD")
            git(root, "config", "branch.main.remote", ".")  # main@{upstream} is then the notes ref
            git(root, "config", "branch.main.merge", "refs/notes/commits")
            git(root, "config", "remote.pushDefault", ".")
            git_out(root, "symbolic-ref", "refs/heads/alias", "refs/notes/commits")  # a branch that is the notes ref
        elif kind == "grafts":
            (root / ".git" / "info").mkdir(exist_ok=True)
            graft = f"{ids['HEAD_ID']} {secret_commit(root, ids['ENVBLOB'])}\n"
            (root / ".git" / "info" / "grafts").write_text(graft)
        elif kind == "reflog":
            git_out(root, "notes", "add", "-C", ids["ENVBLOB"], "HEAD")
            git_out(root, "notes", "remove", "HEAD")  # the note is gone from the tip, still in the notes reflog
        elif kind.startswith("alternates"):
            # an object store inside a protected directory: a commit only it holds, named by a branch
            git_out(root, "update-ref", "refs/heads/borrowed", secret_commit(root, ids["ENVBLOB"]))
            store = root / "vault" / "objects"
            shutil.copytree(root / ".git" / "objects", store)
            for name in (root / ".git" / "objects").iterdir():
                if len(name.name) == 2:
                    shutil.rmtree(name)  # every object now comes from the protected directory
            entry = "../../vault/objects" if kind.endswith("relative") else str(store)
            (root / ".git" / "objects" / "info" / "alternates").write_text(f"# borrowed\n{entry}\n")
        elif kind == "stash":
            write(root / ".env", f"{SECRET} stashed\n")
            write(root / "README.md", "# Demo\n\nstashed\n")
            git_out(root, "stash", "push", "-q", "-u")
        made[kind] = root
    return made


# (repository, command, expectation)
ROWS: list[tuple[str, str, str]] = [
    ("replace-blob", "git show HEAD:README.md", RAN),
    ("replace-blob", "git cat-file -p HEAD:README.md", RAN),
    ("replace-blob", "git grep -n -e INDIRECT HEAD", RAN),
    ("replace-blob", "git grep -n -e INDIRECT", RAN),
    ("replace-blob", "git log -p", RAN),
    ("replace-blob", "git log -p --all", RAN),
    ("replace-blob", "git diff HEAD~1 HEAD", RAN),
    ("replace-blob", "git diff HEAD~1:README.md HEAD:README.md", RAN),
    ("replace-blob", "git show --stat HEAD", RAN),
    ("replace-blob", "git log -p --glob=*", RAN),
    ("replace-blob", "git log -p --glob=replace/*", RAN),
    ("replace-blob", "git rev-list --all --header", RAN),
    ("replace-blob", "git log -p refs/replace/RBLOB", REFUSED),
    ("replace-blob", "git cat-file -p replace/RBLOB", REFUSED),
    ("replace-commit", "git show HEAD:README.md", RAN),
    ("replace-commit", "git log -p", RAN),
    ("replace-commit", "git log -p -1", RAN),
    ("replace-commit", "git diff HEAD~1 HEAD", RAN),
    ("replace-commit", "git grep -n -e INDIRECT HEAD", RAN),
    ("replace-commit", "git log -p --all", RAN),
    ("replace-commit", "git log -p --reflog", REFUSED),
    ("replace-commit", "git show refs/replace/HEAD_ID:README.md", REFUSED),
    ("replace-commit", "git log -p replace/HEAD_ID", REFUSED),
    ("replace-commit", "git log -p HEAD_ID..refs/replace/HEAD_ID", REFUSED),
    ("notes", "git log -1", RAN),
    ("notes", "git log", RAN),
    ("notes", "git show HEAD", RAN),
    ("notes", "git show -s HEAD", RAN),
    ("notes", "git log -1 --format=%N", RAN),
    ("notes", "git log -1 --pretty=format:%N%n", RAN),
    ("notes", "git log --pretty=fuller", RAN),
    ("notes", "git rev-list -1 --format=%N HEAD", RAN),
    ("notes", "git shortlog --format=%N HEAD", RAN),
    ("notes", "git log -1 --notes", REFUSED),
    ("notes", "git log -1 --notes=commits", REFUSED),
    ("notes", "git log -p --all", RAN),
    ("notes", "git log -p --glob=notes/*", RAN),
    ("notes", "git log -p --glob=refs/n*", RAN),
    ("notes", "git log -p --exclude=x --all", RAN),
    ("notes", "git log -p --all --branches", RAN),
    ("notes", "git log -p -g --all", RAN),
    ("notes", "git log -p --reflog", REFUSED),
    ("notes", "git rev-list --all --header", RAN),
    ("notes", "git shortlog --all", RAN),
    ("notes", "git log -p refs/notes/commits", REFUSED),
    ("notes", "git log -p notes/commits", REFUSED),
    ("notes", "git show notes/commits", REFUSED),
    ("notes", "git show refs/notes/commits^{/}", REFUSED),
    ("notes", "git log -p main..notes/commits", REFUSED),
    ("notes", "git log -p main...refs/notes/commits", REFUSED),
    ("notes", "git log -p ^main notes/commits", REFUSED),
    ("notes", "git show notes/commits:HEAD_ID", REFUSED),
    ("notes", "git cat-file -p notes/commits:HEAD_ID", REFUSED),
    ("notes", "git grep -e INDIRECT notes/commits", REFUSED),
    ("notes", "git diff main notes/commits", REFUSED),
    ("notes", "git log -p -g notes/commits", REFUSED),
    ("notes", "git log -p notes/commits@{0}", REFUSED),
    ("notes", "git log -p --default notes/commits", REFUSED),
    ("notes", "git log -p --ancestry-path=notes/commits HEAD", REFUSED),
    ("notes", "git log -p REFS/NOTES/commits", REFUSED),
    ("notes", "git stash list --format=%N", RAN),
    ("notes", "git log -p main@{u}", REFUSED),
    ("notes", "git log -p @{upstream}", REFUSED),
    ("notes", "git show 'main@{ push }'", REFUSED),
    ("notes", "git log -p --glob=*", RAN),
    ("notes", "git log -p --glob '*'", RAN),
    ("notes", "git log -p --grep --all --all", RAN),
    ("notes", "git log -p --branches=../notes/*", RAN),
    ("notes", "git log -1 --show-notes", REFUSED),
    ("notes", "git log -1 --standard-notes", REFUSED),
    # the notes commits by other names: their id, a message search, a branch that is a symbolic ref to them
    ("notes", "git log -p NOTES_ID", RAN),
    ("notes", "git show NOTES_ID", RAN),
    ("notes", "git show --stat NOTES_ID", RAN),
    ("notes", "git log -p --name-only NOTES_ID", RAN),
    ("notes", "git log -p ':/Notes added'", RAN),
    ("notes", "git log -p alias", RAN),
    ("notes", "git diff main NOTES_ID", RAN),
    ("notes", "git diff main NOTES_ID -- .", RAN),
    ("notes", "git grep -e INDIRECT NOTES_ID", RAN),
    ("notes", "git grep -e INDIRECT alias", RAN),
    ("notes", "git show NOTES_ID:HEAD_ID", REFUSED),
    ("notes", "git cat-file -p NOTES_ID:HEAD_ID", REFUSED),
    ("notes", "git cat-file -p alias:HEAD_ID", REFUSED),
    ("notes", "git log -p NOTES_ID -- HEAD_ID", REFUSED),
    ("notes", "git log --follow -p NOTES_ID -- HEAD_ID", REFUSED),
    ("notes", "git log -p NOTES_ID -- ':(top)HEAD_ID'", REFUSED),
    ("notes", "git blame NOTES_ID -- HEAD_ID", REFUSED),
    ("notes", "git blame NOTES_ID HEAD_ID", REFUSED),
    ("notes", "git ls-files HEAD_ID", REFUSED),
    ("notes", "git diff main:README.md NOTES_ID:HEAD_ID", REFUSED),
    ("grafts", "git log -p", RAN),
    ("grafts", "git log -p -2", RAN),
    ("grafts", "git show HEAD~1", RAN),
    ("grafts", "git show HEAD~1:README.md", RAN),
    ("grafts", "git diff HEAD~1 HEAD", RAN),
    ("grafts", "git grep -n -e INDIRECT HEAD~1", RAN),
    ("reflog", "git log -p --reflog", REFUSED),
    ("reflog", "git log -p -g --all", RAN),
    ("reflog", "git log -p --walk-reflogs --all", RAN),
    ("reflog", "git log -p -g notes/commits", REFUSED),
    ("reflog", "git show notes/commits@{1}", REFUSED),
    ("reflog", "git rev-list --reflog --header", REFUSED),
    ("alternates", "git log -p borrowed", REFUSED),
    ("alternates", "git show borrowed:README.md", REFUSED),
    ("alternates", "git log -p --all", REFUSED),
    ("alternates", "git grep -n -e INDIRECT borrowed", REFUSED),
    ("alternates", "git status", REFUSED),
    ("alternates-relative", "git log -p borrowed", REFUSED),
    ("alternates-relative", "git show borrowed:README.md", REFUSED),
    ("stash", "git stash list", RAN),
    ("stash", "git log -p --all", RAN),
    ("stash", "git show stash@{0}", RAN),
    ("stash", "git show stash@{0}^3", RAN),
    ("stash", "git log -p -g stash", RAN),
    ("stash", "git log -p --reflog", REFUSED),
    ("stash", "git grep -n -e INDIRECT stash@{0}^3", RAN),
]


@pytest.fixture(params=[*os_backends(), "none"])
def backend(request: pytest.FixtureRequest) -> str:
    return request.param


@asynccontextmanager
async def clients(repos: dict[str, Path], backend: str, make_settings: Any) -> AsyncIterator[dict[str, Client]]:
    """One connected client per repository, all under `backend`."""
    async with AsyncExitStack() as stack:
        connected: dict[str, Client] = {}
        for kind, root in repos.items():
            settings = make_settings(
                root, workspace={"extra_deny": ["vault/"]}, exec={"sandbox": backend}, guard=NO_BREAKER
            )
            workspace = Workspace(settings)
            stack.callback(workspace.close)
            connected[kind] = await stack.enter_async_context(Client(build_server(workspace), mode="legacy"))
        yield connected


async def call(client: Client, command: str) -> tuple[bool, dict[str, Any]]:
    with anyio.fail_after(30):
        result = await client.call_tool("execute_bash", {"command": command})
    assert result.structured_content is not None
    return result.is_error, result.structured_content


def fill(command: str, root: Path) -> str:
    if "NOTES_ID" in command:
        command = command.replace("NOTES_ID", git_out(root, "rev-parse", "refs/notes/commits"))
    return command.replace("HEAD_ID", git_out(root, "rev-parse", "main")).replace(
        "RBLOB", git_out(root, "rev-parse", "main:README.md")
    )


async def test_ref_indirection_never_shows_a_protected_file(
    repos: dict[str, Path], backend: str, make_settings: Any
) -> None:
    failures: list[tuple[str, str, dict[str, Any]]] = []
    async with clients(repos, backend, make_settings) as connected:
        for kind, row, expect in ROWS:
            command = fill(row, repos[kind])
            is_error, content = await call(connected[kind], command)
            if expect == REFUSED:
                ok = is_error and content["error"]["category"] == "permission_denied" and SECRET not in str(content)
            else:
                ok = not is_error and SECRET not in content["stdout"] + content["stderr"]
            if not ok:
                failures.append((kind, command, content))
    assert failures == [], "\n".join(f"{kind}: {command}: {str(content)[:300]}" for kind, command, content in failures)


WORKS: list[tuple[str, str, str]] = [
    ("replace-blob", "git show HEAD:README.md", "more"),
    ("replace-commit", "git log --oneline -1", "docs"),
    ("notes", "git log --oneline", "start"),
    ("notes", "git log -p --all --format=%s", "docs"),
    ("notes", "git show-ref", "refs/notes/commits"),
    ("notes", "git branch --all", "main"),  # ref lists that are not walks get no --exclude (they refuse it)
    ("notes", "git describe --all", "heads/main"),
    ("notes", "git merge-base --all main main", ""),
    ("grafts", "git log --oneline", "start"),
    ("stash", "git stash list", "stash@{0}"),
    ("stash", "git show --stat stash@{0}", "README.md"),
]


async def test_history_still_reads_where_refs_indirect(
    repos: dict[str, Path], backend: str, make_settings: Any
) -> None:
    async with clients(repos, backend, make_settings) as connected:
        for kind, row, expected in WORKS:
            is_error, content = await call(connected[kind], fill(row, repos[kind]))
            assert not is_error, (kind, row, content)
            assert expected in content["stdout"], (kind, row, content)
            assert SECRET not in content["stdout"], (kind, row, content)
