"""Denied files in git's own records never show, now that git stages get only the exclusions that can match.

Through the real MCP SDK client, under every sandbox backend here: a denied file that is committed and then
deleted (history only) -- also under a name that is the denied one with trailing dots or spaces on any
of its names (`.docker./config.json`) --, renamed away, staged but never committed, untracked, or only in a dangling commit
stays invisible to every git command that prints names or contents, as a name and as content. The
exclusions follow the repository as it changes (a new commit, a new stage, a dangling object, a repack),
and a change that lands while git runs makes the command run again with every exclusion.
"""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from exec_support import git, os_backends, write
from repo_sandbox.exec import runner
from repo_sandbox.exec import service as service_module
from repo_sandbox.exec.service import exec_service
from repo_sandbox.wiring.assembly import build_server
from repo_sandbox.workspace import Workspace

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

SECRET = "HISTORY-SECRET-6e1f"
DENIED = ("deploy.pem", "secrets.yaml", ".env.staged", ".env.local", "id_rsa", "id_ed25519", ".ssh", "vault.kdbx",
          "config.json", "prod.yaml", "token.txt")  # fmt: skip
EXTRA_DENY = ["deploy/prod.yaml", "ops/**/token.txt"]
"""Operator rules of several names: the deny-list takes any of their names with trailing dots or spaces."""
TRAILING = (".docker./config.json", "sub/.docker /config.json", "deploy./prod.yaml", "deploy ./prod.yaml.",
            "ops../a/b/token.txt", "ops/a. /token.txt ")  # fmt: skip
"""Committed, then deleted: each is the same path as a denied one to the deny-list (and to Windows, SMB)."""
COMMIT = ("-c", "user.email=t@example.com", "-c", "user.name=T", "commit", "-q")
GIT_ENV = {"PATH": "/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null",
           "GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "T", "GIT_COMMITTER_EMAIL": "t@e"}  # fmt: skip


def git_out(root: Path, *args: str, data: bytes | None = None) -> str:
    done = subprocess.run(["git", *args], cwd=root, env={**GIT_ENV, "HOME": str(root)}, input=data,
                          capture_output=True, check=True)  # fmt: skip
    return done.stdout.decode().strip()


def dangling_commit(root: Path, name: str) -> str:
    """A commit no ref reaches whose tree holds `.ssh/<name>`."""
    blob = git_out(root, "hash-object", "-w", "--stdin", data=f"{SECRET} dangling\n".encode())
    inner = git_out(root, "mktree", data=f"100644 blob {blob}\t{name}\n".encode())
    tree = git_out(root, "mktree", data=f"040000 tree {inner}\t.ssh\n".encode())
    return git_out(root, "commit-tree", tree, "-p", "HEAD", "-m", "dangling")


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    root = tmp_path_factory.mktemp("history") / "repo"
    write(root / "README.md", "# Demo\n")
    write(root / "src" / "main.py", "print('hi')\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, *COMMIT, "-m", "start")
    write(root / "keys" / "deploy.pem", f"{SECRET} pem\n")
    write(root / "config" / "secrets.yaml", f"token: {SECRET}\n")
    for variant in TRAILING:
        write(root / variant, f"{SECRET} {variant}\n")
    git(root, "add", "-A")
    git(root, *COMMIT, "-m", "add keys")
    git(root, "rm", "-q", "-r", "keys", *{variant.split("/")[0] for variant in TRAILING})
    git(root, "mv", "config/secrets.yaml", "config/settings.yaml")
    git(root, *COMMIT, "-m", "remove the key, rename the secrets")
    write(root / "config" / "settings.yaml", "token: redacted\n")
    git(root, *COMMIT, "-a", "-m", "redact")
    write(root / ".env.staged", f"STAGED={SECRET}\n")
    git(root, "add", "-f", ".env.staged")
    write(root / ".env.local", f"LOCAL={SECRET}\n")
    write(root / "id_rsa", f"{SECRET} key\n")
    return root, dangling_commit(root, "id_ed25519")


COMMANDS = [
    "git log --stat --all",
    "git log -p --all",
    "git log --name-status --all",
    "git log --all --format= --name-only",
    "git log -p --all -M --stat --summary",
    "git show --stat HEAD~2",
    "git show HEAD~1",
    "git diff HEAD~3 HEAD --stat",
    "git diff HEAD~3 --name-only",
    "git diff --cached",
    "git diff --cached --stat",
    "git status",
    "git status --porcelain --ignored --untracked-files=all",
    "git ls-files",
    "git ls-files -s",
    "git ls-files -o",
    "git grep -n SECRET",
    "git grep -n token HEAD~2",
    "git grep --cached -n SECRET",
    "git rev-list --all --parents HEAD DANGLING",
    "git shortlog -s --all",
    "git show --stat DANGLING",
    "git log -p DANGLING",
    "git diff HEAD DANGLING --stat",
]


@pytest.fixture(params=[*os_backends(), "none"])
async def client(
    request: pytest.FixtureRequest, history: tuple[Path, str], make_settings: Any
) -> AsyncIterator[Client]:
    settings = make_settings(history[0], exec={"sandbox": request.param}, workspace={"extra_deny": EXTRA_DENY})
    workspace = Workspace(settings)
    try:
        async with Client(build_server(workspace), mode="legacy") as connected:
            yield connected
    finally:
        workspace.close()


async def run(client: Client, command: str) -> dict[str, Any]:
    with anyio.fail_after(30):
        result = await client.call_tool("execute_bash", {"command": command})
    assert result.is_error is False, result.structured_content
    assert result.structured_content is not None
    return result.structured_content


def leaks(content: dict[str, Any]) -> list[str]:
    text = content["stdout"] + content["stderr"]
    return [name for name in (*DENIED, SECRET) if name in text]


async def test_no_git_command_shows_a_denied_file_from_history_index_or_working_tree(
    client: Client, history: tuple[Path, str]
) -> None:
    _, dangling = history
    shown: dict[str, str] = {}
    for command in COMMANDS:
        content = await run(client, command.replace("DANGLING", dangling))
        assert leaks(content) == [], (command, content)
        shown[command] = content["stdout"]
    assert "README.md" in shown["git ls-files"]  # the commands did run and print names
    assert "settings.yaml" in shown["git log --all --format= --name-only"]


@pytest.fixture
def evolving(tmp_path: Path, make_settings: Any) -> Iterator[tuple[Path, Workspace]]:
    root = tmp_path / "repo"
    write(root / "README.md", "# Demo\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, *COMMIT, "-m", "start")
    workspace = Workspace(make_settings(root, exec={"sandbox": os_backends()[0]}))
    yield root, workspace
    workspace.close()


def exclusions(workspace: Workspace, command: str) -> list[str]:
    """The exclude pathspecs the git stage of `command` gets right now."""
    service = exec_service(workspace)
    service.git.excludes.names.found()  # let a scan of what just changed finish (commands wait only 0.5 s for it)
    evaluation, cwd = service.prepare(command, ".")
    built = service.build(evaluation, cwd, service.backend(), service.scratch_dir(service.backend())[0], "t", 5)
    return [arg for arg in built.stages[0].argv if arg.startswith(":(exclude")]


async def test_exclusions_follow_new_commits_stages_and_dangling_objects(evolving: tuple[Path, Workspace]) -> None:
    root, workspace = evolving
    async with Client(build_server(workspace), mode="legacy") as client:
        assert leaks(await run(client, "git status")) == []
        assert len(exclusions(workspace, "git status")) == 1  # nothing to hide: one kept for the same semantics

        write(root / "vault.kdbx", f"{SECRET} vault\n")
        git(root, "add", "vault.kdbx")
        assert ":(exclude,glob,icase,top)**/*.kdbx" in exclusions(workspace, "git status")
        for command in ("git status", "git diff --cached --stat", "git ls-files -s"):
            assert leaks(await run(client, command)) == [], command

        git(root, *COMMIT, "-m", "vault")
        git(root, "rm", "-q", "--cached", "vault.kdbx")
        git(root, *COMMIT, "-m", "untrack the vault")
        for command in ("git log -p", "git show --stat HEAD~1", "git status --short"):
            assert leaks(await run(client, command)) == [], command

        dangling = dangling_commit(root, "id_ed25519")
        assert ":(exclude,glob,icase,top)**/.ssh/**" in exclusions(workspace, "git log")
        assert leaks(await run(client, f"git show --stat {dangling}")) == []

        git(root, "gc", "-q", "--prune=now")
        assert ":(exclude,glob,icase,top)**/*.kdbx" in exclusions(workspace, "git log")
        assert leaks(await run(client, "git log -p --all")) == []


async def test_a_change_while_git_runs_makes_it_run_again_with_every_exclusion(
    evolving: tuple[Path, Workspace], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, workspace = evolving
    blob = git_out(root, "hash-object", "-w", "--stdin", data=f"{SECRET} npmrc\n".encode())
    real_run = runner.run_pipeline
    runs: list[int] = []

    async def staging_meanwhile(stages: Any, **kwargs: Any) -> Any:
        runs.append(sum(arg.startswith(":(exclude") for arg in stages[0].argv))
        if len(runs) == 1:  # lands after the exclusions were chosen, before git reads the index
            git_out(root, "update-index", "--add", "--cacheinfo", f"100644,{blob},.npmrc")
        return await real_run(stages, **kwargs)

    monkeypatch.setattr(service_module, "run_pipeline", staging_meanwhile)
    assert exec_service(workspace).git.excludes.names.found() is not None  # scanned: the command gets the pruned list
    async with Client(build_server(workspace), mode="legacy") as client:
        content = await run(client, "git status --porcelain")
    assert leaks(content) == [] and ".npmrc" not in content["stdout"]
    assert len(runs) == 2 and runs[0] == 1 and runs[1] > 40  # pruned first, then the whole deny-list
