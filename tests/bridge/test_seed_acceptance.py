"""The seed document's acceptance examples (001, §9), each made by a scripted model through the bridge.

The model's call goes over HTTP to the bridge, runs through the server's pipeline, and the result (or the
graded error) comes back to the model as the tool message; these tests read it from the next request.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from fake_openai import ScriptedChatServer, answer, tool_calls

from conftest import ClientFactory
from exec_support import auto_os_layer
from repo_sandbox.bridge.loop import run_tool_loop
from repo_sandbox.config.model import Settings
from repo_sandbox.workspace import Workspace

pytestmark = pytest.mark.anyio

QUESTION = [{"role": "user", "content": "Analyse this project."}]


async def call_through_bridge(
    server: ScriptedChatServer, client_factory: ClientFactory, workspace: Workspace, tool: str, arguments: Any
) -> Any:
    """The model calls `tool` once, then answers; returns what the tool message told the model: a graded error
    as its JSON object, a result as its compact text."""
    server.add(tool_calls(("seed", tool, arguments)), answer("Done."))
    async with client_factory() as client:
        with anyio.fail_after(60):
            transcript = await run_tool_loop(QUESTION, client=client, workspace=workspace)
    assert transcript.answer == "Done."
    message = server.bodies[1]["messages"][-1]
    assert message["role"] == "tool" and message["tool_call_id"] == "seed"
    text: str = message["content"]
    return json.loads(text) if text.startswith('{"error"') else text


# 9.1 functional ---------------------------------------------------------------------------------


async def test_search_files_go_glob_lists_every_go_file(
    chat_server: ScriptedChatServer, make_client: ClientFactory, go_workspace: Workspace
) -> None:
    result = await call_through_bridge(chat_server, make_client, go_workspace, "search_files", {"pattern": "**/*.go"})
    assert result == "cmd/tool/main.go\ninternal/repo/repo.go\nmain.go\n"


async def test_read_file_readme_returns_its_content(
    chat_server: ScriptedChatServer, make_client: ClientFactory, go_workspace: Workspace
) -> None:
    result = await call_through_bridge(chat_server, make_client, go_workspace, "read_file", {"path": "README.md"})
    assert result == "     1\t# Demo\n     2\t\n     3\tA small Go service.\n"


async def test_search_text_func_main_in_go_files_returns_paths_and_lines(
    chat_server: ScriptedChatServer, make_client: ClientFactory, go_workspace: Workspace
) -> None:
    arguments = {"pattern": "func main", "glob": "*.go"}
    result = await call_through_bridge(chat_server, make_client, go_workspace, "search_text", arguments)
    assert result == "cmd/tool/main.go\n3:func main() {\n\nmain.go\n5:func main() {\n"


async def test_count_lines_of_go_files_returns_the_total(
    chat_server: ScriptedChatServer, make_client: ClientFactory, go_workspace: Workspace
) -> None:
    arguments = {"path": ".", "pattern": "*.go"}
    result = await call_through_bridge(chat_server, make_client, go_workspace, "count_lines", arguments)
    assert result.startswith("19 lines in 3 files (")
    assert "       19      3  .go\n" in result


# 9.2 security -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "code"),
    [
        ("/etc/passwd", "path_outside_root"),
        ("../../etc/passwd", "path_outside_root"),
        (".env", "path_denied"),
    ],
)
async def test_reading_outside_the_root_or_a_secret_is_a_permission_error_fed_back(
    chat_server: ScriptedChatServer, make_client: ClientFactory, go_workspace: Workspace, path: str, code: str
) -> None:
    result = await call_through_bridge(chat_server, make_client, go_workspace, "read_file", {"path": path})
    assert result["error"]["code"] == code
    assert result["error"]["category"] == "permission_denied" and result["error"]["retryable"] is False
    assert "root:" not in json.dumps(result) and "sk-should-never-leak" not in json.dumps(result)


async def test_a_file_over_1_mib_is_read_by_line_range_when_the_limit_is_1_mib(
    chat_server: ScriptedChatServer, make_client: ClientFactory, go_repo: Path, make_settings: Callable[..., Settings]
) -> None:
    (go_repo / "big.txt").write_text(("x" * 99 + "\n") * 11_000, encoding="utf-8")  # 1.1 MB
    workspace = Workspace(make_settings(go_repo, limits={"max_file_bytes": 1024 * 1024}))
    try:
        page = await call_through_bridge(
            chat_server, make_client, workspace, "read_file", {"path": "big.txt", "limit": 3}
        )
    finally:
        workspace.close()
    x_line = "x" * 99
    assert page.startswith(f"     1\t{x_line}\n     2\t{x_line}\n     3\t{x_line}\n")  # the cap is for search and count
    assert "11000" in page.splitlines()[-1]  # the footer gives the total


# execute_bash ------------------------------------------------------------------------------------


def tree(root: str) -> list[str]:
    return sorted(os.path.join(top, name) for top, dirs, files in os.walk(root) for name in dirs + files)


async def test_execute_bash_echo_hello_returns_hello(
    chat_server: ScriptedChatServer, make_client: ClientFactory, go_workspace: Workspace
) -> None:
    arguments = {"command": "echo hello"}
    result = await call_through_bridge(chat_server, make_client, go_workspace, "execute_bash", arguments)
    assert "execute_bash" in [tool["function"]["name"] for tool in chat_server.bodies[0]["tools"]]
    unsandboxed = "; no OS sandbox" if auto_os_layer() == "none" else ""
    assert result == f"hello\n[exit code 0{unsandboxed}]\n"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("command", "code"),
    [
        ("rm -rf /", "command_not_allowed"),
        ("rm -rf .", "command_not_allowed"),
        ("echo hi > /tmp/x", "command_not_allowed"),
        ("ls; rm -rf /", "command_not_allowed"),
        ("ls & rm -rf /", "command_parse_error"),
        ("sh -c 'rm -rf /'", "command_not_allowed"),
        ("find / -delete", "path_outside_root"),
        ("find . -delete", "argument_not_allowed"),
    ],
)
async def test_execute_bash_rm_rf_is_refused_and_fed_back(
    chat_server: ScriptedChatServer, make_client: ClientFactory, go_workspace: Workspace, command: str, code: str
) -> None:
    before = tree(go_workspace.root)
    result = await call_through_bridge(chat_server, make_client, go_workspace, "execute_bash", {"command": command})
    assert result["error"]["code"] == code
    expected = "invalid_argument" if code == "command_parse_error" else "permission_denied"
    assert result["error"]["category"] == expected and result["error"]["retryable"] is False
    assert tree(go_workspace.root) == before  # nothing was removed


# 9.3 protocol: a multi-round conversation keeps its context (the seed's scenario 3) ----------------


async def test_scenario_find_the_repository_interface_then_read_it(
    chat_server: ScriptedChatServer, make_client: ClientFactory, go_workspace: Workspace
) -> None:
    chat_server.add(
        tool_calls(("s1", "search_text", {"pattern": "type.*Repository.*interface", "glob": "*.go"})),
        tool_calls(("s2", "read_file", {"path": "internal/repo/repo.go", "line_numbers": False})),
        answer("UserRepository is defined in internal/repo/repo.go."),
    )
    async with make_client() as client:
        with anyio.fail_after(60):
            transcript = await run_tool_loop(QUESTION, client=client, workspace=go_workspace)
    assert transcript.answer == "UserRepository is defined in internal/repo/repo.go."
    first, second, third = chat_server.bodies
    assert len(second["messages"]) == len(first["messages"]) + 2
    assert third["messages"][: len(second["messages"])] == second["messages"]  # the context is kept
    found: str = second["messages"][-1]["content"]
    assert found.startswith("internal/repo/repo.go\n") and found.count("\n\n") == 0
    read: str = third["messages"][-1]["content"]
    assert read.startswith("package repo\n")
    assert [r.name for r in transcript.tool_calls] == ["search_text", "read_file"]
