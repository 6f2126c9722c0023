"""The commands agents really use give the same output as the real program run by bash, on every backend."""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from exec_support import git, os_backends, write
from repo_sandbox.calls import CallContext
from repo_sandbox.exec.sandbox import Backend
from repo_sandbox.runtime.assembly import build_pipeline
from repo_sandbox.runtime.pipeline import CallOutcome
from repo_sandbox.tools.registry import TOOLS
from repo_sandbox.workspace import Workspace

pytestmark = pytest.mark.anyio

BACKENDS = [*os_backends(), "none"]
REFERENCE_ENV = {
    "PATH": "/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "HOME": "/nonexistent",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("benign") / "project"
    write(root / "README.md", "".join(f"README line {n}\n" for n in range(1, 31)))
    write(root / "CHANGES.md", "# Changes\n\n- first\n")
    write(root / "src" / "app.py", "import os\n\n# TODO: split\ndef run():\n    return 1  # TODO tests\n")
    write(root / "src" / "lib" / "util.py", "def util():\n    pass  # TODO\n")
    write(root / "src" / "notes.txt", "TODO in text\n")
    write(root / "f", "alice GET /\nbob GET /a\nalice POST /b\ncarol GET /\nalice GET /c\n")
    write(root / "data.json", '{"name":"demo","items":[{"id":1,"tags":["a","b"]},{"id":2}]}\n')
    git(root, "init", "-q", "-b", "main")
    git(root, "-c", "user.email=t@example.com", "-c", "user.name=T", "add", "-A")
    git(root, "-c", "user.email=t@example.com", "-c", "user.name=T", "commit", "-q", "-m", "initial")
    for n in range(2, 8):
        write(root / "src" / "app.py", f"import os\n\n# TODO: split\ndef run():\n    return {n}  # TODO tests\n")
        write(root / f"doc{n}.md", f"doc {n}\n")
        git(root, "-c", "user.email=t@example.com", "-c", "user.name=T", "add", "-A")
        git(root, "-c", "user.email=t@example.com", "-c", "user.name=T", "commit", "-q", "-m", f"change {n}")
    return root


@pytest.fixture(params=BACKENDS)
def workspace_for(request: pytest.FixtureRequest, project: Path, make_settings: Any) -> Iterator[Workspace]:
    workspace = Workspace(make_settings(project, exec={"sandbox": request.param}))
    yield workspace
    workspace.close()


async def run(workspace: Workspace, command: str, **arguments: Any) -> CallOutcome:
    with anyio.fail_after(30):
        return await build_pipeline(workspace, TOOLS).call(
            "execute_bash", {"command": command, **arguments}, CallContext(session_id=uuid.uuid4().hex[:12])
        )


def reference(project: Path, command: str, cwd: str = ".") -> str:
    return subprocess.run(
        ["bash", "-c", command],
        cwd=project / cwd,
        env=REFERENCE_ENV,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        check=False,
    ).stdout.decode()


AGENT_COMMANDS = [
    "git log --oneline -5",
    "git diff HEAD~1 --stat",
    "grep -rn TODO src | head -20",
    "find . -name '*.py' | wc -l",
    "wc -l *.md",
    "sed -n '1,20p' README.md",
    "awk '{print $1}' f | sort | uniq -c",
    "jq . data.json",
    "jq -r '.items[].id' data.json",
    "git show --stat HEAD",
    "git log --format='%s' -3 -- src/app.py",
    "git blame -s src/app.py",
    "git status --short",
    "git ls-files",
    "git grep -n TODO -- src",
    "sort -r f | head -2",
    "cut -d' ' -f2 f | sort | uniq -c | sort -rn",
    "tail -n 3 README.md",
    "head -c 20 README.md",
    "ls src",
    "du -s src",
    "diff CHANGES.md README.md",
    "cat -n CHANGES.md",
    "tr a-z A-Z",
    "echo 'hello world' | tr -s o",
]


LISTS_THE_ROOT = frozenset({"find . -name '*.py' | wc -l", "ls -la"})
"""Commands that list the root, which holds `.git`: Landlock cannot hide that name, so it refuses to list the
root (see `exec.mounts`); under landlock they are compared in `src`, and the refusal is tested below."""


def cwd_for(workspace: Workspace, command: str) -> str:
    return "src" if workspace.settings.exec.sandbox == "landlock" and command in LISTS_THE_ROOT else "."


@pytest.mark.slow
@pytest.mark.parametrize("command", AGENT_COMMANDS)
async def test_agent_commands_give_the_real_programs_output(
    workspace_for: Workspace, project: Path, command: str
) -> None:
    cwd = cwd_for(workspace_for, command)
    outcome = await run(workspace_for, command, cwd=cwd)
    assert not outcome.is_error, outcome.payload
    assert outcome.payload["stdout"] == reference(project, command, cwd)
    assert outcome.payload["stdout_truncated"] is False
    assert outcome.payload["sandbox"] == Backend(workspace_for.settings.exec.sandbox).os_layer


def _entries(listing: str) -> list[str]:
    lines = [line for line in listing.splitlines() if not line.startswith("total ")]
    return [line for line in lines if line.split()[-1] not in (".", "..", ".git")]


async def test_ls_la_lists_the_same_entries_as_the_real_ls(workspace_for: Workspace, project: Path) -> None:
    cwd = cwd_for(workspace_for, "ls -la")
    outcome = await run(workspace_for, "ls -la", cwd=cwd)
    assert not outcome.is_error, outcome.payload
    assert _entries(outcome.payload["stdout"]) == _entries(reference(project, "ls -la", cwd))


@pytest.mark.parametrize("backend", [b for b in os_backends() if b == "landlock"])
@pytest.mark.parametrize("command", sorted(LISTS_THE_ROOT))
async def test_landlock_refuses_to_list_a_directory_holding_a_denied_entry(
    make_settings: Any, project: Path, command: str, backend: str
) -> None:
    workspace = Workspace(make_settings(project, exec={"sandbox": backend}))
    try:
        outcome = await run(workspace, command)
    finally:
        workspace.close()
    assert "Permission denied" in outcome.payload["stderr"]
    assert "cannot be listed" in outcome.payload["stderr"]
    assert ".git" not in outcome.payload["stdout"].split()


async def test_non_zero_exit_is_a_normal_result(workspace_for: Workspace) -> None:
    outcome = await run(workspace_for, "grep nomatch README.md")
    assert not outcome.is_error
    assert outcome.payload["exit_code"] == 1
    assert (await run(workspace_for, "true | false")).payload["exit_code"] == 1
    assert (await run(workspace_for, "false | true")).payload["exit_code"] == 0


async def test_stderr_of_every_stage_is_returned(workspace_for: Workspace) -> None:
    outcome = await run(workspace_for, "cat missing-one | cat - missing-two")
    assert "missing-one" in outcome.payload["stderr"]
    assert "missing-two" in outcome.payload["stderr"]


async def test_cwd_argument_sets_the_working_directory(workspace_for: Workspace, project: Path) -> None:
    outcome = await run(workspace_for, "pwd", cwd="src")
    shown = "/workspace" if outcome.payload["sandbox"] == "bwrap" else str(project)  # bwrap: a neutral path
    assert outcome.payload["stdout"] == f"{shown}/src\n"
    assert (await run(workspace_for, "ls *.py", cwd="src")).payload["stdout"] == "app.py\n"
