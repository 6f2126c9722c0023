"""search_text: regex or literal search in file contents, paged and capped."""

from __future__ import annotations

import os
import threading
from functools import partial
from typing import TYPE_CHECKING, Annotated, Any, Literal

import anyio
from pydantic import Field, SerializerFunctionWrapHandler, model_serializer

from repo_sandbox.engine.request import (
    CancelFlag,
    Deadline,
    HitWindow,
    Progress,
    SearchCancelled,
    SearchRequest,
    SearchStats,
)
from repo_sandbox.engine.select import iter_file_hits
from repo_sandbox.errors import FileTooLargeError, SandboxError
from repo_sandbox.meter import OutputMeter
from repo_sandbox.tools import _search_runs
from repo_sandbox.tools._args import WHOLE_NUMBER, ToolArgs
from repo_sandbox.tools._results import Paged, page_offsets
from repo_sandbox.tools._search_rows import FileCount, TextMatch, read_page
from repo_sandbox.tools._search_runs import CancelSwitch, SearchRun
from repo_sandbox.workspace import Workspace

if TYPE_CHECKING:
    from repo_sandbox.calls import CallContext

DESCRIPTION = """Search file contents with a regex (Rust/ripgrep syntax: no look-around or backreferences)
or, with fixed_strings, literal text. Prints like `rg -n --heading`: a path line, then `line:text` per
matching line (`line-text` for context lines, `--` between groups).
Use it to find where a name is defined or used, or which files mention something.

output_mode "files_with_matches" prints paths only, "count" `path:count`. Ignored, hidden, binary and
over-large files are skipped; a `path` naming one file is searched whatever `glob` says. A line break in
the pattern needs multiline=true; escape a literal '{' as '\\{'. A last line `[more: offset=N]` means
there are more: call again with that offset.

Example: {"pattern": "def \\\\w+_handler", "glob": "*.py", "path": "src"}
Common mistake: running grep or rg through execute_bash; this tool is faster, bounded and paged.
Another: unescaped regex metacharacters; set fixed_strings=true for text like 'a.b('.
"""


class SearchTextArgs(ToolArgs):
    pattern: Annotated[
        str,
        Field(
            min_length=1,
            max_length=10_000,
            description="Regular expression (Rust syntax) or, with fixed_strings, literal text.",
            examples=["fn\\s+main"],
        ),
    ]
    path: Annotated[str, Field(description="File or directory to search, relative to the root.", examples=["src"])] = (
        "."
    )
    glob: Annotated[
        str | None,
        Field(
            max_length=1000,
            description="Only search files matching this glob.",
            examples=["src/**/*.{ts,tsx}"],
        ),
    ] = None
    fixed_strings: Annotated[bool, Field(description="Treat the pattern as literal text, not a regex.")] = False
    case_sensitive: Annotated[bool, Field(description="Match case exactly.")] = True
    multiline: Annotated[bool, Field(description="Let matches span lines ('\\n' in the pattern).")] = False
    context: Annotated[
        int, Field(ge=0, le=10, description="Lines of context before and after each match.", examples=[2]), WHOLE_NUMBER
    ] = 0
    output_mode: Annotated[
        Literal["content", "files_with_matches", "count"],
        Field(
            description="Matching lines, paths only, or a count per file.",
            examples=["files_with_matches"],
        ),
    ] = "content"
    limit: Annotated[
        int,
        Field(ge=1, le=1000, description="Most matches (files, counts) to return.", examples=[100]),
        WHOLE_NUMBER,
    ] = 100
    offset: Annotated[int, Field(ge=0, description="Results to skip (for paging).", examples=[100]), WHOLE_NUMBER] = 0
    include_hidden: Annotated[
        bool | None,
        Field(description="Also search dot files and dot directories."),
    ] = None
    include_ignored: Annotated[bool, Field(description="Also search ignored files (.gitignore, .ignore).")] = False


class _SearchSummary(Paged):
    files_searched: int = Field(description="Text files whose contents were searched before the search stopped.")
    skipped_binary: int = Field(description="Files skipped because they look binary.")
    skipped_too_large: int = Field(description="Files skipped because they exceed the server's file size limit.")
    total_matches: int = Field(description="Matching lines found; a lower bound when `truncated`.")
    redactions: int | None = Field(
        default=None, description="Secrets masked in this result (null when output masking is off)."
    )
    degraded: str | None = Field(
        default=None,
        description="Present when the server narrowed this search (e.g. file names only, near the session's "
        "output budget): says what changed. Absent from a normal result.",
    )

    @model_serializer(mode="wrap")
    def _omit_absent_degraded(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if data.get("degraded") is None:
            data.pop("degraded", None)
        return data


class SearchTextContentResult(_SearchSummary):
    matches: list[TextMatch]


class SearchTextFilesResult(_SearchSummary):
    files: list[str]


class SearchTextCountResult(_SearchSummary):
    counts: list[FileCount]


SearchTextResult = SearchTextContentResult | SearchTextFilesResult | SearchTextCountResult


def _refuse_one_file_too_large(ws: Workspace, path: str) -> None:
    """A search of one file that is over `max_file_bytes` says so (a walk skips and counts such files).

    Raises:
        FileTooLargeError: naming what works on that file instead.
    """
    if path in ("", "."):
        return
    try:
        opened = ws.jail.open_file(path)
    except SandboxError:  # a directory, or a refusal the search itself reports
        return
    os.close(opened.fd)
    if opened.size > ws.limits.max_file_bytes:
        raise FileTooLargeError(
            f"'{path}' is {opened.size} bytes; search_text skips files over {ws.limits.max_file_bytes} bytes.",
            path=path,
            size_bytes=opened.size,
            max_file_bytes=ws.limits.max_file_bytes,
        )


def search_text(
    ws: Workspace, args: SearchTextArgs, *, cancel: CancelFlag | None = None, progress: Progress | None = None
) -> SearchTextResult:
    """Search and page the results. Stops reading as soon as the page is full and one more result is seen;
    the run is kept for the next page (`_search_runs`), which then starts where this one stopped.

    Rows are matching lines in "content" mode and files in the other modes.

    Raises:
        SandboxError: invalid_regex, invalid_glob, timeout, and the jail's refusals for `path`.
    """
    limits = ws.limits
    _refuse_one_file_too_large(ws, args.path)
    page = min(args.limit, limits.max_results)
    key = tuple(sorted(args.model_dump(exclude={"offset"}).items()))
    run = _search_runs.take(ws, key, args.offset)
    if run is not None and args.output_mode == "content" and not run.holds_lines_for(args.offset, args.offset + page):
        run.close()
        run = None
    if run is None:
        run = _start(ws, args, cancel, progress)
    else:
        run.cancel.current = cancel
        run.deadline.restart(limits.regex_timeout_s)
        if progress is not None:
            progress.files = run.progress.files
    if args.output_mode == "content":  # this page's hits, and the next page's in the file where this one stops
        run.window.start, run.window.stop = args.offset, args.offset + 2 * page
    try:
        result = _page(ws, args, run, args.offset + page)
    except BaseException:
        run.close()
        raise
    if result.next_offset is not None:
        _search_runs.keep(ws, key, result.next_offset, run)
    return result


def _start(ws: Workspace, args: SearchTextArgs, cancel: CancelFlag | None, progress: Progress | None) -> SearchRun:
    window, switch, deadline, stats = (
        HitWindow(),
        CancelSwitch(cancel),
        Deadline(ws.limits.regex_timeout_s),
        SearchStats(),
    )
    progress = progress or Progress()
    request = SearchRequest(
        cancel=switch,
        progress=progress,
        keep_hits=window,
        deadline=deadline,
        pattern=args.pattern,
        path=args.path,
        glob=args.glob,
        fixed_strings=args.fixed_strings,
        case_sensitive=args.case_sensitive,
        multiline=args.multiline,
        context=args.context,
        mode=args.output_mode,
        include_hidden=args.include_hidden,
        include_ignored=args.include_ignored,
    )
    return SearchRun(iter_file_hits(ws, request, stats), stats, window, switch, deadline, progress)


def _page(ws: Workspace, args: SearchTextArgs, run: SearchRun, end: int) -> SearchTextResult:
    """Rows [offset, end) of `run`, within the output cap."""
    meter = OutputMeter(ws.limits.max_output_bytes)
    rows = read_page(run, args.output_mode, args.offset, end, meter, ws.limits.max_line_chars)
    truncated, next_offset = page_offsets(args.offset, rows.consumed, rows.more)
    stats = run.stats
    summary = {
        "files_searched": stats.files_searched,
        "skipped_binary": stats.skipped_binary,
        "skipped_too_large": stats.skipped_too_large,
        "total_matches": rows.total_matches,
        "truncated": truncated or stats.walk_truncated,
        "next_offset": next_offset,
    }
    if args.output_mode == "content":
        return SearchTextContentResult(matches=rows.matches, **summary)
    if args.output_mode == "files_with_matches":
        return SearchTextFilesResult(files=rows.files, **summary)
    return SearchTextCountResult(counts=rows.counts, **summary)


PROGRESS_EVERY_S = 0.5


async def search_text_body(ws: Workspace, args: SearchTextArgs, context: CallContext) -> SearchTextResult:
    """The tool body: the search runs in a worker thread; progress is reported while it runs, and a
    cancelled call stops the thread (and kills its rg process) instead of letting it finish."""
    cancel = threading.Event()
    progress = Progress()
    report = context.report_progress
    result: SearchTextResult | Exception = SearchCancelled()
    async with anyio.create_task_group() as group:
        if report is not None:

            async def tick() -> None:
                while True:
                    await anyio.sleep(PROGRESS_EVERY_S)
                    await report(float(progress.files), None, f"{progress.files} files examined")

            group.start_soon(tick)
        try:
            result = await anyio.to_thread.run_sync(
                partial(search_text, ws, args, cancel=cancel, progress=progress), abandon_on_cancel=True
            )
        except Exception as exc:  # noqa: BLE001  # re-raised outside the task group, not as an ExceptionGroup
            result = exc
        finally:
            cancel.set()
            group.cancel_scope.cancel()
    if isinstance(result, Exception):
        raise result
    return result
