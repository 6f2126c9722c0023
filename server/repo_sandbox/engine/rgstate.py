"""What the ripgrep engine keeps per workspace between searches: the confined launcher and strategy hints."""

from __future__ import annotations

import dataclasses
import threading
import weakref
from collections import OrderedDict
from functools import partial
from typing import Final

from repo_sandbox.engine.confine import Launcher, launcher
from repo_sandbox.engine.request import HitWindow, SearchRequest
from repo_sandbox.engine.ripgrep import Ripgrep
from repo_sandbox.workspace import Workspace

MAX_REMEMBERED: Final = 256
_many_hits: weakref.WeakKeyDictionary[Workspace, OrderedDict[SearchRequest, None]] = weakref.WeakKeyDictionary()
_many_hits_lock = threading.Lock()


def many_hits_before(ws: Workspace, request: SearchRequest) -> bool:
    """Whether the same search (whatever its page) had more hits than an unsorted run collects last time.

    Only a strategy hint: such a search starts with the sorted stream instead of an unsorted run that
    would be stopped anyway (paging through a large result). Both strategies give the same results, so a
    hint that has gone stale (the tree changed) costs time, never correctness.
    """
    with _many_hits_lock:
        remembered = _many_hits.get(ws)
        return remembered is not None and _page_free(request) in remembered


def remember_many_hits(ws: Workspace, request: SearchRequest, *, many: bool) -> None:
    key = _page_free(request)
    with _many_hits_lock:
        remembered = _many_hits.setdefault(ws, OrderedDict())
        if not many:
            remembered.pop(key, None)
            return
        remembered[key] = None
        remembered.move_to_end(key)
        while len(remembered) > MAX_REMEMBERED:
            remembered.popitem(last=False)


_met_large: weakref.WeakSet[Workspace] = weakref.WeakSet()
_hints_lock = threading.Lock()


def met_large_files(ws: Workspace) -> bool:
    """Whether a census of this workspace has met a file over `max_file_bytes`.

    Only a strategy hint for rg's `--max-filesize`, which costs rg a stat of every file (about a tenth of
    its run over CPython's stdlib): until a census meets such a file, rg is not told the limit. The census
    decides which files count whatever rg reads, so a stale hint costs rg time, never correctness.
    """
    with _hints_lock:
        return ws in _met_large


def remember_large_files(ws: Workspace) -> None:
    with _hints_lock:
        _met_large.add(ws)


_ignores_disagree: weakref.WeakSet[Workspace] = weakref.WeakSet()


def ignores_disagreed(ws: Workspace) -> bool:
    """Whether the last census that read ignore files found some that rg reads differently (a nested
    repository, a `.rgignore`: `census.rg_ignores_agree`).

    Only a strategy hint: such a search starts rg with `--no-ignore` instead of a run it would throw away. The
    census decides which files count, and a search whose census disagrees runs rg again without its ignore
    files, so a stale hint costs rg time, never correctness.
    """
    with _hints_lock:
        return ws in _ignores_disagree


def remember_ignores(ws: Workspace, *, agree: bool) -> None:
    with _hints_lock:
        if agree:
            _ignores_disagree.discard(ws)
        else:
            _ignores_disagree.add(ws)


_counts: weakref.WeakKeyDictionary[Workspace, list[int]] = weakref.WeakKeyDictionary()
"""Per workspace: files taken as rg printed them, files read again, censuses taken, censuses from a memo,
censuses the preparation took ahead of the first search."""
_counts_lock = threading.Lock()


def record_search(ws: Workspace, *, unread: int, read_again: int, from_memo: bool) -> None:
    """Count how one search's rg output was believed (`engine.vouch`): files taken as rg printed them, files
    read again through the jail; and whether its census came from a memo (`engine.censusmemo`)."""
    with _counts_lock:
        counts = _counts.setdefault(ws, [0, 0, 0, 0, 0])
        counts[0] += unread
        counts[1] += read_again
        counts[2] += 1
        counts[3] += from_memo


def record_census_ahead(ws: Workspace) -> None:
    """Count a census the preparation took (and kept as a memo) before any search asked for it."""
    with _counts_lock:
        _counts.setdefault(ws, [0, 0, 0, 0, 0])[4] += 1


def counts(ws: Workspace) -> dict[str, dict[str, int]]:
    """The workspace's counts so far, for the status resource."""
    with _counts_lock:
        unread, read_again, censuses, from_memo, ahead = _counts.get(ws, (0, 0, 0, 0, 0))
    return {
        "rg_output": {"files_unread": unread, "files_read_again": read_again},
        "census": {"taken": censuses, "from_memo": from_memo, "taken_ahead": ahead},
    }


def _page_free(request: SearchRequest) -> SearchRequest:
    return dataclasses.replace(request, keep_hits=HitWindow(), cancel=None, progress=None, deadline=None)


_launchers: weakref.WeakKeyDictionary[Workspace, dict[str, Launcher | None]] = weakref.WeakKeyDictionary()
_launchers_lock = threading.Lock()


def launcher_for(ws: Workspace, rg: Ripgrep) -> Launcher | None:
    """The workspace's launcher for this rg, started on first use and ended when the workspace closes; None
    when it cannot be confined (then rg is not used)."""
    with _launchers_lock:
        by_path = _launchers.get(ws)
        if by_path is None:
            by_path = _launchers[ws] = {}
            ws.on_close.append(partial(_close_launchers, by_path))
        if rg.path not in by_path:
            by_path[rg.path] = launcher(ws.jail.root_fd, rg.path)
        return by_path[rg.path]


def _close_launchers(by_path: dict[str, Launcher | None]) -> None:
    with _launchers_lock:
        started = [found for found in by_path.values() if found is not None]
        by_path.clear()
    for found in started:
        found.close()
