"""The repository a server exposes: its jail, its policy settings and the walker defaults."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from repo_sandbox.audit.log import AuditLog
from repo_sandbox.config.model import LimitsConfig, Settings
from repo_sandbox.fs.jail import Jail
from repo_sandbox.fs.walk import Walk, WalkOptions
from repo_sandbox.policy.deny import DenyList
from repo_sandbox.tree.factstore import FactStore
from repo_sandbox.tree.indexes import TreeIndexes
from repo_sandbox.tree.walk import IndexedWalk


class Workspace:
    """Everything a tool body needs besides its arguments."""

    def __init__(self, settings: Settings, *, audit: AuditLog | None = None) -> None:
        """`audit`: the trail of another workspace to write to (one of a client root's, `roots`); not closed here."""
        self.settings = settings
        ws = settings.workspace
        self.jail = Jail(ws.root, DenyList(ws.effective_deny), allow_hard_links=ws.allow_hard_links)
        self._owns_audit = audit is None
        self.audit = AuditLog(settings.audit) if audit is None else audit
        """The audit trail; any stage or tool may record a policy decision with `audit.decision(...)`."""
        store = FactStore(self.jail.root, self.jail.root_fd) if ws.facts_cache else None
        self.trees = TreeIndexes(self.jail, ws.tree_index, store)
        """The walk's listings kept between calls (`tree.index`); `walk()` uses them."""
        self.on_close: list[Callable[[], None]] = []
        """Called by `close()`, for services that hold resources of this workspace (e.g. exec's watches)."""

    @property
    def root(self) -> str:
        return self.jail.root

    @property
    def limits(self) -> LimitsConfig:
        return self.settings.limits

    def close(self) -> None:
        for callback in self.on_close:
            callback()
        self.on_close.clear()
        self.trees.close()
        if self._owns_audit:
            self.audit.close()
        self.jail.close()

    def walk_options(self, *, include_hidden: bool | None, include_ignored: bool) -> WalkOptions:
        ws = self.settings.workspace
        return WalkOptions(
            include_hidden=ws.include_hidden if include_hidden is None else include_hidden,
            include_ignored=include_ignored or not ws.respect_gitignore,
            max_depth=ws.max_depth,
            max_entries=ws.max_walk_entries,
        )

    @contextmanager
    def walk(self, user_path: str, *, include_hidden: bool | None, include_ignored: bool) -> Iterator[Walk]:
        """Open `user_path` as a directory in the jail and walk it (with the tree index's listings where they
        still hold); the fd is closed on exit."""
        fd, rel = self.jail.open_dir(user_path)
        try:
            options = self.walk_options(include_hidden=include_hidden, include_ignored=include_ignored)
            snapshot = self.trees.snapshot(options)
            yield (
                Walk(self.jail, fd, rel, options)
                if snapshot is None
                else IndexedWalk(self.jail, fd, rel, options, snapshot)
            )
        finally:
            os.close(fd)
