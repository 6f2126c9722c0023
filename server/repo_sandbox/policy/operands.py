"""The lexical path checker for the operands of rule examples (the real one, through the jail, is `exec.operands`)."""

from __future__ import annotations

import posixpath

from repo_sandbox.errors import PathDeniedError, PathOutsideRootError
from repo_sandbox.policy.deny import DenyList


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
