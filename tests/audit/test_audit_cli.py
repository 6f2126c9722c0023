"""`repo-sandbox audit tail|stats`, and the audit from `repo-sandbox call`, on files the real pipeline wrote."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from repo_sandbox.calls import CallContext
from repo_sandbox.cli import main
from repo_sandbox.config.model import Settings
from repo_sandbox.runtime.assembly import build_pipeline
from repo_sandbox.tools.registry import TOOLS
from repo_sandbox.workspace import Workspace

SettingsFactory = Callable[..., Settings]


@pytest.fixture
def audit_file(repo: Path, make_settings: SettingsFactory, tmp_path: Path) -> Path:
    path = tmp_path / "audit.jsonl"
    ws = Workspace(make_settings(repo, audit={"path": str(path)}))

    async def calls() -> None:
        pipeline = build_pipeline(ws, TOOLS)
        for number, (tool, arguments) in enumerate(
            [
                ("search_files", {"pattern": "*.py"}),
                ("read_file", {"path": "src/main.py"}),
                ("read_file", {"path": "../outside/secret.txt"}),
                ("read_file", {"path": "nope.txt"}),
                ("search_text", {"pattern": "TODO"}),
                ("search_text", {"pattern": "(unclosed"}),
                ("read_file", {"path": "README.md", "token": "ghp_" + "Zz1" * 12}),
            ]
        ):
            await pipeline.call(tool, arguments, CallContext(session_id=f"session-{number % 2}"))

    try:
        anyio.run(calls)
        ws.audit.decision("command_denied", rule="exec.allow", program="curl")
    finally:
        ws.close()
    return path


def test_tail_prints_the_last_events_one_line_each(audit_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["audit", "tail", str(audit_file), "-n", "3"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3
    assert "search_text" in lines[0] and "error invalid_regex" in lines[0]
    assert "read_file" in lines[1] and "error invalid_arguments" in lines[1] and "[REDACTED]" in lines[1]
    assert "decision" in lines[2] and "command_denied" in lines[2] and "rule=exec.allow" in lines[2]


def test_stats_counts_calls_errors_and_lists_the_slowest(audit_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["audit", "stats", str(audit_file), "--slowest", "2"]) == 0
    out = capsys.readouterr().out
    assert "events: 8 (7 tool calls, 1 policy decisions), 0 unreadable lines" in out
    assert "sessions: 2" in out
    read_row = next(line for line in out.splitlines() if line.startswith("read_file"))
    assert read_row.split()[1:3] == ["4", "3"]
    for code in ("path_outside_root", "not_found", "invalid_regex", "invalid_arguments"):
        assert code in out
    slowest = out.split("slowest calls\n")[1].split("\n\n")[0].splitlines()
    assert len(slowest) == 2
    assert "command_denied (deny)" in out


def test_stats_as_json_and_unreadable_lines_counted(audit_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with audit_file.open("a") as handle:
        handle.write("not json\n[1, 2]\n")
    assert main(["audit", "stats", str(audit_file), "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["unreadable_lines"] == 2
    assert stats["per_tool"]["read_file"]["calls"] == 4
    assert stats["per_tool"]["search_text"]["errors"] == 1
    assert stats["errors_by_code"] == {
        "path_outside_root": 1, "not_found": 1, "invalid_regex": 1, "invalid_arguments": 1,
    }  # fmt: skip
    assert stats["per_tool"]["read_file"]["max_ms"] >= stats["per_tool"]["read_file"]["mean_ms"] > 0


def test_missing_file_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["audit", "tail", str(tmp_path / "missing.jsonl")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_call_command_writes_its_audit_to_stderr_when_asked(
    repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REPO_SANDBOX_AUDIT_PATH", "-")
    assert (
        main(
            [
                "call",
                "read_file",
                '{"path": "src/util.py", "api_key": "sk-abc123def456ghi789jkl0"}',
                "--root",
                str(repo),
            ]
        )
        == 1
    )
    captured = capsys.readouterr()
    (event,) = [json.loads(line) for line in captured.err.splitlines() if line.startswith("{")]
    assert event["tool"] == "read_file"
    assert event["arguments"] == {"path": "src/util.py", "api_key": "[REDACTED]"}
    assert event["error_code"] == "invalid_arguments"
