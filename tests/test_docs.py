"""The README stays true: its error-code table, its tool table and result fields, as a client sees them."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from repo_sandbox.errors import ALL_ERRORS
from repo_sandbox.policy.exec_model import DEFAULT_ALLOW
from repo_sandbox.testing import ERAS, Mode
from repo_sandbox.tools.registry import TOOLS, TOOLS_BY_NAME
from repo_sandbox.wiring.assembly import build_server
from repo_sandbox.wiring.convert import mcp_tool
from repo_sandbox.workspace import Workspace

README = Path(__file__).resolve().parents[1] / "README.md"


def readme() -> str:
    return README.read_text(encoding="utf-8")


def error_table() -> dict[str, tuple[str, bool]]:
    """The README's error-code table: code -> (category, retryable)."""
    table = readme().split("<!-- error-codes:begin -->")[1].split("<!-- error-codes:end -->")[0]
    rows = re.findall(r"^\| `([a-z_]+)` \| ([a-z_]+) \| (yes|no) \|", table, flags=re.MULTILINE)
    return {code: (category, retryable == "yes") for code, category, retryable in rows}


def tools_section() -> str:
    return readme().split("\n## Tools\n")[1].split("\n## ")[0]


def _without_groups(text: str) -> str:
    """`text` without quoted strings and without every (...), [...] and {...} group, innermost first."""
    text = re.sub(r'"[^"]*"', "", text)
    while True:
        shorter = re.sub(r"\([^()]*\)|\[[^\[\]]*\]|\{[^{}]*\}", "", text)
        if shorter == text:
            return text
        text = shorter


def documented_arguments() -> dict[str, set[str]]:
    """Tool -> the argument names of the README's tool table ("key arguments" column)."""
    rows = re.findall(r"^\| `([a-z_]+)` \| .+ \| (.+) \|$", tools_section(), flags=re.MULTILINE)
    return {tool: set(re.findall(r"`([a-z_]+)[`:]", _without_groups(cell))) for tool, cell in rows}


def documented_result_fields() -> dict[str, set[str]]:
    """Tool -> the top-level field names of the README's "Results" list (`name?`: present only sometimes)."""
    rows = re.findall(r"^- `([a-z_]+)` → `\{(.+)\}`", tools_section(), flags=re.MULTILINE)
    return {tool: set(re.findall(r"[a-z_]+", _without_groups(fields))) for tool, fields in rows}


def published_result_fields(tool: str) -> set[str]:
    """The properties of every success shape in the tool's published output schema."""
    schema = mcp_tool(TOOLS_BY_NAME[tool]).output_schema or {}
    defs: dict[str, Any] = schema.get("$defs", {})
    fields: set[str] = set()
    for alternative in schema["anyOf"]:
        resolved = defs[alternative["$ref"].rsplit("/", 1)[1]] if "$ref" in alternative else alternative
        fields |= set(resolved.get("properties", {}))
    return fields - {"error"}


def test_readme_error_table_lists_exactly_the_error_codes_with_their_categories_and_retryable() -> None:
    assert error_table() == {error.code: (str(error.category), error.retryable) for error in ALL_ERRORS}


def test_error_codes_are_unique() -> None:
    codes = [error.code for error in ALL_ERRORS]
    assert len(codes) == len(set(codes))


def test_readme_tool_table_lists_every_tool_with_exactly_its_arguments() -> None:
    documented = documented_arguments()
    assert set(documented) == {spec.name for spec in TOOLS}
    for spec in TOOLS:
        assert documented[spec.name] == set(spec.input_schema()["properties"]), spec.name


def test_readme_result_fields_are_exactly_the_published_output_fields() -> None:
    documented = documented_result_fields()
    assert set(documented) == {spec.name for spec in TOOLS}
    for spec in TOOLS:
        assert documented[spec.name] == published_result_fields(spec.name), spec.name


# (tool, arguments, [section] overrides) provoking each code a client can reach without a special host setup.
PROVOKED: dict[str, tuple[str, dict[str, Any], dict[str, dict[str, Any]]]] = {
    # invalid_argument
    "invalid_arguments": ("read_file", {"path": 5}, {}),
    "invalid_regex": ("search_text", {"pattern": "(?=look)"}, {}),
    "invalid_glob": ("search_files", {"pattern": "[z-a]"}, {}),
    "not_a_file": ("read_file", {"path": "src"}, {}),
    "not_a_directory": ("search_files", {"pattern": "*", "path": "README.md"}, {}),
    "binary_file": ("read_file", {"path": "data.bin"}, {}),
    "command_parse_error": ("execute_bash", {"command": "ls & ls"}, {}),
    # not_found
    "not_found": ("read_file", {"path": "src/missing.py"}, {}),
    # permission_denied
    "path_outside_root": ("read_file", {"path": "../outside/secret.txt"}, {}),
    "path_denied": ("read_file", {"path": ".env"}, {}),
    "command_not_allowed": ("execute_bash", {"command": "curl http://127.0.0.1/"}, {}),
    "argument_not_allowed": ("execute_bash", {"command": "sort --output=x README.md"}, {}),
    "approval_required": (
        "execute_bash",
        {"command": "md5sum README.md"},
        {"exec": {"ask": ["md5sum"], "allow": [name for name in DEFAULT_ALLOW if name != "md5sum"]}},
    ),
    # limit_exceeded
    "file_too_large": ("search_text", {"pattern": "x", "path": "README.md"}, {"limits": {"max_file_bytes": 8}}),
    "budget_exhausted": ("read_file", {"path": "README.md"}, {"budget": {"max_calls": 1}}),
}


@pytest.mark.anyio
@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("code", sorted(PROVOKED))
async def test_an_error_the_server_returns_has_the_category_and_retryable_of_its_readme_row(
    code: str, era: Mode, repo: Path, make_workspace: Any
) -> None:
    (repo / "data.bin").write_bytes(b"\x00\x01binary")
    tool, arguments, sections = PROVOKED[code]
    workspace: Workspace = make_workspace(repo, **sections)
    async with Client(build_server(workspace), mode=era) as client:  # pyright: ignore[reportArgumentType]
        with anyio.fail_after(20):
            if code == "budget_exhausted":
                await client.call_tool(tool, arguments)
            result = await client.call_tool(tool, arguments)
    assert result.is_error
    error = (result.structured_content or {})["error"]
    assert error["code"] == code
    assert (error["category"], error["retryable"]) == error_table()[code]


DOCS = README.parent / "docs"
LINK = re.compile(r"\]\(([^)#\s]+)(#[^)\s]*)?\)")


@pytest.mark.parametrize("document", ["README.md", *(f"docs/{page.name}" for page in sorted(DOCS.glob("*.md")))])
def test_every_relative_link_names_a_file_of_the_repository(document: str) -> None:
    page = README.parent / document
    targets = [target for target, _ in LINK.findall(page.read_text(encoding="utf-8")) if "://" not in target]
    missing = [target for target in targets if not (page.parent / target).exists()]
    assert missing == [], document


def test_the_readme_is_short_and_reaches_every_page_of_docs() -> None:
    text = readme()
    assert len(text.splitlines()) <= 300
    linked = {target for target, _ in LINK.findall(text)}
    assert {f"docs/{page.name}" for page in DOCS.glob("*.md")} <= linked
    assert "DESIGN.md" not in text
