"""Output masking: which text fields of which tool's result may carry file contents, and how to mask them.

Every mask stays within its line, so `read_file` line numbers and `search_text` line/context positions stay
true. Private keys need the file: a page that starts inside a key has no BEGIN line to recognise it by, so
for `read_file` and `search_text` the file is scanned for key blocks and the lines inside them are masked
too. (The file is reopened through the jail after the body read it; if it changed in between, the text
masking still applies.)

File names are masked by the same rule wherever a result lists them (`mask_paths`): a secret-shaped name
(`AKIA....txt`) shows as `[REDACTED].txt` in `ls` output and in search_files, search_text and count_lines alike.

This masks secrets as they appear in files and command output, to keep them out of the model's context by
accident. It is not a defence against an agent that transforms a secret on purpose (`rev`, `base64`,
`cut`): the deny-list and the command policy are.
"""

from __future__ import annotations

import mmap
import os
import re
from collections import Counter
from collections.abc import Callable
from typing import Any, Final, Protocol

from repo_sandbox.audit.keys import PEM_MARKER_BYTES, mask_key_lines, mask_private_keys
from repo_sandbox.audit.known import KnownSecrets
from repo_sandbox.audit.masking import could_mask, mask_text
from repo_sandbox.errors import SandboxError
from repo_sandbox.fs.jail import Jail


class HasJail(Protocol):
    """What masking reads of a `workspace.Workspace`: the files, through its jail."""

    jail: Jail


class TextMasker:
    """Masks the strings of one result: recognised secrets, then remembered ones; keeps counts and findings."""

    __slots__ = ("counts", "found", "known")

    def __init__(self, known: KnownSecrets | None = None) -> None:
        self.counts = Counter[str]()
        self.found: set[str] = set()
        self.known = known

    def __call__(self, text: str, *, private_keys: bool = True) -> str:
        return self.remembered(mask_text(text, self.counts, self.found, private_keys=private_keys))

    def unscreened(self, text: str) -> str:
        """`self(text)` for text without a key marker (no key block to look for)."""
        return self.remembered(mask_text(text, self.counts, self.found, private_keys=False))

    def remembered(self, text: str) -> str:
        """Only the remembered secrets masked (for text that `masking.could_mask` cleared)."""
        return text if self.known is None else self.known.mask(text, self.counts)

    def private_keys(self, text: str) -> str:
        return mask_private_keys(text, self.counts, self.found)

    def key_lines(self, lines: list[str], *, terminated: bool) -> list[str]:
        return mask_key_lines(lines, terminated=terminated, found=self.found)


CUT_MARK: Final = "... ["
"""Begins both markers of a cut line (`... [line cut: ...]`, `... [cut to fit the output limit]`)."""
READ_WHOLE_BYTES: Final = 1024 * 1024
"""Files up to this size are scanned for key blocks from one read; larger ones through a memory map."""

LineSpan = tuple[int, int, bool]
"""(first, last, terminated): 1-based lines strictly inside a private key block of a file."""

_NUMBERED: Final = re.compile(r"( *\d+\t)?(.*)", re.DOTALL)
"""read_file's `cat -n` prefix: the number right-aligned in 6 columns, then a tab."""
_KEY_LIKE_BODY: Final = r"""(?: *\d+\t)?[ \t"'`]*[A-Za-z0-9+/]{16,}={0,2}(?:\\n|[ \t"'`,;+)])*(?=\n|\Z)"""
"""A line that could be part of a private key; only then is the file scanned for key blocks."""
_KEY_LIKE_FIRST_LINE: Final = re.compile(_KEY_LIKE_BODY)
_KEY_LIKE_LATER_LINE: Final = re.compile("\n" + _KEY_LIKE_BODY)
"""The same, after a newline: a literal first character lets the scan jump from line to line."""


def _may_show_key_material(text: str) -> bool:
    return _KEY_LIKE_FIRST_LINE.match(text) is not None or _KEY_LIKE_LATER_LINE.search(text) is not None


def private_key_spans(ws: HasJail, path: str) -> list[LineSpan]:
    """The body lines of every private key block in a file of the workspace (none if it cannot be read)."""
    try:
        opened = ws.jail.open_file(path)
    except (SandboxError, OSError):
        return []
    try:
        if opened.size == 0:
            return []
        if opened.size <= READ_WHOLE_BYTES:  # one read costs less than a mapping's set-up and page faults
            data = os.pread(opened.fd, READ_WHOLE_BYTES + 1, 0)
            if len(data) <= READ_WHOLE_BYTES:  # else it grew since: map it
                return _key_spans_in(data)
        with mmap.mmap(opened.fd, 0, access=mmap.ACCESS_READ) as data:
            return _key_spans_in(data)
    finally:
        os.close(opened.fd)


def _key_spans_in(data: bytes | mmap.mmap) -> list[LineSpan]:
    if data.find(b"PRIVATE KEY-----") < 0:
        return []
    spans: list[LineSpan] = []
    line, counted_to, begin_line = 1, 0, None
    for marker in PEM_MARKER_BYTES.finditer(data):  # pyright: ignore[reportCallIssue, reportArgumentType]
        line += data[counted_to : marker.start()].count(b"\n")
        counted_to = marker.start()
        if marker.group(1) == b"BEGIN" and begin_line is None:
            begin_line = line
        elif marker.group(1) == b"END" and begin_line is not None:
            if line > begin_line + 1:
                spans.append((begin_line + 1, line - 1, True))
            begin_line = None
    if begin_line is not None:
        spans.append((begin_line + 1, 1 << 62, False))
    return spans


def _mask_lines_in_spans(lines: list[str], first_line: int, spans: list[LineSpan], mask: TextMasker) -> list[str]:
    """Mask key material in `lines` (numbered from `first_line`) that fall inside `spans`."""
    if not spans:
        return lines
    result = list(lines)
    for start, end, terminated in spans:
        lo, hi = max(start, first_line), min(end, first_line + len(lines) - 1)
        if lo > hi:
            continue
        window = result[lo - first_line : hi - first_line + 1]
        masked = mask.key_lines(window, terminated=terminated)
        if masked != window:
            mask.counts["private_key"] += 1
            result[lo - first_line : hi - first_line + 1] = masked
    return result


def _may_lie_in_a_key_block(payload: dict[str, Any], content: str) -> bool:
    """Whether a line of this page may lie inside a key block of the file. Not when the page starts at line 1,
    shows every line whole and has no "PRIVATE KEY": a block's lines follow its BEGIN line, which would be
    in the page, whole (the marker is ASCII, on one line), so the page would show the marker."""
    return payload["start_line"] > 1 or "PRIVATE KEY" in content or CUT_MARK in content


def mask_read_file(ws: HasJail, payload: dict[str, Any], arguments: Any, mask: TextMasker) -> None:
    """Mask a page of `cat -n` numbered (or bare) lines. The rules run on the bare lines, with the key blocks of
    the file masked first, unless a shorter way is known to give the same text:
    - no rule can match and no key block reaches the page: only remembered secrets are masked;
    - no line looks like key material and no key marker is shown: the rules run on the numbered lines."""
    content: str = payload["content"]
    key_marker = "PRIVATE KEY" in content
    if not could_mask(content):  # no rule can match these lines, with their prefixes or without
        if not (_may_lie_in_a_key_block(payload, content) and _may_show_key_material(content)):
            payload["content"] = mask.remembered(content)
            return
        spans = private_key_spans(ws, payload["path"])
        if not spans:
            payload["content"] = mask.remembered(content)
            return
    elif not key_marker and not _may_show_key_material(content):  # no rule needs the prefixes taken off
        payload["content"] = mask.unscreened(content)
        return
    else:
        key_like = not key_marker or _may_show_key_material(content)
        spans = private_key_spans(ws, payload["path"]) if key_like and _may_lie_in_a_key_block(payload, content) else []
    numbered = not (isinstance(arguments, dict) and arguments.get("line_numbers") is False)  # pyright: ignore[reportUnknownMemberType]
    prefixes: list[str] = []
    bodies: list[str] = []
    for line in content.split("\n"):
        match = _NUMBERED.fullmatch(line) if numbered else None
        prefix = (match.group(1) or "") if match else ""
        prefixes.append(prefix)
        bodies.append(line[len(prefix) :])
    joined = "\n".join(_mask_lines_in_spans(bodies, payload["start_line"], spans, mask))
    bodies = mask(joined).split("\n")
    payload["content"] = "\n".join(prefix + body for prefix, body in zip(prefixes, bodies, strict=True))


def mask_search_text(ws: HasJail, payload: dict[str, Any], arguments: Any, mask: TextMasker) -> None:
    _mask_matches(ws, payload, mask)
    mask_paths(ws, payload, arguments, mask)  # after the matches: their paths find the files' key blocks


def _mask_matches(ws: HasJail, payload: dict[str, Any], mask: TextMasker) -> None:
    """All matches are masked in one pass over their joined lines (one call per hit would cost ~10x more);
    private key blocks are handled per match, so a BEGIN in one hit never reaches into the next."""
    matches: list[dict[str, Any]] = payload.get("matches", [])
    blocks: list[list[str]] = []
    for match in matches:
        blocks.append([*match["before"], *match["text"].split("\n"), *match["after"]])
    if not blocks:
        return
    spans_by_path: dict[str, list[LineSpan]] = {}
    check_files = _may_show_key_material("\n".join(line for block in blocks for line in block))
    all_lines: list[str] = []
    for match, block in zip(matches, blocks, strict=True):
        lines = block
        if check_files:
            path = match["path"]
            if path not in spans_by_path:
                spans_by_path[path] = private_key_spans(ws, path)
            lines = _mask_lines_in_spans(block, match["line"] - len(match["before"]), spans_by_path[path], mask)
        all_lines += mask.private_keys("\n".join(lines)).split("\n")
    masked = iter(mask("\n".join(all_lines), private_keys=False).split("\n"))
    for match in matches:
        match["before"] = [next(masked) for _ in match["before"]]
        match["text"] = "\n".join(next(masked) for _ in match["text"].split("\n"))
        match["after"] = [next(masked) for _ in match["after"]]


def mask_paths(ws: HasJail, payload: dict[str, Any], arguments: Any, mask: TextMasker) -> None:
    """Mask the file names a result lists (`files`, and the `path` of `matches`, `counts`, `largest`) with the
    rule command output gets, in one pass over them joined by newlines (a mask never spans lines)."""
    slots: list[tuple[list[Any], int, str | None]] = []  # (container, index, key) of each path
    files = payload.get("files")
    if isinstance(files, list):
        slots += [(files, index, None) for index, item in enumerate(files) if isinstance(item, str)]  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType]
    for field in ("matches", "counts", "largest"):
        rows = payload.get(field)
        if isinstance(rows, list):
            slots += [(rows, index, "path") for index, row in enumerate(rows) if isinstance(row, dict)]  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType]
    paths = [container[index] if key is None else container[index][key] for container, index, key in slots]
    joined = "\n".join(paths)
    masked_text = mask(joined)
    if masked_text == joined:  # nothing to mask (the usual case): the payload stays as it is
        return
    lines = iter(masked_text.split("\n"))
    for (container, index, key), path in zip(slots, paths, strict=True):
        masked = "\n".join(next(lines) for _ in range(path.count("\n") + 1))
        if key is None:
            container[index] = masked
        else:
            container[index][key] = masked


def mask_execute_bash(ws: HasJail, payload: dict[str, Any], arguments: Any, mask: TextMasker) -> None:
    for field in ("stdout", "stderr"):
        if isinstance(payload.get(field), str):
            payload[field] = mask(payload[field])


def mask_strings(value: Any, mask: Callable[[str], str]) -> Any:
    """`value` (JSON-like) with every string passed through `mask`."""
    if isinstance(value, str):
        return mask(value)
    if isinstance(value, dict):
        return {key: mask_strings(item, mask) for key, item in value.items()}  # pyright: ignore[reportUnknownVariableType]
    if isinstance(value, list):
        return [mask_strings(item, mask) for item in value]  # pyright: ignore[reportUnknownVariableType]
    return value


def mask_error(payload: dict[str, Any], mask: TextMasker) -> None:
    """An error's details may carry output (a timed-out command's partial stdout): mask their strings. The
    message and hint are the server's words around the caller's own arguments, so they are left as they are."""
    error = payload["error"]
    error["details"] = mask_strings(error.get("details", {}), mask)


PayloadMasker = Callable[[HasJail, dict[str, Any], Any, TextMasker], None]
"""Masks the text fields of a success payload in place."""

OUTPUT_MASKERS: Final[dict[str, PayloadMasker]] = {
    "read_file": mask_read_file,
    "search_text": mask_search_text,
    "execute_bash": mask_execute_bash,
    "search_files": mask_paths,
    "count_lines": mask_paths,
}
"""The tools whose results carry file contents, command output or file names. Counts are never masked."""
