"""One rg process: the argv the server builds, the spawn, and its output read as one group per file.

The argv is built here and nowhere else: `--no-config`, the Rust regex engine only, the size limit,
hidden/ignore settings and deny-list globs as flags, names with a line break skipped, never `--follow`; the
pattern after `--regexp` and the path after `--`, so neither can ever be read as a flag. rg starts in the
directory the jail opened (through /proc/self/fd, so a directory swapped for a symlink after the check
changes nothing), with an environment built from scratch, by the Landlock-confined launcher
(`engine.confine`). Output is `--null` separated; `close()` kills the process (only it). A read that waits
for output wakes every `POLL_S` to see whether the search was cancelled or ran out of its time budget
(`regex_timeout_s`, as in the Python engine), so such a search never waits for a silent rg to print or finish.
"""

from __future__ import annotations

import os
import re
import select
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Final

from repo_sandbox.engine.confine import Launcher
from repo_sandbox.engine.request import CancelFlag, Deadline, SearchCancelled, SearchRequest
from repo_sandbox.engine.ripgrep import Ripgrep, clean_env

READ_BYTES: Final = 256 * 1024
POLL_S: Final = 0.05
"""How often a read that waits for rg's output checks whether the search was cancelled."""
_NO_LINE_BREAK: Final = "!*\n*"
"""Every file or directory whose name holds a line break is skipped: rg prints one line per match, and a
path broken over two lines would have its second part read as another file's path (a hard link to a file
outside the root named `x<LF>b.txt` would show its lines as `b.txt`'s). The policy walker never lists such
names (`meter.is_presentable`)."""
_BINARY_NOTICE = (
    rb"|(.*): (?:WARNING: stopped searching binary file after match|binary file matches) "
    rb'\(found "\\0" byte around offset \d+\)'
)
"""What rg prints (without the NUL separator) when a file turns out to hold a NUL byte after a match."""
_CONTENT_ROW = re.compile(rb"(?m)^(?:([^\0\n]*)\0(\d+)([:-])(.*)" + _BINARY_NOTICE + rb")$")
"""`path NUL number (':' a match | '-' context) text`, or a binary notice; other lines (`--`) match neither."""
_COUNT_ROW = re.compile(rb"(?m)^(?:([^\0\n]*)\0(\d+)()()" + _BINARY_NOTICE + rb")$")
"""`path NUL count`, or a binary notice (the empty groups give both patterns the same five)."""


@dataclass(frozen=True, slots=True)
class RgOptions:
    count_only: bool
    sorted_output: bool
    use_ignore_files: bool
    include_hidden: bool
    max_file_bytes: int | None
    """rg's `--max-filesize`, or None: rg then stats no file for its size (the census skips large files anyway)."""
    deny_globs: tuple[str, ...] = ()
    glob: str | None = None
    threads: int | None = None
    """rg's `--threads`, or None for rg's own choice (one per core, at most 12)."""


def deny_iglobs(rules: tuple[str, ...]) -> list[str]:
    """The deny-list as few rg globs as mean the same: the rules that name no directory (no '/') and hold
    no ',' are one brace alternation (rg compiles one glob instead of dozens: about a millisecond less per
    search); a rule with a '/' keeps its own glob, where the slash keeps its gitignore meaning."""
    basenames = [rule for rule in rules if "/" not in rule and "," not in rule]
    others = [rule for rule in rules if rule not in basenames]
    grouped = ["{" + ",".join(basenames) + "}"] if len(basenames) > 1 else basenames
    return grouped + others


def build_argv(rg: Ripgrep, request: SearchRequest, options: RgOptions) -> list[str]:
    argv = [
        rg.path,
        "--no-config",
        "--engine",
        "default",
        "--no-follow",
        "--null",
        "--no-heading",
        "--with-filename",
        "--color",
        "never",
        "--no-messages",
    ]
    if options.max_file_bytes is not None:
        argv += ["--max-filesize", str(options.max_file_bytes)]
    if options.threads is not None:
        argv += ["--threads", str(options.threads)]
    if options.include_hidden:
        argv.append("--hidden")
    if options.use_ignore_files:
        # .gitignore/.ignore of the walked directories only, as the policy walker reads them.
        argv += ["--no-require-git", "--no-ignore-parent", "--no-ignore-global", "--no-ignore-exclude"]
    else:
        argv.append("--no-ignore")
    argv += ["--iglob", _NO_LINE_BREAK]
    for glob in deny_iglobs(options.deny_globs):
        argv += ["--iglob", "!" + glob]
    if options.glob is not None:
        argv += ["--glob", options.glob]
    argv.append("--case-sensitive" if request.case_sensitive else "--ignore-case")
    if request.fixed_strings:
        argv.append("--fixed-strings")
    if options.count_only:
        argv.append("--count")
    else:
        argv.append("--line-number")
        if request.context:
            argv += ["--context", str(request.context)]
    if options.sorted_output:
        argv += ["--sort", "path"]
    argv += ["--regexp", request.pattern, "--", "."]
    return argv


@dataclass(slots=True)
class FileOutput:
    """Everything rg printed for one file (it prints each file's lines together)."""

    path: bytes
    lines: list[tuple[int, bool, bytes]] = field(default_factory=list[tuple[int, bool, bytes]])
    """(line number, is a match (not context), raw text) in line order; empty in count mode."""
    count: int = 0
    binary: bool = False
    """rg found a NUL byte after printing matches: the file is binary and its lines are void."""


class RgProcess:
    """A running rg; iterate `files()`, then check `failed`. Always `close()`."""

    def __init__(
        self,
        argv: list[str],
        dir_fd: int,
        launcher: Launcher,
        *,
        count_only: bool,
        cancel: CancelFlag | None = None,
        deadline: Deadline | None = None,
    ) -> None:
        self.count_only = count_only
        self.bytes_read = 0
        self._stderr = b""
        self._cancel = cancel
        self._deadline = deadline
        self.proc = launcher.popen(argv, cwd=f"/proc/self/fd/{dir_fd}", env=clean_env())

    def _read(self, fd: int, poller: select.poll) -> bytes:
        """The next bytes of output (b"" at the end).

        Raises:
            SearchCancelled, TimeoutExceededError (the search's time budget ran out): while waiting for them.
        """
        cancel, deadline = self._cancel, self._deadline
        if cancel is not None or deadline is not None:
            while not poller.poll(POLL_S * 1000):
                if cancel is not None and cancel.is_set():
                    raise SearchCancelled
                if deadline is not None:
                    deadline.remaining()
            if deadline is not None:
                deadline.remaining()
        return os.read(fd, READ_BYTES)

    def _chunks(self) -> Iterator[bytes]:
        stdout = self.proc.stdout
        assert stdout is not None
        fd = stdout.fileno()
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        rest = b""
        while True:
            chunk = self._read(fd, poller)
            if not chunk:
                break
            self.bytes_read += len(chunk)
            cut = chunk.rfind(b"\n")
            if cut < 0:
                rest += chunk
                continue
            yield rest + chunk[: cut + 1]
            rest = chunk[cut + 1 :]
        if rest:
            yield rest + b"\n"

    def files(self) -> Iterator[FileOutput]:
        """One `FileOutput` per file, in the order rg prints them."""
        current: FileOutput | None = None
        rows = _COUNT_ROW if self.count_only else _CONTENT_ROW
        for block in self._chunks():
            for listed_path, number, mark, text, notice_path in rows.findall(block):
                path = listed_path if number else notice_path
                if current is None or current.path != path:
                    if current is not None:
                        yield current
                    current = FileOutput(path)
                if not number:
                    current.binary = True
                elif self.count_only:
                    current.count = int(number)
                else:
                    is_match = mark == b":"
                    current.lines.append((int(number), is_match, text))
                    current.count += is_match
        if current is not None:
            yield current

    def finish(self) -> int:
        """Wait for a process whose output was read to the end; its exit code."""
        stderr = self.proc.stderr
        if stderr is not None:
            self._stderr = stderr.read(64 * 1024)
        return self.proc.wait()

    @property
    def error_text(self) -> str:
        return self._stderr.decode("utf-8", "replace")

    def close(self) -> None:
        """Stop rg if it still runs (only this process) and release its pipes."""
        if self.proc.poll() is None:
            self.proc.kill()
        for pipe in (self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                pipe.close()
        self.proc.wait()
