"""The ripgrep engine: rg finds the matching lines, the census decides which files count.

rg runs multi-threaded over the start directory while the census (the policy walker plus an 8 KiB sniff
of each file) runs in a thread. rg's output is kept only for files the census lists as text, so the
jail, the deny-list, hidden and ignore rules, the hard-link policy and the binary/size rules are the
policy walker's, whatever rg did. Results are the Python engine's, file for file:
- unsorted rg output is collected and put in path order; past `SWITCH_LINES` matching lines (a pattern
  with very many hits) rg is stopped and run again with `--sort path`, streaming, so that the caller can
  stop it as soon as its page is full; the same search again (the next page) starts with the stream;
- rg is trusted to skip ignored directories only when every ignore file it would read means the same to
  it as to git (`census.simple_rule`) and no tracked file is ignored (git lists it, rg would not); otherwise
  it runs again with `--no-ignore`;
- a text file in which rg meets a NUL byte reports no matches (the Python engine does the same);
- multiline searches, single files and rg failures are answered by the Python engine;
- every file rg reports is read again through the jail, and its result made from those bytes (`engine.vouch`).
rg itself runs confined by Landlock (`engine.confine`): whatever it follows, it reads only the repository.
Each workspace has one confined launcher thread per rg binary, started by its first search.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from collections.abc import Iterator
from functools import partial
from typing import Final

from repo_sandbox.engine import censusmemo, pytree, rgstate
from repo_sandbox.engine.census import TEXT, TOO_LARGE, Census, simple_rule
from repo_sandbox.engine.confine import Launcher
from repo_sandbox.engine.pymatch import BatchMatcher, MatchState
from repo_sandbox.engine.pysearch import Query
from repo_sandbox.engine.request import Deadline, FileHits, LineHit, SearchCancelled, SearchRequest, SearchStats
from repo_sandbox.engine.rgprocess import FileOutput, RgOptions, RgProcess, build_argv
from repo_sandbox.engine.ripgrep import Ripgrep
from repo_sandbox.engine.vouch import Voucher
from repo_sandbox.errors import IOFailureError
from repo_sandbox.fs.globs import compile_glob
from repo_sandbox.workspace import Workspace

SWITCH_LINES: Final = 2000
"""Matching lines (or files, in count mode) beyond which the unsorted run gives way to a sorted stream."""
SWITCH_BYTES: Final = 8 * 1024 * 1024


class _Fallback(Exception):
    """rg could not answer this request (it refused the pattern or glob): the Python engine answers."""


class _StaleMemo(Exception):
    """A file rg reported is not what the census memo says (`engine.censusmemo`'s blind spots): the search
    runs again with a new census. Raised before any file is yielded."""


def _threads_beside_python() -> int:
    """rg threads that leave one of the cores this process may use to the server's own Python."""
    return max(1, len(os.sched_getaffinity(0)) - 1)


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


class _Search:
    def __init__(
        self,
        ws: Workspace,
        rg: Ripgrep,
        request: SearchRequest,
        query: Query,
        stats: SearchStats,
        dir_fd: int,
        start_rel: str,
        launcher: Launcher,
        *,
        recall_memo: bool = True,
    ) -> None:
        censusmemo.search_begins(ws)
        self.launcher = launcher
        self.ws = ws
        self.rg = rg
        self.request = request
        self.stats = stats
        self.dir_fd = dir_fd
        self.cancel = request.cancel
        self.deadline = request.deadline or Deadline(ws.limits.regex_timeout_s)
        self.glob = compile_glob(request.glob) if request.glob else None
        self.census = Census(ws, request, self.glob, recall_memo=recall_memo)
        self.prefix = "" if start_rel == "." else start_rel + "/"
        self.hits_before = 0
        self._places: dict[bytes, tuple[str, int] | None] = {}
        """rg path -> `_place` of the files of the run being collected, placed as they came."""
        self.process: RgProcess | None = None
        options = ws.walk_options(include_hidden=request.include_hidden, include_ignored=request.include_ignored)
        matcher = BatchMatcher(query, request, self.deadline, MatchState())
        # Taken before rg starts and before the census looks at anything. While the tree index is still being
        # built there is none yet: rg starts at once all the same, every file it reports is read again
        # (`engine.vouch`), and the census takes its own mark once the index is there. rg then leaves one core
        # to the build and the census (Python, one core at a time), which it would otherwise slow down.
        mark = self.census.mark = ws.trees.watch_mark(options, wait=False)
        threads = None
        if mark is None:
            self.census.late_mark = partial(ws.trees.watch_mark, options)
            threads = _threads_beside_python() if ws.trees.building(options) else None
        self.voucher = Voucher(ws, matcher, self.census, mark, lines=request.mode == "content")
        deny = ws.settings.workspace.effective_deny
        self.base = RgOptions(
            count_only=request.mode != "content",
            sorted_output=False,
            use_ignore_files=not options.include_ignored and not rgstate.ignores_disagreed(ws),
            include_hidden=options.include_hidden,
            max_file_bytes=ws.limits.max_file_bytes if rgstate.met_large_files(ws) else None,
            deny_globs=tuple(deny) if all(simple_rule(r) and not r.startswith("!") for r in deny) else (),
            glob=request.glob if request.glob and not request.glob.startswith("!") else None,
            threads=threads,
        )

    def _check_cancel(self) -> None:
        if self.cancel is not None and self.cancel.is_set():
            raise SearchCancelled

    def _start(self, options: RgOptions) -> RgProcess:
        self._stop_process()
        argv = build_argv(self.rg, self.request, options)
        try:
            self.process = RgProcess(
                argv,
                self.dir_fd,
                self.launcher,
                count_only=options.count_only,
                cancel=self.cancel,
                deadline=self.deadline,
            )
        except OSError as exc:  # rg vanished, or cannot start under its confinement
            raise _Fallback(str(exc)) from exc
        return self.process

    def _stop_process(self) -> None:
        if self.process is not None:
            self.process.close()
            self.process = None

    def _finish(self, process: RgProcess, *, yielded: bool = False) -> None:
        """Check how a run that was read to the end exited. 0/1: matches or none; 2 with output: some file
        could not be read (the census decides about files anyway); anything else: rg could not answer."""
        code = process.finish()
        if code in (0, 1) or (code == 2 and process.bytes_read and "regex" not in process.error_text):
            return
        if yielded:
            raise IOFailureError("The search engine failed while streaming results; try again.", exit_code=code)
        raise _Fallback(process.error_text)

    def _collect(self, options: RgOptions, process: RgProcess | None = None) -> dict[bytes, FileOutput] | None:
        """Every file's output of an unsorted run (`process`, when already started); None when there are too
        many matches to sort them all."""
        process = self._start(options) if process is None else process
        outputs: dict[bytes, FileOutput] = {}
        seen = 0
        census_done = self.census.done
        self.voucher.forget_observed()
        places = self._places
        places.clear()
        for output in process.files():
            self._check_cancel()
            outputs[output.path] = output
            if census_done.is_set() and self.census.error is None:
                place = places[output.path] = self._place(output)
                if place is not None:
                    self.voucher.observe(*place)
            seen += 1 if options.count_only else output.count
            if seen > SWITCH_LINES or process.bytes_read > SWITCH_BYTES:
                self._stop_process()
                return None
        self._finish(process)
        return outputs

    def _wait_census(self) -> None:
        while not self.census.done.wait(0.05):
            self._check_cancel()
            self.deadline.remaining()
        if self.census.error is not None:
            raise self.census.error

    def _root_path(self, rg_path: bytes) -> str:
        rel = os.fsdecode(rg_path.removeprefix(b"./"))
        return self.prefix + rel

    def _place(self, output: FileOutput) -> tuple[str, int] | None:
        """The root-relative path and census position of a file of rg's output, or None when the census
        rejects it (or it is void)."""
        rel_path = self._root_path(output.path)
        position = self.census.position.get(rel_path)
        if position is None or self.census.kinds[position] != TEXT or output.binary or not output.count:
            return None
        return rel_path, position

    def _file_hits(self, rel_path: str, position: int, output: FileOutput) -> FileHits | None:
        """The hits of one accepted file, as the jail reads it (`engine.vouch`); the ones inside the
        request's `keep_hits` window are materialised. None when the jailed file has none."""
        window = self.request.keep_hits
        start, stop = window.start, window.stop
        before = self.hits_before
        vouched = self.voucher.check(rel_path, position, output, (max(0, start - before), max(0, stop - before)))
        if vouched is None:
            return None
        if not isinstance(vouched, FileOutput):
            self.hits_before += vouched[0]
            return FileHits(rel_path, vouched[0], vouched[1])
        hits: list[LineHit] = []
        if stop > self.hits_before and start < self.hits_before + output.count:
            texts = {number: text for number, _, text in output.lines}
            context = self.request.context
            index = self.hits_before
            for number, is_match, text in output.lines:
                if not is_match:
                    continue
                if start <= index < stop:
                    hit = LineHit(number, _decode(text))
                    if context:
                        hit.before = [_decode(texts[n]) for n in range(max(1, number - context), number) if n in texts]
                        hit.after = [_decode(texts[n]) for n in range(number + 1, number + context + 1) if n in texts]
                    hits.append(hit)
                index += 1
        self.hits_before += output.count
        return FileHits(rel_path, output.count, hits)

    def _emit(self, rel_path: str, position: int, output: FileOutput) -> FileHits | None:
        self.census.stats_through(position, self.stats)
        return self._file_hits(rel_path, position, output)

    def _first_run(
        self, options: RgOptions, *, many: bool, census: threading.Thread | None = None
    ) -> dict[bytes, FileOutput] | RgProcess:
        """Every file's output of an unsorted run, or (too many hits, or known to have many) the started
        sorted stream, which starts up and fills its pipe while the census finishes. `census` (not started
        yet) starts once rg has: rg's start-up then never waits for the census thread to let go of the GIL."""
        process = self._start(dataclasses.replace(options, sorted_output=True) if many else options)
        if census is not None:
            census.start()
        if many:
            return process
        outputs = self._collect(options, process)
        return self._start(dataclasses.replace(options, sorted_output=True)) if outputs is None else outputs

    def run(self) -> Iterator[FileHits]:
        thread = threading.Thread(target=self.census.run, name="repo-sandbox-census", daemon=True)
        try:
            yield from self._search(self.base, thread)
            self.census.stats_through(len(self.census.kinds) - 1, self.stats)
            self.stats.walk_truncated = self.census.walk_truncated
        finally:
            self._stop_process()
            self.census.stop.set()
            if thread.ident is not None:
                thread.join()
            voucher = self.voucher
            rgstate.record_search(
                self.ws, unread=voucher.unread, read_again=voucher.read_again, from_memo=self.census.from_memo
            )

    def _search(self, options: RgOptions, census: threading.Thread) -> Iterator[FileHits]:
        many = rgstate.many_hits_before(self.ws, self.request)
        first = self._first_run(options, many=many, census=census)
        self._wait_census()
        if options.max_file_bytes is None and TOO_LARGE in self.census.kinds:
            rgstate.remember_large_files(self.ws)
            options = dataclasses.replace(options, max_file_bytes=self.ws.limits.max_file_bytes)
        if not self.request.include_ignored:
            rgstate.remember_ignores(self.ws, agree=self.census.rg_ignores_agree)
        if options.use_ignore_files and not self.census.rg_ignores_agree:
            options = dataclasses.replace(options, use_ignore_files=False)
            first = self._first_run(options, many=many)
        rgstate.remember_many_hits(self.ws, self.request, many=isinstance(first, RgProcess))
        if isinstance(first, RgProcess):
            yield from self._stream(first, options)
        else:
            yield from self._emit_collected(first)

    def _emit_collected(self, outputs: dict[bytes, FileOutput]) -> Iterator[FileHits]:
        places = self._places
        placed = [
            (place, output)
            for path, output in outputs.items()
            if (place := places[path] if path in places else self._place(output)) is not None
        ]
        placed.sort(key=lambda item: item[0][1])
        agree = self.voucher.trust([place for place, _ in placed])
        if self.census.from_memo and not agree:
            raise _StaleMemo
        for (rel_path, position), output in placed:
            if (hits := self._emit(rel_path, position, output)) is not None:
                yield hits

    def _stream(self, process: RgProcess, options: RgOptions) -> Iterator[FileHits]:
        yielded = False
        seen = 0
        for output in process.files():
            self._check_cancel()
            seen += 1 if options.count_only else output.count
            place = self._place(output)
            if place is not None and (hits := self._emit(*place, output)) is not None:
                yielded = True
                yield hits
        self._finish(process, yielded=yielded)
        if seen <= SWITCH_LINES:  # read to the end, and not that many after all
            rgstate.remember_many_hits(self.ws, self.request, many=False)


def iter_file_hits(ws: Workspace, rg: Ripgrep, request: SearchRequest, stats: SearchStats) -> Iterator[FileHits]:
    """As `pytree.iter_file_hits`, with rg doing the matching where it can.

    Raises:
        SandboxError: invalid_regex/invalid_glob, the jail's refusals, timeout, cancelled.
    """
    query = Query.compile(
        request.pattern,
        fixed_strings=request.fixed_strings,
        case_sensitive=request.case_sensitive,
        multiline=request.multiline,
    )  # also the dialect check: rg never sees a pattern the Python engine would refuse
    if request.glob:
        compile_glob(request.glob)
    opened, dir_fd, start_rel = ws.jail.open_any(request.path)
    if opened is not None:
        os.close(opened.fd)
        yield from pytree.iter_file_hits(ws, request, stats)
        return
    assert dir_fd is not None
    try:
        launcher = rgstate.launcher_for(ws, rg)
        if launcher is None:
            yield from pytree.iter_file_hits(ws, request, stats)
            return
        search = _Search(ws, rg, request, query, stats, dir_fd, start_rel, launcher)
        try:
            try:
                yield from search.run()
            except _StaleMemo:  # raised before any file is yielded, so `stats` is still untouched
                censusmemo.forget(ws)
                again = _Search(ws, rg, request, query, stats, dir_fd, start_rel, launcher, recall_memo=False)
                yield from again.run()
        except _Fallback:  # raised before any file is yielded, so `stats` is still untouched
            yield from pytree.iter_file_hits(ws, request, stats)
    finally:
        os.close(dir_fd)
