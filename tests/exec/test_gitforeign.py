"""Non-ASCII names in git's records: read exactly, judged by the deny-list, excluded by pathspecs git honours.

Tree objects are parsed against `git ls-tree` on ids full of NULs, spaces and newlines (SHA-1 and SHA-256),
the scan collects every non-ASCII name from the index, packs and loose objects, each name is judged as the
deny-list would judge it at any depth, and the pathspecs that exclude them are checked against git's own
matching.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from exec_support import git, write
from repo_sandbox.exec.git.excludes import ExcludePruner
from repo_sandbox.exec.git.foreign import ForeignNames
from repo_sandbox.exec.git.names import GitNames
from repo_sandbox.exec.git.records import BatchTrees, tree_items
from repo_sandbox.exec.view import RepoView
from repo_sandbox.fs.gitenv import GitHardening
from repo_sandbox.fs.gitrun import ScanError
from repo_sandbox.policy.deny import DEFAULT_DENY
from repo_sandbox.policy.git.rule import NON_ASCII_EXCLUSIONS, name_exclusions
from security.test_git_deny_history import COMMIT, git_out

GIT = shutil.which("git") or "git"
ODD_IDS = [
    bytes.fromhex("0020000a0a20200000ff80fe00000000000000ff"),  # NULs, spaces, newlines, high bytes
    b"\0" * 20,
    b" " * 19 + b"\0",
    b"100644 x\0" + b"\xff" * 11,  # what an entry looks like
]
ODD_NAMES = [b"n a\nme", b"secret.\xef\xbd\x8b\xef\xbd\x85\xef\xbd\x99", b"\xff\xfe", b"plain.txt", b"d\x01ir"]


def _git(root: Path, *args: str, data: bytes) -> bytes:
    done = subprocess.run(["git", *args], cwd=root, input=data, capture_output=True, check=True)
    return done.stdout


def odd_tree(root: Path, id_size: int) -> tuple[bytes, list[bytes]]:
    """A tree (made with `mktree --missing`) whose entries' ids hold every byte a naive split trips on."""
    entries = b"".join(
        b"100644 blob " + (odd * 2)[:id_size].hex().encode() + b"\t" + name + b"\0"
        for odd, name in zip(ODD_IDS + ODD_IDS[:1], ODD_NAMES, strict=True)
    )
    tree = _git(root, "mktree", "--missing", "-z", data=entries).strip().decode()
    listed = _git(root, "ls-tree", "-z", "--name-only", tree, data=b"").split(b"\0")[:-1]
    return _git(root, "cat-file", "tree", tree, data=b""), listed


@pytest.mark.parametrize("object_format", ["sha1", "sha256"])
def test_tree_entries_are_read_exactly_whatever_bytes_the_ids_hold(tmp_path: Path, object_format: str) -> None:
    git(tmp_path, "init", "-q", f"--object-format={object_format}")
    id_size = 20 if object_format == "sha1" else 32
    content, listed = odd_tree(tmp_path, id_size)
    names = [item.partition(b" ")[2] for item in tree_items(content, id_size)]
    assert names == listed and sorted(names) == sorted(ODD_NAMES)


@pytest.mark.parametrize(
    "content",
    [
        b"100644 a\0" + b"x" * 19,  # an id cut short
        b"100644 a\0" + b"x" * 21,  # a byte too many
        b"garbage" + b"\0" * 30,
        b"100644 a" + b"x" * 20,  # no NUL after the name
    ],
)
def test_a_tree_that_is_not_a_list_of_entries_is_refused(content: bytes) -> None:
    with pytest.raises(ScanError):
        tree_items(content, 20)


def test_batch_output_is_split_into_trees_at_any_chunk_boundary(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    content, _ = odd_tree(tmp_path, 20)
    tree = _git(tmp_path, "hash-object", "-t", "tree", "-w", "--stdin", data=content).strip()
    output = _git(tmp_path, "cat-file", "--batch", data=tree + b"\n" + b"1" * 40 + b"\n" + tree + b"\n")
    trees: list[tuple[bytes, int]] = []
    batch = BatchTrees(lambda data, id_size, start, end: trees.append((data[start:end], id_size)))
    for size in (1, 7, len(output)):
        trees.clear()
        for offset in range(0, len(output), size):
            batch.feed(output[offset : offset + size])
        batch.finish()
        assert trees == [(content, 20), (content, 20)]  # the missing object in between is skipped


@pytest.mark.parametrize("output", [b"abc blob 3\nabc\n", b"abc tree 5\nab\n", b"abc tree 2\nabX", b"abc tree x\n"])
def test_unexpected_batch_output_is_refused(output: bytes) -> None:
    batch = BatchTrees(lambda data, id_size, start, end: None)
    with pytest.raises(ScanError):
        batch.feed(output)
        batch.finish()


# -- the scan collects every non-ASCII name, wherever git keeps it ----------------------------------------


@pytest.fixture
def scanned(tmp_path: Path) -> Iterator[tuple[Path, GitNames]]:
    root = tmp_path / "repo"
    write(root / "README.md", "hello\n")
    write(root / "café" / "menu.txt", "menu\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, *COMMIT, "-m", "start")
    hardening = GitHardening(str(root), GIT)
    names = GitNames(str(root / ".git"), GIT, lambda: {"PATH": "/usr/bin:/bin", **hardening.env()}, [b" .env"])
    yield root, names
    names.close()


def foreign(names: GitNames) -> frozenset[bytes] | None:
    answer = names.found()
    assert answer is not None
    return answer.foreign


def test_non_ascii_names_are_collected_from_the_index_packs_and_loose_objects(
    scanned: tuple[Path, GitNames],
) -> None:
    root, names = scanned
    assert foreign(names) == {"café".encode()}
    blob = git_out(root, "hash-object", "-w", "--stdin", data=b"x\n")
    git(root, "update-index", "--add", "--cacheinfo", f"100644,{blob},ｓｔａｇｅｄ/only.txt")
    assert foreign(names) == {"café".encode(), "ｓｔａｇｅｄ".encode()}  # the index
    git(root, "rm", "-q", "--cached", "ｓｔａｇｅｄ/only.txt")
    git(root, "gc", "-q")
    tree = git_out(root, "mktree", data=f"100644 blob {blob}\tｌｏｏｓｅ.txt\n".encode())
    git_out(root, "commit-tree", tree, "-m", "dangling")
    assert foreign(names) == {"café".encode(), "ｌｏｏｓｅ.txt".encode()}  # packed history, a loose dangling tree
    git(root, "repack", "-a", "-d", "-q")
    assert foreign(names) == {"café".encode(), "ｌｏｏｓｅ.txt".encode()}  # now packed: still there


# -- judged by the deny-list, as a name at any depth --------------------------------------------------------

DEFAULTS = tuple(DEFAULT_DENY)
VERDICTS: list[tuple[str, tuple[str, ...], bool]] = [
    # the default rules, names in compatibility forms
    ("secret.ｋｅｙ", DEFAULTS, True),
    ("SECRET.ＫＥＹ", DEFAULTS, True),
    ("secret.ｋｅｙ.", DEFAULTS, True),  # a trailing dot
    (".ｅｎｖ.local", DEFAULTS, True),
    ("ｉｄ_ｅｄ25519.pub", DEFAULTS, True),
    (".ｇｉｔ", DEFAULTS, True),  # a directory rule
    ("vault.keyﬆore", DEFAULTS, True),  # a ligature
    ("deploy.\u212aey", DEFAULTS, True),  # the Kelvin sign
    (os.fsdecode(b"\xff-token.\xef\xbd\x8b\xef\xbd\x85\xef\xbd\x99"), DEFAULTS, True),  # not UTF-8, then fullwidth
    ("café.txt", DEFAULTS, False),
    ("ｒｅａｄｍｅ.md", DEFAULTS, False),
    ("ｋｅｙ", DEFAULTS, False),
    (os.fsdecode(b"\xff.txt"), DEFAULTS, False),
    # rules of several names: every name-sized piece counts, a piece of '*' alone does not
    (".ｄｏｃｋｅｒ", DEFAULTS, True),  # '**/.docker/config.json'
    ("ｃｏｎｆｉｇ.json", DEFAULTS, True),
    ("ｓｅｃｒｅｔｓ", ("secrets/*.key",), True),
    ("ａ.ｋｅｙ", ("secrets/*.key",), True),
    ("secrets／a.key", ("/secrets/*.key",), True),  # a fullwidth solidus: one name that NFKC makes a path
    ("ｘ", ("*/secret.txt",), False),
    ("！ｂａｎｇ", ("keys/!bang",), True),  # a piece starting with '!' is not a negation
    ("＃ｈａｓｈ", ("keys/#hash",), True),
    # git's '?' and '[..]' take one byte, the deny-list's one character
    ("é", ("?/secret.txt",), True),
    ("é.key", ("?.key",), True),
    ("ｔemp", ("[Tt]emp/",), True),
    # non-ASCII rules: decomposed and composed forms, and negations, which are ignored
    ("re\u0301sume\u0301.txt", ("résumé.txt",), True),
    ("résumé.txt", ("re\u0301sume\u0301.txt",), True),
    (".ｅｎｖ.example", (".env*", "!.env.example"), True),
]


@pytest.mark.parametrize(("name", "patterns", "refused"), VERDICTS)
def test_non_ascii_names_are_judged_like_the_deny_list_at_any_depth(
    name: str, patterns: tuple[str, ...], refused: bool
) -> None:
    judge = ForeignNames(patterns)
    encoded = os.fsencode(name)
    assert judge.refused(frozenset({encoded, b"\xc3\xa9x"})) == ({encoded} if refused else set())
    assert (judge.exclusions(frozenset({encoded})) or ()) == (name_exclusions(name) if refused else ())


# -- the exclusions, against git's own matching --------------------------------------------------------------

PATHS = [
    "secret.ｋｅｙ", "sub/secret.ｋｅｙ", "x/secret.ｋｅｙ/inner.txt", "SECRET.ｋｅｙ", "xsecret.ｋｅｙ", "secret.ｋｅｙx",
    "a[b]*?\\.ｋｅｙ", "ab.ｋｅｙ", "ab-c.ｋｅｙ", "café.txt", "ｄｉｒ/plain.txt", "deep/er/ｄｉｒ/x.txt", "plain.txt",
    "x/y.txt", os.fsdecode(b"bad\xff.txt"), "ctl\x01name.txt", "tab\tname.txt",
]  # fmt: skip


@pytest.fixture(scope="module")
def paths_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("pathspecs")
    git(root, "init", "-q")
    blob = git_out(root, "hash-object", "-w", "--stdin", data=b"x\n")
    for path in PATHS:
        git(root, "update-index", "--add", "--cacheinfo", f"100644,{blob},{path}")
    return root


def shown_by_git(root: Path, *specs: str) -> set[bytes]:
    listing = _git(root, "ls-files", "-z", "--", *specs, data=b"")
    return {path for path in listing.split(b"\0") if path}


def test_the_non_ascii_exclusions_leave_exactly_the_ascii_paths(paths_repo: Path) -> None:
    every = {os.fsencode(path) for path in PATHS}
    assert shown_by_git(paths_repo, *NON_ASCII_EXCLUSIONS) == {path for path in every if path.isascii()}


@pytest.mark.parametrize("name", ["secret.ｋｅｙ", "a[b]*?\\.ｋｅｙ", "ｄｉｒ", os.fsdecode(b"bad\xff.txt")])
def test_name_exclusions_hide_exactly_the_paths_holding_that_name(paths_repo: Path, name: str) -> None:
    every = {os.fsencode(path) for path in PATHS}
    wanted = os.fsencode(name).lower()  # git's icase folds ASCII only, as bytes.lower() does
    hidden = {path for path in every if wanted in path.lower().split(b"/")}
    assert hidden  # each name is somewhere
    assert shown_by_git(paths_repo, *name_exclusions(name)) == every - hidden


def test_only_refused_non_ascii_names_get_exclusions_once_the_names_are_known(scanned: tuple[Path, GitNames]) -> None:
    root, _ = scanned
    hardening = GitHardening(str(root), GIT)
    pruner = ExcludePruner(DEFAULTS, str(root / ".git"), GIT, lambda: {"PATH": "/usr/bin:/bin", **hardening.env()})
    try:
        assert pruner.tail[-2:] == NON_ASCII_EXCLUSIONS
        assert pruner.names.found() is not None
        pruned, check = pruner.prune(("status", *pruner.tail), RepoView(str(root)))
        assert check is not None and pruned == ("status", pruner.tail[0])  # 'café' refused by nothing
        write(root / "secret.ｋｅｙ", "x\n")
        git(root, "add", "secret.ｋｅｙ")
        assert pruner.names.found() is not None
        pruned, _ = pruner.prune(("status", *pruner.tail), RepoView(str(root)))
        assert pruned == ("status", *name_exclusions("secret.ｋｅｙ"))  # no ASCII rule can match: only the name
        view = RepoView(str(root), invisible=frozenset({"x/untracked.ｐｅｍ"}))  # the working tree's hidden entries
        pruned, _ = pruner.prune(("status", *pruner.tail), view)
        assert pruned == ("status", *name_exclusions("secret.ｋｅｙ"), *name_exclusions("untracked.ｐｅｍ"))
    finally:
        pruner.close()
