"""Writing test trees: one helper for every test that lays out files."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path


def write(path: Path, content: str | bytes = "x\n") -> Path:
    """Write `content` (text as UTF-8) to `path`, creating its parents."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def write_tree(root: Path, files: Mapping[str, str | bytes]) -> Path:
    """Write every `relative path -> content` of `files` under `root` and return `root`."""
    for rel, content in files.items():
        write(root / rel, content)
    return root
