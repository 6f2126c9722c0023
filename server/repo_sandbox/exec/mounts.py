"""What each OS sandbox shows of a repository view: bubblewrap mounts and Landlock rules, built once per view.

A denied file never appears in any result, not even as a name (DESIGN.md §3). Mounting over an entry hides
its content but not its name, so:
- **bwrap**: the repository shows at `SANDBOX_ROOT`, not at its host path. Every directory that directly holds
  an invisible entry is *rebuilt*: a tmpfs over it (with the directory's mode), then each visible entry put
  back (a read-only bind of a file or directory, a symlink re-created with the same target), then the tmpfs is
  made read-only. A visible child directory is bound
  whole, unless it holds invisible entries deeper down: then the directories below it on the way to them are
  handled the same way. Only those directories cost mounts (one bind per visible sibling of a denied entry,
  about 0.2 ms each here); the rest of the tree comes with the bind of the nearest clean ancestor. Masked
  entries (FIFOs, devices, hard links) outside rebuilt directories get an empty file mounted over them;
  inside rebuilt directories they are simply not put back. git stages see the real `.git` at `GIT_MOUNT`,
  outside the repository, with `GIT_DIR` pointing there: the root stays without a `.git` entry for them too.
  Every repository bind is a `Bind`, not a name: right before bubblewrap starts, `exec.binds` opens each entry
  beneath the root with `O_PATH | O_NOFOLLOW` and no symlink on the way, checks that it is still the kind the
  plan saw, and hands bubblewrap the descriptor (`--ro-bind-fd`). An entry swapped for a symlink after the
  plan is left out (it vanished, as far as the sandbox is concerned); one swapped after the open is not seen,
  since the descriptor holds the inode that was checked.
- **landlock** cannot hide a name, so it refuses to list instead: `READ_DIR` is never granted on a directory
  on the way to an invisible entry (Landlock rules apply to everything beneath a directory, so a directory
  can only be listable when nothing invisible lies anywhere under it). Listing such a directory fails with
  "Permission denied"; its visible entries stay readable by name (one rule each), and clean subdirectories
  are readable and listable as a whole. `stat` of a guessed name is not a Landlock right: only the command
  policy (which refuses denied operands) stands between a program and an existence check.
The view is an immutable snapshot, so the plans are cached in it (`RepoView.cache`) and rebuilt only when the
inotify watch reports a change (a new view).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from typing import Final

from repo_sandbox.exec.binds import SANDBOX_ROOT, Bind, PlanArg, sandbox_path
from repo_sandbox.exec.view import RepoView

GIT_MOUNT: Final = "/run/repo-sandbox-git"
"""Where bwrap shows a git stage the repository's `.git` directory (outside the root, so no name shows)."""
LandlockRule = tuple[str, str, bool]
"""(host path, access name of the launcher, follow symlinks)."""


def _join(parent: str, name: str) -> str:
    return name if parent == "." else f"{parent}/{name}"


def _parent(rel: str) -> str:
    return rel.rpartition("/")[0] or "."


def _ancestors(rels: Iterable[str]) -> set[str]:
    """Every directory above the given entries, the root ('.') included."""
    found: set[str] = set()
    for rel in rels:
        parent = _parent(rel)
        while parent not in found:
            found.add(parent)
            if parent == ".":
                break
            parent = _parent(parent)
    return found


def _mode(path: str) -> str:
    try:
        return f"{stat.S_IMODE(os.stat(path, follow_symlinks=False).st_mode):04o}"
    except OSError:
        return "0755"


class _BwrapPlan:
    def __init__(self, view: RepoView) -> None:
        self.view = view
        self.root = view.root
        unnamed = view.unnamed
        self.dirty = {_parent(rel) for rel in unnamed}
        self.on_path = _ancestors(unnamed)
        self.below: dict[str, list[str]] = {}
        for rel in sorted(self.on_path - {"."}):
            self.below.setdefault(_parent(rel), []).append(rel)
        self.args: list[PlanArg] = []
        self.rebuilt: list[str] = []

    def host(self, rel: str) -> str:
        return self.root if rel == "." else f"{self.root}/{rel}"

    def rebuild(self, rel: str) -> None:
        dest = sandbox_path(rel)
        self.args += ["--perms", _mode(self.host(rel)), "--tmpfs", dest]
        for entry in self.view.listings.get(rel, ()):
            child = _join(rel, entry.name)
            if entry.kind == "symlink":
                self.args += ["--symlink", entry.target, sandbox_path(child)]
            elif child in self.dirty:
                self.rebuild(child)
            else:
                self.args.append(Bind(child, entry.kind, sandbox_path(child)))
                if child in self.on_path:
                    self.descend(child)
        self.rebuilt.append(dest)

    def descend(self, rel: str) -> None:
        """`rel` is bound whole; rebuild what lies below it on the way to invisible entries."""
        for child in self.below.get(rel, ()):
            if child in self.dirty:
                self.rebuild(child)
            else:
                self.descend(child)

    def build(self, empty_file: str, empty_dir: str) -> list[PlanArg]:
        if "." in self.dirty:
            self.rebuild(".")
        else:
            self.args.append(Bind(".", "dir", SANDBOX_ROOT))
            self.descend(".")
        for dest in self.rebuilt:
            self.args += ["--remount-ro", dest]
        for rel, kind in sorted(self.view.masked.items()):
            if kind != "symlink" and _parent(rel) not in self.dirty:
                self.args += ["--ro-bind", empty_dir if kind == "dir" else empty_file, sandbox_path(rel)]
        return self.args


def bwrap_view_args(view: RepoView, empty_file: str, empty_dir: str) -> list[PlanArg]:
    """bwrap arguments showing the repository read-only without any invisible name (see the module doc)."""
    key = f"bwrap:{empty_file}:{empty_dir}"
    args: list[PlanArg] | None = view.cache.get(key)
    if args is None:
        args = _BwrapPlan(view).build(empty_file, empty_dir)
        view.cache[key] = args
    return args


def landlock_view_rules(view: RepoView) -> list[LandlockRule]:
    """Landlock rules for the repository (see the module doc); repository entries never follow symlinks."""
    rules: list[LandlockRule] | None = view.cache.get("landlock")
    if rules is not None:
        return rules
    root = view.root
    if not view.listings:
        rules = [(root, "r", False)]
    else:
        unlisted = _ancestors(view.unnamed)
        rules = []
        for rel, entries in view.listings.items():
            host = root if rel == "." else f"{root}/{rel}"
            if rel not in unlisted:
                rules.append((host, "list", False))
            for entry in entries:
                if entry.kind != "symlink" and _join(rel, entry.name) not in view.listings:
                    rules.append((f"{host}/{entry.name}", "r", False))
        rules += [(f"{root}/{rel}", "r", False) for rel in sorted(view.shown)]
    view.cache["landlock"] = rules
    return rules
