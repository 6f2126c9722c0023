"""The operator's deny-list: gitignore-syntax globs that hide paths from every tool.

Matching is case-insensitive and Unicode-NFKC-normalised, so `.ENV`, a decomposed `é` or a fullwidth `ＫＥＹ`
cannot slip past a rule on a case-insensitive or normalising filesystem (ZFS offers formKC). Trailing dots and
spaces of a name do not count either (`server.pem.`, `.git.`, `.netrc ` are the same name to Windows, SMB and
git's NTFS protection): a path is hidden when it matches as written OR with them removed from every name.
Normalisation is used for matching only, never to open a file. Every check is fail-closed about the kind of
entry: a path is hidden when it matches as a file OR as a directory, so a *file* named `.git` (a worktree's
pointer) is as hidden as the `.git/` directory.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from typing import Final

from repo_sandbox.policy.git.ignore import IgnoreRules

DEFAULT_DENY: Final[tuple[str, ...]] = (
    ".git/",
    ".env*",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.keystore",
    "*.kdbx",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    ".ssh/",
    ".gnupg/",
    ".aws/",
    ".netrc",
    ".pgpass",
    ".pypirc",
    ".npmrc",
    ".git-credentials",
    "credentials.json",
    "**/.docker/config.json",
    "*.tfstate",
    "secrets.y*ml",
)
"""Deny globs (gitignore syntax) applied by every tool: git internals, dotenv files, keys, credentials."""

_TRAILING: Final = ". "
_TRAILING_ENDS: Final = (".", " ")


def _match_key(rel_path: str) -> str:
    if rel_path.isascii():
        return rel_path.lower()  # the same as NFKC + casefold for ASCII, several times faster
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", rel_path).casefold())


def _trim(name: str) -> str:
    trimmed = name.rstrip(_TRAILING)
    return trimmed if trimmed else name  # '.', '..', '...' stay themselves


def _loose_key(key: str) -> str:
    """The key without the trailing dots and spaces of each name (the key itself when it has none)."""
    if not any(part.endswith(_TRAILING_ENDS) for part in key.split("/")):
        return key
    return "/".join(_trim(part) for part in key.split("/"))


def _trailing(keys: list[str]) -> list[int]:
    """Indices of the keys that end in a trailing dot or space."""
    return [i for i, key in enumerate(keys) if key.endswith(_TRAILING_ENDS)]


def _keys(rel_path: str) -> tuple[str, ...]:
    """The keys a path is matched by: as written, and without trailing dots and spaces when that differs."""
    key = _match_key(rel_path)
    loose = _loose_key(key)
    return (key,) if loose == key else (key, loose)


class DenyList:
    """Decides whether a root-relative path is hidden by policy."""

    __slots__ = ("_patterns", "_spec")

    def __init__(self, patterns: Iterable[str]) -> None:
        self._patterns = [p for p in patterns if p.strip() and not p.lstrip().startswith("#")]
        self._spec = IgnoreRules(_match_key(p) for p in self._patterns)

    def __len__(self) -> int:
        return len(self._patterns)

    def _rule(self, key: str, *, is_dir: bool) -> str | None:
        include, index = self._spec.check(key, is_dir=is_dir)
        return self._patterns[index] if include and index is not None else None

    def matching_rule(self, rel_path: str, *, is_dir: bool) -> str | None:
        """The deny rule that hides this one entry taken as a file (or as a directory), or None.

        Ancestors are not considered.
        """
        if rel_path in ("", "."):
            return None
        for key in _keys(rel_path):
            if (rule := self._rule(key, is_dir=is_dir)) is not None:
                return rule
        return None

    def entry_rule(self, rel_path: str) -> str | None:
        """The rule hiding this one entry as a file or as a directory (fail closed), ancestors not considered."""
        if rel_path in ("", "."):
            return None
        for key in _keys(rel_path):
            if (rule := self._key_rule(key)) is not None:
                return rule
        return None

    def _key_rule(self, key: str) -> str | None:
        if not self._spec.may_match(key):
            return None
        return self._rule(key, is_dir=False) or self._rule(key, is_dir=True)

    def denied_names(self, dir_rel: str, names: list[str]) -> set[str]:
        """The entries of directory `dir_rel` that are themselves denied (each as `is_entry_denied` decides)."""
        if not names:
            return set()
        prefix = "" if dir_rel in ("", ".") else _match_key(dir_rel) + "/"
        joined = "/".join(names)  # no name holds a '/'
        keys = joined.lower().split("/") if joined.isascii() else [_match_key(name) for name in names]
        denied = {
            names[i]
            for i in self._spec.candidates(prefix, keys)
            if self._rule(prefix + keys[i], is_dir=False) or self._rule(prefix + keys[i], is_dir=True)
        }
        loose_prefix = _loose_key(prefix)
        trimmed = range(len(names)) if loose_prefix != prefix else _trailing(keys)
        for i in trimmed:  # the others have nothing to trim: they were matched as written above
            if names[i] not in denied and self._key_rule(loose_prefix + _loose_key(keys[i])) is not None:
                denied.add(names[i])
        return denied

    def is_entry_denied(self, rel_path: str) -> bool:
        """True when this entry itself is hidden; a walker uses it because it never enters denied parents."""
        return self.entry_rule(rel_path) is not None

    def denying_rule(self, rel_path: str) -> str | None:
        """The rule that hides the path or any directory above it, or None (fail closed, as `entry_rule`)."""
        parts = [p for p in rel_path.split("/") if p not in ("", ".")]
        for depth in range(1, len(parts) + 1):
            rule = self.entry_rule("/".join(parts[:depth]))
            if rule is not None:
                return rule
        return None

    def is_denied(self, rel_path: str) -> bool:
        return self.denying_rule(rel_path) is not None
