"""Corpora: a copy of this interpreter's stdlib (without site-packages and __pycache__), made once."""

from __future__ import annotations

import fcntl
import os
import shutil
import sys
import sysconfig
import time
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
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.with_name(target.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # test processes running side by side build it once
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


BIG_FILES = 100_000
"""Files in the generated large tree: copies of the stdlib corpus side by side, enough of them to reach this."""


def _tree_size(root: Path) -> tuple[int, int]:
    files = size = 0
    for directory, _dirs, names in os.walk(root):
        for name in names:
            files += 1
            size += os.lstat(os.path.join(directory, name)).st_size
    return files, size


def big_corpus(files: int = BIG_FILES) -> tuple[Path | None, str]:
    """A tree of at least `files` files (copies of the stdlib corpus), built once into the cache directory,
    and a line saying how big it is and how long it took to make (or why there is none: too little disk)."""
    small = stdlib_corpus()
    per_copy, per_copy_bytes = _tree_size(small)
    copies = -(-files // per_copy)
    target = cache_dir() / f"big-{small.name}-x{copies}"
    marker = target / ".complete"
    if marker.exists():
        return target, marker.read_text()
    need = copies * per_copy_bytes * 1.2 + 1024**3
    free = shutil.disk_usage(cache_dir()).free
    if free < need:
        return None, f"skipped: {free / 1024**3:.1f} GiB free in {cache_dir()}, {need / 1024**3:.1f} GiB needed"
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    start = time.monotonic()
    for copy in range(copies):
        shutil.copytree(small, partial / f"copy{copy:03d}", symlinks=True, ignore=shutil.ignore_patterns(".complete"))
    elapsed = time.monotonic() - start
    shutil.rmtree(target, ignore_errors=True)
    partial.rename(target)
    line = (
        f"{copies} copies of the stdlib: {copies * per_copy} files, {copies * per_copy_bytes / 1024**3:.2f} GiB,"
        f" generated in {elapsed:.0f} s (kept in {target})"
    )
    marker.write_text(line)
    return target, line
