"""Names the deny-list refuses only in their NFKC form never show through git.

The deny-list matches names case-folded and NFKC-normalised, so `secret.ｋｅｙ` (fullwidth) is `secret.key` to it
and every other tool refuses it; git compares bytes, so its `**/*.key` exclusion does not match. Through the
real MCP SDK client, under every sandbox backend here and `none`, a repository holds such names committed (at
the top, in a subdirectory, as a directory), renamed away, only in a dangling commit, only in the index, and
in compatibility forms (fullwidth, a ligature, mathematical bold, the Kelvin sign, behind a byte that is not
UTF-8): no git command shows one, as a name or as content. While the names git could show are not known (a
borrowed object database, a first scan still running, too many names) no non-ASCII path shows at all; once
they are, a harmless non-ASCII file (`café.txt`) shows again.
"""

from __future__ import annotations

import os
import re
import shutil
import threading
import unicodedata
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from exec_support import git, os_backends, write
from repo_sandbox.exec.git import excludes, foreign, records, scan
from repo_sandbox.exec.git.names import GitNames
from repo_sandbox.exec.service import exec_service
from repo_sandbox.wiring.assembly import build_server
from repo_sandbox.workspace import Workspace
from security.test_git_deny_history import COMMIT, git_out
from security.test_git_objects import NO_BREAKER, RAN, REFUSED

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

SECRET = "NFKC-SECRET"
REFUSED_FILES = {
    "secret.ｋｅｙ": "secret.key",  # fullwidth letters, `*.key`
    ".ｅｎｖ": ".env",  # `.env*`
    "sub/deep/ｉｄ_ｒｓａ": "id_rsa",  # in a subdirectory, `id_rsa*`
    ".ｓｓｈ/known_hosts": ".ssh/",  # a denied directory (`.ssh/`) in fullwidth form
    ".ｇｉｔ/config": ".git/",  # the same for `.git/`
    "vault.keyﬆore": "vault.keystore",  # a compatibility ligature (U+FB06 'st'), `*.keystore`
    "𝐜𝐫𝐞𝐝𝐞𝐧𝐭𝐢𝐚𝐥𝐬.json": "credentials.json",  # mathematical bold
    "deploy.\u212aey": "deploy.key",  # the Kelvin sign, which NFKC makes a 'K'
    os.fsdecode(b"\xff-token.\xef\xbd\x8b\xef\xbd\x85\xef\xbd\x99"): "-token.key",  # not UTF-8, then fullwidth
}
"""Committed (and still in the working tree): name -> what it is to the deny-list."""
ONLY_SOMEWHERE = {
    "dangling.ｐｅｍ": "dangling.pem",  # only in a dangling commit (a loose tree)
    "staged.ｐｅｍ": "staged.pem",  # only in the index
    "untracked.ｐｅｍ": "untracked.pem",  # only in the working tree
    "moved.ｋｅｙ": "moved.key",  # renamed away: its content lives on as public.txt
}
VISIBLE = {"café.txt": "CAFE-VISIBLE", "文档/说明.md": "DOC-VISIBLE"}
_QUOTED = re.compile(rb"\\([0-7]{3})")


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The repository and its dangling commit."""
    root = tmp_path_factory.mktemp("nfkc") / "repo"
    write(root / "README.md", "# Demo\n")
    for name, text in VISIBLE.items():
        write(root / name, f"{text}\n")
    write(root / "moved.ｋｅｙ", "plain words, visible as public.txt once renamed\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A", "-f")
    git(root, *COMMIT, "-m", "start")
    for number, name in enumerate(REFUSED_FILES):
        write(root / name, f"{SECRET}-{number} first\n")
    git(root, "add", "-A", "-f")
    git(root, *COMMIT, "-m", "secrets")
    git(root, "mv", "moved.ｋｅｙ", "public.txt")
    git(root, *COMMIT, "-m", "rename")
    for number, name in enumerate(REFUSED_FILES):
        write(root / name, f"{SECRET}-{number} second\n")
    write(root / "README.md", "# Demo\nmore\n")
    git(root, *COMMIT, "-a", "-m", "touch")
    git(root, "gc", "-q")  # the history packed: the dangling commit and the staged blob below stay loose
    blob = git_out(root, "hash-object", "-w", "--stdin", data=f"{SECRET}-dangling\n".encode())
    tree = git_out(root, "mktree", data=f"100644 blob {blob}\tdangling.ｐｅｍ\n".encode())
    dangling = git_out(root, "commit-tree", tree, "-p", "HEAD", "-m", "dangling")
    staged = git_out(root, "hash-object", "-w", "--stdin", data=f"{SECRET}-staged\n".encode())
    git(root, "update-index", "--add", "--cacheinfo", f"100644,{staged},staged.ｐｅｍ")  # not in the working tree
    write(root / "untracked.ｐｅｍ", f"{SECRET}-untracked\n")
    return root, dangling


ROWS: list[tuple[str, str]] = [
    # history: content and names
    ("git log -p --all", RAN),
    ("git log -p --all -M --stat --summary", RAN),
    ("git log --stat --all", RAN),
    ("git log --all --format= --name-only", RAN),
    ("git log --name-status --all", RAN),
    ("git log --raw --all", RAN),
    ("git log -p -S first --all", RAN),
    ("git show HEAD", RAN),
    ("git show HEAD~1", RAN),
    ("git show --stat HEAD~2", RAN),
    ("git diff HEAD~1", RAN),
    ("git diff HEAD~3 HEAD --stat", RAN),
    ("git diff HEAD~3 --name-only", RAN),
    ("git diff HEAD~3 HEAD --stat --dirstat=files,0", RAN),
    # the working tree, the index (a name only there), and grep in each
    ("git grep -n NFKC", RAN),
    ("git grep -n NFKC HEAD", RAN),
    ("git grep -n NFKC HEAD~2", RAN),
    ("git grep --cached -n NFKC", RAN),
    ("git grep --untracked -n NFKC", RAN),
    ("git ls-files", RAN),
    ("git ls-files -s", RAN),
    ("git ls-files -o", RAN),
    ("git status", RAN),
    ("git status --porcelain --untracked-files=all", RAN),
    ("git diff --cached", RAN),
    ("git diff --cached --stat", RAN),
    # only in a dangling commit
    ("git show --stat DANGLING", RAN),
    ("git log -p DANGLING", RAN),
    ("git diff HEAD DANGLING --stat", RAN),
    # blame follows renames past any pathspec (to moved.ｋｅｙ here): refused while a commit deletes a refused name
    ("git blame public.txt", REFUSED),
    ("git blame -f public.txt", REFUSED),
]
OPERANDS: list[tuple[str, str]] = [
    # already refused before git's NFKC gap was closed: `REV:path` operands obey the deny-list (NFKC included)
    ("git show HEAD:secret.ｋｅｙ", REFUSED),
    ("git show HEAD~1:.ｓｓｈ/known_hosts", REFUSED),
    ("git grep -n NFKC HEAD -- vault.keyﬆore", REFUSED),
    ("git diff HEAD~1 HEAD -- deploy.\u212aey", REFUSED),
]


def shown(text: str) -> str:
    """What a reader of `text` sees: git's octal escapes (`"caf\\303\\251.txt"`) decoded, NFKC, case-folded."""
    raw = _QUOTED.sub(lambda match: bytes([int(match.group(1), 8)]), text.encode("utf-8", "surrogateescape"))
    decoded = raw.decode("utf-8", "replace")
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", decoded).casefold())


def leaks(text: str) -> list[str]:
    seen = shown(text)
    words = [SECRET.lower(), *REFUSED_FILES.values(), *ONLY_SOMEWHERE.values()]
    return [word for word in words if word in seen]


def settings_for(root: Path, backend: str, make_settings: Any) -> Any:
    return make_settings(root, exec={"sandbox": backend}, guard=NO_BREAKER)


@pytest.fixture(params=[*os_backends(), "none"])
async def client(
    request: pytest.FixtureRequest, repo: tuple[Path, str], make_settings: Any
) -> AsyncIterator[tuple[Client, str]]:
    workspace = Workspace(settings_for(repo[0], request.param, make_settings))
    try:
        exec_service(workspace).git.excludes.names.found()  # names known: the precise exclusions (OS sandboxes)
        async with Client(build_server(workspace), mode="legacy") as connected:
            yield connected, request.param
    finally:
        workspace.close()


async def call(client: Client, command: str) -> tuple[bool, dict[str, Any]]:
    with anyio.fail_after(30):
        result = await client.call_tool("execute_bash", {"command": command})
    assert result.structured_content is not None
    return result.is_error, result.structured_content


async def problems_of(client: Client, rows: list[tuple[str, str]], dangling: str) -> list[tuple[str, object]]:
    """Every row that did not behave: refused when it should run, ran when it should be refused, or leaked."""
    problems: list[tuple[str, object]] = []
    for row, expect in rows:
        is_error, content = await call(client, row.replace("DANGLING", dangling))
        if expect == REFUSED:
            if not is_error or content["error"]["category"] != "permission_denied":
                problems.append((row, leaks(str(content)) or content))
        elif is_error:
            problems.append((row, content))
        elif found := leaks(content["stdout"] + content["stderr"]):
            problems.append((row, found))
    return problems


async def test_no_git_command_shows_a_name_refused_only_in_its_nfkc_form(
    client: tuple[Client, str], repo: tuple[Path, str]
) -> None:
    connected, _ = client
    assert await problems_of(connected, ROWS, repo[1]) == []


async def test_rev_path_operands_with_nfkc_names_are_refused(
    client: tuple[Client, str], repo: tuple[Path, str]
) -> None:
    connected, _ = client
    assert await problems_of(connected, OPERANDS, repo[1]) == []


async def test_harmless_non_ascii_files_show_once_the_names_are_known(client: tuple[Client, str]) -> None:
    connected, backend = client
    listing = shown((await call(connected, "git ls-files"))[1]["stdout"])
    history = (await call(connected, "git log -p --all"))[1]["stdout"]
    grep = (await call(connected, "git grep -n VISIBLE HEAD"))[1]["stdout"]
    if backend == "none":  # no pruning without an OS sandbox: every non-ASCII path stays excluded
        assert "café.txt" not in listing and "VISIBLE" not in history + grep, (listing, history, grep)
        assert "readme.md" in listing
        return
    assert "café.txt" in listing and "文档/说明.md" in listing, listing
    for text in VISIBLE.values():
        assert text in history and text in grep, (text, history, grep)


# -- the names not known: every non-ASCII path is excluded -------------------------------------------------

FAIL_CLOSED = ["git log -p --all", "git ls-files -s", "git grep --cached -n NFKC", "git show --stat DANGLING"]


async def fail_closed_problems(root: Path, dangling: str, make_settings: Any, *, wait: bool) -> list[object]:
    """Leaks of the FAIL_CLOSED commands, and `café.txt` showing (it must not while the names are unknown);
    with `wait` (the scan over before the first command) the REFUSED rows too: blame waits for the scan's
    answer, which a held scan never gives."""
    problems: list[object] = []
    for backend in os_backends():
        workspace = Workspace(settings_for(root, backend, make_settings))
        try:
            if wait:
                exec_service(workspace).git.excludes.names.found()
            async with Client(build_server(workspace), mode="legacy") as connected:
                for command in FAIL_CLOSED:
                    is_error, content = await call(connected, command.replace("DANGLING", dangling))
                    text = "" if is_error else content["stdout"] + content["stderr"]
                    if is_error or leaks(text) or "caf" in shown(text):
                        problems.append((backend, command, content))
                if wait:
                    problems += await problems_of(connected, [row for row in ROWS if row[1] == REFUSED], dangling)
        finally:
            workspace.close()
    return problems


@pytest.fixture
def repo_copy(repo: tuple[Path, str], tmp_path: Path) -> tuple[Path, str]:
    root = tmp_path / "repo"
    shutil.copytree(repo[0], root, symlinks=True)
    return root, repo[1]


async def test_a_borrowed_object_database_hides_every_non_ascii_path(
    repo_copy: tuple[Path, str], tmp_path: Path, make_settings: Any
) -> None:
    root, dangling = repo_copy
    lender = tmp_path / "lender"  # bare: no '.git/' in the path git's warnings print
    lender.mkdir()
    git(lender, "init", "-q", "--bare")
    write(root / ".git" / "objects" / "info" / "alternates", f"{lender / 'objects'}\n")
    assert await fail_closed_problems(root, dangling, make_settings, wait=True) == []


@pytest.mark.parametrize(
    ("module", "limit"),
    [
        (scan, "MAX_TREES"),  # more trees than one scan reads
        (records, "MAX_FOREIGN_NAMES"),  # more non-ASCII names than are kept
        (foreign, "MAX_NAME_EXCLUSIONS"),  # more refused names than exact exclusions are passed for
    ],
)
async def test_too_many_trees_or_names_hide_every_non_ascii_path(
    repo_copy: tuple[Path, str], make_settings: Any, monkeypatch: pytest.MonkeyPatch, module: object, limit: str
) -> None:
    monkeypatch.setattr(module, limit, 1)
    assert await fail_closed_problems(*repo_copy, make_settings, wait=True) == []


@pytest.fixture
def held_scans(monkeypatch: pytest.MonkeyPatch) -> Iterator[threading.Event]:
    """Scans of git's records wait for the returned event (a first scan still running past a command's wait)."""
    gate = threading.Event()
    real_update = GitNames._update  # pyright: ignore[reportPrivateUsage]

    def held(self: GitNames) -> None:
        assert gate.wait(30)
        real_update(self)

    monkeypatch.setattr(GitNames, "_update", held)
    yield gate
    gate.set()
    for thread in threading.enumerate():
        if thread.name == "repo-sandbox-git-names":
            thread.join(30)


async def test_while_the_first_scan_runs_every_non_ascii_path_is_hidden_then_only_the_refused_ones(
    repo: tuple[Path, str], make_settings: Any, held_scans: threading.Event, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(excludes, "SCAN_WAIT_S", 0.05)  # how long a command waits for the scan
    root, dangling = repo
    assert await fail_closed_problems(root, dangling, make_settings, wait=False) == []
    workspace = Workspace(settings_for(root, os_backends()[0], make_settings))
    try:
        async with Client(build_server(workspace), mode="legacy") as connected:
            _, content = await call(connected, "git ls-files")
            assert "caf" not in shown(content["stdout"]), content
            held_scans.set()
            assert exec_service(workspace).git.excludes.names.found() is not None
            _, content = await call(connected, "git ls-files")
            assert "café.txt" in shown(content["stdout"]) and leaks(content["stdout"]) == [], content
    finally:
        workspace.close()


# -- --follow and blame: one refused name renamed away, and nothing else to hide ------------------------------


def renamed_repo(root: Path, name: str) -> Path:
    write(root / "README.md", "# Demo\n")
    write(root / name, "plain words\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, *COMMIT, "-m", "start")
    git(root, "mv", name, "public.txt")
    git(root, *COMMIT, "-m", "rename")
    return root


FOLLOWING = ["git log --follow -p --name-only -- public.txt", "git blame -f public.txt"]


async def test_follow_and_blame_are_refused_where_a_refused_name_was_renamed_away(
    tmp_path: Path, make_settings: Any
) -> None:
    root = renamed_repo(tmp_path / "refused", "moved.ｋｅｙ")
    problems: list[object] = []
    for backend in [*os_backends(), "none"]:
        workspace = Workspace(settings_for(root, backend, make_settings))
        try:
            async with Client(build_server(workspace), mode="legacy") as connected:
                problems += await problems_of(connected, [(command, REFUSED) for command in FOLLOWING], "")
        finally:
            workspace.close()
    assert problems == []


async def test_follow_and_blame_run_where_a_harmless_non_ascii_name_was_renamed(
    tmp_path: Path, make_settings: Any
) -> None:
    root = renamed_repo(tmp_path / "harmless", "café.txt")
    for backend in os_backends():
        workspace = Workspace(settings_for(root, backend, make_settings))
        try:
            async with Client(build_server(workspace), mode="legacy") as connected:
                for command in FOLLOWING:
                    is_error, content = await call(connected, command)
                    assert not is_error and "café.txt" in shown(content["stdout"]), (backend, command, content)
        finally:
            workspace.close()
