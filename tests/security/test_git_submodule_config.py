"""A hostile repository's git configuration that git reads past the overrides: submodules and file-reading keys.

Through the real MCP SDK client, under every OS sandbox backend here and `none`:
- A submodule's own configuration (`.git/modules/<name>/config`) names diff and filter drivers the overrides
  of `.git/config` cannot know. git reads it wherever it starts git inside the submodule: `--submodule=diff`
  (or `diff.submodule = diff`) for an inline diff, and the `git status` it runs inside a checked-out submodule
  for `status`, `diff`, `describe --dirty`. The driver printed a canary and the submodule's protected `.env`.
- `mailmap.blob = HEAD:.env` made `git shortlog` print the protected file's names.
- `blame.ignoreRevsFile` made `git blame` print the first line of a file in `.git` (it cannot be overridden).
Every row either runs git without the canary or a secret in its output, or is refused with a graded error.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from exec_support import git, os_backends, write
from repo_sandbox.wiring.assembly import build_server
from repo_sandbox.workspace import Workspace
from security.test_git_deny_history import COMMIT

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

CANARY = "DRIVER_RAN_3f9a"
SECRETS = ("SUB_ENV_SECRET_222", "GIT_INTERNAL_SECRET_888", "Leaked Name", "TOP_ENV_SECRET_111", CANARY)
DRIVER = f'echo {CANARY}; echo {CANARY} >&2; cat "$5" 2>/dev/null; cat; :'

SUBMODULE_ROWS: dict[str, tuple[str, bool]] = {
    # command: (repository, refused)
    "git show HEAD": ("absorbed", False),
    "git log -p -2": ("absorbed", False),
    "git diff HEAD~1 HEAD": ("absorbed", False),
    "git diff HEAD~1 HEAD --submodule=diff": ("absorbed", True),
    "git log -p --submodule=diff": ("absorbed", True),
    "git show HEAD --submodule=log": ("absorbed", False),
    "git status": ("checked_out", False),
    "git status --porcelain": ("checked_out", False),
    "git status --ignore-submodules": ("checked_out", False),
    "git status --ignore-submodules=untracked": ("checked_out", True),
    "git status --porcelain --ignore-submodules=none": ("checked_out", True),
    "git diff": ("checked_out", False),
    "git diff --stat": ("checked_out", False),
    "git diff HEAD --submodule=log": ("checked_out", False),
    "git diff HEAD --submodule=diff": ("checked_out", True),
    "git describe --dirty --always": ("checked_out", True),
    "git describe --broken --always": ("checked_out", True),
}
MAILMAP_ROWS = ("git shortlog -s HEAD", "git log --use-mailmap --format=%aN", "git log --format=%aN%n%cN")
IGNORE_REVS: dict[str, bool] = {
    # blame.ignoreRevsFile value: refused
    "/run/repo-sandbox-git/remote-notes": True,
    ".git/remote-notes": True,
    "sub/../.git/remote-notes": True,
    "notes-link": True,  # a symlink into .git
    ".env": True,
    "../outside/secret.txt": True,
    "~/secret.txt": True,
    "revs.txt": False,
    "missing.txt": False,
}


def _sub_source(base: Path) -> Path:
    sub = base / "sub-source"
    write(sub / "README", "v1\n")
    git(sub, "init", "-q", "-b", "main")
    git(sub, "add", ".")
    git(sub, *COMMIT, "-m", "s1")
    write(sub / ".env", "SUB_ENV_SECRET_222\n")
    write(sub / "README", "v2\n")
    git(sub, "add", "-f", ".")
    git(sub, *COMMIT, "-m", "s2")
    return sub


def _arm(root: Path) -> None:
    """Drivers in the submodule's own configuration, for every file of it."""
    modules = root / ".git" / "modules" / "sub"
    write(modules / "info" / "attributes", "* diff=pwn filter=pwn\n")
    config = modules / "config"
    config.write_text(
        config.read_text()
        + f'[diff "pwn"]\n\tcommand = {DRIVER}\n\ttextconv = {DRIVER}\n'
        + f'[filter "pwn"]\n\tclean = {DRIVER}\n\tsmudge = cat\n'
    )


def _with_submodule(base: Path, name: str) -> Path:
    source = _sub_source(base / name)
    root = base / name / "repo"
    write(root / "top.txt", "top\n")
    write(root / ".env", "TOP_ENV_SECRET_111\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-f", ".")
    git(root, *COMMIT, "-m", "t0")
    git(root, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(source), "sub")
    git(root / "sub", "checkout", "-q", "HEAD~1")
    git(root, "add", "sub")
    git(root, *COMMIT, "-m", "A")
    git(root / "sub", "checkout", "-q", "main")
    git(root, "add", "sub")
    git(root, *COMMIT, "-m", "B")
    return root


def absorbed_repo(base: Path) -> Path:
    """The submodule's working tree is gone, so git reads `.git/modules/sub`; `diff.submodule = diff` asks for
    inline diffs from `git show` and `git log -p`."""
    root = _with_submodule(base, "absorbed")
    shutil.rmtree(root / "sub")
    _arm(root)
    git(root, "config", "diff.submodule", "diff")
    return root


def checked_out_repo(base: Path) -> Path:
    """A checked-out submodule whose files' index entries are racy (their content is hashed, through the clean
    filter), with `submodule.sub.ignore = none` outvoting `diff.ignoreSubmodules`."""
    root = _with_submodule(base, "checked_out")
    _arm(root)
    git(root, "config", "submodule.sub.ignore", "none")
    index = root / ".git" / "modules" / "sub" / "index"
    os.utime(index, (946684800, 946684800))
    return root


def mailmap_repo(base: Path) -> Path:
    root = base / "mailmap" / "repo"
    write(root / ".env", "Leaked Name <t@example.com>\n")
    write(root / "a.txt", "a\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-f", ".")
    git(root, *COMMIT, "-m", "c1")
    git(root, "config", "mailmap.blob", "HEAD:.env")
    return root


def blame_repo(base: Path, value: str) -> Path:
    root = base / "blame" / f"{abs(hash(value))}" / "repo"
    write(root.parent / "outside" / "secret.txt", "GIT_INTERNAL_SECRET_888\n")
    write(root / "README.md", "# Demo\n")
    write(root / ".env", "GIT_INTERNAL_SECRET_888\n")
    write(root / "revs.txt", "")
    (root / "notes-link").symlink_to(".git/remote-notes")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "README.md", "revs.txt")
    git(root, *COMMIT, "-m", "c1")
    write(root / ".git" / "remote-notes", "GIT_INTERNAL_SECRET_888\n")
    git(root, "config", "blame.ignoreRevsFile", value)
    return root


@pytest.fixture(scope="module")
def repos(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("gitconfig")
    made = {"absorbed": absorbed_repo(base), "checked_out": checked_out_repo(base), "mailmap": mailmap_repo(base)}
    made.update({f"blame:{value}": blame_repo(base, value) for value in IGNORE_REVS})
    return made


async def run_all(root: Path, commands: list[str], backend: str, make_settings: Any) -> list[tuple[str, Any]]:
    workspace = Workspace(make_settings(root, exec={"sandbox": backend}))
    answers: list[tuple[str, Any]] = []
    try:
        async with Client(build_server(workspace), mode="legacy") as client:
            for command in commands:
                with anyio.fail_after(60):
                    result = await client.call_tool("execute_bash", {"command": command})
                answers.append((command, (result.is_error, result.structured_content)))
    finally:
        workspace.close()
    return answers


def leaks(content: object) -> list[str]:
    text = str(content)
    return [secret for secret in SECRETS if secret in text]


def unreadable_gitfile(backend: str, repo: str, content: dict[str, Any]) -> bool:
    """Landlock refuses the checked-out submodule's `.git` file (the deny-list protects `.git` at any depth), and
    git then stops at once."""
    return backend == "landlock" and repo == "checked_out" and "error opening 'sub/.git'" in content["stderr"]


@pytest.mark.parametrize("backend", [*os_backends(), "none"])
async def test_no_git_runs_inside_a_submodule_under_its_own_configuration(
    repos: dict[str, Path], backend: str, make_settings: Any
) -> None:
    problems: list[str] = []
    for repo in ("absorbed", "checked_out"):
        commands = [command for command, (where, _) in SUBMODULE_ROWS.items() if where == repo]
        for command, (is_error, content) in await run_all(repos[repo], commands, backend, make_settings):
            refused = SUBMODULE_ROWS[command][1]
            if leaks(content):
                problems.append(f"{command}: leaked {leaks(content)}: {str(content)[:300]}")
            elif refused != is_error:
                problems.append(f"{command}: {'ran' if refused else 'refused'}: {str(content)[:300]}")
            elif refused and content["error"]["code"] != "argument_not_allowed":
                problems.append(f"{command}: not graded: {content}")
            elif not refused and content["exit_code"] != 0 and not unreadable_gitfile(backend, repo, content):
                problems.append(f"{command}: git failed: {str(content)[:300]}")
    assert problems == [], "\n".join(problems)


@pytest.mark.parametrize("backend", [*os_backends(), "none"])
async def test_a_mailmap_blob_never_shows_a_protected_file(
    repos: dict[str, Path], backend: str, make_settings: Any
) -> None:
    answers = await run_all(repos["mailmap"], list(MAILMAP_ROWS), backend, make_settings)
    for command, (is_error, content) in answers:
        assert not is_error and content["exit_code"] == 0, (command, content)
        assert leaks(content) == [], (command, content)
        assert "T" in content["stdout"], (command, content)  # the real author's name


@pytest.mark.parametrize("backend", [*os_backends(), "none"])
async def test_diff_order_file_from_the_configuration_is_not_read(
    tmp_path: Path, backend: str, make_settings: Any
) -> None:
    """`diff.orderFile` is `git diff -O` (refused: it reads any file) set in `.git/config`: git ignores it."""
    root = tmp_path / "repo"
    for name in ("a.txt", "b.txt"):
        write(root / name, "one\n")
    write(root / ".git-order", "b.txt\na.txt\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "a.txt", "b.txt")
    git(root, *COMMIT, "-m", "c1")
    for name in ("a.txt", "b.txt"):
        write(root / name, "two\n")
    git(root, "config", "diff.orderFile", ".git-order")
    ((_, (is_error, content)),) = await run_all(root, ["git diff --name-only"], backend, make_settings)
    assert not is_error and content["stdout"] == "a.txt\nb.txt\n", content


@pytest.mark.parametrize("backend", [*os_backends(), "none"])
@pytest.mark.parametrize("value", list(IGNORE_REVS))
async def test_blame_never_reads_a_protected_ignore_revs_file(
    repos: dict[str, Path], value: str, backend: str, make_settings: Any
) -> None:
    ((_, (is_error, content)),) = await run_all(
        repos[f"blame:{value}"], ["git blame README.md"], backend, make_settings
    )
    assert leaks(content) == [], content
    if IGNORE_REVS[value]:
        assert is_error and content["error"]["code"] == "argument_not_allowed", content
        assert "blame.ignoreRevsFile" in content["error"]["message"]
    else:
        assert not is_error, content  # git ran (a missing file is git's own error)
