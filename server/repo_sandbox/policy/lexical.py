"""Caller paths as text: the checks and the lexical clean-up done before anything touches the filesystem.

Nothing is decoded (`%2e%2e` and a fullwidth dot are literal names) and `..` is collapsed lexically, so
`a/../b` is `b` even when `a` is a symlink. Containment of what is then opened is the kernel's job
(`fs.beneath`); this only refuses what can never be a path under the root.
"""

from __future__ import annotations

import os
import posixpath
from typing import Final

from repo_sandbox.errors import InvalidArgumentsError, PathOutsideRootError

MAX_PATH_BYTES: Final = 4096
"""Longest path accepted (Linux PATH_MAX)."""
MAX_COMPONENT_BYTES: Final = 255
"""Longest single path component accepted (NAME_MAX)."""


def lexical_path(user_path: str, root: str, *, field: str = "path") -> str:
    """Turn a caller's path into a clean root-relative POSIX path ('.' for the root).

    Raises:
        InvalidArgumentsError: NUL bytes, backslashes, unencodable text, over-long paths.
        PathOutsideRootError: absolute paths outside the root, `~`, `..` above the root.
    """
    if "\x00" in user_path:
        raise InvalidArgumentsError(f"'{field}' contains a NUL byte.", field=field)
    if "\\" in user_path:
        raise InvalidArgumentsError(
            f"'{field}' contains a backslash; paths use '/' as the separator.",
            hint="Write the path with forward slashes, e.g. 'src/main.py'.",
            field=field,
        )
    try:
        encoded = os.fsencode(user_path)
    except UnicodeEncodeError:  # a lone surrogate, as JSON's "\\ud800" decodes
        raise InvalidArgumentsError(f"'{field}' is not valid Unicode text.", field=field) from None
    if len(encoded) > MAX_PATH_BYTES or any(len(p) > MAX_COMPONENT_BYTES for p in encoded.split(b"/")):
        raise InvalidArgumentsError(f"'{field}' is too long.", field=field, max_bytes=MAX_PATH_BYTES)
    path = user_path.strip() or "."
    if path.startswith("~"):
        raise PathOutsideRootError(
            f"'{user_path}' refers to a home directory, which is outside the repository root.", path=user_path
        )
    if path.startswith("/"):
        path = _strip_root("/" + path.lstrip("/"), root, user_path)
    clean = posixpath.normpath(path)
    if clean == ".." or clean.startswith("../"):
        raise PathOutsideRootError(f"'{user_path}' resolves outside the repository root.", path=user_path)
    return clean


def _strip_root(path: str, root: str, user_path: str) -> str:
    clean = posixpath.normpath(path)
    if clean == root:
        return "."
    prefix = root.rstrip("/") + "/"
    if clean.startswith(prefix):  # whole components: '/x/repo-evil' does not start with '/x/repo/'
        return clean[len(prefix) :]
    raise PathOutsideRootError(
        f"'{user_path}' is an absolute path outside the repository root.",
        hint="Use a path relative to the repository root, e.g. 'src/main.py'.",
        path=user_path,
    )
