"""A process's footprint from /proc (Linux): resident memory, descriptors, threads, and its descendants."""

from __future__ import annotations

import os
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
    parents: dict[int, list[int]] = {}
    names: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        name, rest = stat[stat.index("(") + 1 : stat.rindex(")")], stat[stat.rindex(")") + 2 :].split()
        parents.setdefault(int(rest[1]), []).append(int(entry))
        names[int(entry)] = name
    found: dict[int, str] = {}
    pending = list(parents.get(pid, []))
    while pending:
        child = pending.pop()
        found[child] = names.get(child, "?")
        pending.extend(parents.get(child, []))
    return found
