"""The policy walk with its listings taken from the tree index, and the index's own fast listing of file paths.

`IndexedWalk` is `Walk` in every respect (the same fds opened the same way, the same depth and entry caps,
counted from where it starts, the same truncation) except that a directory's listing comes from its index
node when the node provably describes the directory just opened: same inode, and the same ignore rules
handed down from above. Anything else (a directory changed since the snapshot, one the index does not hold
such as an ignored directory walked by name) is listed live, as `Walk` would.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from repo_sandbox.fs.jail import Jail
from repo_sandbox.fs.walk import Frame, IgnoreStack, Walk, WalkOptions
from repo_sandbox.tree.index import Snapshot


class IndexedWalk(Walk):
    def __init__(self, jail: Jail, start_fd: int, start_rel: str, options: WalkOptions, snapshot: Snapshot) -> None:
        super().__init__(jail, start_fd, start_rel, options)
        self.snapshot = snapshot

    def _ancestor_ignores(self) -> IgnoreStack:
        nodes = self.snapshot.nodes
        start = nodes.get(self.start_rel)
        if start is None or self.start_rel == "." or self.options.include_ignored:
            return super()._ancestor_ignores()
        parts = self.start_rel.split("/")
        for depth in range(len(parts)):
            ancestor = nodes["/".join(parts[:depth]) or "."]  # every ancestor of a node is a node
            self.saw_ancestor_ignores |= ancestor.has_ignore_files
            self.ignore_lines.extend(ancestor.ignore_lines)
        return start.inherited

    def indexed_snapshot(self) -> Snapshot | None:
        start = self.snapshot.nodes.get(self.start_rel)
        if start is None or (self.start_rel != "." and self.snapshot.truncated):
            return None  # a walk from below the root has its own depth cap: the index's cuts are not its cuts
        try:
            info = os.fstat(self.start_fd)
        except OSError:
            return None
        if (info.st_dev, info.st_ino) != start.ident:
            return None
        self.truncated = self.snapshot.truncated
        return self.snapshot

    def _frame(self, fd: int, rel: str, walk_prefix: str, ignores: IgnoreStack, depth: int, *, own_fd: bool) -> Frame:
        node = self.snapshot.nodes.get(rel)
        if node is not None and (ignores is node.inherited or (not ignores and not node.inherited)):
            try:
                info = os.fstat(fd)
            except OSError:
                info = None
            if info is not None and (info.st_dev, info.st_ino) == node.ident:
                if node.entries > self.options.max_entries - self.entries_seen:
                    self.truncated = self._stopped = True
                    return Frame(fd, rel, walk_prefix, ignores, depth, [], own_fd)
                self.entries_seen += node.entries
                self.saw_rgignore |= node.rgignore
                self.ignore_lines.extend(node.ignore_lines)
                return Frame(fd, rel, walk_prefix, node.ignores, depth, node.kept(), own_fd, node.facts, node.files)
        return super()._frame(fd, rel, walk_prefix, ignores, depth, own_fd=own_fd)


def file_runs(snapshot: Snapshot, start_rel: str) -> Iterator[tuple[str, str, list[str]]]:
    """The files under `start_rel` in walk order, in runs of one directory: (root-relative prefix, prefix
    relative to the start, names). Equal to what a walk from `start_rel` yields when the snapshot is not
    truncated (or the start is the root), without opening anything."""
    start = snapshot.nodes[start_rel]
    stack = [(start, start.runs(), "")]
    while stack:
        node, runs, walk_prefix = stack[-1]
        step = next(runs, None)
        if step is None:
            stack.pop()
            continue
        names, subdir = step
        if names:
            yield node.prefix, walk_prefix, names
        if subdir is not None:
            child = snapshot.nodes.get(node.child_rel(subdir))
            if child is not None:
                stack.append((child, child.runs(), f"{walk_prefix}{subdir}/"))


def indexed_snapshot(walk: Walk) -> Snapshot | None:
    """A tree index snapshot that lists this walk's files exactly (`file_runs(snapshot, walk.start_rel)`),
    without opening anything; then `walk.truncated` is set (the ignore flags are not). Else None: a live walk
    (`fs.walk.Walk`) has none."""
    return walk.indexed_snapshot() if isinstance(walk, IndexedWalk) else None
