"""Processes the session benchmark starts or compares with: the server's rg, the reference filesystem server,
and the peak memory of the server with every child it starts."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Self

from repo_sandbox.engine import ripgrep

ROOT = Path(__file__).resolve().parents[1]
FS_SERVER_PACKAGE = "@modelcontextprotocol/server-filesystem@2026.8.31"
"""The official filesystem server, pinned: the read_file reference."""
FS_SERVER_PREFIX = ROOT / ".tools" / "server-filesystem"


def server_rg() -> str:
    """The rg binary the server's search_text uses (the same lookup, in the same environment)."""
    found = ripgrep.locate()
    if found is None:
        raise SystemExit("bench: no usable rg (install the project: scripts/bootstrap)")
    return found.path


def fs_server() -> tuple[str | None, str]:
    """The reference filesystem server's executable, installed into .tools/ on first use, or None and why."""
    binary = FS_SERVER_PREFIX / "node_modules" / ".bin" / "mcp-server-filesystem"
    if binary.exists():
        return str(binary), FS_SERVER_PACKAGE
    npm = shutil.which("npm")
    if npm is None:
        return None, "skipped: no npm to install " + FS_SERVER_PACKAGE
    done = subprocess.run(
        [npm, "install", "--prefix", str(FS_SERVER_PREFIX), "--save-exact", "--no-audit", "--no-fund"]
        + ["--loglevel=error", FS_SERVER_PACKAGE],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0 or not binary.exists():
        return None, f"skipped: npm install {FS_SERVER_PACKAGE} failed: {done.stderr.strip()[-300:]}"
    return str(binary), FS_SERVER_PACKAGE


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as handle:
                parent = int(handle.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        tree.setdefault(parent, []).append(int(entry.name))
    return tree


def _rss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status", "rb") as handle:
            for line in handle:
                if line.startswith(b"VmRSS:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def server_pid(marker: str) -> int | None:
    """The child of this process whose command line holds `marker` (the server just spawned)."""
    for pid in _children().get(os.getpid(), []):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline:
            return pid
    return None


def tree_rss_kib(pid: int) -> int:
    """Resident memory of `pid` and all its descendants."""
    tree = _children()
    total, stack = 0, [pid]
    while stack:
        current = stack.pop()
        total += _rss_kib(current)
        stack.extend(tree.get(current, []))
    return total


class PeakRss:
    """Samples the resident memory of a process tree every `interval_s` in a thread; `peak_mib` is the largest."""

    def __init__(self, pid: int, interval_s: float = 0.05) -> None:
        self.pid = pid
        self.interval_s = interval_s
        self.peak_kib = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak_kib = max(self.peak_kib, tree_rss_kib(self.pid))
            self._stop.wait(self.interval_s)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def peak_mib(self) -> float:
        return self.peak_kib / 1024
