"""search_files: find files by glob, respecting .gitignore, hidden files and the deny-list."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Annotated, Literal

from pydantic import Field

from repo_sandbox.fs.globs import Glob, compile_glob
from repo_sandbox.meter import OutputMeter, is_presentable
from repo_sandbox.tools._args import WHOLE_NUMBER, ToolArgs
from repo_sandbox.tools._results import Paged, page_offsets
from repo_sandbox.tree.walk import file_runs, indexed_snapshot
from repo_sandbox.workspace import Workspace

DESCRIPTION = """Find files by glob; prints one path per line, relative to the repository root.
Use it to locate files by name or extension before reading or searching them.

Globs as in ripgrep/.gitignore: `*` stays within a directory, `**` spans directories, `[abc]` and
`{py,pyi}` work; a pattern without `/` matches the name at any depth (`*.go` is `**/*.go`). Ignored and
hidden files are skipped unless asked for; sort="modified" lists the newest first. A last line
`[more: offset=N; ...]` means there are more: call again with that offset.

Example: {"pattern": "**/test_*.py", "path": "tests"}
Common mistake: running `find` or `ls -R` through execute_bash; this tool is faster and already filtered.
"""


_PLAIN_JSON = re.compile(r"[ !#-\[\]-~]*")
"""Printable ASCII without '"' and '\\': characters JSON writes as themselves (one byte each)."""


class SearchFilesArgs(ToolArgs):
    pattern: Annotated[
        str,
        Field(
            min_length=1,
            max_length=1000,
            description="Glob to match, e.g. '*.py', 'src/**/*.ts', '*.{js,jsx}'.",
            examples=["**/*.py"],
        ),
    ]
    path: Annotated[str, Field(description="Directory to search, relative to the root.", examples=["src"])] = "."
    limit: Annotated[int, Field(ge=1, le=1000, description="Most paths to return.", examples=[100]), WHOLE_NUMBER] = 100
    offset: Annotated[int, Field(ge=0, description="Paths to skip (for paging).", examples=[100]), WHOLE_NUMBER] = 0
    sort: Annotated[
        Literal["path", "modified"],
        Field(description="'path' (alphabetical) or 'modified' (newest first).", examples=["modified"]),
    ] = "path"
    include_hidden: Annotated[
        bool | None,
        Field(description="Also match dot files and dot directories."),
    ] = None
    include_ignored: Annotated[bool, Field(description="Also match ignored files (.gitignore, .ignore).")] = False


class SearchFilesResult(Paged):
    files: list[str] = Field(description="Matching file paths relative to the root.")
    total: int = Field(description="Number of matching files.")


def _name_glob(glob: Glob) -> Glob | None:
    """The glob of file names equivalent to `glob`, when it is one (`**/*.py` is `*.py`): matching a name is
    cheaper than building and matching a path."""
    if glob.basename_only:
        return glob
    body = glob.pattern.removeprefix("!")
    rest = body.removeprefix("**/")
    if rest == body or not rest or "/" in rest or "**" in rest:
        return None
    return compile_glob(("!" if glob.negated else "") + rest)


def _listed(runs: Iterator[tuple[str, str, list[str]]], glob: Glob) -> list[str]:
    """The paths of the indexed runs that the glob matches."""
    found: list[str] = []
    name_glob = _name_glob(glob)
    if name_glob is not None:
        match, negated = name_glob.regex.fullmatch, name_glob.negated
        for prefix, _, names in runs:
            found.extend(prefix + name for name in names if (match(name) is None) is negated)
    else:
        match, negated = glob.regex.fullmatch, glob.negated
        for prefix, walk_prefix, names in runs:
            found.extend(prefix + name for name in names if (match(walk_prefix + name) is None) is negated)
    return [path for path in found if is_presentable(path)]


def search_files(ws: Workspace, args: SearchFilesArgs) -> SearchFilesResult:
    """List files under `path` whose path matches the glob.

    Raises:
        SandboxError: invalid_glob, and the jail's refusals for `path`.
    """
    glob = compile_glob(args.pattern)
    limit = min(args.limit, ws.limits.max_results)
    found: list[str] = []
    with ws.walk(args.path, include_hidden=args.include_hidden, include_ignored=args.include_ignored) as walk:
        snapshot = indexed_snapshot(walk) if args.sort == "path" else None
        if snapshot is not None:  # one listing answers every page of one search (linear paging) and repeats
            key = ("search_files", walk.start_rel, glob.pattern)
            remembered: list[str] | None = snapshot.derived.get(key)
            if remembered is None:
                remembered = _listed(file_runs(snapshot, walk.start_rel), glob)
                snapshot.remember(key, remembered)
            found = remembered
        else:
            dated: list[tuple[float, str]] = []
            for entry in walk:
                if glob.matches(entry.walk_rel) and is_presentable(entry.rel_path):
                    mtime = 0.0
                    if args.sort == "modified":
                        try:
                            mtime = entry.stat().st_mtime
                        except OSError:
                            continue
                    dated.append((mtime, entry.rel_path))
            if args.sort == "modified":
                dated.sort(key=lambda item: (-item[0], item[1]))
            found = [rel for _, rel in dated]
        walk_truncated = walk.truncated
    meter = OutputMeter(ws.limits.max_output_bytes)
    files: list[str] = []
    consumed = 0
    page = found[args.offset : args.offset + limit]
    plain = _PLAIN_JSON.fullmatch("".join(page)) is not None
    for rel in page:
        cost = len(rel) + 4 if plain else OutputMeter.item_cost(rel)  # a plain string: quotes and ", " added
        if cost <= meter.limit:  # a path longer than a whole page is skipped, so paging always advances
            if not meter.try_add(cost):
                break
            files.append(rel)
        consumed += 1
    more = args.offset + consumed < len(found)
    truncated, next_offset = page_offsets(args.offset, consumed, more)
    return SearchFilesResult(
        files=files, total=len(found), truncated=truncated or walk_truncated, next_offset=next_offset
    )
