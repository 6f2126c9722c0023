"""Run the Python engine over a file or a directory tree of the jail, streaming `FileHits` in path order."""

from __future__ import annotations

import os
from collections.abc import Iterator

from repo_sandbox.engine.pysearch import Deadline, Query, decode_buffer, search_text_buffer
from repo_sandbox.engine.request import FileHits, SearchRequest, SearchStats
from repo_sandbox.tools._glob import compile_glob
from repo_sandbox.tools._textfile import SNIFF_BYTES, looks_binary
from repo_sandbox.workspace import Workspace


def _read_all(fd: int, size_hint: int) -> bytes:
    chunks: list[bytes] = []
    while True:
        chunk = os.read(fd, max(size_hint + 1, 65536))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _search_fd(
    fd: int, rel_path: str, ws: Workspace, query: Query, request: SearchRequest, deadline: Deadline, stats: SearchStats
) -> FileHits | None:
    size = os.fstat(fd).st_size
    if size > ws.limits.max_file_bytes:
        return None
    data = _read_all(fd, size)
    if looks_binary(data[:SNIFF_BYTES]):
        return None
    stats.files_searched += 1
    hits = search_text_buffer(query, decode_buffer(data), context=request.context, deadline=deadline)
    return FileHits(rel_path, hits) if hits else None


def iter_file_hits(ws: Workspace, request: SearchRequest, stats: SearchStats) -> Iterator[FileHits]:
    """Search `request.path` (a file or a directory) and yield each file's hits.

    Raises:
        SandboxError: invalid_regex/invalid_glob, the jail's refusals, timeout.
    """
    query = Query.compile(
        request.pattern,
        fixed_strings=request.fixed_strings,
        case_sensitive=request.case_sensitive,
        multiline=request.multiline,
    )
    glob = compile_glob(request.glob) if request.glob else None
    deadline = Deadline(ws.limits.regex_timeout_s)
    opened, dir_fd, _ = ws.jail.open_any(request.path)
    if opened is not None:
        try:
            found = _search_fd(opened.fd, opened.rel_path, ws, query, request, deadline, stats)
        finally:
            os.close(opened.fd)
        if found is not None:
            yield found
        return
    assert dir_fd is not None
    os.close(dir_fd)
    with ws.walk(request.path, include_hidden=request.include_hidden, include_ignored=request.include_ignored) as walk:
        for entry in walk:
            if glob is not None and not glob.matches(entry.walk_rel):
                continue
            fd = walk.open_file(entry)
            if fd is None:
                continue
            try:
                found = _search_fd(fd, entry.rel_path, ws, query, request, deadline, stats)
            finally:
                os.close(fd)
            if found is not None:
                yield found
        stats.walk_truncated = walk.truncated
