"""Objects named without a path, `--follow`, ref formats and decomposed Unicode names: no way around the deny-list.

`git show HEAD:.env` is a path check, but an object id, `REV^{tree}`, `REV:` (the root tree), a directory, a
tag of a blob, `%(raw)` and `--follow` (one pathspec, so no exclusions) reach a protected file's content or
name without one. Every row of the table runs through the real MCP SDK client under every sandbox backend
here and `none`: it is refused with a graded permission error, or it runs and shows nothing protected.
The rows that must keep working prove the checks do not refuse ordinary history reading.
"""

from __future__ import annotations

import os
import shutil
import unicodedata
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from exec_support import git, os_backends, write
from repo_sandbox.errors import SandboxFailedError
from repo_sandbox.exec.git.objects import verify_objects
from repo_sandbox.policy.git.revs import object_checks
from repo_sandbox.wiring.assembly import build_server
from repo_sandbox.workspace import Workspace
from security.test_git_deny_history import COMMIT, git_out

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

SECRET = "OBJECT-SECRET-91c4"
PROTECTED_NAMES = ("deploy.pem", ".env", "credentials.json", "public.txt")
NO_BREAKER = {"failure_threshold": 1000, "repeat_threshold": 1000}
"""The table refuses many similar calls in a row: keep the circuit breaker out of the way."""
REFUSED = "refused"
RAN = "ran"


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    root = tmp_path_factory.mktemp("objects") / "repo"
    write(root / "README.md", "# Demo\n")
    write(root / "src" / "main.py", "print('hi')\n")
    write(root / "keys" / "deploy.pem", f"{SECRET} pem\n")
    write(root / "keys" / "public.txt", "public\n")
    write(root / ".env", f"TOKEN={SECRET}\n")
    write(root / "src" / "credentials.json", f'{{"t": "{SECRET}"}}\n')
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-f", "-A")
    git(root, *COMMIT, "-m", "add: keys and code")
    git(root, "rm", "-q", "-r", "--cached", "keys/deploy.pem", ".env", "src/credentials.json")
    git(root, *COMMIT, "-m", "untrack the secrets")
    blob = git_out(root, "rev-parse", "HEAD~1:keys/deploy.pem")
    git(root, "tag", "blobtag", blob)
    git(root, "tag", "treetag", git_out(root, "rev-parse", "HEAD~1^{tree}"))
    git(root, "tag", "subtreetag", git_out(root, "rev-parse", "HEAD~1:keys"))
    git(root, *COMMIT[:4], "tag", "-a", "v1", "-m", "release one", "HEAD")
    ids = {
        "BLOB": blob,
        "SHORT": blob[:7],
        "TREE": git_out(root, "rev-parse", "HEAD~1^{tree}"),
        "KEYS": git_out(root, "rev-parse", "HEAD~1:keys"),
        "ENVBLOB": git_out(root, "rev-parse", "HEAD~1:.env"),
    }
    return root, ids


ROWS: list[tuple[str, str]] = [
    # objects without a path
    ("git cat-file -p BLOB", REFUSED),
    ("git cat-file -p SHORT", REFUSED),
    ("git cat-file -p ENVBLOB", REFUSED),
    ("git cat-file -p TREE", REFUSED),
    ("git cat-file -p HEAD~1^{tree}", REFUSED),
    ("git cat-file -p HEAD~1:", REFUSED),
    ("git cat-file -p HEAD~1:keys", REFUSED),
    ("git cat-file -p KEYS", REFUSED),
    ("git show BLOB", REFUSED),
    ("git show SHORT", REFUSED),
    ("git show HEAD~1^{tree}", REFUSED),
    ("git show HEAD~1:", REFUSED),
    ("git show HEAD~1:keys", REFUSED),
    ("git show TREE", REFUSED),
    ("git show HEAD~1^{tree}..HEAD", REFUSED),
    ("git show ^BLOB", REFUSED),
    ("git show BLOB^!", REFUSED),
    ("git grep -e SECRET BLOB", REFUSED),
    ("git grep -e SECRET SHORT", REFUSED),
    ("git grep -e OBJECT BLOB HEAD", REFUSED),
    ("git diff BLOB HEAD:README.md", REFUSED),
    ("git diff ENVBLOB BLOB", REFUSED),
    ("git diff HEAD:README.md..BLOB", REFUSED),
    ("git log -p BLOB", REFUSED),
    ('git cat-file -p "HEAD:README.md\nBLOB"', REFUSED),  # one name a line on cat-file's input
    ("git diff HEAD:nosuch.txt HEAD:README.md", REFUSED),  # two files must exist, or git reads pathspecs
    ("git show :/.env", REFUSED),  # no message matches: git takes it as the path .env from the top
    # a subtree puts its files at the top, where anchored exclusions miss them (keys/ is denied here)
    ("git grep -n -e public KEYS", REFUSED),
    ("git grep -n -e public HEAD~1:keys", REFUSED),
    ("git grep -n -e public KEYS:", REFUSED),
    ("git diff KEYS HEAD~1^{tree} --stat", REFUSED),
    ("git rev-list --objects KEYS", REFUSED),
    ("git log --stat KEYS", REFUSED),
    ("git cat-file -p KEYS:public.txt", REFUSED),
    ("git show TREE:keys/public.txt", REFUSED),
    ("git ls-files --with-tree=KEYS", REFUSED),
    ("git ls-files --with-tree KEYS", REFUSED),
    # tags of blobs and trees
    ("git show blobtag", REFUSED),
    ("git cat-file -p blobtag", REFUSED),
    ("git grep -e OBJECT blobtag", REFUSED),
    ("git diff blobtag HEAD:README.md", REFUSED),
    ("git show treetag", REFUSED),
    ("git grep -n -e OBJECT treetag", REFUSED),
    ("git show --tags", REFUSED),
    ("git show --all --format=%H", REFUSED),
    ("git show --glob=refs/tags/*", REFUSED),
    ("git tag -l --format='%(raw)'", REFUSED),
    ("git tag -l --format='%(*raw)'", REFUSED),
    ("git branch --format='%(raw:size)%(raw)'", REFUSED),
    ("git tag -l --sort=raw", REFUSED),  # orders tags by their objects' content: a comparison oracle
    ("git tag -l --sort=-raw:size", REFUSED),
    ("git tag -l --sort=*raw", REFUSED),
    ("git branch -l --sort=raw", REFUSED),
    # a colon inside {...} belongs to the revision (git splits there too)
    ("git show 'HEAD~1^{/ad:*d}:keys/deploy.pem'", REFUSED),
    ("git cat-file -p 'HEAD^{/add:*}:.env'", REFUSED),
    # --follow takes one pathspec only: no exclusions, so not while the repository holds protected files
    ("git log --follow -p -- keys", REFUSED),
    ("git log --follow -p -- src", REFUSED),
    ("git log --follow -p -- .", REFUSED),
    # git describe <blob> prints `<commit>:<path>`, the first path holding that content (a protected one)
    ("git describe --always BLOB", REFUSED),
    ("git describe --all ENVBLOB", REFUSED),
    ("git describe --tags HEAD~1:src/main.py", REFUSED),  # same content could sit at a protected path
    ("git describe --always blobtag", REFUSED),
    # option values git resolves as revisions obey the deny-list like operands
    ("git rev-parse --default HEAD~1:.env", REFUSED),
    ("git rev-parse --verify --default HEAD~1:keys/deploy.pem", REFUSED),
    ("git log --format=%H --find-object=HEAD~1:.env", REFUSED),
    ("git log --format=%H --ancestry-path=HEAD~1:.env HEAD~1..HEAD", REFUSED),
    ("git ls-files --with-tree=HEAD~1:.env", REFUSED),  # "bad tree-ish" vs "not found": an existence oracle
    ("git blame --ignore-rev HEAD~1:.env README.md", REFUSED),
    ("git blame --reverse HEAD~1:.env README.md", REFUSED),
    ("git tag -l --points-at=HEAD~1:keys/deploy.pem", REFUSED),
    ("git branch -l --contains=HEAD~1:.env", REFUSED),
    # runs, filtered by the exclusions
    ("git grep -n -e OBJECT HEAD~1:", RAN),
    ("git diff HEAD~1: HEAD: --stat", RAN),
    ("git rev-list --objects --all", REFUSED),
    ("git rev-list --objects --tags", REFUSED),
    ("git log --objects --format=%H --glob=refs/tags/*", REFUSED),
    ("git show subtreetag", REFUSED),
    ("git grep -n -e public subtreetag", REFUSED),
    ("git rev-list --objects subtreetag", REFUSED),
    ("git rev-list --all", RAN),
    ("git rev-list --objects --branches=main", REFUSED),
    ("git rev-list --objects HEAD~1", REFUSED),  # git lists directories (keys) whatever the exclusions
    ("git log --objects --format=%H -1", REFUSED),
    ("git log -p --all", RAN),
    ("git show --stat :/add", RAN),
    ("git cat-file -t BLOB", RAN),
    ("git cat-file -s BLOB", REFUSED),
    ("git cat-file -s TREE", REFUSED),
    ("git cat-file -s HEAD~1:src", REFUSED),  # its size counts credentials.json's name
    ("git cat-file -s KEYS", REFUSED),
    ("git tag -l --format='%(refname)%(objecttype)'", RAN),
    ("git tag -l --sort=-refname", RAN),
    ("git ls-files --with-tree=HEAD~1", RAN),
]

WORKS: list[tuple[str, str]] = [
    ("git show HEAD:README.md", "# Demo"),
    ("git cat-file -p HEAD:src/main.py", "print('hi')"),
    ("git cat-file -p :README.md", "# Demo"),
    ("git show v1", "release one"),
    ("git show --stat HEAD~1", "README.md"),
    ("git cat-file -p HEAD", "untrack the secrets"),
    ("git cat-file -s HEAD:README.md", "7"),
    ("git cat-file -p v1", "release one"),
    ("git grep -n hi HEAD -- src", "main.py"),
    ("git grep -n hi HEAD~1:", "main.py"),
    ("git diff HEAD~1 HEAD --stat", ""),
    ("git diff HEAD~1..HEAD --stat", ""),
    ("git log --oneline v1", "add: keys"),
    ("git log --oneline HEAD~1^!", "add: keys"),
    ("git show --stat 'HEAD^{/add: keys}'", "add: keys"),
    ("git diff HEAD:README.md HEAD~1:README.md", ""),
    ("git diff README.md", ""),
    ("git log --oneline -- README.md", "add: keys"),
    ("git describe --tags HEAD", "v1"),
    ("git describe --always", ""),
    ("git rev-parse --default HEAD", ""),
    ("git log --oneline --ancestry-path=HEAD~1 HEAD~1..HEAD", ""),
]


@pytest.fixture(params=[*os_backends(), "none"])
async def client(
    request: pytest.FixtureRequest, repo: tuple[Path, dict[str, str]], make_settings: Any
) -> AsyncIterator[Client]:
    settings = make_settings(
        repo[0], workspace={"extra_deny": ["keys/"]}, exec={"sandbox": request.param}, guard=NO_BREAKER
    )
    workspace = Workspace(settings)
    try:
        async with Client(build_server(workspace), mode="legacy") as connected:
            yield connected
    finally:
        workspace.close()


def fill(command: str, ids: dict[str, str]) -> str:
    for key in sorted(ids, key=len, reverse=True):  # ENVBLOB before BLOB
        command = command.replace(key, ids[key])
    return command


async def call(client: Client, command: str) -> tuple[bool, dict[str, Any]]:
    with anyio.fail_after(30):
        result = await client.call_tool("execute_bash", {"command": command})
    assert result.structured_content is not None
    return result.is_error, result.structured_content


def leaks(text: str) -> list[str]:
    return [word for word in (*PROTECTED_NAMES, SECRET, "OBJECT-SECRET") if word in text]


async def test_objects_without_a_path_never_show_a_protected_file(
    client: Client, repo: tuple[Path, dict[str, str]]
) -> None:
    _, ids = repo
    for row, expect in ROWS:
        command = fill(row, ids)
        is_error, content = await call(client, command)
        if expect == REFUSED:
            assert is_error, (row, content)
            assert content["error"]["category"] == "permission_denied", (row, content)
            assert SECRET not in str(content), (row, content)  # the message may name what the row typed
        else:
            assert not is_error, (row, content)
            assert leaks(content["stdout"] + content["stderr"]) == [], (row, content)


async def test_history_reading_by_revision_and_path_still_works(client: Client) -> None:
    for command, expected in WORKS:
        is_error, content = await call(client, command)
        assert not is_error, (command, content)
        assert content["exit_code"] == 0, (command, content)
        assert expected in content["stdout"], (command, content)
        assert leaks(content["stdout"]) == [], (command, content)


async def test_follow_runs_where_nothing_needs_hiding(tmp_path: Path, make_settings: Any) -> None:
    root = tmp_path / "clean"
    write(root / "src" / "old.py", "x = 1\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, *COMMIT, "-m", "start")
    git(root, "mv", "src/old.py", "src/new.py")
    git(root, *COMMIT, "-m", "rename")
    for backend in os_backends():
        workspace = Workspace(make_settings(root, exec={"sandbox": backend}))
        try:
            async with Client(build_server(workspace), mode="legacy") as client:
                is_error, content = await call(client, "git log --follow --name-only --format=%s -- src/new.py")
                assert not is_error, content
                assert "src/old.py" in content["stdout"] and "start" in content["stdout"], content
        finally:
            workspace.close()


async def test_a_decomposed_unicode_name_is_hidden_like_its_composed_deny_pattern(
    tmp_path: Path, make_settings: Any
) -> None:
    root = tmp_path / "unicode"
    composed = "résumé-secret.txt"
    decomposed = unicodedata.normalize("NFD", composed)
    assert decomposed != composed
    write(root / "README.md", "# Demo\n")
    write(root / decomposed, f"{SECRET}\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, *COMMIT, "-m", "start")
    for backend in [*os_backends(), "none"]:
        settings = make_settings(
            root, workspace={"extra_deny": ["Résumé-*.txt"]}, exec={"sandbox": backend}, guard=NO_BREAKER
        )
        workspace = Workspace(settings)
        try:
            async with Client(build_server(workspace), mode="legacy") as client:
                for command in ("git ls-files", "git log -p", "git grep -n OBJECT", "git show --stat HEAD"):
                    is_error, content = await call(client, command)
                    assert not is_error, (backend, command, content)
                    text = unicodedata.normalize("NFC", content["stdout"] + content["stderr"]).lower()
                    assert "sum" not in text and SECRET.lower() not in text, (backend, command, content)
                is_error, content = await call(client, "git ls-files")
                assert "README.md" in content["stdout"]
        finally:
            workspace.close()


async def call_once(root: Path, make_settings: Any, command: str) -> tuple[bool, dict[str, Any]]:
    """One command in a fresh workspace over `root`, under the first OS sandbox here."""
    workspace = Workspace(make_settings(root, exec={"sandbox": os_backends()[0]}))
    try:
        async with Client(build_server(workspace), mode="legacy") as client:
            return await call(client, command)
    finally:
        workspace.close()


async def test_outside_a_repository_git_answers_for_itself(tmp_path: Path, make_settings: Any) -> None:
    write(tmp_path / "plain" / "a.txt", "a\n")
    is_error, content = await call_once(tmp_path / "plain", make_settings, "git show HEAD")
    assert not is_error, content
    assert content["exit_code"] == 128 and "not a git repository" in content["stderr"]


def test_objects_that_git_cannot_resolve_refuse_the_stage(tmp_path: Path) -> None:
    checks = object_checks("HEAD", "show")
    with pytest.raises(SandboxFailedError):
        verify_objects(checks, shutil.which("false"), {"PATH": "/usr/bin:/bin"}, str(tmp_path))
    with pytest.raises(SandboxFailedError):
        verify_objects(checks, None, {}, str(tmp_path))


async def test_a_glob_that_expands_to_a_non_utf8_name_is_resolved_like_any_operand(
    tmp_path: Path, make_settings: Any
) -> None:
    root = tmp_path / "bytes"
    write(root / "README.md", "# Demo\n")
    (root / os.fsdecode(b"caf\xe9.txt")).write_bytes(b"latin-1 name\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, *COMMIT, "-m", "start")
    is_error, content = await call_once(root, make_settings, "git log --format=%s caf*")
    assert not is_error, content
    assert content["exit_code"] == 0 and "start" in content["stdout"], content
