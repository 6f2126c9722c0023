"""What git adds to the ignore rules at a repository's root: `.git/info/exclude`, and the tracked files.

git ignores a path by the rules of `.gitignore` files, then `.git/info/exclude` (lowest precedence of the
two), but never a file in the index: `git ls-files --cached --others --exclude-standard` lists a tracked
`build/config.json` under an ignored `build/`. The walker asks `repo_rules` at the root of the jail:
- `.git` must be a real directory there (not a symlink, not a `gitdir:` file pointing elsewhere: a linked
  worktree or submodule checkout gets neither), outside a repository nothing changes;
- `info/exclude` is read like any ignore file (no symlink, size-capped); `.git/` is deny-listed for the tools,
  but these rules only decide which of the visible files are listed, as in git;
- the index is read by `git ls-files -z`, run on the host under the hardened environment `fs.gitenv` builds
  for every git run (no hooks, no fsmonitor, no system or global config, GIT_DIR/GIT_WORK_TREE pinned), only
  when `.git/index` is a plain file, and at most `MAX_LISTING_BYTES` of output within `fs.gitrun`'s time
  limit; anything unexpected yields no tracked files (the ignore rules then hide what they match, as before).
  The listing is cached by the index file's identity (device, inode, size, times).
A tracked path only keeps a file the walker found that the deny-list and the hidden-name rule already let
through: the index never adds a file, and never shows a denied one.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import threading
from dataclasses import dataclass
from typing import Final

from repo_sandbox.fs.beneath import open_without_links
from repo_sandbox.policy.git.ignore import IgnoreRules

MAX_LISTING_BYTES: Final = 64 * 1024 * 1024
"""A `git ls-files -z` listing larger than this is not used (no tracked files are known)."""
MAX_EXCLUDE_BYTES: Final = 1024 * 1024
GIT_PATH: Final = "/usr/bin:/bin:/usr/local/bin"
MARKER: Final = "#\x00"
"""Starts the lines `repo_rules` adds to a root listing's ignore lines: comments to every reader (ripgrep's
agreement check in `engine.census` too), different whenever the rules or the tracked paths are."""


@dataclass(frozen=True, slots=True)
class Tracked:
    """The paths in a repository's index (root-relative, '/'-separated) and every directory above one."""

    files: frozenset[str]
    dirs: frozenset[str]
    digest: str

    def holds(self, rel_path: str, *, is_dir: bool) -> bool:
        return rel_path in (self.dirs if is_dir else self.files)


@dataclass(frozen=True, slots=True)
class RepoRules:
    exclude: IgnoreRules | None
    tracked: Tracked | None
    lines: tuple[str, ...]
    """Marker lines naming the exclude rules and the tracked set (see `MARKER`)."""
    stamps: tuple[tuple[str, tuple[int, ...] | None], ...]
    """(path, identity before reading) of the exclude file and the index (or the directory either would be
    created in), for the tree index to compare."""


NO_RULES: Final = RepoRules(None, None, (), ())

_lock = threading.Lock()
_cache: dict[str, tuple[tuple[int, ...], Tracked | None]] = {}


def _stamp(dir_fd: int, path: str) -> tuple[int, ...] | None:
    try:
        info = os.stat(path, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return None
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_mode)


def _read_exclude(root_fd: int) -> str | None:
    try:
        fd = open_without_links(root_fd, ".git/info/exclude", openat2=False)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_EXCLUDE_BYTES:
            return None
        return os.read(fd, MAX_EXCLUDE_BYTES).decode("utf-8", "replace").removeprefix("\ufeff")
    finally:
        os.close(fd)


def _list_index(root: str) -> Tracked | None:
    """The index's paths by `git ls-files -z` under the hardened environment; None when git cannot tell."""
    from repo_sandbox.errors import SandboxError
    from repo_sandbox.fs.gitenv import GitHardening
    from repo_sandbox.fs.gitrun import GitRun, ScanError

    binary = shutil.which("git", path=GIT_PATH)
    if binary is None:
        return None
    hardening = GitHardening(root, binary)
    listing = bytearray()

    def collect(chunk: bytes) -> bool:
        listing.extend(chunk)
        return len(listing) <= MAX_LISTING_BYTES

    try:
        GitRun(binary, hardening.host_env, root).run(["ls-files", "-z", "--cached"], collect)
    except (ScanError, SandboxError, OSError):
        return None
    if len(listing) > MAX_LISTING_BYTES:
        return None
    files = frozenset(os.fsdecode(name) for name in bytes(listing).split(b"\0") if name)
    dirs: set[str] = set()
    for path in files:
        parent = path.rpartition("/")[0]
        while parent and parent not in dirs:
            dirs.add(parent)
            parent = parent.rpartition("/")[0]
    return Tracked(files, frozenset(dirs), hashlib.sha256(bytes(listing)).hexdigest())


def _tracked(root: str, root_fd: int) -> Tracked | None:
    stamp = _stamp(root_fd, ".git/index")
    if stamp is None or not stat.S_ISREG(stamp[5]):
        return None
    with _lock:
        cached = _cache.get(root)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    tracked = _list_index(root)
    if _stamp(root_fd, ".git/index") == stamp:  # not rewritten meanwhile: the listing is the one of `stamp`
        with _lock:
            _cache[root] = (stamp, tracked)
    return tracked


def _first_present(root_fd: int, *paths: str) -> tuple[str, tuple[int, ...] | None]:
    """The first of `paths` (else `.git`) that exists, with its identity: creating a missing file changes the
    identity of the directory it is created in."""
    for path in paths:
        stamp = _stamp(root_fd, path)
        if stamp is not None:
            return path, stamp
    return ".git", _stamp(root_fd, ".git")


def repo_rules(root: str, root_fd: int) -> RepoRules:
    """The exclude rules and tracked files of the repository whose work tree is the jail's root."""
    git_stamp = _stamp(root_fd, ".git")
    if git_stamp is None or not stat.S_ISDIR(git_stamp[5]):
        return NO_RULES
    stamps = (_first_present(root_fd, ".git/info/exclude", ".git/info"), _first_present(root_fd, ".git/index"))
    text = _read_exclude(root_fd)
    exclude_lines = text.splitlines() if text else []
    exclude = IgnoreRules(exclude_lines) or None
    tracked = _tracked(root, root_fd)
    lines = [MARKER + "exclude " + line for line in exclude_lines]
    lines.append(f"{MARKER}index {tracked.digest if tracked is not None else '-'}")
    return RepoRules(exclude, tracked, tuple(lines), stamps)
