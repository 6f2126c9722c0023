"""read_file: read a text file by line range, streaming, capped, with `cat -n` style numbers."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Annotated, Final

import anyio
from pydantic import Field

from repo_sandbox.errors import BinaryFileError, InvalidArgumentsError
from repo_sandbox.fs.jail import OpenedFile
from repo_sandbox.fs.textfile import (
    SNIFF_BYTES,
    UTF8_BOM,
    WHOLE_FILE_BYTES,
    RawLine,
    after_newlines,
    count_lines_in,
    count_newlines_from,
    iter_lines,
    line_text,
    lines_in,
    looks_binary,
    read_head,
    read_whole,
    seek_line,
)
from repo_sandbox.meter import OutputMeter
from repo_sandbox.tools._args import WHOLE_NUMBER, ToolArgs
from repo_sandbox.tools._results import Paged
from repo_sandbox.workspace import Workspace

DESCRIPTION = """Read a text file by line range, numbered like `cat -n`.
Use it once search_files or search_text has told you which file (and which lines) matter. Returns up to
`limit` lines from line `offset` (1-based); over-long lines are cut with a marker; binary files (a NUL byte
in the first 8 KiB) are refused; bytes that are not UTF-8 show as U+FFFD. A last line `[more: offset=N; ...]`
means the file goes on: call again with that offset.

Example: {"path": "src/app/main.py", "offset": 120, "limit": 60}
Common mistake: reading a whole large file to find one function; find its line with search_text, then
read around it with offset/limit.
"""


LOSSY: Final = " (invalid bytes as U+FFFD)"
INLINE_READ_BYTES: Final = 256 * 1024
"""Files up to this size are read on the event loop (well under a millisecond of work)."""


class ReadFileArgs(ToolArgs):
    path: Annotated[
        str,
        Field(description="File path relative to the repository root.", examples=["README.md", "src/main.py"]),
    ]
    offset: Annotated[
        int, Field(ge=1, description="First line to return (1-based).", examples=[1, 120]), WHOLE_NUMBER
    ] = 1
    limit: Annotated[int, Field(ge=1, le=5000, description="Most lines to return.", examples=[200]), WHOLE_NUMBER] = (
        2000
    )
    line_numbers: Annotated[bool, Field(description="Prefix each line with its number (`cat -n` format).")] = True


class ReadFileResult(Paged):
    path: str = Field(description="The file, relative to the root.")
    content: str = Field(description="The lines read, each with its newline as in the file.")
    start_line: int = Field(description="Number of the first line returned.")
    end_line: int = Field(description="Number of the last line returned (start_line - 1 when none).")
    total_lines: int = Field(description="Lines in the whole file.")
    size_bytes: int = Field(description="File size in bytes.")
    encoding: str = Field(
        description="'utf-8', or 'utf-8-sig' when the file starts with a byte-order mark (left out of `content`); "
        f"followed by '{LOSSY}' when the lines returned hold bytes that are not UTF-8 (text in a legacy encoding "
        "such as Latin-1 or EUC-JP): each such byte is shown as U+FFFD."
    )
    redactions: int | None = Field(
        default=None, description="Secrets masked in this result (null when output masking is off)."
    )


def _render(number: int, text: str, newline: bool, line_numbers: bool) -> str:
    end = "\n" if newline else ""
    return f"{number:>6}\t{text}{end}" if line_numbers else f"{text}{end}"


async def read_file_tool(ws: Workspace, args: ReadFileArgs, context: object) -> ReadFileResult:
    """The tool body: the file is opened on the event loop (the jail's checks are metadata calls) and, when
    small, read right there (handing it to a worker thread costs more); a larger file is read in a thread."""
    opened = ws.jail.open_file(args.path)
    if opened.size <= INLINE_READ_BYTES:
        return read_opened(ws, args, opened)
    os.close(opened.fd)  # reopened (and checked again) in the thread: nothing is left open if this call is cancelled
    return await anyio.to_thread.run_sync(read_file, ws, args)


def read_file(ws: Workspace, args: ReadFileArgs) -> ReadFileResult:
    """Read lines [offset, offset + limit) of a file, within the output cap.

    Raises:
        SandboxError: jail refusals, file_too_large, binary_file, invalid_arguments (offset past the end).
    """
    return read_opened(ws, args, ws.jail.open_file(args.path))


def read_opened(ws: Workspace, args: ReadFileArgs, opened: OpenedFile) -> ReadFileResult:
    """`read_file` of a file the jail opened; closes it. A file of up to `WHOLE_FILE_BYTES` is read at once
    and its page cut from memory; a larger one is streamed (bounded memory), whatever its size: the
    `max_file_bytes` cap is for whole-file work (search_text, count_lines), not for a page. Both give the
    same result."""
    limits = ws.limits
    try:
        data = read_whole(opened.fd) if opened.size <= WHOLE_FILE_BYTES else None
        head = read_head(opened.fd) if data is None else data[:SNIFF_BYTES]
        if looks_binary(head):
            raise BinaryFileError(f"'{args.path}' looks like a binary file.", path=args.path, size_bytes=opened.size)
        has_bom = head.startswith(UTF8_BOM)
        if data is None:
            newlines, last = count_newlines_from(opened.fd, 0)
            total_lines = newlines + (1 if opened.size and last != b"\n" else 0)
        else:
            total_lines = count_lines_in(data)
        if args.offset > max(total_lines, 1):
            raise InvalidArgumentsError(
                f"offset {args.offset} is past the end of '{args.path}', which has {total_lines} lines.",
                hint=f"Use an offset between 1 and {max(total_lines, 1)}.",
                field="offset",
                total_lines=total_lines,
            )
        meter = OutputMeter(limits.max_output_bytes)
        meter.try_add(OutputMeter.cost(opened.rel_path))
        page = None if data is None else _plain_page(data, args, meter, limits.max_line_chars)
        if page is None:
            keep = limits.max_line_chars * 4 + 4
            if data is None:
                start = seek_line(opened.fd, args.offset - 1)
                lines = enumerate(iter_lines(opened.fd, keep_bytes=keep, start=start), start=args.offset)
            else:
                lines = enumerate(
                    lines_in(data, after_newlines(data, 0, args.offset - 1), keep_bytes=keep), args.offset
                )
            page = _page(lines, args, has_bom, meter, limits.max_line_chars)
    finally:
        os.close(opened.fd)
    content, end_line, lossy = page
    more = end_line < total_lines
    return ReadFileResult(
        path=opened.rel_path,
        content=content,
        start_line=args.offset,
        end_line=end_line,
        total_lines=total_lines,
        truncated=more,
        next_offset=end_line + 1 if more else None,
        size_bytes=opened.size,
        encoding=("utf-8-sig" if has_bom else "utf-8") + (LOSSY if lossy else ""),
    )


def _page(
    lines: Iterable[tuple[int, RawLine]], args: ReadFileArgs, has_bom: bool, meter: OutputMeter, max_chars: int
) -> tuple[str, int, bool]:
    """The rendered lines [offset, offset + limit) of numbered `lines`, within the meter, the last number and
    whether a line held bytes that are not UTF-8."""
    lossy = False
    parts: list[str] = []
    end_line = args.offset - 1
    stop = args.offset + args.limit
    for number, line in lines:
        if number < args.offset:
            continue
        if number >= stop:
            break
        raw = line
        if number == 1 and has_bom:
            raw = RawLine(line.data[len(UTF8_BOM) :], line.length - len(UTF8_BOM), line.newline)
        text = line_text(raw, max_chars)
        if not lossy and "\ufffd" in text:
            lossy = text.count("\ufffd") > raw.data.count(b"\xef\xbf\xbd")
        rendered = _render(number, text, raw.newline, args.line_numbers)
        if not meter.try_add(OutputMeter.cost(rendered)):
            if parts:
                break
            rendered = rendered[: max(meter.remaining // 6, 1)] + "... [cut to fit the output limit]"
            meter.try_add(OutputMeter.cost(rendered))
        parts.append(rendered)
        end_line = number
    return "".join(parts), end_line, lossy


def _plain_page(data: bytes, args: ReadFileArgs, meter: OutputMeter, max_chars: int) -> tuple[str, int, bool] | None:
    """`_page`'s result in a few whole-page operations, when the page is ASCII, no line needs cutting and it
    fits the meter (None otherwise). The meter charges each rendered line as a JSON string; JSON escapes
    characters one by one, so those charges add up to the page's charge plus two quotes per extra line."""
    start = after_newlines(data, 0, args.offset - 1)
    region = data[start : after_newlines(data, start, args.limit)]
    if not region.isascii():  # also rules out a byte-order mark
        return None
    lines = region.decode("ascii").split("\n")
    last = lines.pop()  # "" when the region ends with a newline, else the file's unterminated last line
    if last:
        lines.append(last)
    if not lines:
        return "", args.offset - 1, False
    if max(map(len, lines)) > max_chars:
        return None
    if args.line_numbers:  # one formatting of the whole page: `%6d\t%s\n` is `_render`'s format
        fields: list[int | str] = [0] * (2 * len(lines))
        fields[0::2] = range(args.offset, args.offset + len(lines))
        fields[1::2] = lines
        content = ("%6d\t%s\n" * len(lines)) % tuple(fields)
        if last:
            content = content[:-1]
    else:
        content = region.decode("ascii")
    if not meter.try_add(OutputMeter.cost(content) + 2 * (len(lines) - 1)):
        return None
    return content, args.offset + len(lines) - 1, False
