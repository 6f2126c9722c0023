"""Corpora: a copy of this interpreter's stdlib (without site-packages and __pycache__), made once."""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig
from pathlib import Path


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "repo-sandbox-bench"


def stdlib_corpus() -> Path:
    """The stdlib copy, built into the cache directory on first use (about 100 MB)."""
    version = ".".join(map(str, sys.version_info[:3]))
    target = cache_dir() / f"stdlib-{version}"
    if (target / ".complete").exists():
        return target
    source = Path(sysconfig.get_paths()["stdlib"])
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    shutil.copytree(
        source,
        partial,
        symlinks=True,
        ignore=lambda directory, names: [n for n in names if n in ("site-packages", "__pycache__")],
    )
    shutil.rmtree(target, ignore_errors=True)
    partial.rename(target)
    (target / ".complete").write_text("")
    return target


def pick_read_target(root: Path) -> Path:
    """A text file of at least 200 lines to read (the stdlib's argparse.py when present)."""
    preferred = root / "argparse.py"
    if preferred.is_file():
        return preferred
    for path in sorted(root.rglob("*.py")):
        if path.is_file() and path.read_bytes().count(b"\n") >= 200:
            return path
    raise SystemExit(f"bench: no text file with 200 lines under {root}")
