"""The path checker for the operands of a command: through the jail, relative to the call's working directory
(the lexical one for rule examples is `policy.operands`)."""

from __future__ import annotations

import os
import posixpath

from repo_sandbox.errors import NotFoundError, PathOutsideRootError
from repo_sandbox.fs.jail import Jail


class JailPaths:
    """Checks operands against the jail, relative to the call's working directory (root-relative).

    `shown_root`: where the program sees the repository (bwrap: /workspace), when not at its host path. An
    absolute operand is read as the program will: under `shown_root`, or outside the repository.
    """

    def __init__(self, jail: Jail, cwd: str, shown_root: str | None = None) -> None:
        self.jail = jail
        self.cwd = cwd
        self.shown_root = shown_root

    def _join(self, path: str, *, from_top: bool = False) -> str:
        if path.startswith("/") and self.shown_root is not None:
            return _inside(path, self.shown_root)
        base = "." if from_top else self.cwd
        if path.startswith("/") or (base == "." and path):
            return path
        return posixpath.join(base, path) if path else base

    def __call__(self, path: str) -> None:
        rel = self.jail.normalize(self._join(path), field="command")
        try:
            opened, dir_fd, _ = self.jail.open_any(rel, field="command")
        except NotFoundError:
            return  # the program reports a missing file itself
        if opened is not None:
            os.close(opened.fd)
        if dir_fd is not None:
            os.close(dir_fd)

    def pathspec(self, path: str, *, from_top: bool) -> None:
        self.jail.normalize(self._join(path, from_top=from_top), field="command")


def _inside(path: str, shown_root: str) -> str:
    """The root-relative path of an absolute `path` as a program that sees the repository at `shown_root` reads
    it. Raises: PathOutsideRootError."""
    clean = posixpath.normpath("/" + path.lstrip("/"))
    if clean == shown_root:
        return "."
    if clean.startswith(shown_root + "/"):
        return clean[len(shown_root) + 1 :]
    raise PathOutsideRootError(
        f"'{path}' is an absolute path outside the repository, which programs see at {shown_root}.",
        hint=f"Use a path relative to the working directory, or one under {shown_root}.",
        path=path,
    )
