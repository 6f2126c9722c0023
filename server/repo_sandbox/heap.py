"""The garbage collector of a serving process: no collection during start-up, and what lives long out of its sight.

A full collection visits every object the collector tracks. Once the MCP SDK and the server are loaded there
are about 100,000, and the tree index of a 100,000-file repository adds 40,000: each full collection took 50 to
90 ms, every few calls, added to whichever call was running. None of those objects is garbage: modules, schemas
and the index live as long as the server (an index node that is replaced is freed by its reference count,
frozen or not). So a process started by the `repo-sandbox` command (`repo_sandbox.entry`):
- starts with automatic collection off (`hold`): imports allocate much and free next to nothing;
- once it serves, and again once the tree index is built, moves everything alive to the permanent generation
  (`settle`, `gc.freeze`), which collections skip, and collects as usual from then on: a full collection
  visits only what calls made since.
A program that embeds the server (tests, `Client(build_server(...))`) keeps its collector as it set it.
"""

from __future__ import annotations

import gc
from typing import Any

_held = False


def hold() -> None:
    """This process is a `repo-sandbox` command: no automatic collection until `settle`."""
    global _held  # noqa: PLW0603  # one collector per process
    _held = True
    gc.disable()


def settle() -> None:
    """What is alive now stays: move it out of the collector's sight, then collect automatically. Does nothing
    in a process that did not `hold` (an embedding program)."""
    if _held:
        gc.freeze()
        gc.enable()


def describe() -> dict[str, Any]:
    """For the status resource: how many objects full collections skip, and how many collections ran."""
    return {
        "automatic": gc.isenabled(),
        "frozen_objects": gc.get_freeze_count(),
        "collections_by_generation": [generation["collections"] for generation in gc.get_stats()],
    }
