"""The end-to-end repository: every case the read-only tools must handle, plus call helpers for the SDK client."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.types import TextContent

from repo_sandbox.config.loader import load_settings
from repo_sandbox.wiring.assembly import build_server
from repo_sandbox.wiring.render import result_text
from repo_sandbox.workspace import Workspace
from tree_files import write

ERAS = ("legacy", "auto")

MANY_FILES = 230
"""Files in many/ (paging of search_files and of the per-file search_text modes)."""
NEEDLE_LINES = 3000
"""Lines of data/needles.txt; every third one holds 'needle' (paging of content matches)."""


def build_tree(root: Path) -> Path:
    """Write the end-to-end repository under `root` and return it."""
    files: dict[str, str | bytes] = {
        "README.md": "# Demo\n\nTODO: write docs\n",
        ".gitignore": "*.log\nbuild/\n!keep.log\n",
        ".ignore": "scratch/\n",
        "app.log": "ignored log TODO\n",
        "keep.log": "kept log TODO\n",
        "build/out.js": "ignored build TODO\n",
        "scratch/tmp.txt": "ignored by .ignore TODO\n",
        "src/.gitignore": "generated/\n*.tmp\n",
        "src/main.go": 'package main\n\nfunc main() {\n\tprintln("hi") // TODO\n}\n',
        "src/util.go": "package main\n\nfunc Util() int { return 1 }\n",
        "src/util_test.go": "package main\n\nfunc TestUtil() {}\n",
        "src/generated/gen.go": "package generated // TODO\n",
        "src/cache.tmp": "tmp TODO\n",
        "src/nested/deeper/.gitignore": "!important.tmp\n",
        "src/nested/deeper/important.tmp": "re-included TODO\n",
        "src/nested/deeper/other.tmp": "still ignored\n",
        "src/lib/a.py": "def a():\n    return 'a'\n",
        "src/lib/b.pyi": "def b() -> str: ...\n",
        "src/lib/c.js": "export const c = 1;\n",
        "src/lib/d.jsx": "export const D = () => null;\n",
        "src/lib/e.ts": "export const e: number = 1;\n",
        "src/lib/f1.txt": "one\n",
        "src/lib/f2.txt": "two\n",
        "src/lib/fx.txt": "x\n",
        "docs/guide.md": "Guide\nsee TODO below\n",
        "docs/café.md": "Café au lait TODO\n",
        "docs/日本語.txt": "こんにちは TODO 世界\n",
        "docs/emoji_🎉.txt": "party TODO\n",
        "data/blob.bin": b"\x00\x01\x02TODO\x00" * 20,
        "data/image.png": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)),
        "data/noise.dat": bytes(range(128, 256)) * 4 + b"\x00" + bytes(range(128, 256)) * 4,  # NUL: binary
        "data/latin1.txt": "caf\xe9 TODO na\xefve\n".encode("latin-1"),
        "data/empty.txt": "",
        "data/nonl.txt": "one\ntwo",
        "data/crlf.txt": "alpha\r\nbeta\r\n",
        "data/bom.txt": b"\xef\xbb\xbffirst line\nsecond\n",
        "data/long_line.txt": "x" * 5000 + "\nshort\n",
        "data/needles.txt": "".join(
            f"line {i} needle\n" if i % 3 == 0 else f"line {i}\n" for i in range(1, NEEDLE_LINES + 1)
        ),
        ".hidden/config.yml": "hidden: TODO\n",
        ".dotfile": "dot TODO\n",
        ".env": "API_KEY=sk-test-TODO\n",
        "regex/meta.txt": "a.b(c)\na+b\n[x]\nfn main() {\n{e<=1}\n",
        "regex/multi.txt": "start\nmiddle\nend\nstart\nend\n",
        "regex/case.txt": "Hello\nHELLO\nhello\n",
        "regex/context.txt": "".join(f"c{i}\n" for i in range(1, 21)).replace("c10\n", "c10 MATCH\n"),
    }
    for i in range(MANY_FILES):
        files[f"many/f{i:03d}.txt"] = f"file {i}\nmarker\nmarker again\n"
    for rel, content in files.items():
        write(root / rel, content)
    for i, name in enumerate(("old.txt", "middle.txt", "new.txt")):
        path = write(root / "mtime" / name, name)
        os.utime(path, (1_600_000_000 + i * 1000, 1_600_000_000 + i * 1000))
    return root


def payload_of(result: Any, tool: str | None = None) -> dict[str, Any]:
    """The structured content, checked against the text content: an error's text is the same object as JSON,
    a success's the compact rendering of it (checked when `tool` is given; `tests/interaction/test_result_text.py`
    pins the renderings themselves)."""
    structured = result.structured_content
    assert isinstance(structured, dict)
    assert len(result.content) == 1 and isinstance(result.content[0], TextContent)
    text = result.content[0].text
    if result.is_error:
        assert json.loads(text) == structured
    elif tool is not None:
        assert text == result_text(tool, structured, is_error=False, json_text=lambda: "(not compact)")
    return structured  # pyright: ignore[reportUnknownVariableType]


async def call_ok(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    payload = payload_of(result, tool)
    assert result.is_error is False, payload
    return payload


async def call_error(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The graded error body of a failing call."""
    result = await client.call_tool(tool, arguments)
    payload = payload_of(result)
    assert result.is_error is True, payload
    assert set(payload) == {"error"}
    error = payload["error"]
    assert set(error) == {"code", "category", "message", "retryable", "hint", "details"}
    assert error["hint"]
    return error


def path_order(paths: list[str]) -> list[str]:
    """Paths in the order `sort: "path"` lists them: component by component, as ripgrep's --sort path."""
    return sorted(paths, key=lambda p: p.split("/"))


DEFAULT_VISIBLE = path_order(
    [
        "README.md",
        "keep.log",
        "src/main.go",
        "src/util.go",
        "src/util_test.go",
        "src/nested/deeper/important.tmp",
        "src/lib/a.py",
        "src/lib/b.pyi",
        "src/lib/c.js",
        "src/lib/d.jsx",
        "src/lib/e.ts",
        "src/lib/f1.txt",
        "src/lib/f2.txt",
        "src/lib/fx.txt",
        "docs/guide.md",
        "docs/café.md",
        "docs/日本語.txt",
        "docs/emoji_🎉.txt",
        "data/blob.bin",
        "data/image.png",
        "data/noise.dat",
        "data/latin1.txt",
        "data/empty.txt",
        "data/nonl.txt",
        "data/crlf.txt",
        "data/bom.txt",
        "data/long_line.txt",
        "data/needles.txt",
        "regex/meta.txt",
        "regex/multi.txt",
        "regex/case.txt",
        "regex/context.txt",
        *(f"many/f{i:03d}.txt" for i in range(MANY_FILES)),
        "mtime/old.txt",
        "mtime/middle.txt",
        "mtime/new.txt",
    ]
)
"""Every file search_files lists with default arguments: no hidden files, ignore rules respected."""
HIDDEN = [".dotfile", ".gitignore", ".ignore", ".hidden/config.yml", "src/.gitignore", "src/nested/deeper/.gitignore"]
IGNORED = [
    "app.log",
    "build/out.js",
    "scratch/tmp.txt",
    "src/generated/gen.go",
    "src/cache.tmp",
    "src/nested/deeper/other.tmp",
]


@asynccontextmanager
async def connect(root: Path, mode: str, **sections: dict[str, Any]) -> AsyncIterator[Client]:
    """An in-memory client of a server over `root` with the given config sections (e.g. limits={...})."""
    overrides = {(section, key): value for section, values in sections.items() for key, value in values.items()}
    overrides[("workspace", "root")] = str(root)
    workspace = Workspace(load_settings(None, env={}, overrides=overrides))
    try:
        async with Client(build_server(workspace), mode=mode) as client:
            yield client
    finally:
        workspace.close()


def json_size(value: Any) -> int:
    """Bytes of `value` serialised as the server sends it (UTF-8 JSON, non-ASCII unescaped)."""
    return len(json.dumps(value, ensure_ascii=False).encode("utf-8"))
