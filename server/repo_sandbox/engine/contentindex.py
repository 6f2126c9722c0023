"""The content index: a signature of each text file (`engine.grams`), so that a search whose matches all
contain a literal reads only the files that may hold it.

A signature is used only for a file whose `lstat` shows the identity it was read at (device, inode, size,
mtime, ctime: see `engine.indexer` for why that proves the content unchanged); any other file is searched
as if there were no index. So the index can be stale, partial or empty without changing any result: it
only ever spares reading a file that provably lacks the literal.

Searches offer the text files they read without a usable signature; once a tree has `min_files` of them
the builder indexes them in the background, in a lower-priority child process (`engine.indexer`), one
batch at a time and at most one child per workspace. The index lives in memory (about 6 bits per distinct
4-byte window: 4.6 MB for the 37 MB of text in CPython's stdlib) up to `MAX_FILTER_BYTES`.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Final

from repo_sandbox.tree.facts import RACY_NS, identity

if TYPE_CHECKING:
    import subprocess

    from repo_sandbox.engine.grams import Probe, Signature

MAX_FILTER_BYTES: Final = 8 * 1024 * 1024
"""Most filter bytes kept: a tree of up to about 60 MB of text is indexed whole (the stdlib's 37 MB take 4.6
MB). The first file whose filter would pass it makes the index full: it then takes no more files for the
workspace's life (the others are searched as without an index, and never offered again: a full index that
kept taking offers ran its builder on every search and never finished). At 64 MiB the index cost a
100,000-file tree 139 MiB of peak memory (server and builder) for no faster search."""
BATCH_FILES: Final = 20_000
MAX_ADMITTED_ANSWERS: Final = 64
"""`admitted` answers kept (a repeated search lists the same files without probing every signature again)."""
COOLDOWN_S: Final = 1.0
"""Rest between two children, so that a tree that keeps changing does not keep one running."""


class ContentIndex:
    def __init__(
        self, root_fd: int, *, openat2: bool, max_file_bytes: int, min_files: int, enabled: bool, racy_ns: int = RACY_NS
    ) -> None:
        self._root_fd = root_fd
        self._openat2 = openat2
        self._max_file_bytes = max_file_bytes
        self.min_files = min_files
        self.enabled = enabled
        self.racy_ns = racy_ns
        self._signatures: dict[str, tuple[tuple[int, ...], Signature]] = {}
        self._pending: dict[str, None] = {}
        self.full = False
        self._refused: dict[str, tuple[int, ...]] = {}
        """Files the builder would not index (binary, too large), with the identity it saw them at."""
        self._in_flight: frozenset[str] = frozenset()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._closed = False
        self._stop = threading.Event()
        self.filter_bytes = 0
        self.builds = 0
        self.files_spared = 0
        """Files searches did not read because their signature lacks the literal."""
        self.listed_searches = 0
        """Searches whose rg was given the list of files that may match instead of walking."""
        self._generation = 0
        """Bumped whenever a signature is added or replaced: `admitted` answers from its cache until then."""
        self._admitted: dict[tuple[frozenset[int], str, int], tuple[int, tuple[str, ...] | None]] = {}

    @property
    def active(self) -> bool:
        """Whether any signature is known (a search need not look otherwise)."""
        return bool(self._signatures)

    @property
    def files(self) -> int:
        return len(self._signatures)

    def admitted(self, probe: Probe, prefix: str, most: int) -> list[str] | None:
        """The indexed files under `prefix` (root-relative, "" or ending with "/") whose signature, as last
        read, may hold the probe's literal (their identity now is the census's to check); None when there
        are more than `most`."""
        generation, key = self._generation, (probe.windows, prefix, most)
        cached = self._admitted.get(key)
        if cached is not None and cached[0] == generation:
            return None if cached[1] is None else list(cached[1])
        admits = probe.admits
        found: list[str] | None = []
        with self._lock:  # the builder adds signatures meanwhile: iterating the live dict would raise
            signatures = list(self._signatures.items())
        for rel, (_, signature) in signatures:
            if rel.startswith(prefix) and admits(signature):
                if len(found) == most:
                    found = None
                    break
                found.append(rel)
        if len(self._admitted) >= MAX_ADMITTED_ANSWERS:
            self._admitted.clear()
        self._admitted[key] = (generation, None if found is None else tuple(found))
        return found

    def idle(self) -> bool:
        """Nothing is waiting to be indexed and no builder runs."""
        with self._lock:
            return not self._pending and (self._thread is None or not self._thread.is_alive())

    def lookup(self, rel_path: str, info: os.stat_result) -> Signature | None:
        """The file's signature, if it was read at the identity `info` shows."""
        return self.signature_at(rel_path, identity(info))

    def signature_at(self, rel_path: str, ident: tuple[int, ...]) -> Signature | None:
        """The file's signature, if it was read at the identity `ident`."""
        entry = self._signatures.get(rel_path)
        if entry is None or entry[0] != ident:
            return None
        return entry[1]

    def offer(self, files: Iterable[tuple[str, tuple[int, ...]]], text_files: int) -> None:
        """Files (with their identity) a search read without a usable signature, out of `text_files` it
        read: indexed in the background when the tree is large enough to be worth it."""
        if not self.enabled or self._closed or self.full or text_files < self.min_files:
            return
        with self._lock:
            in_flight, refused = self._in_flight, self._refused
            for rel_path, ident in files:
                if rel_path not in in_flight and refused.get(rel_path) != ident:
                    self._pending[rel_path] = None
            if self._pending and (self._thread is None or not self._thread.is_alive()):
                self._thread = threading.Thread(target=self._build, name="repo-sandbox-index", daemon=True)
                self._thread.start()

    def _build(self) -> None:
        while not self._closed:
            with self._lock:
                if self.full:
                    self._pending.clear()
                batch = list(self._pending)[:BATCH_FILES]
                for rel_path in batch:
                    del self._pending[rel_path]
                self._in_flight = frozenset(batch)
                if not batch:
                    self._thread = None
                    return
            try:
                self._run_child(batch)
            except OSError:
                return  # no child could run (or it broke): searches read every file, as without an index
            finally:
                self._in_flight = frozenset()
            self._stop.wait(COOLDOWN_S)

    def _run_child(self, batch: list[str]) -> None:
        import subprocess  # the builder's first run, not at start-up

        from repo_sandbox.engine.grams import Signature
        from repo_sandbox.engine.indexer import RECORD

        argv = [
            sys.executable,
            "-m",
            "repo_sandbox.engine.indexer",
            str(self._root_fd),
            str(self._max_file_bytes),
            str(self.racy_ns),
            "openat2" if self._openat2 else "walk",
        ]
        with self._lock:
            if self._closed:
                return
            process = self._process = subprocess.Popen(  # our own interpreter and module
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                pass_fds=(self._root_fd,),
                close_fds=True,
            )
        self.builds += 1
        assert process.stdin is not None and process.stdout is not None
        try:
            process.stdin.write(b"".join(os.fsencode(rel_path) + b"\0" for rel_path in batch))
            process.stdin.close()
            for rel_path in batch:
                head = process.stdout.read(RECORD.size)
                if len(head) < RECORD.size:
                    return
                dev, ino, size, mtime, ctime, modulus, length = RECORD.unpack(head)
                packed = process.stdout.read(length) if length else b""
                if len(packed) < length:
                    return
                if not modulus and ino:
                    self._refused[rel_path] = (dev, ino, size, mtime, ctime)
                elif modulus and self.filter_bytes + length > MAX_FILTER_BYTES:
                    self.full = True
                    return
                elif modulus:
                    signature = Signature.from_bytes(modulus, packed)
                    with self._lock:
                        old = self._signatures.get(rel_path)
                        self._signatures[rel_path] = ((dev, ino, size, mtime, ctime), signature)
                        self._generation += 1
                        self.filter_bytes += length - (0 if old is None else (old[1].modulus + 7) // 8)
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        finally:
            process.stdout.close()
            if process.poll() is None:
                process.kill()
            process.wait()
            with self._lock:
                self._process = None

    def close(self) -> None:
        """Stop the builder: its child (only it) is killed."""
        with self._lock:
            self._closed = True
            self._stop.set()
            if self._process is not None and self._process.poll() is None:
                self._process.kill()
            thread = self._thread
        if thread is not None:
            thread.join(timeout=5)

    def report(self) -> dict[str, Any]:
        return {
            "enabled": self.enabled,
            "files": self.files,
            "filter_bytes": self.filter_bytes,
            "pending": len(self._pending),
            "building": not self.idle(),
            "builds": self.builds,
            "full": self.full,
            "files_spared": self.files_spared,
            "listed_searches": self.listed_searches,
        }


class IndexUse:
    """One search's use of the index: which files it may spare, and which it offers to index."""

    __slots__ = ("content", "probe", "spared", "text_files", "unindexed")

    def __init__(self, content: ContentIndex, literal: bytes | None) -> None:
        from repo_sandbox.engine.grams import Probe  # loaded by the first search

        self.content = content
        self.probe = Probe.for_literal(literal)
        self.unindexed: list[tuple[str, tuple[int, ...]]] = []
        self.text_files = 0
        self.spared = 0

    def spares(self, rel_path: str, info: os.stat_result) -> bool:
        """Whether the file (a text file, or one not yet read, at `info`) provably lacks the literal."""
        self.text_files += 1
        content = self.content
        signature = content.lookup(rel_path, info) if content.active else None
        if signature is None:
            self.unindexed.append((rel_path, identity(info)))
            return False
        if self.probe is not None and not self.probe.admits(signature):
            self.spared += 1
            return True
        return False

    def adopt(self, unindexed: Iterable[tuple[str, tuple[int, ...]]], text_files: int) -> list[str]:
        """For a census taken from a memo (nothing changed since): of the text files that had no signature
        then (`unindexed`, with the identity they had and still have), the ones that may hold the literal,
        each looked up again (the builder may have indexed it since)."""
        self.text_files = text_files
        content, probe = self.content, self.probe
        candidates: list[str] = []
        for rel_path, ident in unindexed:
            signature = content.signature_at(rel_path, ident)
            if signature is None:
                self.unindexed.append((rel_path, ident))
                candidates.append(rel_path)
            elif probe is None or probe.admits(signature):
                candidates.append(rel_path)
        return candidates

    def searched_of_adopted(self, searched: int) -> None:
        """For a census taken from a memo: `searched` of its text files were given to rg, the rest spared."""
        self.spared = max(0, self.text_files - searched)

    def finish(self) -> None:
        self.content.offer(self.unindexed, self.text_files)
        self.content.files_spared += self.spared
