"""The server with one or more of its caches switched off, for the on/off table of the session benchmark.

`python -m bench.variant census_memo,file_facts -- --root DIR`: the mechanisms without a setting of their own
are disabled by replacing their lookup with one that never finds anything (results are the same: each is a
cache). The tree index has a setting: use `--env` (see bench/run.py `--session`).
"""

from __future__ import annotations

import sys
from typing import Any


def _off(name: str) -> None:
    if name == "census_memo":
        from repo_sandbox.engine import censusmemo

        censusmemo.recall = lambda *_: None  # type: ignore[assignment]
    elif name == "file_facts":
        from repo_sandbox.tree import facts

        def recall(*_: Any) -> None:
            return None

        def remember(*_: Any, **__: Any) -> None:
            return None

        facts.recall = recall  # type: ignore[assignment]
        facts.remember = remember  # type: ignore[assignment]
    elif name:
        raise SystemExit(f"bench.variant: no mechanism {name!r}")


def main() -> int:
    names, _, *rest = sys.argv[1:]
    for name in names.split(","):
        _off(name)
    sys.argv[1:] = rest
    from repo_sandbox.entry import main as serve  # as the `repo-sandbox` command starts

    return serve()


if __name__ == "__main__":
    raise SystemExit(main())
