"""The names in git's records as raw bytes: exact parsing of tree objects, needle search, non-ASCII names.

A tree object's content is a list of entries `<mode> <name>\\0<id>`, the id binary (20 bytes, 32 in a SHA-256
repository). A name holds no NUL, but an id may hold any byte, spaces and NULs included, so names are only
found by reading the entries in turn: `tree_items` does it with one regex pass and proves that the entries it
matched tile the whole content (anything else is refused, never guessed at). Index paths are laid out as
`" name\\0"` per component (`component_haystack`).

Needles (`exec.git.excludes`) are searched over lowercased bytes (git's `icase` folds ASCII only); the modes
before the names can only add matches, never hide one. Besides the needles, every name with a byte outside
ASCII is kept (`Findings.foreign`): the deny-list matches names NFKC-normalised and case-folded while git's
pathspecs compare bytes, so those names are judged one by one (`exec.git.foreign`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Final

from repo_sandbox.fs.gitrun import ScanError

MAX_FOREIGN_NAMES: Final = 100_000
"""More distinct non-ASCII names than this in git's records are not kept (every non-ASCII path is excluded)."""
_ENTRIES: Final = {size: re.compile(rb"(?s)([0-7]+ [^\0]*)\0.{%d}" % size) for size in (20, 32)}
_BATCH: Final = 100_000
"""Tree entries are searched for needles this many at a time (one search per tree costs more)."""


def component_haystack(paths: Iterable[bytes]) -> bytes:
    """Lowercased `b" name\\0"` for every component of every `/`-separated path."""
    return b"".join(b" " + path.lower().replace(b"/", b"\0 ") + b"\0" for path in paths if path)


def foreign_components(paths: Iterable[bytes]) -> set[bytes]:
    """The names (components of `/`-separated paths) holding a byte outside ASCII."""
    return {name for path in paths if not path.isascii() for name in path.split(b"/") if not name.isascii()}


def union_names(first: frozenset[bytes] | None, second: frozenset[bytes] | None) -> frozenset[bytes] | None:
    """Two sets of non-ASCII names as one (either of them when the other is empty); None when either is not
    known or the union is too large to keep."""
    if first is None or second is None:
        return None
    union = first | second if first and second else first or second
    return None if len(union) > MAX_FOREIGN_NAMES else union


def tree_items(data: bytes, id_size: int, start: int = 0, end: int | None = None) -> list[bytes]:
    """`b"<mode> <name>"` for every entry of a tree object's content (`data[start:end]`).

    Raises: ScanError when the content is not exactly a sequence of entries.
    """
    pattern = _ENTRIES.get(id_size)
    if pattern is None:
        raise ScanError(f"object ids of {id_size} bytes")
    end = len(data) if end is None else end
    items: list[bytes] = pattern.findall(data, start, end)
    # Matches never overlap; their lengths adding up to the content's means they cover it from end to end.
    if sum(map(len, items)) + (id_size + 1) * len(items) != end - start:
        raise ScanError("a tree object that is not a list of entries")
    return items


class NeedleSearch:
    """Remembers which needles occurred in what it was given."""

    def __init__(self, needles: Iterable[bytes]) -> None:
        self.missing = set(needles)
        self.found: set[bytes] = set()

    @property
    def done(self) -> bool:
        return not self.missing

    def search(self, haystack: bytes) -> None:
        """One lowercased block."""
        hits = {needle for needle in self.missing if needle in haystack}
        self.found |= hits
        self.missing -= hits


class Findings:
    """What a scan found: the needles, and the names holding a byte outside ASCII (`foreign`; None when there
    were more than MAX_FOREIGN_NAMES, which are then not kept)."""

    def __init__(self, needles: Iterable[bytes]) -> None:
        self.search = NeedleSearch(needles)
        self.foreign: set[bytes] | None = set()
        self._seen: set[bytes] = set()
        self._pending: list[bytes] = []

    @property
    def done(self) -> bool:
        """Nothing more to learn: every needle found, and the non-ASCII names beyond keeping."""
        return self.search.done and self.foreign is None

    def finish(self) -> None:
        """Read the tree entries given since the last call; call it before reading what was found.

        Each distinct entry `b"<mode> <name>"` is read once: searched followed by a NUL (a needle holds a NUL
        only at its end, so it lies within one entry and the NUL after it), its name kept when not ASCII.
        """
        if not self._pending:
            return
        fresh = set(self._pending) - self._seen
        self._pending = []
        if len(self._seen) > 1_000_000:
            self._seen.clear()
        self._seen |= fresh
        haystack = b"\0".join(fresh) + b"\0"
        if not self.search.done:
            self.search.search(haystack.lower())
        if self.foreign is not None and not haystack.isascii():
            self.add_foreign(item.partition(b" ")[2] for item in fresh if not item.isascii())

    def add_foreign(self, names: Iterable[bytes]) -> None:
        if self.foreign is not None:
            self.foreign.update(names)
            if len(self.foreign) > MAX_FOREIGN_NAMES:
                self.foreign = None

    def paths(self, paths: list[bytes]) -> None:
        """`/`-separated paths (the index)."""
        self.search.search(component_haystack(paths))
        self.add_foreign(foreign_components(paths))

    def tree(self, data: bytes, id_size: int, start: int = 0, end: int | None = None) -> None:
        """One tree object's content (`data[start:end]`).

        Raises: ScanError when it is not a list of entries.
        """
        self._pending += tree_items(data, id_size, start, end)
        if len(self._pending) > _BATCH:
            self.finish()


class BatchTrees:
    """Splits the output of `git cat-file --batch` (fed in chunks) into tree objects.

    Each object is `<id> <type> <size>\\n<content>\\n`; an object removed meanwhile is `<id> missing\\n`
    (skipped: what git cannot read, it cannot show). `on_tree(data, id_size, start, end)` is called for each
    tree, its content being `data[start:end]` (not copied out).
    """

    def __init__(self, on_tree: Callable[[bytes, int, int, int], None]) -> None:
        self._on_tree = on_tree
        self._rest = b""
        self._want = -1
        """Bytes of the current object still to come (its content and the newline), -1 between objects."""
        self._id_size = 0

    def feed(self, chunk: bytes) -> None:
        """Raises: ScanError for output that is not a batch of trees."""
        data = self._rest + chunk if self._rest else chunk
        position = 0
        while True:
            if self._want < 0:
                end = data.find(b"\n", position)
                if end < 0:
                    break
                header = data[position:end].split(b" ")
                position = end + 1
                if len(header) == 2 and header[1] == b"missing":
                    continue
                if len(header) != 3 or header[1] != b"tree" or not header[2].isdigit():
                    raise ScanError("unexpected git cat-file --batch output")
                self._want, self._id_size = int(header[2]) + 1, len(header[0]) // 2
            else:
                end = position + self._want - 1
                if end >= len(data):
                    break
                if data[end] != 0x0A:
                    raise ScanError("unexpected git cat-file --batch output")
                self._on_tree(data, self._id_size, position, end)
                position, self._want = end + 1, -1
        self._rest = data[position:]

    def finish(self) -> None:
        """Raises: ScanError when the output stopped inside an object."""
        if self._want >= 0 or self._rest:
            raise ScanError("git cat-file --batch output ends inside an object")
