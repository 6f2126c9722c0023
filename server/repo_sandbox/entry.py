"""The `repo-sandbox` command (and `python -m repo_sandbox`): the process is set up for serving before anything
heavy is imported (the garbage collector held, `repo_sandbox.heap`; threads switched often), then the command
line runs."""

from __future__ import annotations

import sys
from typing import Final

SWITCH_INTERVAL_S: Final = 0.0005
"""How long a thread keeps the GIL while another waits for it. With Python's 5 ms, a thread that had let go
of the GIL for a system call (the census's `stat` of each file, reading rg's output, probing `rg --version`)
waited up to 5 ms to go on whenever another thread was computing (the tree index being built, the SDK): a
fresh server's first search on the stdlib took 3.5x rg with 5 ms and 2.5x with 0.5 ms."""


def main() -> int:
    from repo_sandbox import heap

    heap.hold()
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    from repo_sandbox.cli import main as run

    return run()
