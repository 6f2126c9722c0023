"""Private keys (PEM blocks): what lies between `-----BEGIN ... PRIVATE KEY-----` and its END is masked line by line.

Only lines that look like key material (base64, or a PEM header such as `DEK-Info:`) are masked, so code that
merely mentions the markers stays readable; quotes, concatenation and escaped newlines around the material
(a key embedded in source or in JSON) are allowed. Line breaks are kept, so line numbers stay true.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Final

from repo_sandbox.audit.labels import mask_for

PEM_BEGIN: Final = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----")
PEM_END: Final = re.compile(r"-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----")
PEM_MARKER_BYTES: Final = re.compile(rb"-----(BEGIN|END) [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----")

_CUT_MARKER: Final = re.compile(r"\.\.\. \[(?:line cut|cut to fit)[^\]]*\]$")
"""The marker read_file/search_text put at the end of an over-long line."""
_ESCAPED_NEWLINE: Final = re.compile(r"\\[nr]")
_EMBEDDING_CHARS: Final = " \t\"'`+,;()"
"""What surrounds key material in source and config files: quotes, concatenation, escaped newlines."""
_KEY_MATERIAL: Final = re.compile(r"[A-Za-z0-9+/]+={0,2}|(?:Proc-Type|DEK-Info|Comment|Version|Hash|Charset):.*")
"""A line of a private key's body: base64, or a header such as `DEK-Info: ...`."""


def mask_key_line(line: str, *, min_chars: int, found: set[str] | None = None) -> str:
    """Mask a line of a private key's body, keeping indentation and any line-cut marker; other lines stay."""
    cut = _CUT_MARKER.search(line)
    body_end = cut.start() if cut else len(line)
    body = line[:body_end].lstrip(" \t")
    material = _ESCAPED_NEWLINE.sub("", body).strip(_EMBEDDING_CHARS)
    if len(material) < min_chars or not _KEY_MATERIAL.fullmatch(material) or "[REDACTED" in body:
        return line
    if found is not None:
        found.add(material)
    return line[: body_end - len(body)] + mask_for("private_key", body) + line[body_end:]


def mask_key_lines(lines: list[str], *, terminated: bool, found: set[str] | None = None) -> list[str]:
    """Mask the key material among lines known to lie inside a private key block. In a block without an END
    marker only long base64 lines (and the short lines right after them) count, so code that merely
    mentions a BEGIN marker stays readable."""
    masked: list[str] = []
    previous = False
    for line in lines:
        new = mask_key_line(line, min_chars=1 if terminated or previous else 16, found=found)
        previous = new != line
        masked.append(new)
    return masked


def mask_private_keys(text: str, counts: Counter[str], found: set[str] | None = None) -> str:
    """Mask the key material between BEGIN and END of each private key block (to the end of the text when the
    END is not in it)."""
    if "PRIVATE KEY" not in text:
        return text
    parts: list[str] = []
    position = 0
    while (begin := PEM_BEGIN.search(text, position)) is not None:
        end = PEM_END.search(text, begin.end())
        after = PEM_BEGIN.search(text, begin.end())
        if after is not None and (end is None or after.start() < end.start()):
            end = None  # a block without its END, followed by another block
        stop = end.start() if end is not None else after.start() if after is not None else len(text)
        body = text[begin.end() : stop]
        masked = "\n".join(mask_key_lines(body.split("\n"), terminated=end is not None, found=found))
        if masked != body:
            counts["private_key"] += 1
        parts += [text[position : begin.end()], masked]
        position = stop
    parts.append(text[position:])
    return "".join(parts)
