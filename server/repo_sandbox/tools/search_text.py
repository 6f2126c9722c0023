"""search_text: regex or literal search in file contents, paged and capped."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from repo_sandbox.engine.pytree import iter_file_hits
from repo_sandbox.engine.request import SearchRequest, SearchStats
from repo_sandbox.tools._results import OutputMeter, Paged, ResultModel, page_offsets
from repo_sandbox.tools._textfile import cut_text
from repo_sandbox.workspace import Workspace

DESCRIPTION = """Search file contents with a regular expression (or a literal string); like ripgrep, jailed.

Regex syntax is Rust/ripgrep's: no backreferences, no look-around. Each result is a matching line with
its path and 1-based line number, optionally with `context` lines around it. `output_mode` can instead
list just the files that match ("files_with_matches") or a count per file ("count"). .gitignore'd and
hidden files are skipped unless asked for; binary files are skipped. Results come in pages: when
`truncated` is true, call again with `offset` = `next_offset`.

Example: {"pattern": "def \\\\w+_handler", "glob": "*.py", "path": "src"}
Common mistake: running grep or rg through execute_bash; this tool is faster, bounded and structured.
Another: forgetting to escape regex metacharacters; set fixed_strings=true to search for text like 'a.b('.
"""


class SearchTextArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    pattern: Annotated[
        str,
        Field(
            min_length=1,
            max_length=10_000,
            description="Regular expression (Rust syntax) or, with fixed_strings, literal text.",
            examples=["TODO", "fn\\s+main", "import (os|sys)"],
        ),
    ]
    path: Annotated[str, Field(description="File or directory to search, relative to the root.")] = "."
    glob: Annotated[
        str | None,
        Field(max_length=1000, description="Only search files matching this glob, e.g. '*.py' or 'src/**/*.ts'."),
    ] = None
    fixed_strings: Annotated[bool, Field(description="Treat the pattern as literal text, not a regex.")] = False
    case_sensitive: Annotated[bool, Field(description="Match case exactly.")] = True
    multiline: Annotated[bool, Field(description="Let matches span lines ('\\n' in the pattern).")] = False
    context: Annotated[int, Field(ge=0, le=10, description="Lines of context before and after each match.")] = 0
    output_mode: Annotated[
        Literal["content", "files_with_matches", "count"],
        Field(description="'content': matching lines; 'files_with_matches': paths only; 'count': per-file counts."),
    ] = "content"
    limit: Annotated[int, Field(ge=1, le=1000, description="Most matches (or files, or counts) to return.")] = 100
    offset: Annotated[int, Field(ge=0, description="Number of results to skip (for paging).")] = 0
    include_hidden: Annotated[bool, Field(description="Also search hidden files and directories.")] = False
    include_ignored: Annotated[bool, Field(description="Also search files ignored by .gitignore/.ignore.")] = False


class TextMatch(ResultModel):
    path: str
    line: int = Field(description="1-based line number.")
    text: str = Field(description="The matching line (in multiline mode, the lines of the match).")
    before: list[str] = Field(description="Context lines before the match.")
    after: list[str] = Field(description="Context lines after the match.")


class FileCount(ResultModel):
    path: str
    count: int = Field(description="Matching lines in this file.")


class _SearchSummary(Paged):
    files_searched: int = Field(description="Files searched (binary and skipped files excluded).")
    total_matches: int = Field(description="Matching lines found; a lower bound when `truncated`.")
    degraded: str | None = Field(
        default=None,
        description="Set when the server narrowed this search (e.g. file names only, near the session's output "
        "budget): says what changed. Null for a normal result.",
    )


class SearchTextContentResult(_SearchSummary):
    matches: list[TextMatch]


class SearchTextFilesResult(_SearchSummary):
    files: list[str]


class SearchTextCountResult(_SearchSummary):
    counts: list[FileCount]


SearchTextResult = SearchTextContentResult | SearchTextFilesResult | SearchTextCountResult


def _request(args: SearchTextArgs) -> SearchRequest:
    return SearchRequest(
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


def _row_cost(path: str, texts: list[str]) -> int:
    return sum(OutputMeter.cost(t) + 3 for t in (path, *texts)) + 48


def search_text(ws: Workspace, args: SearchTextArgs) -> SearchTextResult:
    """Search and page the results. Stops reading as soon as the page is full and one more result is seen.

    Rows are matching lines in "content" mode and files in the other modes.

    Raises:
        SandboxError: invalid_regex, invalid_glob, timeout, and the jail's refusals for `path`.
    """
    limits = ws.limits
    end = args.offset + min(args.limit, limits.max_results)
    meter = OutputMeter(limits.max_output_bytes)
    stats = SearchStats()
    matches: list[TextMatch] = []
    files: list[str] = []
    counts: list[FileCount] = []
    index = 0  # position of the next row in the full result list
    total = 0
    more = False
    cut = limits.max_line_chars
    for file_hits in iter_file_hits(ws, _request(args), stats):
        total += len(file_hits.hits)
        path = file_hits.rel_path
        rows = file_hits.hits if args.output_mode == "content" else [None]
        for hit in rows:
            if index < args.offset:
                index += 1
                continue
            if index >= end:
                more = True
                break
            if hit is not None:
                match = TextMatch(
                    path=path,
                    line=hit.line,
                    text=cut_text(hit.text, cut),
                    before=[cut_text(t, cut) for t in hit.before],
                    after=[cut_text(t, cut) for t in hit.after],
                )
                fits = meter.try_add(_row_cost(path, [match.text, *match.before, *match.after]))
                if fits:
                    matches.append(match)
            elif args.output_mode == "files_with_matches":
                fits = meter.try_add(_row_cost(path, []))
                if fits:
                    files.append(path)
            else:
                fits = meter.try_add(_row_cost(path, []))
                if fits:
                    counts.append(FileCount(path=path, count=len(file_hits.hits)))
            if not fits:
                more = True
                break
            index += 1
        if more:
            break
    returned = len(matches) + len(files) + len(counts)
    truncated, next_offset = page_offsets(args.offset, returned, more)
    summary = {
        "files_searched": stats.files_searched,
        "total_matches": total,
        "truncated": truncated or stats.walk_truncated,
        "next_offset": next_offset,
    }
    if args.output_mode == "content":
        return SearchTextContentResult(matches=matches, **summary)
    if args.output_mode == "files_with_matches":
        return SearchTextFilesResult(files=files, **summary)
    return SearchTextCountResult(counts=counts, **summary)
