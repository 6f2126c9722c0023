"""The deny-list of a directory inside the root, for a client root that narrows the server's (`repo_sandbox.roots`).

A narrowed workspace sees paths relative to its own root, so a deny pattern that names more than one path
segment could stop matching across the new boundary: `**/.docker/config.json` would no longer hide
`config.json` in a root narrowed to `x/.docker`, nor `/build/secrets.txt` hide `secrets.txt` in a root narrowed
to `build`. `rebase` keeps every pattern (an anchored one then hides more, never less) and adds, for each
pattern whose leading segments match the end of the new root's path, the remainder anchored at the new root.
What it cannot rebase exactly (negations, escapes, a `**` inside a pattern) refuses the narrowing: fail closed.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Sequence

from repo_sandbox.policy.deny import DenyList, _keys, _match_key  # pyright: ignore[reportPrivateUsage]


class CannotRebase(Exception):
    """A pattern of the deny-list cannot be re-anchored at the new root."""


def _segment_matches(names: Sequence[tuple[str, ...]], globs: Sequence[str]) -> bool:
    """Every name (each given as its match keys) matches its glob (gitignore globs within one segment)."""
    return all(
        any(fnmatch.fnmatchcase(key, _match_key(glob)) for key in keys) for keys, glob in zip(names, globs, strict=True)
    )


def rebase(patterns: Iterable[str], prefix: str) -> list[str]:
    """The deny-list for the directory `prefix` (relative to the root, "a/b"): `patterns` and their remainders.

    Raises:
        CannotRebase: a pattern cannot be rebased exactly, or one denies `prefix` itself (the caller checks
            `DenyList.is_denied(prefix)` first; this is the same check, fail closed).
    """
    patterns = list(patterns)
    if DenyList(patterns).is_denied(prefix):
        raise CannotRebase(f"{prefix} is denied")
    parts = [part for part in prefix.split("/") if part not in ("", ".")]
    names = [_keys(part) for part in parts]
    kept: list[str] = []
    added: list[str] = []
    for raw in patterns:
        pattern = raw.strip()
        if not pattern or pattern.startswith("#"):
            continue
        kept.append(raw)
        if pattern.startswith("!") or "\\" in pattern or "[^" in pattern:
            raise CannotRebase(f"deny pattern {raw!r} (negations and escapes are not rebased)")
        trailing = "/" if pattern.endswith("/") else ""
        body = pattern.rstrip("/")
        anchored = body.startswith("/")
        segments = body.lstrip("/").split("/")
        if len(segments) == 1 and not anchored:
            continue  # a name pattern matches at any depth, below the new root as below the old one
        floating = segments[0] == "**"
        rest = segments[1:] if floating else segments
        if "**" in rest:
            raise CannotRebase(f"deny pattern {raw!r} ('**' inside a pattern is not rebased)")
        if floating:  # the pattern may start in any of the prefix's trailing segments
            for k in range(1, min(len(rest), len(parts)) + 1):
                if _segment_matches(names[-k:], rest[:k]):
                    if k == len(rest):
                        raise CannotRebase(f"deny pattern {raw!r} denies the new root")
                    added.append("/" + "/".join(rest[k:]) + trailing)
        elif len(rest) > len(parts):
            if _segment_matches(names, rest[: len(parts)]):
                added.append("/" + "/".join(rest[len(parts) :]) + trailing)
        elif _segment_matches(names[: len(rest)], rest):
            raise CannotRebase(f"deny pattern {raw!r} denies the new root")
    return [*kept, *added]
