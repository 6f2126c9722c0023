"""Path checkers for the operands of a command: the real one (through the jail) and a lexical one for examples."""

from __future__ import annotations

import os
import posixpath

from repo_sandbox.errors import NotFoundError, PathDeniedError, PathOutsideRootError
from repo_sandbox.fs.jail import Jail
from repo_sandbox.policy.deny import DenyList


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


class LexicalPaths:
    """For checking rule examples without a repository: inside (lexically) and not denied."""

    def __init__(self, deny: DenyList) -> None:
        self.deny = deny

    def __call__(self, path: str) -> None:
        self.pathspec(path, from_top=False)

    def pathspec(self, path: str, *, from_top: bool) -> None:
        del from_top
        if path.startswith(("/", "~")):
            raise PathOutsideRootError(f"'{path}' is outside the repository.", path=path)
        clean = posixpath.normpath(path or ".")
        if clean == ".." or clean.startswith("../"):
            raise PathOutsideRootError(f"'{path}' is outside the repository.", path=path)
        if clean != "." and self.deny.denying_rule(clean) is not None:
            raise PathDeniedError(f"'{path}' is protected by the server policy.", path=path)


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
