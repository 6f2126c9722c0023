"""`repo-sandbox openai-tools` and `repo-sandbox ask`, run as real processes against the scripted server."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from fake_openai import ScriptedChatServer, answer, error, tool_calls

from repo_sandbox.bridge.openai import openai_tools
from repo_sandbox.wiring.identity import INSTRUCTIONS

pytestmark = pytest.mark.e2e

REPO_SANDBOX = str(Path(sys.executable).with_name("repo-sandbox"))
TIMEOUT_S = 60
CLI_KEY = "sk-cli-test-key-9f8e7d6c5b4a"


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("REPO_SANDBOX_", "OPENAI_"))}
    clean["NO_PROXY"] = "127.0.0.1"
    return subprocess.run(
        [REPO_SANDBOX, *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
        env={**clean, **(env or {})},
    )


def ask(
    server: ScriptedChatServer, root: Path, *extra: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return run(
        "ask",
        "Where is main?",
        "--root",
        str(root),
        "--base-url",
        server.base_url,
        *extra,
        env={"REPO_SANDBOX_BRIDGE_API_KEY": CLI_KEY, **(env or {})},
    )


def test_openai_tools_prints_the_registry_as_openai_definitions() -> None:
    done = run("openai-tools")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert json.loads(done.stdout) == openai_tools()


def test_openai_tools_follows_the_config_file_and_the_environment(tmp_path: Path) -> None:
    config = tmp_path / "policy.toml"
    config.write_text("[exec]\nenabled = false\n", encoding="utf-8")
    done = run("openai-tools", "--config", str(config), env={"REPO_SANDBOX_WORKSPACE_INCLUDE_HIDDEN": "true"})
    assert done.returncode == 0, done.stderr
    tools = {tool["function"]["name"]: tool["function"]["parameters"] for tool in json.loads(done.stdout)}
    assert list(tools) == ["search_files", "read_file", "search_text", "count_lines"]
    assert tools["count_lines"]["properties"]["include_hidden"]["default"] is True


def test_tools_follows_the_config_file(tmp_path: Path) -> None:
    config = tmp_path / "policy.toml"
    config.write_text("[workspace]\ninclude_hidden = true\n[exec]\nenabled = false\n", encoding="utf-8")
    done = run("tools", "--config", str(config))
    assert done.returncode == 0, done.stderr
    tools = {tool["name"]: tool["inputSchema"] for tool in json.loads(done.stdout)}
    assert "execute_bash" not in tools
    assert "ask_user" in tools
    assert tools["search_files"]["properties"]["include_hidden"]["default"] is True


def test_openai_tools_without_a_description_limit_prints_the_full_descriptions() -> None:
    done = run("openai-tools", "--max-description-chars", "0")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == openai_tools(max_description_chars=0)


def test_ask_prints_the_answer_on_stdout_and_each_tool_call_on_stderr(
    chat_server: ScriptedChatServer, go_repo: Path
) -> None:
    chat_server.add(
        tool_calls(("c1", "search_files", {"pattern": "**/*.go"}), ("c2", "read_file", {"path": "/etc/passwd"})),
        tool_calls(("c3", "read_file", '{"path": "main.go"')),
        answer("main() is in main.go and cmd/tool/main.go."),
    )
    done = ask(chat_server, go_repo, "--model", "gpt-test")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "main() is in main.go and cmd/tool/main.go.\n"
    lines = [re.sub(r"\(\d+ ms\)$", "(N ms)", line) for line in done.stderr.splitlines()]
    assert len(lines) == 3
    assert set(lines[:2]) == {  # the first turn's calls run concurrently: printed as each one finishes
        '[1] search_files {"pattern":"**/*.go"} -> ok (N ms)',
        '[1] read_file {"path":"/etc/passwd"} -> path_outside_root (N ms)',
    }
    assert lines[2] == '[2] read_file {"path": "main.go" -> invalid_arguments (N ms)'
    first = chat_server.requests[0]
    assert first.headers["authorization"] == f"Bearer {CLI_KEY}"
    assert first.body["model"] == "gpt-test"
    assert first.body["messages"] == [
        {"role": "system", "content": INSTRUCTIONS},
        {"role": "user", "content": "Where is main?"},
    ]
    assert first.body["tools"] == openai_tools() and first.body["tool_choice"] == "auto"
    assert len(chat_server.requests) == 3
    assert CLI_KEY not in done.stdout + done.stderr


def test_ask_json_prints_the_transcript(chat_server: ScriptedChatServer, go_repo: Path) -> None:
    chat_server.add(tool_calls(("c1", "count_lines", {"pattern": "*.go"})), answer("19 lines."))
    done = ask(chat_server, go_repo, "--model", "m", "--json", "--system", "Be brief.")
    assert done.returncode == 0, done.stderr
    transcript = json.loads(done.stdout)
    assert transcript["answer"] == "19 lines." and transcript["rounds"] == 2
    assert [(c["name"], c["is_error"]) for c in transcript["tool_calls"]] == [("count_lines", False)]
    assert [m["role"] for m in transcript["messages"]] == ["system", "user", "assistant", "tool", "assistant"]
    assert transcript["messages"][0]["content"] == "Be brief."
    assert transcript["messages"][3]["content"].startswith("19 lines in 3 files (")  # the compact text


def test_ask_takes_the_model_and_url_from_the_environment(chat_server: ScriptedChatServer, go_repo: Path) -> None:
    chat_server.add(answer("No tools needed."))
    env = {"REPO_SANDBOX_BRIDGE_MODEL": "env-model", "REPO_SANDBOX_BRIDGE_BASE_URL": chat_server.base_url}
    done = run("ask", "Hi?", "--root", str(go_repo), env={"OPENAI_API_KEY": "sk-from-openai-env", **env})
    assert done.returncode == 0, done.stderr
    assert done.stdout == "No tools needed.\n" and done.stderr == ""
    assert chat_server.requests[0].body["model"] == "env-model"
    assert chat_server.requests[0].headers["authorization"] == "Bearer sk-from-openai-env"


def test_ask_retries_a_500_and_a_429(chat_server: ScriptedChatServer, go_repo: Path) -> None:
    chat_server.add(error(500), error(429, headers={"Retry-After": "0"}), answer("Eventually."))
    done = ask(chat_server, go_repo, "--model", "m", env={"REPO_SANDBOX_BRIDGE_RETRY_INITIAL_S": "0"})
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Eventually.\n" and len(chat_server.requests) == 3


def test_ask_without_a_model_exits_2_without_calling_the_endpoint(
    chat_server: ScriptedChatServer, go_repo: Path
) -> None:
    done = ask(chat_server, go_repo)
    assert done.returncode == 2
    assert "no model" in done.stderr and chat_server.requests == []


@pytest.mark.parametrize("base_url", ["ftp://127.0.0.1/v1", "127.0.0.1:8000"])
def test_ask_with_a_base_url_that_is_not_http_exits_2(go_repo: Path, base_url: str) -> None:
    done = run("ask", "Hi?", "--root", str(go_repo), "--base-url", base_url, "--model", "m")
    assert done.returncode == 2 and "http" in done.stderr


def test_ask_past_max_rounds_exits_1_with_the_graded_error(chat_server: ScriptedChatServer, go_repo: Path) -> None:
    chat_server.add(tool_calls(("c1", "count_lines", {})), tool_calls(("c2", "count_lines", {})))
    done = ask(chat_server, go_repo, "--model", "m", "--max-rounds", "2", "--json")
    assert done.returncode == 1
    assert "max_rounds_exceeded" in done.stderr and "--max-rounds" in done.stderr
    assert json.loads(done.stdout)["rounds"] == 2  # --json still shows the loop so far


def test_ask_rejected_by_the_endpoint_exits_1_without_leaking_the_key(
    chat_server: ScriptedChatServer, go_repo: Path
) -> None:
    chat_server.add(error(401, "Incorrect API key provided."))
    done = ask(chat_server, go_repo, "--model", "m")
    assert done.returncode == 1 and done.stdout == ""
    assert "llm_request_rejected: The chat endpoint answered HTTP 401: Incorrect API key provided." in done.stderr
    assert CLI_KEY not in done.stderr


def test_check_config_masks_the_bridge_api_key(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text(f'[bridge]\napi_key = "{CLI_KEY}"\nmodel = "m"\n', encoding="utf-8")
    done = run("check-config", str(config))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["bridge"]["api_key"] == "**********"
    assert CLI_KEY not in done.stdout


def test_help_lists_the_bridge_commands() -> None:
    done = run("--help")
    assert "openai-tools" in done.stdout and "ask" in done.stdout
    done = run("ask", "--help")
    for flag in ("--base-url", "--model", "--max-rounds", "--root", "--json", "REPO_SANDBOX_BRIDGE_API_KEY"):
        assert flag in done.stdout
