"""Shared by the reliability tests: a small repository, and what a graded result is."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcp_types import CallToolResult

from exec_support import git
from tree_files import write

COUNT_PATTERNS = ("*", "*.py", "*.md", "**/*.py", "src/**", "*.txt", "**", "*.*")


def ordinary_call(tool: str, n: int) -> dict[str, Any]:
    """The `n`th (0-7) of eight distinct ordinary calls of `tool` (identical calls would be refused as repeats)."""
    return {
        "search_files": {"pattern": "**/*.py", "limit": 10 + n},
        "read_file": {"path": "README.md", "limit": 10 + n},
        "search_text": {"pattern": "TODO", "limit": 10 + n},
        "count_lines": {"path": ".", "pattern": COUNT_PATTERNS[n]},
        "execute_bash": {"command": f"head -n {n + 1} README.md"},
    }[tool]


TOOLS = ("count_lines", "execute_bash", "read_file", "search_files", "search_text")


def build_small_repo(base: Path) -> Path:
    root = base / "repo"
    write(root / "README.md", "# Demo\n\nTODO: write docs\n")
    write(root / "src" / "main.py", "def main():\n    print('hello')  # TODO\n")
    write(root / "src" / "pkg" / "deep.py", "VALUE = 42\n")
    write(root / ".env", "API_KEY=sk-test-123\n")
    git(root, "init", "-q", "-b", "main")
    return root


def error_code(result: CallToolResult) -> str | None:
    """The error code of a tool result, None for a success; a graded error is anything but an internal one."""
    if not result.is_error:
        return None
    content = result.structured_content
    assert content is not None, result
    error = content["error"]
    assert (error["code"] == "internal_error") == (error["category"] == "internal"), error
    return error["code"]
