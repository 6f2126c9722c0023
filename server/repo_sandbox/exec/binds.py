"""The repository binds of a bubblewrap stage, made from descriptors, and where the sandbox shows the repository.

A bind names what it binds (`Bind`: a root-relative entry and the kind the plan saw); `open_binds` opens each
one right before bubblewrap starts, beneath the root, with `O_PATH | O_NOFOLLOW` and no symlink on the way, and
fills its descriptor into a `--ro-bind-fd`. An entry swapped for a symlink (or for another kind) after the
plan is left out; one swapped after the open does not matter, since the descriptor holds the checked inode.
bubblewrap closes every descriptor it binds before the program starts.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Final

from repo_sandbox.errors import SandboxFailedError
from repo_sandbox.exec.view import EntryKind
from repo_sandbox.fs import beneath

SANDBOX_ROOT: Final = "/workspace"
"""Where bwrap shows the repository: a neutral path, so nothing a program prints names the host's."""
SANDBOX_HOSTNAME: Final = "sandbox"
"""The host name a bwrap stage sees (its own UTS namespace)."""


@dataclass(frozen=True, slots=True)
class Bind:
    """A read-only bind of the repository entry `rel` (as planned: a `kind`) at `dest` in the sandbox."""

    rel: str
    kind: EntryKind
    dest: str


PlanArg = str | Bind
"""A bwrap argument, or a bind whose source descriptor is opened at spawn time."""
FD_PLACEHOLDER: Final = "-1"
"""The descriptor argument of a `--ro-bind-fd` until `open_binds` fills it in."""
_GONE: Final = frozenset({errno.ENOENT, errno.ENOTDIR, errno.ELOOP, errno.EXDEV, errno.EACCES, errno.EPERM})
"""Errors that mean the entry is no longer what the plan saw (the bind is left out)."""


def sandbox_path(rel: str) -> str:
    """Where bwrap shows the repository entry `rel` (root-relative, '.' for the root)."""
    return SANDBOX_ROOT if rel == "." else f"{SANDBOX_ROOT}/{rel}"


def to_sandbox(path: str, root: str) -> str:
    """A host path at or under `root` as bwrap shows it (under `SANDBOX_ROOT`); any other path unchanged."""
    if path == root:
        return SANDBOX_ROOT
    if path.startswith(root.rstrip("/") + "/"):
        return sandbox_path(path[len(root.rstrip("/")) + 1 :])
    return path


def flatten(plan: Sequence[PlanArg]) -> tuple[list[str], tuple[tuple[int, Bind], ...]]:
    """bwrap's argv, each bind a `--ro-bind-fd` with a placeholder, and (index of the placeholder, bind)."""
    args: list[str] = []
    binds: list[tuple[int, Bind]] = []
    for item in plan:
        if isinstance(item, Bind):
            binds.append((len(args) + 1, item))
            args += ["--ro-bind-fd", FD_PLACEHOLDER, item.dest]
        else:
            args.append(item)
    return args, tuple(binds)


@cache
def _openat2_works(root: str) -> bool:
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        return beneath.probe_openat2(fd)
    finally:
        os.close(fd)


def _open_bind(root_fd: int, bind: Bind, openat2: bool) -> int | None:
    """The checked source of `bind`, or None when the entry is gone or no longer the kind planned."""
    try:
        fd = beneath.open_node_without_links(root_fd, bind.rel, openat2=openat2)
    except OSError as exc:
        if exc.errno in _GONE:
            return None
        raise SandboxFailedError(
            "Could not prepare the sandbox's view of the repository.", reason=os.strerror(exc.errno or 0)
        ) from None
    mode = os.fstat(fd).st_mode
    if stat.S_ISDIR(mode) if bind.kind == "dir" else stat.S_ISREG(mode):
        return fd
    os.close(fd)
    return None


def open_binds(root: str, argv: Sequence[str], binds: Sequence[tuple[int, Bind]]) -> tuple[list[str], list[int]]:
    """`argv` with the descriptor of every bind filled in (at each bind's index), and those descriptors (the
    caller passes them to bubblewrap and closes them). A bind whose entry changed is left out.

    Raises: SandboxFailedError when the repository cannot be opened (e.g. out of descriptors).
    """
    if not binds:
        return list(argv), []
    filled = list(argv)
    left_out: set[int] = set()
    fds: list[int] = []
    try:
        root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise SandboxFailedError(
            "Could not open the repository for the sandbox.", reason=os.strerror(exc.errno or 0)
        ) from None
    try:
        openat2 = _openat2_works(root)
        for index, bind in binds:
            fd = _open_bind(root_fd, bind, openat2)
            if fd is None:
                left_out.update((index - 1, index, index + 1))
            else:
                fds.append(fd)
                filled[index] = str(fd)
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    finally:
        os.close(root_fd)
    return [arg for index, arg in enumerate(filled) if index not in left_out], fds
