"""The text a model reads: each tool result rendered as the command-line tool it stands in for would print it.

`structuredContent` keeps the typed object; `content[0].text` is this rendering (`[server] result_text =
"compact"`, the default) or the same object as JSON (`"json"`). Errors are always their JSON text: a client
or a model acting on `category`, `retryable` and `hint` reads them as they are published.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final


def result_text(tool: str, payload: Mapping[str, Any], *, is_error: bool, json_text: Callable[[], str]) -> str:
    """The text content of a result: the compact rendering of a success of a known tool, else `json_text()`."""
    render = None if is_error else _RENDERERS.get(tool)
    return json_text() if render is None else render(payload)


def more(next_offset: Any, *, truncated: bool, total: str = "") -> str:
    """The footer line of a page: `[more: offset=N]` when there is a next page, a note when the walk stopped."""
    if not truncated:
        return ""
    if next_offset is None:
        return "[truncated: the server's walk limit was reached; narrow `path`]\n"
    return f"[more: offset={next_offset}{total}]\n"


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def _notes(payload: Mapping[str, Any]) -> str:
    redactions = payload.get("redactions") or 0
    return f"[{_count(redactions, 'secret')} masked]\n" if redactions else ""


def _lines(text: str) -> str:
    return text if not text or text.endswith("\n") else text + "\n"


def search_files(payload: Mapping[str, Any]) -> str:
    files: Sequence[str] = payload["files"]
    body = "".join(f"{path}\n" for path in files) or "No files match.\n"
    total = f"; {_count(payload['total'], 'file')} in all"
    return body + more(payload["next_offset"], truncated=payload["truncated"], total=total)


def read_file(payload: Mapping[str, Any]) -> str:
    body = _lines(payload["content"])
    if not body:
        body = "[empty file]\n" if payload["total_lines"] == 0 else ""
    total = f"; {_count(payload['total_lines'], 'line')} in all"
    footer = more(payload["next_offset"], truncated=payload["truncated"], total=total)
    return body + _notes(payload) + footer


def search_text(payload: Mapping[str, Any]) -> str:
    """`rg -n --heading`: a path line, then `N:text` (context `N-text`, `--` between distant groups); files as
    `rg -l`, counts as `rg -c`."""
    parts = [f"[degraded: {payload['degraded']}]\n"] if payload.get("degraded") else []
    if "matches" in payload:
        found = _matches(payload["matches"])
    elif "files" in payload:
        found = "".join(f"{path}\n" for path in payload["files"])
    else:
        found = "".join(f"{row['path']}:{row['count']}\n" for row in payload["counts"])
    parts.append(found or f"No matches ({_count(payload['files_searched'], 'file')} searched).\n")
    if payload["skipped_too_large"]:
        parts.append(f"[{_count(payload['skipped_too_large'], 'file')} over the size limit not searched]\n")
    parts.append(_notes(payload))
    parts.append(more(payload["next_offset"], truncated=payload["truncated"]))
    return "".join(parts)


def _matches(matches: Sequence[Mapping[str, Any]]) -> str:
    """Each file's lines in order, a line both matched and context shown as matched, as rg merges them."""
    with_context = any(match["before"] or match["after"] for match in matches)
    files: dict[str, dict[int, str]] = {}
    for match in matches:
        lines = files.setdefault(match["path"], {})
        number: int = match["line"]
        hit_lines: list[str] = match["text"].split("\n")
        for n, text in enumerate(match["before"], number - len(match["before"])):
            lines.setdefault(n, f"{n}-{text}\n")
        for n, text in enumerate(match["after"], number + len(hit_lines)):
            lines.setdefault(n, f"{n}-{text}\n")
        for n, text in enumerate(hit_lines, number):
            lines[n] = f"{n}:{text}\n"
    out: list[str] = []
    for path, lines in files.items():
        out.append(f"\n{path}\n" if out else f"{path}\n")
        previous = None
        for n in sorted(lines):
            if with_context and previous is not None and n > previous + 1:
                out.append("--\n")
            out.append(lines[n])
            previous = n
    return "".join(out)


def count_lines(payload: Mapping[str, Any]) -> str:
    lines, files = _count(payload["total_lines"], "line"), _count(payload["files"], "file")
    rows = [f"{lines} in {files} ({_count(payload['bytes'], 'byte')})\n"]
    if payload["by_extension"]:
        rows.append(f"{'lines':>9} {'files':>6}  extension\n")
        rows.extend(
            f"{row['lines']:>9} {row['files']:>6}  {row['extension'] or '(none)'}\n" for row in payload["by_extension"]
        )
    if payload["largest"]:
        rows.append(f"{'lines':>9}  largest files\n")
        rows.extend(f"{row['lines']:>9}  {row['path']}\n" for row in payload["largest"])
    skipped = [
        f"{count} {what}"
        for count, what in (
            (payload["skipped_binary"], "binary"),
            (payload["skipped_too_large"], "over the size limit"),
        )
        if count
    ]
    if skipped:
        rows.append(f"[not counted: {', '.join(skipped)}]\n")
    if payload["truncated"]:
        rows.append("[truncated: the server's walk limit was reached or the lists were cut; narrow `path`]\n")
    return "".join(rows)


def execute_bash(payload: Mapping[str, Any]) -> str:
    parts = [_lines(payload["stdout"])]
    if payload["stderr"]:
        parts.append("[stderr]\n" + _lines(payload["stderr"]))
    parts.append(_notes(payload))
    unsandboxed = "; no OS sandbox" if payload["sandbox"] == "none" else ""
    parts.append(f"[exit code {payload['exit_code']}{unsandboxed}]\n")
    return "".join(parts)


def ask_user(payload: Mapping[str, Any]) -> str:
    rows = [f"[{payload['status']}]\n"]
    for answer in payload["answers"]:
        given = answer["answer"] if answer["answer"] is not None else "(no answer)"
        rows.append(f"Q: {answer['question']}\nA: {given}\n")
    rows.append(f"{payload['note']}\n")
    return "".join(rows)


_RENDERERS: Final[dict[str, Callable[[Mapping[str, Any]], str]]] = {
    "search_files": search_files,
    "read_file": read_file,
    "search_text": search_text,
    "count_lines": count_lines,
    "execute_bash": execute_bash,
    "ask_user": ask_user,
}
