"""The search engine made ready in the background as soon as a client has initialized.

A client lists the tools and calls them right after `initialize`; finding rg, starting its confined launcher,
building the tree index and taking the census of the whole tree (about 30 ms on the stdlib, 1 s on a
100,000-file tree) then run while the client lists the tools and the model thinks, not inside the first
search. Only caches are filled: a search still checks everything it uses, and one that comes first does the
same work itself (or waits for the census being taken, then uses it).
"""

from __future__ import annotations

import threading
from functools import partial
from typing import Final

from repo_sandbox import heap
from repo_sandbox.workspace import Workspace

PREPARE_JOIN_S: Final = 10.0
"""How long closing a workspace waits for the background preparation."""


class Preparation:
    """Starts `engine.select.prepare` for one workspace in a thread, once."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self._lock = threading.Lock()
        self._started = False

    def start(self) -> None:
        with self._lock:
            if self._started:
                return
            self._started = True
        stop = threading.Event()
        thread = threading.Thread(target=self._run, args=(stop,), name="repo-sandbox-prepare", daemon=True)
        # Closing the workspace stops it, then waits for it first: what it opens (the tree index's
        # descriptors, rg's launcher, registered in on_close meanwhile) is then closed with the rest.
        self.workspace.on_close[:0] = [stop.set, partial(thread.join, PREPARE_JOIN_S)]
        thread.start()

    def _run(self, stop: threading.Event) -> None:
        from repo_sandbox.engine import select  # loaded here, after `initialize` was answered

        select.prepare(self.workspace, stop)
        heap.settle()  # the tree index just built lives as long as the server
