"""Every allowlisted program that recurses or dereferences, against symlinks in the repository that point
outside it (issue 19, finding 2): each row is refused by the command policy, or runs and shows nothing from
outside the repository, under every OS sandbox backend here.

The links point at what a sandbox still mounts (`/etc/passwd`, `/proc/self/mountinfo`, `/proc/1/cmdline`),
at a file and a tree outside the repository that it does not mount, and at the denied `.env`. `diff -r`
followed them (the red-team pass printed `/etc/passwd` and bubblewrap's `/proc` with host paths): diff now
always runs with `--no-dereference`, and compares links as links.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from exec_support import git, leaked_names, os_backends
from repo_sandbox.calls import CallContext
from repo_sandbox.config.loader import load_settings
from repo_sandbox.exec.sandbox import Backend, installed
from repo_sandbox.runtime.assembly import build_pipeline
from repo_sandbox.tools.registry import TOOLS
from repo_sandbox.workspace import Workspace

pytestmark = pytest.mark.anyio

OUTSIDE = "OUTSIDE-LINK-SECRET-9b41"
ENV = "ENV-LINK-SECRET-27fd"
SYSTEM_MARKERS = ("root:x:0:", "--unshare-all", "--ro-bind", " - tmpfs ", " rw,", "/usr/bin/bwrap")
"""Text of /etc/passwd, of bwrap's command line (/proc/1/cmdline) and of /proc/self/mountinfo."""
RAN = "ran"
OUTSIDE_ROOT = "path_outside_root"
ARG = "argument_not_allowed"
LINKS = {
    "passwd": "/etc/passwd",
    "mountinfo": "/proc/self/mountinfo",
    "cmdline": "/proc/1/cmdline",
    "outrel": "../../outside/secret.txt",
}
"""links/NAME -> target (plus links/outside and links/outdir, absolute links to the outside file and tree).
`links` holds no denied name, so that Landlock lets programs list it; `envlinks/dotenv` -> ../.env does."""

ROWS: list[tuple[str, str]] = [
    # diff: recursion meets links; forced --no-dereference compares them as links
    ("diff -r links other", RAN),
    ("diff -r other links", RAN),
    ("diff -rq links other", RAN),
    ("diff -ru links other", RAN),
    ("diff -rN links other", RAN),
    ("diff -r --text links other", RAN),
    ("diff -r --no-dereference links other", RAN),
    ("diff --recursive --unified links other", RAN),
    ("diff -r . other", RAN),
    ("diff -r envlinks other", RAN),
    ("diff links/passwd other/passwd", OUTSIDE_ROOT),
    ("diff --from-file=other links", RAN),
    ("diff --to-file=links/passwd other/passwd", OUTSIDE_ROOT),
    # find
    ("find -L links", ARG),
    ("find -H links", ARG),
    ("find links -follow", ARG),
    ("find links -type f", RAN),
    ("find links -xtype f", RAN),
    ("find . -name passwd", RAN),
    ("find links/passwd", OUTSIDE_ROOT),
    # du
    ("du -L links", ARG),
    ("du --dereference links", ARG),
    ("du -D links", ARG),
    ("du -H links", ARG),
    ("du --dereference-args links", ARG),
    ("du -a links", RAN),
    ("du -ab .", RAN),
    # ls
    ("ls -L links", ARG),
    ("ls -lL links", ARG),
    ("ls -H links", ARG),
    ("ls --dereference-command-line-symlink-to-dir links", ARG),
    ("ls -R links", RAN),
    ("ls -lR links", RAN),
    ("ls -laR .", RAN),
    ("ls -l links/outdir", OUTSIDE_ROOT),
    # tree
    ("tree -l links", ARG),
    ("tree links", RAN),
    ("tree -a -f -s links", RAN),
    # rg
    ("rg -L x links", ARG),
    ("rg --follow x links", ARG),
    ("rg root links", RAN),
    ("rg -uuu root .", RAN),
    ("rg -uuu SECRET .", RAN),
    # grep
    ("grep -R root links", ARG),
    ("grep --dereference-recursive root links", ARG),
    ("grep -r root links", RAN),
    ("grep -r SECRET .", RAN),
    ("grep -ra . links", RAN),
    ("grep -r KEY envlinks", RAN),
    ("grep root links/passwd", OUTSIDE_ROOT),
    # file, stat, realpath
    ("file -L links/passwd", OUTSIDE_ROOT),
    ("file links/passwd", OUTSIDE_ROOT),
    ("file -L links/outdir", OUTSIDE_ROOT),
    ("stat -L links/passwd", OUTSIDE_ROOT),
    ("stat -L links/mountinfo", OUTSIDE_ROOT),
    ("stat --dereference links/outside", OUTSIDE_ROOT),
    ("realpath links/passwd", OUTSIDE_ROOT),
    ("realpath -s links/outdir", OUTSIDE_ROOT),
    # readers of file lists and of files named in options
    ("sort --files0-from=list0", ARG),
    ("sort --random-source=links/passwd other/passwd", ARG),
    ("wc --files0-from=list0", ARG),
    ("du --files0-from=list0", ARG),
    ("jq -n --rawfile a links/passwd '$a'", ARG),
    ("jq -n --slurpfile a links/passwd '$a'", ARG),
    ("tree --fromfile list0", ARG),
    ("file -f list0", ARG),
    # readers of a named link
    ("cat links/passwd", OUTSIDE_ROOT),
    ("cat links/outrel", OUTSIDE_ROOT),
    ("cat links/outdir/secret.txt", OUTSIDE_ROOT),
    ("head links/mountinfo", OUTSIDE_ROOT),
    ("tail links/cmdline", OUTSIDE_ROOT),
    ("nl links/outside", OUTSIDE_ROOT),
    ("tac links/passwd", OUTSIDE_ROOT),
    ("cut -c1- links/passwd", OUTSIDE_ROOT),
    ("uniq links/passwd", OUTSIDE_ROOT),
    ("jq . links/passwd", OUTSIDE_ROOT),
    ("awk 1 links/passwd", OUTSIDE_ROOT),
    ("sed -n p links/passwd", OUTSIDE_ROOT),
    ("wc -l links/passwd", OUTSIDE_ROOT),
    ("column -t links/passwd", OUTSIDE_ROOT),
    # programs that open files named in their program text (sandbox modes refuse it)
    ("awk 'BEGIN { while ((getline l < \"links/passwd\") > 0) print l }'", RAN),
    ("sed 'r links/passwd' other/passwd", RAN),
    ("sed 'R links/outside' other/passwd", RAN),
    # git: the working tree's links are blobs holding their target text
    ("git diff --no-index links other", ARG),
    ("git diff --no-index --text links other", ARG),
    ("git grep -e root", RAN),
    ("git ls-files -s", RAN),
    ("git show HEAD:links/passwd", RAN),
    ("git log -p --stat", RAN),
]
RG = RAN if installed("rg") else "command_not_allowed"
"""ripgrep is in the allowlist; where it is not installed the server says so (the -L/--follow rows are refused
by the policy first either way)."""
ROWS = [(command, RG if command.startswith("rg ") and expect == RAN else expect) for command, expect in ROWS]


def build(base: Path) -> Path:
    root, outside = base / "repo", base / "outside"
    (root / "links").mkdir(parents=True)
    (root / "other").mkdir()
    (outside / "dir").mkdir(parents=True)
    (outside / "secret.txt").write_text(f"{OUTSIDE} file\n")
    (outside / "dir" / "secret.txt").write_text(f"{OUTSIDE} tree\n")
    (root / ".env").write_text(f"KEY={ENV}\n")
    for name, target in LINKS.items():
        (root / "links" / name).symlink_to(target)
    (root / "links" / "outside").symlink_to(outside / "secret.txt")
    (root / "links" / "outdir").symlink_to(outside / "dir")
    (root / "envlinks").mkdir()
    (root / "envlinks" / "dotenv").symlink_to("../.env")
    for name in (*LINKS, "outside", "outdir", "dotenv"):
        (root / "other" / name).write_text("root inside\n")
    (root / "list0").write_bytes(b"links/passwd\0links/outside\0")
    git(root, "init", "-q", "-b", "main")
    # envlinks/dotenv stays out of history: its blob is the text '../.env', content rather than a denied entry
    git(root, "-c", "user.email=t@example.com", "-c", "user.name=T", "add", "other", "list0", "links")
    git(root, "-c", "user.email=t@example.com", "-c", "user.name=T", "commit", "-q", "-m", "links")
    return root


@pytest.fixture(scope="module")
def linked(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("links")
    return base, build(base)


@pytest.fixture(params=os_backends())
def backend_ws(request: pytest.FixtureRequest, linked: tuple[Path, Path]) -> Iterator[tuple[str, Workspace]]:
    _, root = linked
    backend: str = request.param
    overrides = {("workspace", "root"): str(root), ("exec", "sandbox"): backend}
    workspace = Workspace(load_settings(None, env={}, overrides=overrides))
    yield backend, workspace
    workspace.close()


def test_the_table_covers_every_recursing_program() -> None:
    programs = {command.split()[0] for command, _ in ROWS}
    assert programs >= {"diff", "find", "du", "ls", "tree", "rg", "grep", "file", "stat", "sort", "wc", "jq"}
    assert len({command for command, _ in ROWS}) == len(ROWS)
    assert os_backends(), "no OS sandbox backend works here"


@pytest.mark.parametrize(("command", "expect"), ROWS, ids=[command[:60] for command, _ in ROWS])
async def test_a_symlink_to_outside_is_refused_or_harmless(
    command: str, expect: str, backend_ws: tuple[str, Workspace], linked: tuple[Path, Path]
) -> None:
    backend, workspace = backend_ws
    _, root = linked
    session = CallContext(session_id=uuid.uuid4().hex[:12])
    with anyio.fail_after(60):
        outcome = await build_pipeline(workspace, TOOLS).call("execute_bash", {"command": command}, session)
    payload = json.dumps(outcome.payload)
    if expect == RAN:
        assert not outcome.is_error, payload
        assert outcome.payload["sandbox"] == Backend(backend).os_layer
        output: Any = outcome.payload["stdout"] + outcome.payload["stderr"]
        assert leaked_names(output) == set(), payload[:2000]
    else:
        assert outcome.error_code == expect, payload
    for text in (OUTSIDE, ENV, *SYSTEM_MARKERS):
        assert text not in payload, f"{text!r} shows: {payload[:2000]}"
    if backend != "landlock":  # Landlock runs in place: the repository's host path shows there (pwd)
        assert str(root) not in payload, payload[:2000]
