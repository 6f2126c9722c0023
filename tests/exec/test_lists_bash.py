"""Command lists, cd, redirections and the added programs run as bash runs them: the same stdout and exit code
as a real `bash -c` of the same line in a copy of the repository, under every sandbox backend."""

from __future__ import annotations

import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from exec_support import os_backends
from repo_sandbox.calls import CallContext
from repo_sandbox.runtime.assembly import build_pipeline
from repo_sandbox.tools.registry import TOOLS
from repo_sandbox.workspace import Workspace
from tree_files import write

pytestmark = pytest.mark.anyio

BASH_ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}

LINES = [
    # && || ; with bash's left-to-right status semantics
    "ls && echo ok",
    "ls nosuch && echo ok",
    "ls nosuch || echo fallback",
    "ls nosuch; echo after",
    "true && false || echo x",
    "false || true && echo y",
    "false && echo a || echo b",
    "true || echo a && echo b",
    "false && echo a; echo b",
    "true || echo a; false",
    "false; true",
    "true; false",
    "ls;",
    "grep -c TODO README.md || true",
    "grep -q nothing README.md && echo found || echo missing",
    # cd
    "cd src",
    "cd nosuch",
    "cd src && ls",
    "cd src && cat a.txt && cd .. && ls",
    "cd src; cd ..; ls",
    "cd src/ && ls",
    "cd ./src/../src && ls",
    "cd nosuch && ls",
    "cd nosuch; ls",
    "cd nosuch || ls",
    "cd README.md; ls",
    "cd src && cd nosuch; ls",
    "false && cd src; ls",
    "true || cd src; ls",
    "true && cd src || cd nosuch; ls",
    "cd lnk && ls",
    "cd lnk/.. && ls",
    "cd lnk && cd .. && ls",
    "cd 'with space' && ls",
    # redirections
    "ls nosuch 2>/dev/null",
    "ls nosuch 2>&1",
    "ls nosuch 2>&1 | wc -l",
    "ls nosuch |& cat",
    "ls nosuch 2>/dev/null |& cat",
    "ls >/dev/null && echo quiet",
    "ls README.md nosuch >/dev/null 2>&1; echo x",
    "ls README.md nosuch 2>&1 >/dev/null",
    "ls README.md 1>&2",
    "ls README.md >&2 | wc -l",
    "ls README.md nosuch &>/dev/null || echo failed",
    "ls README.md &>>/dev/null",
    "cat README.md | head -1 >/dev/null; echo done",
    "grep -rn TODO . 2>/dev/null | sort",
    # the added programs
    "seq 3 && seq 2 4",
    "seq -s, 5",
    "base64 README.md | base64 -d",
    "echo aGVsbG8K | base64 -d",
    "sha256sum README.md && md5sum src/a.txt",
    "sha1sum src/a.txt; sha512sum src/a.txt",
    "xxd -p README.md",
    "xxd -s 2 -l 4 src/a.txt",
    "od -c src/a.txt | head -2",
    "hexdump -C src/a.txt",
    "comm -12 keys1.txt keys2.txt",
    "paste keys1.txt keys2.txt",
    "join keys1.txt keys2.txt",
    "expand -t 2 tabs.txt",
    "fold -w 3 src/a.txt",
    "fmt -w 10 README.md",
    "rev src/a.txt",
    "sleep 0.1 && echo slept",
    "which ls",
    "which nosuchprogram || echo absent",
    "date -d @0 -u +%Y-%m-%d",
    "numfmt --to=iec 1048576",
    "printenv LANG",
    "test -f README.md && echo file",
    "[ -d src ] && echo dir",
    "test -d nosuch || echo none",
    "[ a = b ]; echo after",
    "[ -f src/*.txt ] && echo glob",
    "expr 2 + 3",
    "expr 2 - 2",
]


@pytest.fixture(scope="module")
def trees(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The repository the server gets, and a copy of it for bash."""
    base = tmp_path_factory.mktemp("lists")
    root = base / "repo"
    write(root / "README.md", "# Demo\n\nTODO: write docs\nsecond line of text\n")
    write(root / "src" / "a.txt", "alpha\nbeta\n")
    write(root / "src" / "b.py", "print('x')  # TODO\n")
    write(root / "keys1.txt", "a 1\nb 2\nc 3\n")
    write(root / "keys2.txt", "b x\nc y\nd z\n")
    write(root / "tabs.txt", "a\tb\n\tc\n")
    write(root / "with space" / "in.txt", "x\n")
    (root / "lnk").symlink_to("src")
    copy = base / "copy"
    shutil.copytree(root, copy, symlinks=True)
    return root, copy


def bash(line: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["bash", "-c", line], cwd=cwd, env=BASH_ENV, capture_output=True, timeout=30, check=False)


def _cases() -> Iterator[Any]:
    for backend in (*os_backends(), "none"):
        for line in LINES:
            yield pytest.param(line, backend, id=f"{backend}-{line[:50]}")


@pytest.mark.slow
@pytest.mark.parametrize(("line", "backend"), list(_cases()))
async def test_a_line_runs_as_bash_runs_it(
    line: str, backend: str, trees: tuple[Path, Path], make_settings: Any
) -> None:
    root, copy = trees
    real = await anyio.to_thread.run_sync(bash, line, copy)
    workspace = Workspace(make_settings(root, exec={"sandbox": backend}))
    try:
        with anyio.fail_after(60):
            outcome = await build_pipeline(workspace, TOOLS).call(
                "execute_bash", {"command": line}, CallContext(session_id=uuid.uuid4().hex[:12])
            )
    finally:
        workspace.close()
    assert not outcome.is_error, outcome.payload
    assert (outcome.payload["stdout"], outcome.payload["exit_code"]) == (real.stdout.decode(), real.returncode)


async def test_steps_report_each_element_and_skipped_ones_as_null(trees: tuple[Path, Path], make_settings: Any) -> None:
    root, _ = trees
    workspace = Workspace(make_settings(root, exec={"sandbox": "none"}))
    try:
        outcome = await build_pipeline(workspace, TOOLS).call(
            "execute_bash", {"command": "cd nosuch; ls nosuch || true && false || echo x"}, CallContext()
        )
        single = await build_pipeline(workspace, TOOLS).call("execute_bash", {"command": "ls | wc -l"}, CallContext())
    finally:
        workspace.close()
    assert outcome.payload["steps"] == [
        {"command": "cd nosuch", "exit_code": 1},
        {"command": "ls nosuch", "exit_code": 2},
        {"command": "true", "exit_code": 0},
        {"command": "false", "exit_code": 1},
        {"command": "echo x", "exit_code": 0},
    ]
    assert outcome.payload["stderr"].startswith("cd: nosuch: No such file or directory\n")
    assert single.payload["steps"] is None


async def test_a_refusal_names_the_element_and_nothing_runs(
    trees: tuple[Path, Path], make_settings: Any, tmp_path: Path
) -> None:
    root, _ = trees
    workspace = Workspace(make_settings(root, exec={"sandbox": "none"}))
    try:
        outcome = await build_pipeline(workspace, TOOLS).call(
            "execute_bash", {"command": "sleep 5; cat ../copy/README.md"}, CallContext()
        )
    finally:
        workspace.close()
    error = outcome.payload["error"]
    assert error["code"] == "path_outside_root"
    assert (error["details"]["element"], error["details"]["element_index"]) == ("cat ../copy/README.md", 1)
    assert outcome.duration_ms < 4000  # refused before `sleep 5` ran
