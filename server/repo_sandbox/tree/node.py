"""One directory of the tree index: the policy walk's listing of it, stored compactly, and how fresh it is."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from repo_sandbox.fs.walk import IgnoreStack, IgnoreStamp, Kept, Listing
from repo_sandbox.fs.watch import RACY_NS
from repo_sandbox.tree import facts as file_facts


@dataclass(slots=True, eq=False)
class Node:
    """A listed directory. Not changed once published in a snapshot (a re-listing makes a new node), except
    for the records in `facts`."""

    rel: str
    """Root-relative path ('.' for the root)."""
    depth: int
    ident: tuple[int, int]
    """(st_dev, st_ino) of the directory listed."""
    stamp: tuple[int, int]
    """(st_mtime_ns, st_ctime_ns) before it was listed: where no watch is possible, a change shows here."""
    settled: bool
    """The stamp was older than `RACY_NS` when listed (a younger one may miss a change in the same tick)."""
    files: str
    """The kept regular files' names joined by '/' (no name holds one), in name order."""
    file_count: int
    dirs: tuple[tuple[int, str], ...]
    """The kept subdirectories, in name order, each with the number of files that come before it."""
    inherited: IgnoreStack
    """The ignore rules in force above this directory (what its parent's walk passes down)."""
    ignores: IgnoreStack
    """The ignore rules in force for its entries (its own ignore files pushed on `inherited`)."""
    ignore_lines: tuple[str, ...]
    ignore_stamps: tuple[IgnoreStamp, ...]
    ignores_settled: bool
    has_ignore_files: bool
    rgignore: bool
    entries: int
    """Entries listed (hidden, ignored and denied ones too): what a walk's entry cap counts."""
    facts: bytearray
    wd: int = -1
    """The directory's watch descriptor, or -1 when it is not watched."""
    cut: bool = False
    """A kept subdirectory was not entered because of the depth cap or a lack of descriptors."""
    retry: bool = False
    """A kept subdirectory could not be opened: re-list this directory on every call."""

    @classmethod
    def from_listing(
        cls,
        rel: str,
        depth: int,
        ident: tuple[int, int],
        stamp: tuple[int, int],
        listed_ns: int,
        listing: Listing,
        inherited: IgnoreStack,
        previous: Node | None,
        seed: tuple[str, bytes] | None = None,
    ) -> Node:
        """The node of a fresh listing. Facts of files `previous` (the same directory listed before) knew are
        carried over, or without one those of `seed` (names joined by '/', records: `tree.factstore`); its
        ignore rules are reused when they read the same (so walks keep using the children)."""
        names: list[str] = []
        dirs: list[tuple[int, str]] = []
        for name, is_dir in listing.kept:
            if is_dir:
                dirs.append((len(names), name))
            else:
                names.append(name)
        ignore_lines = tuple(listing.ignore_lines)
        ignores = listing.ignores
        if previous is not None and previous.inherited is inherited and previous.ignore_lines == ignore_lines:
            ignores = previous.ignores
        files = "/".join(names)
        if previous is not None:
            facts = file_facts.carried(previous.facts, previous.files, files)
        elif seed is not None:
            facts = file_facts.carried(seed[1], seed[0], files)
        else:
            facts = file_facts.new_facts(len(names))
        stamps = tuple(listing.ignore_stamps)
        return cls(
            rel=rel,
            depth=depth,
            ident=ident,
            stamp=stamp,
            settled=listed_ns - max(stamp) > RACY_NS,
            files=files,
            file_count=len(names),
            dirs=tuple(dirs),
            inherited=inherited,
            ignores=ignores,
            ignore_lines=ignore_lines,
            ignore_stamps=stamps,
            ignores_settled=all(s is not None and listed_ns - max(s[3], s[4]) > RACY_NS for _, s in stamps),
            has_ignore_files=listing.has_ignore_files,
            rgignore=listing.rgignore,
            entries=listing.entries,
            facts=facts,
        )

    @property
    def prefix(self) -> str:
        """What a child's root-relative path starts with."""
        return "" if self.rel == "." else self.rel + "/"

    def child_rel(self, name: str) -> str:
        return name if self.rel == "." else f"{self.rel}/{name}"

    def names(self) -> list[str]:
        """The kept files' names, in name order (a file's position here is its facts slot)."""
        return self.files.split("/") if self.files else []

    def kept(self) -> list[Kept]:
        """The kept entries in name order, as the walk lists them."""
        names = self.names()
        kept: list[Kept] = []
        start = 0
        for before, name in self.dirs:
            kept.extend((file, False) for file in names[start:before])
            kept.append((name, True))
            start = before
        kept.extend((file, False) for file in names[start:])
        return kept

    def runs(self) -> Iterator[tuple[list[str], str | None]]:
        """The files in name order, in runs: (files, the subdirectory after them or None at the end)."""
        names = self.names()
        start = 0
        for before, name in self.dirs:
            yield names[start:before], name
            start = before
        yield names[start:], None
