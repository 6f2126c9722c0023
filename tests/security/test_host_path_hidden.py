"""What a sandboxed program learns of the host (issue 19, finding 6): under bubblewrap the repository shows at
`/workspace` and the host name is `sandbox`, so the commands that print where they run name neither the
repository's host path nor the machine. Landlock confines programs in place: there they still print the host
path (docs/sandbox-view.md says so), which these rows pin too.
"""

from __future__ import annotations

import json
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from exec_support import git, os_backends
from repo_sandbox.calls import CallContext
from repo_sandbox.config.loader import load_settings
from repo_sandbox.runtime.assembly import build_pipeline
from repo_sandbox.tools.registry import TOOLS
from repo_sandbox.workspace import Workspace
from tree_files import write

pytestmark = pytest.mark.anyio

ROWS: list[tuple[str, str, str]] = [
    # (command, cwd, what it prints with the repository at ROOT on a machine named HOST)
    ("pwd", ".", "ROOT\n"),
    ("pwd", "src", "ROOT/src\n"),
    ("pwd -P", "src", "ROOT/src\n"),
    ("realpath .", ".", "ROOT\n"),
    ("realpath main.py", "src", "ROOT/src/main.py\n"),
    ("realpath -s ../README.md", "src", "ROOT/README.md\n"),
    ("git rev-parse --show-toplevel", ".", "ROOT\n"),
    ("git rev-parse --show-toplevel", "src", "ROOT\n"),
    ("git rev-parse --show-prefix", "src", "src/\n"),
    ("git rev-parse --is-inside-work-tree", "src", "true\n"),
    ("stat -c %m README.md", ".", "ROOT\n"),
    ("stat -c %m main.py", "src", "ROOT/src\n"),  # bwrap: src is bound into the rebuilt root
    ("ls --hyperlink=always README.md", ".", "\x1b]8;;file://HOSTROOT/README.md\x07README.md\x1b]8;;\x07\n"),
    ("ls --hyperlink=always", "src", "\x1b]8;;file://HOSTROOT/src/main.py\x07main.py\x1b]8;;\x07\n"),
]


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("where") / "repo"
    write(root / "README.md", "# where\n")
    write(root / "src" / "main.py", "print('here')\n")
    write(root / ".env", "KEY=x\n")  # the root is rebuilt under bwrap: its mount point is /workspace still
    git(root, "init", "-q", "-b", "main")
    git(root, "-c", "user.email=t@example.com", "-c", "user.name=T", "add", "README.md", "src")
    git(root, "-c", "user.email=t@example.com", "-c", "user.name=T", "commit", "-q", "-m", "one")
    return root


@pytest.fixture(params=os_backends())
def backend_ws(request: pytest.FixtureRequest, repo: Path) -> Iterator[tuple[str, Workspace]]:
    overrides = {("workspace", "root"): str(repo), ("exec", "sandbox"): request.param}
    workspace = Workspace(load_settings(None, env={}, overrides=overrides))
    yield request.param, workspace
    workspace.close()


@pytest.mark.parametrize(("command", "cwd", "prints"), ROWS, ids=[f"{c}@{d}" for c, d, _ in ROWS])
async def test_where_a_program_runs(
    command: str, cwd: str, prints: str, backend_ws: tuple[str, Workspace], repo: Path
) -> None:
    backend, workspace = backend_ws
    session = CallContext(session_id=uuid.uuid4().hex[:12])
    with anyio.fail_after(60):
        outcome = await build_pipeline(workspace, TOOLS).call("execute_bash", {"command": command, "cwd": cwd}, session)
    assert not outcome.is_error, outcome.payload
    payload = json.dumps(outcome.payload)
    if backend.startswith("bwrap"):
        expected = prints.replace("ROOT", "/workspace").replace("HOST", "sandbox")
        assert outcome.payload["stdout"] == expected, payload
        assert str(repo) not in payload
        assert f"//{socket.gethostname()}/" not in payload
    elif command.startswith("stat -c %m"):  # landlock: the mount table cannot be read; stat guesses /
        assert outcome.payload["stdout"] == "/\n", payload
    else:  # landlock: in place, as documented
        expected = prints.replace("ROOT", str(repo)).replace("HOST", socket.gethostname())
        assert outcome.payload["stdout"] == expected, payload


ABSOLUTE: list[tuple[str, str, str]] = [
    # (command with ROOT for where programs see the repository, bwrap's result, Landlock's result)
    ("cat ROOT/README.md", "ok", "ok"),
    ("cat ROOT/src/../README.md", "ok", "ok"),
    ("ls ROOT/src", "ok", "ok"),
    ("ls ROOT/s*", "ok", "ok"),
    ("diff ROOT/README.md README.md", "ok", "ok"),
    ("git log --oneline -- ROOT/README.md", "ok", "ok"),
    ("cat ROOT/.env", "path_denied", "path_denied"),
    ("cat ROOT/../outside.txt", "path_outside_root", "path_outside_root"),
    ("cat HOSTROOT/README.md", "path_outside_root", "ok"),  # bwrap: the host path is not where cat looks
    ("cat /workspace/README.md", "ok", "path_outside_root"),  # Landlock: /workspace is a host path
    ("ls /workspace/s*", "ok", "path_outside_root"),
]


@pytest.mark.parametrize(("command", "bwrap", "landlock"), ABSOLUTE, ids=[c for c, _, _ in ABSOLUTE])
async def test_absolute_operands_are_read_where_the_program_sees_the_repository(
    command: str, bwrap: str, landlock: str, backend_ws: tuple[str, Workspace], repo: Path
) -> None:
    backend, workspace = backend_ws
    shown = "/workspace" if backend.startswith("bwrap") else str(repo)
    text = command.replace("HOSTROOT", str(repo)).replace("ROOT", shown)
    session = CallContext(session_id=uuid.uuid4().hex[:12])
    with anyio.fail_after(60):
        outcome = await build_pipeline(workspace, TOOLS).call("execute_bash", {"command": text}, session)
    expected = bwrap if backend.startswith("bwrap") else landlock
    assert (outcome.error_code or "ok") == expected, outcome.payload
    if expected == "ok":
        assert outcome.payload["exit_code"] == 0, outcome.payload
