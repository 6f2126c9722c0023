"""Output masking: secrets masked within their lines, line numbers unchanged, keys masked even from their middle."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from repo_sandbox.audit import output as output_module
from repo_sandbox.audit.output import TextMasker, mask_error, mask_execute_bash
from repo_sandbox.config.model import Settings
from repo_sandbox.runtime.audit_stage import OutputMaskingStage
from repo_sandbox.runtime.pipeline import CallPipeline
from repo_sandbox.tools.registry import TOOLS
from repo_sandbox.wiring.assembly import build_server
from repo_sandbox.workspace import Workspace

pytestmark = pytest.mark.anyio

SettingsFactory = Callable[..., Settings]

GHP = "ghp_" + "Qx7" * 12
KEY_LINES = ["MIIEpAIBAAKCAQEA" + "k" * 48, *("Zm9v" * 16 for _ in range(5)), "YmFy" * 10 + "=="]
SOURCE = "\n".join(
    [
        "import os",  # 1
        f'TOKEN = "{GHP}"',  # 2
        "PEM = '''-----BEGIN RSA PRIVATE KEY-----",  # 3
        *KEY_LINES,  # 4..10
        "-----END RSA PRIVATE KEY-----'''",  # 11
        "password = os.environ['PW']",  # 12
        f"url = 'https://bob:{GHP[4:20]}@example.com'",  # 13
        "done = True",  # 14
    ]
)


@pytest.fixture
async def client(tmp_path: Path, make_settings: SettingsFactory) -> AsyncIterator[Client]:
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "conf.py").write_text(SOURCE + "\n", encoding="utf-8")
    ws = Workspace(make_settings(root))
    try:
        async with Client(build_server(ws), mode="auto") as c:
            yield c
    finally:
        ws.close()


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)  # the SDK validates it against the output schema
    assert result.is_error is False, result
    assert result.structured_content is not None
    return result.structured_content


def assert_no_secret(text: str) -> None:
    assert GHP not in text and GHP[4:20] not in text
    assert not any(line in text for line in KEY_LINES)


async def test_read_file_masks_within_lines_and_keeps_every_line_number(client: Client) -> None:
    result = await call(client, "read_file", {"path": "pkg/conf.py"})
    lines = result["content"].split("\n")[:-1]
    assert [line.split("\t", 1)[0] for line in lines] == [f"{n:>6}" for n in range(1, 15)]
    assert lines[1] == '     2\tTOKEN = "[REDACTED:github_token]"'
    assert lines[2] == "     3\tPEM = '''-----BEGIN RSA PRIVATE KEY-----"
    assert all(line.endswith("[REDACTED:private_key]") for line in lines[3:10])
    assert lines[11] == "    12\tpassword = os.environ['PW']"
    assert lines[13] == "    14\tdone = True"
    assert result["redactions"] == 3
    assert result["total_lines"] == 14
    assert_no_secret(result["content"])


async def test_a_page_that_starts_inside_a_private_key_is_masked(client: Client) -> None:
    result = await call(client, "read_file", {"path": "pkg/conf.py", "offset": 6, "limit": 3})
    assert result["content"] == "".join(f"{n:>6}\t[REDACTED:private_key]\n" for n in (6, 7, 8))
    assert result["redactions"] == 1


async def test_read_file_without_line_numbers_is_masked_the_same(client: Client) -> None:
    result = await call(client, "read_file", {"path": "pkg/conf.py", "offset": 2, "limit": 3, "line_numbers": False})
    assert result["content"] == (
        "TOKEN = \"[REDACTED:github_token]\"\nPEM = '''-----BEGIN RSA PRIVATE KEY-----\n[REDACTED:private_key]\n"
    )


async def test_search_hits_and_context_inside_a_private_key_are_masked(client: Client) -> None:
    result = await call(client, "search_text", {"pattern": "Zm9vZm9v", "context": 2, "limit": 2})
    first = result["matches"][0]
    assert (first["line"], first["text"]) == (5, "[REDACTED:private_key]")
    assert first["before"] == ["PEM = '''-----BEGIN RSA PRIVATE KEY-----", "[REDACTED:private_key]"]
    assert first["after"] == ["[REDACTED:private_key]", "[REDACTED:private_key]"]
    assert result["redactions"] >= 1
    assert_no_secret(str(result))


async def test_multiline_search_text_is_masked_line_by_line(client: Client) -> None:
    result = await call(client, "search_text", {"pattern": "TOKEN[\\s\\S]*?MIIE", "multiline": True})
    (match,) = result["matches"]
    assert match["line"] == 2
    assert match["text"].split("\n") == [
        'TOKEN = "[REDACTED:github_token]"',
        "PEM = '''-----BEGIN RSA PRIVATE KEY-----",
        "[REDACTED:private_key]",
    ]


async def test_search_for_the_bare_secret_finds_it_but_shows_it_masked(client: Client) -> None:
    result = await call(client, "search_text", {"pattern": GHP[4:20], "fixed_strings": True})
    assert [m["line"] for m in result["matches"]] == [2, 13]
    assert_no_secret(str(result))


async def test_files_and_counts_modes_report_zero_redactions(client: Client) -> None:
    files = await call(client, "search_text", {"pattern": "ghp_", "output_mode": "files_with_matches"})
    assert files["files"] == ["pkg/conf.py"]
    assert files["redactions"] == 0


async def test_masking_that_fails_fails_the_call_instead_of_leaking(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: Any) -> None:
        raise RuntimeError("masker bug")

    monkeypatch.setitem(output_module.OUTPUT_MASKERS, "read_file", broken)
    outcome = await CallPipeline(workspace, TOOLS, [OutputMaskingStage(workspace)]).call(
        "read_file", {"path": "README.md"}
    )
    assert outcome.error_code == "internal_error"
    assert "content" not in outcome.payload


def test_execute_bash_stdout_and_stderr_are_masked(workspace: Workspace) -> None:
    payload: dict[str, Any] = {
        "exit_code": 0,
        "stdout": f"line one\nexport GH_TOKEN={GHP}\nline three\n",
        "stderr": "warning: password=hunter2-x9 in config\n",
        "stdout_truncated": False,
        "stderr_truncated": False,
        "duration_ms": 3.0,
        "sandbox": "bwrap",
    }
    mask = TextMasker()
    mask_execute_bash(workspace, payload, {"command": "cat conf"}, mask)
    assert payload["stdout"] == "line one\nexport GH_TOKEN=[REDACTED:github_token]\nline three\n"
    assert payload["stderr"] == "warning: password=[REDACTED] in config\n"
    assert sum(mask.counts.values()) == 2


def test_output_carried_by_an_error_is_masked_but_the_message_is_not() -> None:
    payload: dict[str, Any] = {
        "error": {
            "code": "timeout",
            "message": "'x-token': unknown argument",
            "details": {"stdout": f"partial {GHP}", "field": "x-token"},
        }
    }
    mask_error(payload, TextMasker())
    assert payload["error"]["details"] == {"stdout": "partial [REDACTED:github_token]", "field": "x-token"}
    assert payload["error"]["message"] == "'x-token': unknown argument"
