"""Processes the session benchmark starts or compares with: the server's rg, the reference filesystem server,
and the peak memory of the server with every child it starts."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Self

from bench.procstat import READY, children_of
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


def server_pid(marker: str) -> int | None:
    """The child of this process whose command line holds `marker` (the server just spawned)."""
    for pid in children_of(os.getpid()):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline:
            return pid
    return None


class PeakRss:
    """The peak resident memory of a process tree, sampled every `interval_s` by a separate process
    (`bench.procstat`): a sampling thread here would take the GIL from the client that times the calls.
    The sampler starts on entering, before the process it samples exists (its own start-up, a Python
    process, must not share the machine with the first calls timed); `watch` gives it the process."""

    def __init__(self, interval_s: float = 0.05) -> None:
        self.interval_s = interval_s
        self.peak_kib = 0
        self._sampler: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Self:
        command = [sys.executable, "-m", "bench.procstat", str(self.interval_s)]
        self._sampler = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=ROOT)
        self._ready()
        return self

    def _ready(self) -> None:
        assert self._sampler is not None and self._sampler.stdout is not None
        line = self._sampler.stdout.readline().decode().strip()
        assert line == READY, f"bench: the memory sampler is not running ({line!r})"

    def watch(self, pid: int) -> None:
        """Sample `pid` and its descendants from now on; returns once the first sample is taken."""
        assert self._sampler is not None and self._sampler.stdin is not None
        self._sampler.stdin.write(f"{pid}\n".encode())
        self._sampler.stdin.flush()
        self._ready()

    def __exit__(self, *_: object) -> None:
        assert self._sampler is not None
        output = self._sampler.communicate(b"", timeout=30)[0]
        self.peak_kib = int(output or 0)

    @property
    def peak_mib(self) -> float:
        return self.peak_kib / 1024
