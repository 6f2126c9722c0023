"""Which engine answers a search: ripgrep when the operator allows it and a usable rg is found, else Python."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

from repo_sandbox.engine import ripgrep
from repo_sandbox.engine.request import FileHits, SearchRequest, SearchStats
from repo_sandbox.workspace import Workspace


def ripgrep_for(ws: Workspace) -> ripgrep.Ripgrep | None:
    """The rg binary this workspace's searches use, or None for the Python engine (also when rg could not
    be confined to the repository by Landlock, or started inside the jail's directory through /proc)."""
    search = ws.settings.search
    if search.engine == "python" or not ws.jail.uses_proc:
        return None
    from repo_sandbox.engine import confine  # ctypes: loaded on the first search, not at start-up

    if not confine.available():
        return None
    return ripgrep.locate(search.ripgrep_path)


def prepare(ws: Workspace, stop: threading.Event) -> None:
    """Do ahead what the first search would do (a client that lists the tools calls them next): load the
    engine, find rg and start its confined launcher, build the tree index, take the census of the whole tree
    (`census.take_ahead`, until `stop` is set). Only caches are filled: a search still checks everything it
    uses, and one that comes first does the same work itself."""
    rg = ripgrep_for(ws)
    options = ws.walk_options(include_hidden=None, include_ignored=False)
    if rg is None:
        from repo_sandbox.engine import pytree  # noqa: F401  # loaded here, not by the first search

        ws.trees.snapshot(options)
        return
    from repo_sandbox.engine import census, rgsearch, rgstate  # noqa: F401

    if ws.trees.snapshot(options) is not None:  # None: the workspace closed meanwhile (or keeps no index)
        rgstate.launcher_for(ws, rg)
        if census.take_ahead(ws, stop):
            rgstate.record_census_ahead(ws)


def iter_file_hits(ws: Workspace, request: SearchRequest, stats: SearchStats) -> Iterator[FileHits]:
    """Search with the engine the settings select; both stream the same `FileHits` in path order.

    rg needs /proc/self/fd to start inside the directory the jail opened; multiline searches are the
    Python engine's (rg prints the lines of a multiline match without saying where one match ends).
    """
    rg = ripgrep_for(ws)
    if rg is None or request.multiline:
        from repo_sandbox.engine import pytree  # imports `regex`: loaded on the first search, not at start-up

        return pytree.iter_file_hits(ws, request, stats)
    from repo_sandbox.engine import rgsearch

    return rgsearch.iter_file_hits(ws, rg, request, stats)


def report(ws: Workspace) -> dict[str, Any]:
    """The "search" entry of the status resource."""
    rg = ripgrep_for(ws)
    entry: dict[str, Any] = {
        "engine": "ripgrep" if rg is not None else "python",
        "configured": ws.settings.search.engine,
        "ripgrep": rg.describe() if rg is not None else None,
        "python_engine_for": ["multiline searches", "a single file"] if rg is not None else ["every search"],
    }
    if rg is not None:
        from repo_sandbox.engine import rgstate

        entry.update(rgstate.counts(ws))
    return entry
