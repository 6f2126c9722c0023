"""Inspector acceptance: the pinned MCP Inspector CLI (a TypeScript client that validates structuredContent
against the output schema, errors included) lists the tools and accepts every result, graded errors too.

`scripts/bootstrap` installs the Inspector and Node 22 into .tools/node22
(scripts/setup.d/30-node22-conformance.sh), so nothing is downloaded here; a missing Inspector is a failure, never a skip.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from e2e_tree import build_tree

from cache_env import in_test_cache
from repo_sandbox.wiring.render import result_text

pytestmark = [pytest.mark.inspector, pytest.mark.e2e]

PROJECT = Path(__file__).resolve().parents[2]
NODE22_BIN = PROJECT / ".tools" / "node22" / "node_modules" / ".bin"
INSPECTOR = NODE22_BIN / "mcp-inspector"
INSPECTOR_VERSION = "2.12.0"
REPO_SANDBOX = str(Path(sys.executable).with_name("repo-sandbox"))
TIMEOUT_S = 120
EXIT_TOOL_IS_ERROR = 5
"""Inspector 2.12.0 exits 5 when a tool result has isError: true (after printing it)."""


@pytest.fixture(scope="module")
def inspector() -> Path:
    manifest = INSPECTOR.parents[1] / "@modelcontextprotocol" / "inspector" / "package.json"
    assert INSPECTOR.exists() and manifest.exists(), (
        "MCP Inspector missing: run scripts/bootstrap (setup.d/30-node22-conformance.sh)"
    )
    assert json.loads(manifest.read_text())["version"] == INSPECTOR_VERSION
    return INSPECTOR


@pytest.fixture(scope="module")
def inspected_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tree(tmp_path_factory.mktemp("inspector") / "repo")


def inspect(inspector: Path, server: list[str], *method: str) -> tuple[int, Any, str]:
    """Run the Inspector CLI against a stdio server; (exit code, parsed JSON stdout, stderr)."""
    done = subprocess.run(
        [str(inspector), "--cli", *server, "--method", *method],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
        cwd=PROJECT,
        env={**os.environ, "PATH": f"{NODE22_BIN}{os.pathsep}{os.environ.get('PATH', '')}"},
    )
    try:
        output = json.loads(done.stdout)
    except json.JSONDecodeError:
        output = None
    return done.returncode, output, done.stderr


def sandbox(repo: Path) -> list[str]:
    return in_test_cache([REPO_SANDBOX, "--root", str(repo)])


def test_inspector_lists_the_tools_with_input_and_output_schemas_and_annotations(
    inspector: Path, inspected_repo: Path
) -> None:
    code, output, stderr = inspect(inspector, sandbox(inspected_repo), "tools/list")
    assert code == 0, stderr
    tools = {tool["name"]: tool for tool in output["tools"]}
    assert set(tools) == {"search_files", "read_file", "search_text", "count_lines", "execute_bash"}
    for tool in tools.values():
        assert tool["inputSchema"]["type"] == "object" and tool["inputSchema"]["properties"]
        assert tool["outputSchema"]["type"] == "object" and len(tool["outputSchema"]["anyOf"]) >= 2
        assert tool["annotations"]["readOnlyHint"] is (tool["name"] != "execute_bash")
        assert tool["annotations"]["destructiveHint"] is False
        assert tool["annotations"]["openWorldHint"] is False


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        ("search_files", ["pattern=*.md", "path=docs"], {"files": ["docs/café.md", "docs/guide.md"], "total": 2}),
        ("read_file", ["path=README.md", "limit=2"], {"content": "     1\t# Demo\n     2\t\n", "next_offset": 3}),
        ("search_text", ["pattern=TODO", "path=src", "output_mode=count"], {"total_matches": 2}),
        ("count_lines", ["path=docs"], {"files": 4, "total_lines": 5}),
    ],
)
def test_inspector_accepts_a_successful_call_of_each_tool(
    inspector: Path, inspected_repo: Path, tool: str, arguments: list[str], expected: dict[str, Any]
) -> None:
    code, output, stderr = inspect(
        inspector, sandbox(inspected_repo), "tools/call", "--tool-name", tool, "--tool-arg", *arguments
    )
    assert code == 0, stderr
    assert output["isError"] is False
    structured = output["structuredContent"]
    assert {key: structured[key] for key in expected} == expected
    text = output["content"][0]["text"]  # the compact rendering the model reads
    assert text == result_text(tool, structured, is_error=False, json_text=lambda: "(not compact)")
    assert text.startswith(FIRST_LINES[tool])


FIRST_LINES = {
    "search_files": "docs/café.md\ndocs/guide.md\n",
    "read_file": "     1\t# Demo\n     2\t\n[more: offset=3; ",
    "search_text": "src/",
    "count_lines": "5 lines in 4 files (",
}


@pytest.mark.parametrize(
    ("tool", "arguments", "error_code"),
    [
        ("read_file", ["path=../../etc/passwd"], "path_outside_root"),
        ("read_file", ["path=README.md", "limit=0"], "invalid_arguments"),
        ("search_text", ["pattern=(?<=a)b"], "invalid_regex"),
    ],
)
def test_inspector_accepts_a_graded_error_without_schema_rejection(
    inspector: Path, inspected_repo: Path, tool: str, arguments: list[str], error_code: str
) -> None:
    code, output, stderr = inspect(
        inspector, sandbox(inspected_repo), "tools/call", "--tool-name", tool, "--tool-arg", *arguments
    )
    assert code == EXIT_TOOL_IS_ERROR, stderr
    assert output["isError"] is True
    error = output["structuredContent"]["error"]
    assert error["code"] == error_code
    assert set(error) == {"code", "category", "message", "retryable", "hint", "details"}
    assert "tool_is_error" in stderr
    assert "must have" not in stderr and "does not match" not in stderr


def test_inspector_does_reject_an_error_that_its_output_schema_does_not_admit(inspector: Path) -> None:
    """The control: the same kind of call against a server whose output schema lacks the error shape fails
    validation, so the acceptance above is a real check."""
    wrong = [sys.executable, str(Path(__file__).with_name("wrong_schema_server.py"))]
    code, output, stderr = inspect(inspector, wrong, "tools/call", "--tool-name", "read_file", "--tool-arg", "path=x")
    assert code not in (0, EXIT_TOOL_IS_ERROR)
    assert output is None
    assert "must have required property 'path'" in stderr
