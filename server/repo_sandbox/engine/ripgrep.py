"""Finding the rg binary search_text may use, and saying which one it is.

Sources, in order: the operator's `search.ripgrep_path`; `rg` on PATH (absolute directories only, so a
relative PATH entry can never pick up an `rg` from the served repository); the rg that the PyPI `ripgrep`
wheel installs next to this Python (`<prefix>/bin/rg`). A candidate is used only if it is a regular
executable file that answers `rg --version` with ripgrep 13 or newer within a few seconds; of those found
on PATH and in the wheel, the newest wins (an old system rg 13 ran one pattern 12x slower than the wheel's
14.1), the first found among equals. The answer is cached per configured path for the life of the process.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
import sysconfig
import threading
from dataclasses import dataclass
from typing import Any, Final

MIN_VERSION: Final = (13, 0, 0)
"""Oldest ripgrep whose flags and output format the engine relies on (Debian 12 ships 13.0.0)."""
_VERSION = re.compile(rb"^ripgrep (\d+)\.(\d+)\.(\d+)")


@dataclass(frozen=True, slots=True)
class Ripgrep:
    path: str
    version: tuple[int, int, int]
    source: str
    """"configured", "path" or "wheel"."""

    def describe(self) -> dict[str, Any]:
        """For the status resource, which a client reads: no host path."""
        return {"version": ".".join(map(str, self.version)), "source": self.source}


_lock = threading.Lock()
_cache: dict[str, Ripgrep | None] = {}


def clean_env() -> dict[str, str]:
    """rg's whole environment: nothing from ours (no RIPGREP_CONFIG_PATH, no HOME for git's global
    excludes, no locale surprises)."""
    return {"LC_ALL": "C"}


def _probe(path: str, source: str) -> Ripgrep | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode) or not os.access(path, os.X_OK):
        return None
    try:
        done = subprocess.run(
            [path, "--version"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            env=clean_env(),
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    found = _VERSION.match(done.stdout)
    if done.returncode != 0 or found is None:
        return None
    version = (int(found.group(1)), int(found.group(2)), int(found.group(3)))
    return Ripgrep(path, version, source) if version >= MIN_VERSION else None


def _candidates(configured: str) -> list[tuple[str, str]]:
    if configured:
        return [(configured, "configured")] if os.path.isabs(configured) else []
    found: list[tuple[str, str]] = []
    for directory in os.environ.get("PATH", "").split(os.pathsep):
        if os.path.isabs(directory):
            found.append((os.path.join(directory, "rg"), "path"))
    scripts = sysconfig.get_path("scripts")
    for directory in (scripts, os.path.dirname(sys.executable)):
        if directory:
            found.append((os.path.join(directory, "rg"), "wheel"))
    return found


def locate(configured: str = "") -> Ripgrep | None:
    """The rg binary to use, or None (the Python engine then answers every search)."""
    with _lock:
        if configured in _cache:
            return _cache[configured]
        seen: set[str] = set()
        result: Ripgrep | None = None
        for path, source in _candidates(configured):
            real = os.path.realpath(path)
            if real in seen:
                continue
            seen.add(real)
            found = _probe(path, source)
            if found is not None and (result is None or found.version > result.version):
                result = found
        _cache[configured] = result
        return result


def forget() -> None:
    """Drop the cached answers (tests that hide or provide rg)."""
    with _lock:
        _cache.clear()
