"""The `repo-sandbox` command (and `python -m repo_sandbox`): the garbage collector is held before anything
heavy is imported (`repo_sandbox.heap`), then the command line runs."""

from __future__ import annotations


def main() -> int:
    from repo_sandbox import heap

    heap.hold()
    from repo_sandbox.cli import main as run

    return run()
