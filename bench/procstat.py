"""A process's footprint from /proc (Linux): resident memory, descriptors, threads, and its descendants."""

from __future__ import annotations

import os
import select
import sys
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class ProcessSample:
    at: float
    rss_mb: float
    fds: int
    threads: int
    children: int


def sample(pid: int) -> ProcessSample | None:
    """The process's footprint now; None once it is gone."""
    try:
        status = dict(
            line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line
        )
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except (FileNotFoundError, ProcessLookupError):
        return None
    rss_kb = int(status["VmRSS"].split()[0])
    return ProcessSample(time.monotonic(), rss_kb / 1024, fds, int(status["Threads"]), len(descendants(pid)))


def descendants(pid: int) -> dict[int, str]:
    """Every process below `pid` (children, theirs, ...), with its command name."""
    found: dict[int, str] = {}
    pending = children_of(pid)
    while pending:
        child = pending.pop()
        try:
            found[child] = Path(f"/proc/{child}/comm").read_text().strip()
        except OSError:
            found[child] = "?"
        pending += children_of(child)
    return found


def children_of(pid: int) -> list[int]:
    """The direct children of `pid`, from each of its threads' `children` file (no scan of /proc)."""
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children", "rb") as handle:
                found += [int(child) for child in handle.read().split()]
        except (OSError, ValueError):
            continue
    return found


def _rss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status", "rb") as handle:
            for line in handle:
                if line.startswith(b"VmRSS:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


_FORKED_NO_EXEC = 0x40
"""`PF_FORKNOEXEC` in /proc/PID/stat's flags: forked, not yet exec'd."""


def _exec_pending(pid: int) -> bool:
    """Whether `pid` has not exec'd since it was forked: its memory is its parent's (shared by vfork, or
    copy-on-write), which its VmRSS reports again in full."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            flags = int(handle.read().rsplit(b")", 1)[1].split()[6])
    except (OSError, ValueError, IndexError):
        return False
    return bool(flags & _FORKED_NO_EXEC)


def tree_rss_kib(pid: int) -> int:
    """Resident memory of `pid` and every process below it; a child caught between fork and exec (every
    spawn passes through that instant) is not counted again."""
    total, pending = _rss_kib(pid), children_of(pid)
    while pending:
        current = pending.pop()
        if not _exec_pending(current):
            total += _rss_kib(current)
        pending += children_of(current)
    return total


READY = "ready"
"""The line the sampler prints once it runs (its own start-up is then over), and again once it has taken the
first sample of the process it was given."""


def peak_of_given_pid(interval_s: float) -> int:
    """Print `READY`, read a PID from stdin, sample it at once (then print `READY` again) and every
    `interval_s` until stdin closes (or says anything more); the largest `tree_rss_kib` seen."""
    print(READY, flush=True)
    line = sys.stdin.readline()
    if not line.strip():
        return 0
    pid = int(line)
    peak = tree_rss_kib(pid)
    print(READY, flush=True)
    while not select.select([sys.stdin], [], [], interval_s)[0]:
        peak = max(peak, tree_rss_kib(pid))
    return max(peak, tree_rss_kib(pid))


if __name__ == "__main__":  # python -m bench.procstat INTERVAL_S, then a PID on stdin: the peak in KiB at the end
    print(peak_of_given_pid(float(sys.argv[1])), flush=True)
