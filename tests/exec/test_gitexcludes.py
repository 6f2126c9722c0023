"""Which deny-list exclusions git stages get: needles of each pathspec, checked against git's own matching,
and the scan of the index and object database that decides which pathspecs can match anything."""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from exec_support import git, os_backends, write
from repo_sandbox.exec.git import scan
from repo_sandbox.exec.git.excludes import spec_needles
from repo_sandbox.exec.git.names import GitNames, component_haystack
from repo_sandbox.exec.sandbox import Backend
from repo_sandbox.exec.service import exec_service
from repo_sandbox.fs.gitenv import GitHardening
from repo_sandbox.policy.deny import DEFAULT_DENY
from repo_sandbox.policy.git.rule import NON_ASCII_EXCLUSIONS, exclusion_pathspecs
from repo_sandbox.workspace import Workspace

GIT = shutil.which("git") or "git"
EXTRA_RULES = ("/config/prod.yaml", "private/", "résumé.txt", "a?c*.bin", "Build Output/", "[Tt]emp.txt", r"odd\*.txt")
TAIL = exclusion_pathspecs((*DEFAULT_DENY, *EXTRA_RULES))
NEEDLES = frozenset(n for spec in exclusion_pathspecs(DEFAULT_DENY) for n in (spec_needles(spec) or ()))
COMMIT = ("-c", "user.email=t@example.com", "-c", "user.name=T", "commit", "-q")


def test_needles_of_the_default_rules_anchor_literal_runs_to_name_boundaries() -> None:
    needles = {spec: spec_needles(spec) for spec in exclusion_pathspecs(DEFAULT_DENY)}
    m = ":(exclude,glob,icase,top)"
    assert needles[f"{m}**/.git/**"] == {b" .git\0"}
    assert needles[f"{m}**/.env*"] == needles[f"{m}**/.env*/**"] == {b" .env"}
    assert needles[f"{m}**/*.pem"] == {b".pem\0"}
    assert needles[f"{m}**/*.pem[. ]*"] == {b".pem"}  # "server.pem." is denied too
    assert needles[f"{m}**/id_rsa*"] == {b" id_rsa"}
    assert needles[f"{m}**/.docker/config.json"] == {b" .docker\0", b" config.json\0"}
    assert needles[f"{m}**/secrets.y*ml"] == {b" secrets.y", b"ml\0"}
    assert all(needles.pop(spec) is None for spec in NON_ASCII_EXCLUSIONS)  # replaced as a pair, never by needles
    assert all(value for value in needles.values())


@pytest.mark.parametrize(
    "spec",
    [
        ":(exclude,glob,icase,top)**/[Tt]emp.txt",  # a character class
        ":(exclude,glob,icase,top)**/odd\\*.txt",  # an escape
        ":(exclude,icase,top)**/.env",  # no glob magic: '*' would cross '/'
        ":(exclude,literal)x",
        ":!.env",  # short magic
        "plain/path",
        ":(exclude,glob,icase,top)a//b",
    ],
)
def test_pathspecs_not_understood_are_always_kept(spec: str) -> None:
    assert spec_needles(spec) is None


def test_non_ascii_and_wildcards_only_break_runs() -> None:
    assert spec_needles(":(exclude,glob,icase,top)**/résumé.txt") == {b" r", b"sum", b".txt\0"}
    assert spec_needles(":(exclude,glob,icase,top)**/a?c*.bin") == {b" a", b"c", b".bin\0"}
    assert spec_needles(":(exclude,glob,icase,top)**/*") == frozenset()


# Names chosen to sit on every edge of the default and extra rules: case, prefixes that are not the
# rule's, a rule's text inside a longer name, directories named like files, nested and top-level
# anchored paths, spaces, non-ASCII in both normal forms.
TRICKY = [
    ".ENV", ".env.local", "x/.Env.prod/inner.txt", "envy.txt", "a.env", "dir/.envrc",
    "certs/SERVER.PEM", "a.pem.bak", "pem", "k.key/inside.txt", "monkey.keys",
    "id_rsa.pub", "ID_RSA", "x/id_rsa_old", "xid_rsa", "id_ed25519", "id_ecdsa.pub", "id_dsa",
    ".ssh/known_hosts", "deep/.SSH/config", "ssh/x", ".gnupg/pubring.kbx", ".aws/credentials",
    ".netrc", "x/.netrc", ".netrcx", ".pgpass", ".pypirc", ".npmrc", "npmrc", ".git-credentials",
    "credentials.json", "sub/credentials.json", "credentials.json.bak", ".docker/config.json",
    "sub/.docker/config.json", ".docker/config.jsonx", "state.tfstate", "secrets.yaml", "x/SECRETS.YML",
    "secrets.yamlx", "secrets.ml", "config/prod.yaml", "other/config/prod.yaml", "private/notes.txt",
    "x/private/y.txt", "privately.txt", "résumé.txt", "re\u0301sume\u0301.txt", "abc.bin", "a/c.bin",
    "axc-long.bin", "Build Output/x.o", "build output/y.o", "Temp.txt", "temp.txt", "odd*.txt", "plain.txt",
    "a b/c d.txt", "dir.pem/file.txt", "store.keystore", "db.KDBX", "cert.p12", "cert.pfx", "trust.jks",
    # directories named like the files the rules hide (the `/**` pathspecs)
    "x.KEY", "d.p12/a", "d.pfx/a", "d.jks/a", "d.keystore/a", "d.kdbx/a", "id_rsa.d/a", "id_dsa.d/a",
    "id_ecdsa.d/a", "id_ed25519.d/a", "n/.netrc/a", "n/.pgpass/a", "n/.pypirc/a", "n/.npmrc/a",
    "n/.git-credentials/a", "n/credentials.json/a", "d.tfstate/a", "n/secrets.yml/a",
]  # fmt: skip


@pytest.fixture(scope="module")
def tricky_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tricky") / "repo"
    for name in TRICKY:
        write(root / name, f"{name}\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A", "-f")
    git(root, *COMMIT, "-m", "tricky")
    return root


def _git_matches(root: Path, spec: str) -> list[bytes]:
    """The tracked paths git itself matches with the exclude pathspec turned into an include."""
    include = spec.replace(":(exclude,", ":(", 1)
    done = subprocess.run(["git", "ls-files", "-z", "--", include], cwd=root, capture_output=True, check=True)
    return [path for path in done.stdout.split(b"\0") if path]


@pytest.mark.parametrize("spec", TAIL)
def test_every_path_git_matches_holds_every_needle_of_the_pathspec(tricky_repo: Path, spec: str) -> None:
    needles = spec_needles(spec)
    if needles is None:
        return  # always passed: nothing to prove
    for path in _git_matches(tricky_repo, spec):
        haystack = component_haystack([path])
        assert all(needle in haystack for needle in needles), (spec, path)


def test_the_tricky_names_exercise_most_rules(tricky_repo: Path) -> None:
    matched = [spec for spec in TAIL if _git_matches(tricky_repo, spec)]
    assert len(matched) >= 50


# -- the scan of the index and the object database -----------------------------------------------------


@pytest.fixture
def clean_repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    write(root / "README.md", "hello\n")
    write(root / "src" / "main.py", "print(1)\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, *COMMIT, "-m", "start")
    return root


def scanner_for(root: Path) -> GitNames:
    hardening = GitHardening(str(root), GIT)

    def env() -> dict[str, str]:
        return {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", **hardening.env()}

    return GitNames(str(root / ".git"), GIT, env, NEEDLES)


@pytest.fixture
def names(clean_repo: Path) -> Iterator[GitNames]:
    scanner = scanner_for(clean_repo)
    yield scanner
    scanner.close()


def found(names: GitNames) -> frozenset[bytes]:
    answer = names.found()
    assert answer is not None
    return answer[0]


def _slowed_scans(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """Scans wait for the returned event before reading anything."""
    gate = threading.Event()
    real_update = GitNames._update  # pyright: ignore[reportPrivateUsage]

    def held(self: GitNames) -> None:
        assert gate.wait(20)
        real_update(self)

    monkeypatch.setattr(GitNames, "_update", held)
    return gate


def _join_scans() -> None:
    for thread in threading.enumerate():
        if thread.name == "repo-sandbox-git-names":
            thread.join(20)


def test_a_slow_scan_lets_commands_run_with_every_exclusion_meanwhile(
    names: GitNames, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = _slowed_scans(monkeypatch)
    started = time.monotonic()
    assert names.found(wait_s=0.1) is None  # unknown yet: the caller passes every exclusion
    assert time.monotonic() - started < 5
    assert names.generation() == -1  # never a generation a pruned command was built from
    gate.set()
    assert found(names) == frozenset()  # waiting for the scan gives its answer


def test_closing_during_a_scan_does_not_wait_for_it(clean_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gate = _slowed_scans(monkeypatch)
    scanner = scanner_for(clean_repo)
    assert scanner.found(wait_s=0.05) is None
    started = time.monotonic()
    scanner.close()
    assert time.monotonic() - started < 1
    assert scanner.found() is None
    gate.set()
    _join_scans()  # the scan drops the watches as it ends (the fd-leak check of every test would see them)


def test_a_clean_repository_holds_no_needle(names: GitNames) -> None:
    assert found(names) == frozenset()


def test_a_staged_file_is_seen_through_the_index(names: GitNames, clean_repo: Path) -> None:
    assert found(names) == frozenset()
    generation = names.generation()
    write(clean_repo / "deploy" / ".env.production", "KEY=1\n")
    git(clean_repo, "add", "-f", "deploy/.env.production")
    assert names.generation() > generation
    assert found(names) == {b" .env"}


def test_a_file_committed_then_deleted_stays_seen_in_history(names: GitNames, clean_repo: Path) -> None:
    assert found(names) == frozenset()
    write(clean_repo / "keys" / "server.pem", "PEM\n")
    git(clean_repo, "add", "-A")
    git(clean_repo, *COMMIT, "-m", "oops")
    git(clean_repo, "rm", "-q", "-r", "keys")
    git(clean_repo, *COMMIT, "-m", "remove")
    assert found(names) == {b".pem\0", b".pem"}


def test_a_dangling_commit_is_seen(names: GitNames, clean_repo: Path) -> None:
    assert found(names) == frozenset()
    blob = _git_out(clean_repo, "hash-object", "-w", "--stdin", data=b"secret\n")
    tree = _git_out(clean_repo, "mktree", data=f"100644 blob {blob}\tid_ed25519\n".encode())
    _git_out(clean_repo, "commit-tree", tree, "-m", "dangling")
    assert found(names) == {b" id_ed25519"}


@pytest.mark.parametrize("gc", [["gc", "-q"], ["repack", "-a", "-d", "-q"]])
def test_objects_moved_into_packs_are_still_seen(names: GitNames, clean_repo: Path, gc: list[str]) -> None:
    write(clean_repo / "secrets.yaml", "token: x\n")
    git(clean_repo, "add", "-A")
    git(clean_repo, *COMMIT, "-m", "secrets")
    assert found(names) == {b" secrets.y", b"ml\0", b"ml"}
    git(clean_repo, *gc)
    assert names.found() is not None and found(names) == {b" secrets.y", b"ml\0", b"ml"}
    fresh = scanner_for(clean_repo)
    try:
        assert found(fresh) == {b" secrets.y", b"ml\0", b"ml"}
    finally:
        fresh.close()


def test_an_index_overwritten_in_place_is_read_again(names: GitNames, clean_repo: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    write(other / ".npmrc", "token\n")
    git(other, "init", "-q")
    git(other, "add", "-A", "-f")
    assert found(names) == frozenset()
    with open(other / ".git" / "index", "rb") as source, open(clean_repo / ".git" / "index", "r+b") as target:
        target.truncate(0)
        target.write(source.read())
    assert found(names) == {b" .npmrc\0", b" .npmrc"}


@pytest.mark.parametrize("borrowed", ["objects/info/alternates", "modules/sub/HEAD", "commondir"])
def test_borrowed_objects_or_git_directories_fail_closed(names: GitNames, clean_repo: Path, borrowed: str) -> None:
    assert found(names) == frozenset()
    write(clean_repo / ".git" / borrowed, "elsewhere\n")
    assert names.found() is None
    top = borrowed.partition("/")[0]
    added = clean_repo / ".git" / ("objects/info/alternates" if top == "objects" else top)
    if added.is_dir():
        shutil.rmtree(added)
    else:
        added.unlink()
    assert found(names) == frozenset()


def test_too_many_trees_fail_closed_until_the_packs_change(
    names: GitNames, clean_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(scan, "MAX_TREES", 1)
    for n in range(3):
        write(clean_repo / f"d{n}" / "f.txt", "x\n")
    git(clean_repo, "add", "-A")
    git(clean_repo, *COMMIT, "-m", "more trees")
    git(clean_repo, "gc", "-q")
    assert names.found() is None
    assert names.found() is None
    monkeypatch.setattr(scan, "MAX_TREES", 1000)
    assert names.found() is None  # the same packs: not read again
    git(clean_repo, "repack", "-a", "-d", "-f", "-q")
    assert found(names) == frozenset()


def test_an_unreadable_loose_object_fails_closed(names: GitNames, clean_repo: Path) -> None:
    assert found(names) == frozenset()
    objects = clean_repo / ".git" / "objects"
    fanout = next(objects / f"{i:02x}" for i in range(256) if not (objects / f"{i:02x}").exists())  # ours alone
    write(fanout / ("c" * 38), "not zlib data")
    assert names.found() is None
    (fanout / ("c" * 38)).unlink()
    fanout.rmdir()
    assert found(names) == frozenset()


def test_a_failing_git_fails_closed(clean_repo: Path) -> None:
    scanner = GitNames(str(clean_repo / ".git"), shutil.which("false") or "/bin/false", dict, NEEDLES)
    try:
        assert scanner.found() is None
    finally:
        scanner.close()


def test_without_git_nothing_is_known(clean_repo: Path) -> None:
    scanner = GitNames(str(clean_repo / ".git"), None, dict, NEEDLES)
    assert scanner.found() is None
    scanner.close()


def _git_out(root: Path, *args: str, data: bytes | None = None) -> str:
    env: dict[str, Any] = {"PATH": "/usr/bin:/bin", "HOME": str(root), "GIT_CONFIG_NOSYSTEM": "1",
                           "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@e",
                           "GIT_COMMITTER_NAME": "T", "GIT_COMMITTER_EMAIL": "t@e"}  # fmt: skip
    done = subprocess.run(["git", *args], cwd=root, env=env, input=data, capture_output=True, check=True)
    return done.stdout.decode().strip()


def test_git_stages_under_bwrap_see_no_user_or_group_names(clean_repo: Path, make_settings: Any) -> None:
    assert "bwrap" in os_backends(), "bubblewrap does not work here (scripts/setup.d/20-bubblewrap.sh installs it)"
    workspace = Workspace(make_settings(clean_repo, exec={"sandbox": "bwrap"}))
    try:
        service = exec_service(workspace)
        tmp = service.scratch_dir(Backend.BWRAP)[0]
        argv = {}
        for command in ("git status", "ls -l"):
            evaluation, cwd = service.prepare(command, ".")
            argv[command] = service.build(evaluation, cwd, Backend.BWRAP, tmp, "t", 5).stages[0].argv
    finally:
        workspace.close()
    assert "/etc/passwd" not in argv["git status"] and "/etc/ld.so.cache" in argv["git status"]
    assert "/etc/passwd" in argv["ls -l"]


@pytest.fixture
def merges(tmp_path: Path) -> Path:
    """History with merges, an empty commit, a rename, a side branch touching only a denied file."""
    root = tmp_path / "merges"
    write(root / "a.txt", "a\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, *COMMIT, "-m", "a")
    git(root, "checkout", "-q", "-b", "side")
    write(root / "cfg" / "id_rsa", "key\n")
    git(root, "add", "-A")
    git(root, *COMMIT, "-m", "side: key only")
    git(root, "checkout", "-q", "main")
    write(root / "b.txt", "b\n")
    git(root, "add", "-A")
    git(root, *COMMIT, "-m", "b")
    git(root, "-c", "user.email=t@example.com", "-c", "user.name=T", "merge", "-q", "--no-edit", "side")
    git(root, *COMMIT, "--allow-empty", "-m", "empty")
    git(root, "mv", "a.txt", "c.txt")
    git(root, *COMMIT, "-m", "rename")
    write(root / "untracked.txt", "u\n")
    return root


EQUIVALENT = [
    "git log --oneline --all", "git log --stat --all", "git log -p --all", "git log --graph --oneline --all",
    "git log --oneline -- .", "git shortlog -s --all", "git rev-list --all --count", "git status --porcelain",
    "git ls-files", "git ls-files -o", "git grep -n b", "git diff HEAD~1 --stat", "git show --stat HEAD~1",
]  # fmt: skip


@pytest.mark.parametrize("denied_in_history", [True, False])
def test_pruned_exclusions_give_the_same_output_as_the_whole_deny_list(
    merges: Path, make_settings: Any, denied_in_history: bool
) -> None:
    if not denied_in_history:
        shutil.rmtree(merges / "cfg")
        git(merges, "checkout", "-q", "-b", "clean", "HEAD~3")  # a.txt and b.txt only, nothing denied anywhere
        git(merges, "branch", "-q", "-D", "side", "main")
        git(merges, *COMMIT, "--allow-empty", "-m", "empty again")
        git(merges, "reflog", "expire", "--expire=now", "--expire-unreachable=now", "--all")
        git(merges, "gc", "-q", "--prune=now")
    workspace = Workspace(make_settings(merges))
    try:
        service = exec_service(workspace)
        view = service.views.current()
        env = service.git.hardening.host_env()
        assert service.git.excludes.names.found() is not None  # the scan done: pruning below does not wait
        for command in EQUIVALENT:
            [plan] = service.prepare(command, ".")[0].plans
            pruned, check = service.git.excludes.prune(plan.args, view)
            assert check is not None and len(pruned) == len(plan.args) - len(service.git.excludes.tail) + (
                2 if denied_in_history else 1
            )
            outputs = [
                subprocess.run(["git", *args], cwd=merges, env=env, capture_output=True, check=True).stdout
                for args in (plan.args, pruned)
            ]
            assert outputs[0] == outputs[1], command
            assert b"id_rsa" not in outputs[1]
    finally:
        workspace.close()
