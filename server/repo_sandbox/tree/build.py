"""Listing directories into the nodes of a tree index: a whole subtree, or one directory again after a change.

Every directory is opened relative to its parent's fd without following symlinks (as the walk does), watched
BEFORE it is listed (so a change made while listing shows as an event later), `fstat`ed for its identity and
time stamps, then listed with the walk's own `list_directory`: the index holds exactly what the policy walk
would list.
"""

from __future__ import annotations

import errno
import os
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Final

from repo_sandbox.fs.jail import Jail
from repo_sandbox.fs.walk import IgnoreStack, WalkOptions, list_directory
from repo_sandbox.tree.factstore import Seeds
from repo_sandbox.tree.node import Node

DIR_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
MAX_INDEXED_FILES: Final = 400_000
"""An index holds at most this many files (about 60 bytes each); a larger tree is walked on every call."""


class TooLarge(Exception):
    """The tree holds more entries than a walk visits, or more files than an index holds."""


def open_dir_nofollow(root_fd: int, rel: str) -> int:
    """Open a root-relative directory, refusing a symlink at any component (OSError)."""
    fd = os.open(".", DIR_FLAGS, dir_fd=root_fd)
    if rel == ".":
        return fd
    for part in rel.split("/"):
        try:
            child = os.open(part, DIR_FLAGS, dir_fd=fd)
        finally:
            os.close(fd)
        fd = child
    return fd


def identity(fd: int) -> tuple[int, int]:
    info = os.fstat(fd)
    return info.st_dev, info.st_ino


class Builder:
    """Lists directories into `nodes` (a private copy until published), keeping exact entry and file totals."""

    def __init__(
        self,
        jail: Jail,
        options: WalkOptions,
        nodes: dict[str, Node],
        previous: Mapping[str, Node],
        watch: Callable[[int, str], int],
        unwatch: Callable[[Node], None],
        seeds: Seeds | None = None,
    ) -> None:
        self.jail = jail
        self.options = options
        self.nodes = nodes
        self.previous = previous
        """The nodes of the last snapshot: their file facts are carried over by path."""
        self.seeds: Seeds = {} if seeds is None else seeds
        """Facts a previous run kept (`tree.factstore`), carried over by path where `previous` has no node."""
        self.watch = watch
        self.unwatch = unwatch
        self.entries = sum(node.entries for node in nodes.values())
        self.files = sum(node.file_count for node in nodes.values())

    def _put(self, node: Node) -> None:
        old = self.nodes.get(node.rel)
        if old is not None:
            self.entries -= old.entries
            self.files -= old.file_count
        self.nodes[node.rel] = node
        self.entries += node.entries
        self.files += node.file_count
        if self.entries > self.options.max_entries or self.files > MAX_INDEXED_FILES:
            raise TooLarge

    def _list(self, fd: int, rel: str, depth: int, inherited: IgnoreStack, wd: int | None = None) -> Node:
        wd = self.watch(fd, rel) if wd is None else wd
        info = os.fstat(fd)
        listed_ns = time.time_ns()
        budget = self.options.max_entries - self.entries
        listing = list_directory(self.jail, fd, rel, inherited, self.options, budget, stamps=True)
        if listing is None:
            raise TooLarge
        previous = self.previous.get(rel)
        node = Node.from_listing(
            rel,
            depth,
            (info.st_dev, info.st_ino),
            (info.st_mtime_ns, info.st_ctime_ns),
            listed_ns,
            listing,
            inherited,
            previous,
            self.seeds.get(rel) if previous is None else None,
        )
        node.wd = wd
        self._put(node)
        return node

    def _open_child(self, parent: Node, parent_fd: int, name: str) -> int | None:
        """The walk's rule: a subdirectory past the depth cap or one that cannot be opened is not entered."""
        if parent.depth + 1 >= self.options.max_depth:
            parent.cut = True
            return None
        try:
            return os.open(name, DIR_FLAGS, dir_fd=parent_fd)
        except OSError as exc:
            parent.retry = True
            if exc.errno in (errno.EMFILE, errno.ENFILE, errno.ENOMEM):
                parent.cut = True
            return None

    def subtree(self, fd: int, rel: str, depth: int, inherited: IgnoreStack) -> None:
        """List the directory open at `fd` and every directory below it (depth first, one fd per level).
        Closes `fd`."""
        frames: list[tuple[int, Node, Iterator[tuple[int, str]]]] = []
        try:
            node = self._list(fd, rel, depth, inherited)
            frames.append((fd, node, iter(node.dirs)))
            fd = -1
            while frames:
                parent_fd, parent, pending = frames[-1]
                step = next(pending, None)
                if step is None:
                    frames.pop()
                    os.close(parent_fd)
                    continue
                name = step[1]
                opened = self._open_child(parent, parent_fd, name)
                if opened is None:
                    continue
                fd = opened
                child = self._list(fd, parent.child_rel(name), parent.depth + 1, parent.ignores)
                frames.append((fd, child, iter(child.dirs)))
                fd = -1
        finally:
            if fd >= 0:
                os.close(fd)
            for frame_fd, _, _ in frames:
                os.close(frame_fd)

    def drop(self, rel: str) -> None:
        """Forget a directory and everything below it."""
        pending = [rel]
        while pending:
            node = self.nodes.pop(pending.pop(), None)
            if node is None:
                continue
            self.entries -= node.entries
            self.files -= node.file_count
            self.unwatch(node)
            pending.extend(node.child_rel(name) for _, name in node.dirs)

    def relist(self, node: Node) -> bool:
        """List a changed directory again. Subdirectories that are still the same directory (same inode) under
        the same ignore rules keep their nodes (their own changes are handled on their own); new or replaced
        ones are listed whole. False when only a rebuild can help (the root itself was replaced)."""
        try:
            fd = open_dir_nofollow(self.jail.root_fd, node.rel)
        except OSError:
            fd = -1
        if fd >= 0 and identity(fd) != node.ident:
            os.close(fd)
            fd = -1
        if fd < 0:  # no longer this directory: its parent's listing changed too
            parent = self.nodes.get(node.rel.rpartition("/")[0] or ".") if node.rel != "." else None
            if parent is None or parent is not self.previous.get(parent.rel):
                return False  # the root, or a race with a re-listing done just now: rebuild
            return self.relist(parent)
        try:
            new = self._list(fd, node.rel, node.depth, node.inherited, node.wd)
            kept = {name for _, name in new.dirs}
            for _, name in node.dirs:
                if name not in kept:
                    self.drop(node.child_rel(name))
            for _, name in new.dirs:
                self._recheck_child(new, fd, name)
        finally:
            os.close(fd)
        return True

    def unlisted_children(self) -> list[Node]:
        """Directories with a subdirectory the walk would enter that has no node (which only a race between
        re-listings can cause): listing them again makes the index whole."""
        nodes = self.nodes
        return [
            node
            for node in nodes.values()
            if not (node.cut or node.retry) and any(node.child_rel(name) not in nodes for _, name in node.dirs)
        ]

    def _recheck_child(self, parent: Node, parent_fd: int, name: str) -> None:
        rel = parent.child_rel(name)
        existing = self.nodes.get(rel)
        child_fd = self._open_child(parent, parent_fd, name)
        if child_fd is None:
            if existing is not None:
                self.drop(rel)
            return
        try:
            same = (
                existing is not None and existing.inherited is parent.ignores and identity(child_fd) == existing.ident
            )
        except OSError:
            same = False
        if same:
            os.close(child_fd)
            return
        if existing is not None:
            self.drop(rel)
        self.subtree(child_fd, rel, parent.depth + 1, parent.ignores)
