"""The README's bridge section stays true: its error table and its Python example."""

from __future__ import annotations

import re
from pathlib import Path

from fake_openai import ScriptedChatServer, answer, tool_calls

from repo_sandbox.bridge.errors import BRIDGE_ERRORS
from repo_sandbox.errors import ALL_ERRORS

README = Path(__file__).resolve().parents[2] / "README.md"


def bridge_section() -> str:
    text = README.read_text(encoding="utf-8")
    return text.split("## OpenAI-compatible models (the bridge)")[1].split("\n## ")[0]


def test_readme_bridge_error_table_lists_exactly_the_bridge_errors() -> None:
    rows = re.findall(r"^\| `([a-z_]+)` \| ([a-z_]+) \| (yes|no) \|", bridge_section(), flags=re.MULTILINE)
    assert rows == [(e.code, str(e.category), "yes" if e.retryable else "no") for e in BRIDGE_ERRORS]


def test_bridge_error_codes_differ_from_the_tool_error_codes() -> None:
    assert not {e.code for e in BRIDGE_ERRORS} & {e.code for e in ALL_ERRORS}


def test_readme_python_example_runs_against_a_chat_server(chat_server: ScriptedChatServer, go_repo: Path) -> None:
    code = bridge_section().split("```python\n")[1].split("```")[0]
    code = code.replace("http://127.0.0.1:8000/v1", chat_server.base_url).replace("/path/to/repo", str(go_repo))
    chat_server.add(tool_calls(("c1", "search_text", {"pattern": "func main"})), answer("In main.go."))
    exec(compile(code, "README.md", "exec"), {"__name__": "readme_example"})  # noqa: S102  # our own README
    assert len(chat_server.requests) == 2
    assert chat_server.bodies[1]["messages"][-1]["tool_call_id"] == "c1"
