"""The bridge's documentation (docs/bridge.md) stays true: its error table and its Python example."""

from __future__ import annotations

import re
from pathlib import Path

from fake_openai import ScriptedChatServer, answer, tool_calls

from repo_sandbox.bridge.errors import BRIDGE_ERRORS
from repo_sandbox.errors import ALL_ERRORS

BRIDGE_DOC = Path(__file__).resolve().parents[2] / "docs" / "bridge.md"


def bridge_section() -> str:
    return BRIDGE_DOC.read_text(encoding="utf-8")


def test_documented_bridge_error_table_lists_exactly_the_bridge_errors() -> None:
    rows = re.findall(r"^\| `([a-z_]+)` \| ([a-z_]+) \| (yes|no) \|", bridge_section(), flags=re.MULTILINE)
    assert rows == [(e.code, str(e.category), "yes" if e.retryable else "no") for e in BRIDGE_ERRORS]


def test_bridge_error_codes_differ_from_the_tool_error_codes() -> None:
    assert not {e.code for e in BRIDGE_ERRORS} & {e.code for e in ALL_ERRORS}


def test_documented_python_example_runs_against_a_chat_server(chat_server: ScriptedChatServer, go_repo: Path) -> None:
    code = bridge_section().split("```python\n")[1].split("```")[0]
    code = code.replace("http://127.0.0.1:8000/v1", chat_server.base_url).replace("/path/to/repo", str(go_repo))
    chat_server.add(tool_calls(("c1", "search_text", {"pattern": "func main"})), answer("In main.go."))
    exec(compile(code, "docs/bridge.md", "exec"), {"__name__": "bridge_example"})  # noqa: S102  # our own docs
    assert len(chat_server.requests) == 2
    assert chat_server.bodies[1]["messages"][-1]["tool_call_id"] == "c1"
