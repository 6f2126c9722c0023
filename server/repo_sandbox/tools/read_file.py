"""read_file: read a text file by line range, streaming, capped, with `cat -n` style numbers."""

from __future__ import annotations

import os
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from repo_sandbox.errors import BinaryFileError, FileTooLargeError, InvalidArgumentsError
from repo_sandbox.tools._results import OutputMeter, Paged
from repo_sandbox.tools._textfile import (
    UTF8_BOM,
    RawLine,
    count_newlines_from,
    iter_lines,
    line_text,
    looks_binary,
    read_head,
)
from repo_sandbox.workspace import Workspace

DESCRIPTION = """Read a text file of the repository by line range.

Use it after search_files or search_text has told you which file (and which lines) matter. Returns up to
`limit` lines starting at line `offset` (1-based), numbered like `cat -n` (number right-aligned in 6
columns, then a tab). Long files come in pages: when `truncated` is true, call again with
`offset` = `next_offset`. Over-long lines are cut with a visible marker. Binary files are refused.

Example: {"path": "src/app/main.py", "offset": 120, "limit": 60}
Common mistake: reading a whole large file to find one function; use search_text to find the line
first, then read around it with offset/limit. Paths are relative to the repository root.
"""


class ReadFileArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: Annotated[
        str,
        Field(description="File path relative to the repository root.", examples=["README.md", "src/main.py"]),
    ]
    offset: Annotated[int, Field(ge=1, description="First line to return (1-based).", examples=[1, 120])] = 1
    limit: Annotated[int, Field(ge=1, le=5000, description="Most lines to return.", examples=[200])] = 2000
    line_numbers: Annotated[bool, Field(description="Prefix each line with its number (`cat -n` format).")] = True


class ReadFileResult(Paged):
    path: str = Field(description="The file, relative to the root.")
    content: str = Field(description="The lines read, each with its newline as in the file.")
    start_line: int = Field(description="Number of the first line returned.")
    end_line: int = Field(description="Number of the last line returned (start_line - 1 when none).")
    total_lines: int = Field(description="Lines in the whole file.")
    size_bytes: int = Field(description="File size in bytes.")
    encoding: str = Field(
        description="'utf-8', or 'utf-8-sig' when the file starts with a byte-order mark (left out of `content`). "
        "Invalid UTF-8 bytes are shown as U+FFFD."
    )


def _render(number: int, text: str, newline: bool, line_numbers: bool) -> str:
    end = "\n" if newline else ""
    return f"{number:>6}\t{text}{end}" if line_numbers else f"{text}{end}"


def read_file(ws: Workspace, args: ReadFileArgs) -> ReadFileResult:
    """Read lines [offset, offset + limit) of a file, within the output cap.

    Raises:
        SandboxError: jail refusals, file_too_large, binary_file, invalid_arguments (offset past the end).
    """
    limits = ws.limits
    opened = ws.jail.open_file(args.path)
    try:
        if opened.size > limits.max_file_bytes:
            raise FileTooLargeError(
                f"'{args.path}' is {opened.size} bytes; the limit for read_file is {limits.max_file_bytes}.",
                path=args.path,
                size_bytes=opened.size,
                max_file_bytes=limits.max_file_bytes,
            )
        head = read_head(opened.fd)
        if looks_binary(head):
            raise BinaryFileError(f"'{args.path}' looks like a binary file.", path=args.path, size_bytes=opened.size)
        has_bom = head.startswith(UTF8_BOM)
        newlines, last = count_newlines_from(opened.fd, 0)
        total_lines = newlines + (1 if opened.size and last != b"\n" else 0)
        if args.offset > max(total_lines, 1):
            raise InvalidArgumentsError(
                f"offset {args.offset} is past the end of '{args.path}', which has {total_lines} lines.",
                hint=f"Use an offset between 1 and {max(total_lines, 1)}.",
                field="offset",
                total_lines=total_lines,
            )
        meter = OutputMeter(limits.max_output_bytes)
        meter.try_add(OutputMeter.cost(opened.rel_path))
        keep = limits.max_line_chars * 4 + 4
        parts: list[str] = []
        end_line = args.offset - 1
        stop = args.offset + args.limit
        for number, line in enumerate(iter_lines(opened.fd, keep_bytes=keep), start=1):
            if number < args.offset:
                continue
            if number >= stop:
                break
            raw = line
            if number == 1 and has_bom:
                raw = RawLine(line.data[len(UTF8_BOM) :], line.length - len(UTF8_BOM), line.newline)
            text = line_text(raw, limits.max_line_chars)
            rendered = _render(number, text, raw.newline, args.line_numbers)
            if not meter.try_add(OutputMeter.cost(rendered)):
                if parts:
                    break
                rendered = rendered[: max(meter.remaining // 6, 1)] + "... [cut to fit the output limit]"
                meter.try_add(OutputMeter.cost(rendered))
            parts.append(rendered)
            end_line = number
    finally:
        os.close(opened.fd)
    more = end_line < total_lines
    return ReadFileResult(
        path=opened.rel_path,
        content="".join(parts),
        start_line=args.offset,
        end_line=end_line,
        total_lines=total_lines,
        truncated=more,
        next_offset=end_line + 1 if more else None,
        size_bytes=opened.size,
        encoding="utf-8-sig" if has_bom else "utf-8",
    )
